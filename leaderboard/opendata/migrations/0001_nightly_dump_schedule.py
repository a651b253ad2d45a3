"""Schedule the nightly open-data dump at 04:00 UTC, after the nightly regression check
(celery beat, database scheduler; staff change the time or disable it in the admin)."""

from django.db import migrations

DUMP_TASK = "opendata.dump_board"
NAME = "nightly open-data dump"


def create_schedule(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    nightly, _ = CrontabSchedule.objects.get_or_create(
        minute="0", hour="4", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={"task": DUMP_TASK, "crontab": nightly, "enabled": True, "description": "Parquet and CSV dumps"},
    )


def delete_schedule(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [("django_celery_beat", "0019_alter_periodictasks_options")]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]

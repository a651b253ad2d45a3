"""Schedule the nightly regression check at 03:00 UTC (celery beat, database
scheduler; staff change the time or disable it in django-celery-beat's admin)."""

from django.db import migrations

NIGHTLY_TASK = "regressions.nightly_check"
NAME = "nightly regression"


def create_schedule(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    nightly, _ = CrontabSchedule.objects.get_or_create(
        minute="0", hour="3", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={"task": NIGHTLY_TASK, "crontab": nightly, "enabled": True, "description": "New llama.cpp builds"},
    )


def delete_schedule(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("regressions", "0001_nightly_regression"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]

"""Advance running service campaigns every minute (celery beat, database
scheduler): the safety net under the job post_save signal."""

from django.db import migrations

ADVANCE_TASK = "leaderboard.campaigns.tasks.campaigns_advance_task"
NAME = "Advance running tuning campaigns"


def create_schedule(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_minute, _ = IntervalSchedule.objects.get_or_create(every=60, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={"task": ADVANCE_TASK, "interval": every_minute, "enabled": True},
    )


def delete_schedule(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0002_trial_role"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]

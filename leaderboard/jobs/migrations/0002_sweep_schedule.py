"""Schedule the stuck-job sweeper every minute (celery beat, database scheduler)."""

from django.db import migrations

SWEEP_TASK = "leaderboard.jobs.tasks.jobs_sweep_stuck_task"
NAME = "Abort benchmark jobs whose worker was lost"


def create_schedule(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_minute, _ = IntervalSchedule.objects.get_or_create(every=60, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={"task": SWEEP_TASK, "interval": every_minute, "enabled": True},
    )


def delete_schedule(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0001_benchmark_job"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]

# Each run's share of its memory-bandwidth bound, stored so the leaderboard sorts by it
# (issue 38; models/bounds.py) with its two sort indexes (PostgreSQL only: SQLite takes no
# NULLS LAST in an index), and the nightly refresh of the stale ones at 03:30 UTC
# (results/tasks.py). The runs stored before this have no share: `manage.py refresh_bounds`
# stores them at once (the nightly task does the same); until then they sort last.

import django.db.models.deletion
from django.db import migrations, models

REFRESH_TASK = "results.refresh_bounds"
NAME = "nightly bound-share refresh"


def create_schedule(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    nightly, _ = CrontabSchedule.objects.get_or_create(
        minute="30", hour="3", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={
            "task": REFRESH_TASK,
            "crontab": nightly,
            "enabled": True,
            "description": "Store the bound share of runs whose share is missing or stale",
        },
    )


def create_sort_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX run_bound_share_idx ON results_runboundshare (decode_share DESC NULLS LAST, run_id DESC)"
        )
        schema_editor.execute("CREATE INDEX run_bound_share_asc_idx ON results_runboundshare (decode_share, run_id)")


def drop_sort_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS run_bound_share_idx")
        schema_editor.execute("DROP INDEX IF EXISTS run_bound_share_asc_idx")


def delete_schedule(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0012_published_printed_digits"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunBoundShare",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="bound_share",
                        serialize=False,
                        to="results.run",
                    ),
                ),
                ("decode_share", models.FloatField(blank=True, null=True)),
                ("bound_tokens_per_s", models.FloatField(blank=True, null=True)),
                ("gpu_family", models.CharField(blank=True, max_length=40)),
                ("digest", models.CharField(max_length=16)),
            ],
        ),
        migrations.RunPython(create_sort_indexes, drop_sort_indexes),
        migrations.RunPython(create_schedule, delete_schedule),
    ]

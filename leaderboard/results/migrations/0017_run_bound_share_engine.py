"""A stored share carries its run's engine and speculation (issue 40): a GPU page's
shares per engine read the share table alone. Existing rows are filled from their
runs in two statements (the share rows whose digest is current stay current: the
engine and speculation are the run's own facts, not the catalog's)."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery

NOT_SPECULATIVE = ("", "none")  # leaderboard/results/hardware/runs.py, as of this migration


def fill(apps, schema_editor) -> None:
    share = apps.get_model("results", "RunBoundShare")
    run = apps.get_model("results", "Run")
    share.objects.update(engine=Subquery(run.objects.filter(pk=OuterRef("run_id")).values("stack__engine")[:1]))
    share.objects.exclude(run__configuration__speculative_type__in=NOT_SPECULATIVE).update(speculative=True)


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0016_run_recent_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="runboundshare",
            name="engine",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.AddField(
            model_name="runboundshare",
            name="speculative",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
    ]

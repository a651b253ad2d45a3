# Issue 40: a run's failed output checks kept with its summary and in the rank indexes, so
# a board leaves broken runs out without probing the samples table per run.

from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery

from leaderboard.results.operations import AddColumnInPlace


def count_failed_checks(apps, schema_editor):
    """Store each run's failed-check count from its samples (only runs with one are touched)."""
    Run = apps.get_model("results", "Run")
    Sample = apps.get_model("results", "Sample")
    failed = Sample.objects.filter(output_ok=False)
    per_run = failed.filter(run=OuterRef("pk")).order_by().values("run").annotate(n=Count("pk")).values("n")
    Run.objects.filter(pk__in=failed.values("run")).update(failed_checks=Subquery(per_run))


def _ranked(*expressions, name, include):
    return models.Index(
        *expressions,
        condition=models.Q(("decode_tokens_per_s_mean__isnull", False), ("status", "finished")),
        include=include,
        name=name,
    )


DESC_MEAN = models.OrderBy(models.F("decode_tokens_per_s_mean"), descending=True)
DESC_ID = models.OrderBy(models.F("id"), descending=True)


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0017_run_bound_share_engine"),
    ]

    operations = [
        AddColumnInPlace(
            model_name="run",
            name="failed_checks",
            field=models.PositiveIntegerField(default=0, help_text="Repetitions whose output check failed."),
        ),
        migrations.RunPython(count_failed_checks, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="run", name="run_ranked_idx"),
        migrations.RemoveIndex(model_name="run", name="run_rig_rank_idx"),
        migrations.RemoveIndex(model_name="run", name="run_model_created_idx"),
        migrations.RemoveIndex(model_name="run", name="run_model_rank_idx"),
        migrations.AddIndex(
            model_name="run",
            index=_ranked(
                DESC_MEAN,
                DESC_ID,
                name="run_ranked_idx",
                include=("rig", "workload", "configuration", "failed_checks"),
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=_ranked(
                models.F("rig"), DESC_MEAN, DESC_ID, name="run_rig_rank_idx", include=("failed_checks",)
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                fields=["model_file", "created_at"],
                condition=models.Q(("decode_tokens_per_s_mean__isnull", False), ("status", "finished")),
                include=("id", "rig", "decode_tokens_per_s_mean", "provenance", "source", "failed_checks"),
                name="run_model_created_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=_ranked(
                models.F("model_file"),
                DESC_MEAN,
                DESC_ID,
                name="run_model_rank_idx",
                include=("rig", "workload", "created_at", "provenance", "source", "failed_checks"),
            ),
        ),
    ]

# Issue 40: the configuration-group index holds each run's failed checks, so "best of each
# configuration" (its probes and its count of groups) reads that index alone, not the table.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0018_run_failed_checks"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="run", name="run_ranked_group_idx"),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("rig"),
                models.F("stack"),
                models.F("model_file"),
                models.F("configuration"),
                models.F("workload"),
                models.OrderBy(models.F("decode_tokens_per_s_mean"), descending=True),
                models.OrderBy(models.F("id"), descending=True),
                condition=models.Q(("decode_tokens_per_s_mean__isnull", False), ("status", "finished")),
                include=("failed_checks",),
                name="run_ranked_group_idx",
            ),
        ),
    ]

# A run whose figures are all per context length (a sweep) gets its sweep's
# headline as its summary, so the leaderboard and rig pages list it.

from django.db import migrations, models


def sweep_headlines(apps, schema_editor):
    Run = apps.get_model("results", "Run")
    SweepPoint = apps.get_model("results", "SweepPoint")
    for run in Run.objects.filter(summary_source="none", n_samples=0):
        points = [p for p in SweepPoint.objects.filter(run=run) if p.decode_tokens_per_s is not None]
        if not points:
            continue
        # As services.summary.sweep_headline: the shortest counted context first.
        head = min(points, key=lambda p: (p.ctx_tokens is None, p.ctx_tokens or 0))
        run.summary_source = "sweep"
        run.decode_tokens_per_s_mean = head.decode_tokens_per_s
        run.prefill_tokens_per_s_mean = head.prefill_tokens_per_s
        run.ttft_ms_mean = head.ttft_ms
        run.power_w_mean = head.power_w
        run.tokens_per_kwh = head.tokens_per_kwh
        run.save(
            update_fields=[
                "summary_source",
                "decode_tokens_per_s_mean",
                "prefill_tokens_per_s_mean",
                "ttft_ms_mean",
                "power_w_mean",
                "tokens_per_kwh",
            ]
        )


class Migration(migrations.Migration):

    dependencies = [
        ("results", "0004_source_published_date"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="summary_source",
            field=models.CharField(
                choices=[
                    ("samples", "Computed from raw samples"),
                    ("published", "As published by the source"),
                    ("sweep", "Headline of its context sweep (shortest context)"),
                    ("none", "No figures"),
                ],
                default="none",
                max_length=16,
            ),
        ),
        migrations.RunPython(sweep_headlines, migrations.RunPython.noop),
        migrations.AlterModelOptions(
            name="sweeppoint",
            options={"ordering": ["run", models.OrderBy(models.F("ctx_tokens"), nulls_last=True)]},
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("model_file"),
                models.OrderBy(models.F("decode_tokens_per_s_mean"), descending=True),
                models.OrderBy(models.F("id"), descending=True),
                condition=models.Q(("decode_tokens_per_s_mean__isnull", False), ("status", "finished")),
                name="run_model_rank_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="sample",
            index=models.Index(condition=models.Q(output_ok=False), fields=["run"], name="sample_failed_check_idx"),
        ),
    ]

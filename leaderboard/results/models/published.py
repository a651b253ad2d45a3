"""What the articles in the seed set published, beyond per-run figures:
sources, their comparison tables, tuning experiments and fitted formulas."""

from __future__ import annotations

from django.db import models


class Source(models.Model):
    """An article a reported figure comes from."""

    key = models.CharField(max_length=200, unique=True, help_text="The source file name in the published data.")
    title = models.CharField(max_length=500)
    author_handle = models.CharField(max_length=200, blank=True)
    url = models.URLField(max_length=500, blank=True)
    published_on = models.DateField(null=True, blank=True, help_text="Set when the source gives a full date.")
    published_date = models.CharField(
        max_length=10, blank=True, help_text="The date as the source gives it: YYYY, YYYY-MM or YYYY-MM-DD."
    )

    def __str__(self) -> str:
        return self.title


class PublishedComparison(models.Model):
    """A comparison table an article printed (e.g. seed 002's stacks with a cloud API row)."""

    key = models.CharField(max_length=200, unique=True)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="comparisons")
    title = models.CharField(max_length=500)
    notes = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.title


class PublishedComparisonRow(models.Model):
    comparison = models.ForeignKey(PublishedComparison, on_delete=models.CASCADE, related_name="rows")
    position = models.PositiveIntegerField()
    label = models.CharField(max_length=500)
    run = models.ForeignKey(
        "results.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="published_rows"
    )
    decode_tokens_per_s = models.FloatField(null=True, blank=True)
    prefill_tokens_per_s = models.FloatField(null=True, blank=True)
    power_w = models.FloatField(null=True, blank=True)
    cost_usd_per_mtok = models.FloatField(null=True, blank=True)
    gain_pct = models.FloatField(null=True, blank=True)
    # Each figure's digits as the article printed them ({"decode_tokens_per_s": "249.30"}):
    # a float keeps the value, not the trailing zero.
    printed = models.JSONField(default=dict, blank=True, help_text="Figures' digits as printed, by field.")
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["comparison", "position"]
        constraints = [models.UniqueConstraint(fields=["comparison", "position"], name="uniq_cmp_row")]


class PublishedExperiment(models.Model):
    """One phase of a tuning journey (seed 003's phases)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="experiments")
    position = models.PositiveIntegerField()
    phase = models.CharField(max_length=100)
    label = models.CharField(max_length=500)
    decode_tokens_per_s = models.FloatField(null=True, blank=True)
    printed = models.JSONField(default=dict, blank=True, help_text="Figures' digits as printed, by field.")
    config = models.JSONField(default=dict, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["source", "position"]
        constraints = [models.UniqueConstraint(fields=["source", "position"], name="uniq_experiment")]


class PublishedFit(models.Model):
    """A fitted formula an article printed."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="fits")
    name = models.CharField(max_length=300)
    formula = models.CharField(max_length=500)
    notes = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "name"], name="uniq_fit")]

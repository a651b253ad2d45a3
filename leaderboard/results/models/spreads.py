"""One row per rig × stack × model file × configuration × workload that has measured
runs: the sums its run-to-run spread is read from (boards/selectors/noise.py).

A rig page lists the spreads of a rig's most-run configurations; computed from the
runs, that is an aggregate over every measured run of the rig (170k runs for the
busiest rig at a million: benchmarks/site_latency.py), so the sums are kept here.
On PostgreSQL a trigger on ``results_run`` (migration 0010_run_spread_summary) keeps
them in the same transaction as any write to a run — the single POST's one-statement
insert, the bulk intake, a finish, an abort, a delete, COPY: a new run adds to its
group's sums, an update or a delete recomputes the groups it touched from their runs.
That trigger is the fenced speed-up; its reference is the aggregate over the runs
(``noise.spread_rows_from_runs``), and tests/boards/test_spread_summary.py checks
that the two agree. Elsewhere (SQLite) the
table stays empty and the rig page aggregates the runs."""

from __future__ import annotations

from django.db import models

from leaderboard.results.models.catalog import Configuration, ModelFile, Stack, Workload
from leaderboard.results.models.rigs import Rig


class RunSpread(models.Model):
    """The measured runs of one configuration on one rig (finished, summary from raw
    samples, with a median): how many, and the sums of their decode t/s medians."""

    rig = models.ForeignKey(Rig, on_delete=models.CASCADE, related_name="+")
    stack = models.ForeignKey(Stack, on_delete=models.CASCADE, related_name="+")
    model_file = models.ForeignKey(ModelFile, on_delete=models.CASCADE, related_name="+")
    configuration = models.ForeignKey(Configuration, on_delete=models.CASCADE, related_name="+")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="+")
    n = models.PositiveIntegerField(help_text="Measured runs in the group.")
    any_run_id = models.BigIntegerField(help_text="The highest run id of the group: its catalog rows name it.")
    mean = models.FloatField(help_text="Mean of the runs' decode t/s medians.")
    sumsq = models.FloatField(help_text="Σ median².")
    n_log = models.PositiveIntegerField(help_text="Runs with a median above 0 (the log-scale sums' count).")
    sum_logs = models.FloatField(null=True, help_text="Σ ln(median) over those.")
    sum_log_squares = models.FloatField(null=True, help_text="Σ ln(median)² over those.")
    lo = models.FloatField(help_text="Lowest median.")
    hi = models.FloatField(help_text="Highest median.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rig", "stack", "model_file", "configuration", "workload"], name="uniq_run_spread_group"
            )
        ]
        indexes = [
            # A rig page's spreads: its groups of two or more runs, most runs first.
            models.Index(
                "rig",
                models.F("n").desc(),
                models.F("mean").desc(),
                "stack",
                "model_file",
                "configuration",
                "workload",
                name="run_spread_rig_rank_idx",
                condition=models.Q(n__gte=2),
            )
        ]

    def __str__(self) -> str:
        return f"{self.n} runs of group {self.any_run_id}"

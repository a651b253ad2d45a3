"""A run's concurrency sweep: per level, the raw per-request figures and the
statistics the service computed from them (leaderboard.results.services.concurrency,
with runners.distribution), never taken from the client."""

from __future__ import annotations

from django.db import models

from leaderboard.results.models.runs import Run
from runners import stats


class ConcurrencyLevel(models.Model):
    """One concurrency level of a run: N streams at once, ``n_requests`` requests in all."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="concurrency_levels")
    concurrency = models.PositiveIntegerField(help_text="Streams sending at once.")
    n_requests = models.PositiveIntegerField(help_text="Requests asked for at this level.")
    wall_s = models.FloatField(null=True, blank=True)
    energy_j = models.FloatField(null=True, blank=True, help_text="GPU energy over the level (NVML).")
    power_w_mean = models.FloatField(null=True, blank=True)
    draft_n = models.PositiveIntegerField(null=True, blank=True, help_text="Level-wide, when requests give none.")
    draft_n_accepted = models.PositiveIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)

    # Computed from the requests by the service.
    n_ok = models.PositiveIntegerField(default=0)
    n_failed = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    output_tokens_per_s = models.FloatField(null=True, blank=True, help_text="Aggregate over all streams.")
    requests_per_s = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_mean = models.FloatField(null=True, blank=True, help_text="Per stream.")
    decode_tokens_per_s_p50 = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_p90 = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_p99 = models.FloatField(null=True, blank=True)
    ttft_ms_p50 = models.FloatField(null=True, blank=True)
    ttft_ms_p90 = models.FloatField(null=True, blank=True)
    ttft_ms_p99 = models.FloatField(null=True, blank=True)
    itl_ms_p50 = models.FloatField(null=True, blank=True)
    itl_ms_p99 = models.FloatField(null=True, blank=True)
    acceptance_pct = models.FloatField(null=True, blank=True)
    energy_j_per_token = models.FloatField(null=True, blank=True)
    stats_reasons = models.JSONField(
        default=dict, blank=True, help_text="Why a computed figure is empty, by field (e.g. fewer than 2 values)."
    )

    class Meta:
        ordering = ["run", "concurrency"]
        constraints = [models.UniqueConstraint(fields=["run", "concurrency"], name="uniq_concurrency_level")]
        indexes = [models.Index(fields=["concurrency", "-output_tokens_per_s"], name="concurrency_rank_idx")]

    def __str__(self) -> str:
        return f"{self.run_id} × {self.concurrency} streams"


class ConcurrencyRequest(models.Model):
    """One request of a concurrency level, as the runner measured it."""

    level = models.ForeignKey(ConcurrencyLevel, on_delete=models.CASCADE, related_name="requests")
    index = models.PositiveIntegerField(help_text="1-based, in the order the requests were sent.")
    stream = models.PositiveIntegerField(help_text="Which of the level's streams sent it (1-based).")
    started_s = models.FloatField(null=True, blank=True, help_text="Sent, seconds after the level started.")
    ended_s = models.FloatField(null=True, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_client = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_server = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    tokens_generated = models.PositiveIntegerField(null=True, blank=True)
    draft_n = models.PositiveIntegerField(null=True, blank=True)
    draft_n_accepted = models.PositiveIntegerField(null=True, blank=True)
    itl_ms = models.JSONField(default=list, blank=True, help_text="Gaps between the stream's chunks, ms.")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["level", "index"]
        constraints = [models.UniqueConstraint(fields=["level", "index"], name="uniq_concurrency_request")]

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Return the server's decode speed when it reported one, else the client's."""
        return stats.decode_tokens_per_s(server=self.decode_tokens_per_s_server, client=self.decode_tokens_per_s_client)

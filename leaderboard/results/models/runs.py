"""A benchmark run, its raw per-repetition samples and its context-sweep points.

The summary columns on Run are computed by the service from the raw samples
(leaderboard.results.services.summary), never taken from the client. Reported
runs without samples carry the summary their article published instead;
``summary_source`` says which."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from leaderboard.core.fields import DocumentField
from leaderboard.results.models.catalog import Configuration, ModelFile, Stack, Workload
from leaderboard.results.models.published import Source
from leaderboard.results.models.rigs import Rig, RigScopedQuerySet
from runners import stats


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"


class Provenance(models.TextChoices):
    MEASURED = "measured", "Measured"
    REPORTED = "reported", "Reported"


class SummarySource(models.TextChoices):
    SAMPLES = "samples", "Computed from raw samples"
    PUBLISHED = "published", "As published by the source"
    # llama-bench's Markdown table: the mean ± SD it printed, no samples, n as the
    # submitter stated it (extra['llama_bench']['summary']).
    PRINTED = "printed", "Mean ± SD as llama-bench printed it (no samples)"
    # A run whose figures are all per context length: its headline is the
    # shallowest depth's (services.summary.sweep_headline), so it can be ranked.
    SWEEP = "sweep", "Headline of its context sweep (shortest context)"
    NONE = "none", "No figures"


# The columns that make two runs "the same configuration on the same rig": run-to-run
# noise and "best run of each configuration" are taken over runs sharing all five.
CONFIGURATION_GROUP = ("rig_id", "stack_id", "model_file_id", "configuration_id", "workload_id")


class RunQuerySet(RigScopedQuerySet["Run"]):
    """Runs are seen exactly when their rig is: ``Run.objects.public()`` for every
    public list, ``Run.objects.visible_to(user)`` for an address of one run."""


class Run(models.Model):
    """One benchmark run: rig × stack × model file × configuration × workload."""

    uuid = models.UUIDField(unique=True, default=uuid.uuid4, help_text="Client-generated idempotency key.")
    rig = models.ForeignKey(Rig, on_delete=models.PROTECT, related_name="runs")
    stack = models.ForeignKey(Stack, on_delete=models.PROTECT, related_name="runs")
    model_file = models.ForeignKey(ModelFile, on_delete=models.PROTECT, related_name="runs")
    configuration = models.ForeignKey(Configuration, on_delete=models.PROTECT, related_name="runs")
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.RUNNING)
    failure_reason = models.TextField(blank=True)
    provenance = models.CharField(max_length=16, choices=Provenance.choices, default=Provenance.MEASURED)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    report_key = models.CharField(max_length=200, blank=True, help_text="The id of a reported result in its file.")
    # sha256 of hardware + model file + workload: two runs with the same key
    # measure the same thing and may be ranked and compared.
    comparison_key = models.CharField(max_length=64, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    notes = models.TextField(blank=True)
    fingerprint = DocumentField(default=dict, blank=True)
    server_log_tail = models.TextField(blank=True)
    extra = DocumentField(default=dict, blank=True)

    # Summary, computed by the service (or published, for reported runs).
    summary_source = models.CharField(max_length=16, choices=SummarySource.choices, default=SummarySource.NONE)
    n_samples = models.PositiveIntegerField(default=0)
    # Repetitions whose output check failed: a run with any is never ranked (a fast but
    # broken run is not a winner). Kept with the summary, and in the rank indexes below,
    # so a board's filter reads no sample (a per-run probe cost 145 ms a GPU page at 10M).
    failed_checks = models.PositiveIntegerField(default=0, help_text="Repetitions whose output check failed.")
    decode_tokens_per_s_mean = models.FloatField(null=True, blank=True, db_index=True)
    decode_tokens_per_s_median = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_stdev = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_min = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_max = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_range = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_ci95_low = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_ci95_high = models.FloatField(null=True, blank=True)
    prefill_tokens_per_s_mean = models.FloatField(null=True, blank=True)
    ttft_ms_mean = models.FloatField(null=True, blank=True)
    acceptance_pct = models.FloatField(null=True, blank=True)
    power_w_mean = models.FloatField(null=True, blank=True)
    energy_j_total = models.FloatField(null=True, blank=True)
    tokens_per_kwh = models.FloatField(null=True, blank=True)
    cost_usd_per_mtok = models.FloatField(null=True, blank=True, help_text="Published API price (reported runs).")

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "-decode_tokens_per_s_mean"], name="run_rank_idx"),
            models.Index(fields=["provenance", "status"], name="run_prov_idx"),
            # The ranking itself, index-only: a page deep in it (/?page=200 reads 10,000 runs),
            # the public filter, the default workload and a GPU or speculation filter read no
            # table row (issues 24, 40: a GPU + MTP filter read and sorted 150k runs at 1M).
            models.Index(
                models.F("decode_tokens_per_s_mean").desc(),
                models.F("id").desc(),
                name="run_ranked_idx",
                include=["rig", "workload", "configuration", "failed_checks"],
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
            # Partial indexes over what the leaderboard ranks (finished runs
            # with a figure): sorting by efficiency/$, a rig's best-of list and
            # a rig's history (measured at 100k runs: benchmarks/site_latency.py).
            models.Index(
                models.F("tokens_per_kwh").desc(nulls_last=True),
                models.F("id").desc(),
                name="run_ranked_kwh_idx",
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
            models.Index(
                "rig",
                "stack",
                "model_file",
                "configuration",
                "workload",
                models.F("decode_tokens_per_s_mean").desc(),
                models.F("id").desc(),
                name="run_ranked_group_idx",
                # Its failed checks: best-of-each's probes and count of groups read no table row.
                include=["failed_checks"],
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
            models.Index(fields=["rig", "-created_at", "-id"], name="run_rig_history_idx"),
            # The latest ranked runs of many rigs at once (a GPU page's shares of the bound
            # read its GPU's latest 5,000): walked newest first, index-only, to the cap; per
            # rig (above) every run of the GPU's rigs was read and sorted, 150k at 1M (issue 40).
            models.Index(
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="run_recent_idx",
                include=["rig"],
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
            # One rig's runs in rank order: the leaderboard filtered to a rig and a rig
            # page's best-of list walk it and stop at the page (issue 24).
            models.Index(
                "rig",
                models.F("decode_tokens_per_s_mean").desc(),
                models.F("id").desc(),
                name="run_rig_rank_idx",
                include=["failed_checks"],
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
            # A rig's run-to-run spreads (boards/selectors/noise.py) aggregate its measured
            # runs per configuration from this index alone (index-only, in group order),
            # and a model file + date filter counts its matches the same way (issue 24).
            # Neither holds the review state: the public filter is a NOT IN over rig_id.
            models.Index(
                fields=["rig", "stack", "model_file", "configuration", "workload"],
                name="run_spread_idx",
                include=["id", "decode_tokens_per_s_median"],
                condition=models.Q(
                    status="finished", summary_source="samples", decode_tokens_per_s_median__isnull=False
                ),
            ),
            models.Index(
                fields=["model_file", "created_at"],
                name="run_model_created_idx",
                # provenance and source: a date filter tells a reported run's date from a
                # measured run's on them; without them its count read the table (issue 24).
                include=["id", "rig", "decode_tokens_per_s_mean", "provenance", "source", "failed_checks"],
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
            # The few runs with a published price: a sort on the shown cost reads those
            # cheap enough to reach the page (boards/filters.cost_sort_window).
            models.Index(
                fields=["cost_usd_per_mtok"],
                name="run_published_cost_idx",
                condition=models.Q(cost_usd_per_mtok__isnull=False),
            ),
            # A model file's page ranks that file's runs (issue 12); the leaderboard filtered
            # to model files walks each file's (filters.model_rank_window) and counts them.
            # Index-only with what the board's filters read (the workload, a date, the review
            # state by rig): the walk read the table for every run it passed (issue 40).
            models.Index(
                "model_file",
                models.F("decode_tokens_per_s_mean").desc(),
                models.F("id").desc(),
                name="run_model_rank_idx",
                include=["rig", "workload", "created_at", "provenance", "source", "failed_checks"],
                condition=models.Q(status="finished", decode_tokens_per_s_mean__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_file} on {self.rig} ({self.stack})"

    def decode_samples(self) -> list[float]:
        """Return the per-repetition decode t/s (the server's figure, else the
        client's: Sample.decode_tokens_per_s), in index order, skipping
        repetitions with neither. Reads prefetched samples when there are."""
        return [v for s in self.samples.all() if (v := s.decode_tokens_per_s) is not None]

    def build_decode_samples(self) -> list[float]:
        """Return the per-repetition decode t/s two builds are compared by (the
        client's, else the server's: Sample.build_decode_tokens_per_s), in index
        order, skipping repetitions with neither. The nightly chain judges by these,
        not by ``decode_samples``, whose server figure means another thing before
        llama.cpp b10423 than after. Reads prefetched samples when there are."""
        return [v for s in self.samples.all() if (v := s.build_decode_tokens_per_s) is not None]


class Sample(models.Model):
    """One measured repetition. Raw figures as the runner sent them."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField(help_text="1-based repetition number.")
    decode_tokens_per_s_server = models.FloatField(null=True, blank=True)
    decode_tokens_per_s_client = models.FloatField(null=True, blank=True)
    prefill_tokens_per_s = models.FloatField(null=True, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    tokens_generated = models.PositiveIntegerField(null=True, blank=True)
    draft_n = models.PositiveIntegerField(null=True, blank=True)
    draft_n_accepted = models.PositiveIntegerField(null=True, blank=True)
    energy_j = models.FloatField(null=True, blank=True)
    power_w_mean = models.FloatField(null=True, blank=True)
    power_w_peak = models.FloatField(null=True, blank=True)
    vram_peak_mib = models.FloatField(null=True, blank=True)
    stop_reason = models.CharField(max_length=32, blank=True)
    output_ok = models.BooleanField(null=True, blank=True, help_text="Output check passed (HTML game, not degenerate).")
    flags = models.JSONField(default=list, blank=True, help_text="Output-check and timing-disagreement flags.")
    itl_ms = models.JSONField(default=list, blank=True, help_text="Gaps between the stream's chunks, ms.")

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="uniq_sample_index")]
        # The leaderboard leaves out runs with a failed output check by default:
        # the few failed samples, indexed on their own, make that anti-join cheap.
        indexes = [models.Index(fields=["run"], name="sample_failed_check_idx", condition=models.Q(output_ok=False))]

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Return the server's decode speed when it reported one, else the client's."""
        return stats.decode_tokens_per_s(server=self.decode_tokens_per_s_server, client=self.decode_tokens_per_s_client)

    @property
    def build_decode_tokens_per_s(self) -> float | None:
        """Return the decode speed builds are compared by: the client's, else the
        server's (``stats.build_decode_tokens_per_s``: the server's figure changed
        its definition at llama.cpp b10423)."""
        return stats.build_decode_tokens_per_s(
            server=self.decode_tokens_per_s_server, client=self.decode_tokens_per_s_client
        )

    @property
    def acceptance_pct(self) -> float | None:
        """Return accepted / drafted in percent; None without drafts."""
        if not self.draft_n or self.draft_n_accepted is None:
            return None
        return 100.0 * self.draft_n_accepted / self.draft_n


class SweepPoint(models.Model):
    """One depth of a context sweep."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="sweep_points")
    # Null only for published rows whose article gave a label ("198K") but no
    # exact token count; measured points always carry it.
    ctx_tokens = models.PositiveIntegerField(null=True, blank=True)
    ctx_label = models.CharField(max_length=32, blank=True)
    prefill_tokens_per_s = models.FloatField(null=True, blank=True)
    decode_tokens_per_s = models.FloatField(null=True, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    power_w = models.FloatField(null=True, blank=True)
    energy_j = models.FloatField(null=True, blank=True)
    tokens_per_kwh = models.FloatField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        # NULL depths (a printed '198K' without a count) last on SQLite too.
        ordering = ["run", models.F("ctx_tokens").asc(nulls_last=True)]

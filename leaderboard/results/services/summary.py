"""Run summaries, recomputed from the raw samples with runners.stats (the same
module the runner's table uses), never trusted from the client."""

from __future__ import annotations

from collections.abc import Sequence

from leaderboard.results.hardware.stored import store_ranked_shares
from leaderboard.results.models import Run, Sample, SummarySource, SweepPoint
from runners import stats

# What the samples count; then the figures, None without them.
COUNT_FIELDS = ["summary_source", "n_samples", "failed_checks"]
FIGURE_FIELDS = [
    "decode_tokens_per_s_mean",
    "decode_tokens_per_s_median",
    "decode_tokens_per_s_stdev",
    "decode_tokens_per_s_min",
    "decode_tokens_per_s_max",
    "decode_tokens_per_s_range",
    "decode_tokens_per_s_ci95_low",
    "decode_tokens_per_s_ci95_high",
    "prefill_tokens_per_s_mean",
    "ttft_ms_mean",
    "acceptance_pct",
    "power_w_mean",
    "energy_j_total",
    "tokens_per_kwh",
]
SUMMARY_FIELDS = [*COUNT_FIELDS, *FIGURE_FIELDS]
# cost_usd_per_mtok is published only (an API price), never computed here.


def _mean(values: list[float | None]) -> float | None:
    return stats.mean([v for v in values if v is not None])


def sweep_headline(points: Sequence[SweepPoint]) -> SweepPoint | None:
    """Return the sweep point that stands for a sweep-only run: the shortest
    context with a decode figure (a point without a token count, e.g. a printed
    '198K', comes after every counted one); None when no point has decode t/s."""
    with_decode = [p for p in points if p.decode_tokens_per_s is not None]
    if not with_decode:
        return None
    return min(with_decode, key=lambda p: (p.ctx_tokens is None, p.ctx_tokens or 0))


def run_summary_apply(*, run: Run, samples: list[Sample], sweep_points: Sequence[SweepPoint] = ()) -> None:
    """Set ``run``'s summary columns from ``samples`` (not saved).

    With no samples the run keeps a published or printed summary if it has one; else a
    run with a context sweep takes its sweep's headline (``sweep_headline``,
    ``summary_source='sweep'``, n = 0); else it gets no figures."""
    if not samples:
        if run.summary_source not in (SummarySource.PUBLISHED, SummarySource.PRINTED):
            for field in FIGURE_FIELDS:
                setattr(run, field, None)
            run.summary_source = SummarySource.NONE
            run.n_samples = 0
            run.failed_checks = 0
            headline = sweep_headline(sweep_points)
            if headline is not None:
                run.summary_source = SummarySource.SWEEP
                run.decode_tokens_per_s_mean = headline.decode_tokens_per_s
                run.prefill_tokens_per_s_mean = headline.prefill_tokens_per_s
                run.ttft_ms_mean = headline.ttft_ms
                run.power_w_mean = headline.power_w
                run.tokens_per_kwh = headline.tokens_per_kwh
        return
    decode = [s.decode_tokens_per_s for s in samples]
    decode_present = [v for v in decode if v is not None]
    summary = stats.summarize(decode_present)
    run.summary_source = SummarySource.SAMPLES
    run.n_samples = len(samples)
    run.failed_checks = sum(1 for s in samples if s.output_ok is False)
    run.decode_tokens_per_s_mean = summary.mean if summary else None
    run.decode_tokens_per_s_median = summary.median if summary else None
    run.decode_tokens_per_s_stdev = summary.stdev if summary else None
    run.decode_tokens_per_s_min = summary.min if summary else None
    run.decode_tokens_per_s_max = summary.max if summary else None
    run.decode_tokens_per_s_range = summary.range if summary else None
    run.decode_tokens_per_s_ci95_low = summary.ci95_low if summary else None
    run.decode_tokens_per_s_ci95_high = summary.ci95_high if summary else None
    run.prefill_tokens_per_s_mean = _mean([s.prefill_tokens_per_s for s in samples])
    run.ttft_ms_mean = _mean([s.ttft_ms for s in samples])
    run.acceptance_pct = stats.acceptance_pct([s.draft_n for s in samples], [s.draft_n_accepted for s in samples])
    run.power_w_mean = _mean([s.power_w_mean for s in samples])
    energies = [s.energy_j for s in samples if s.energy_j is not None and s.tokens_generated is not None]
    if energies and len(energies) == len(samples):
        run.energy_j_total = sum(energies)
        tokens = sum(s.tokens_generated or 0 for s in samples)
        run.tokens_per_kwh = stats.tokens_per_kwh(tokens, run.energy_j_total)
    else:
        # Energy for only some repetitions would make tokens/kWh a guess.
        run.energy_j_total = None
        run.tokens_per_kwh = None


def run_summary_update(*, run: Run) -> Run:
    """Recompute and save ``run``'s summary from its stored samples; return it. Read from the
    database, not ``run``'s prefetched rows (a run as created carries its samples as sent)."""
    run_summary_apply(
        run=run,
        samples=list(Sample.objects.filter(run=run)),
        sweep_points=list(SweepPoint.objects.filter(run=run)),
    )
    run.save(update_fields=[*SUMMARY_FIELDS, "updated_at"])
    store_ranked_shares([run])
    return run

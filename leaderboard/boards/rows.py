"""A run as the pages show it: one flat row with every leaderboard column,
built in one place (``row_from_values``) from plain values
(``selectors.leaderboard.rows_by_ids``) or from a Run loaded with its related
rows (``run_row``). The same row feeds the HTML table,
the CSV and the JSON export, so the three cannot disagree."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from leaderboard.results.models import Engine, Run, SpeculativeType, SummarySource


def electricity_usd_per_mtok(tokens_per_kwh: float | None, usd_per_kwh: float) -> float | None:
    """Return the electricity cost of one million tokens at ``usd_per_kwh``; None without tokens/kWh."""
    if not tokens_per_kwh or tokens_per_kwh <= 0:
        return None
    return usd_per_kwh * 1_000_000 / tokens_per_kwh


def _params(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}B"


ENGINE_LABELS = dict(Engine.choices)
SPEC_LABELS = dict(SpeculativeType.choices)


def class_label(
    *,
    total_params_b: float | None,
    active_params_b: float | None,
    architecture: str,
    speculative_type: str,
    weight_format: str,
) -> str:
    """Return a short class like seed 004's ``35B MoE-A3B + MTP`` or ``27B dense + DFlash``.

    Parts that are unknown are left out; the speculative type wins over the
    weight format as the suffix because it moves decode speed the most."""
    size = _params(total_params_b)
    if architecture == "moe":
        body = "MoE" + (f"-A{_params(active_params_b)}" if active_params_b else "")
    elif architecture in ("dense", "hybrid"):
        body = architecture
    else:
        body = ""
    head = " ".join(p for p in (size, body) if p)
    if speculative_type and speculative_type not in (SpeculativeType.NONE, SpeculativeType.UNKNOWN):
        suffix = SPEC_LABELS.get(speculative_type, speculative_type)
    else:
        suffix = weight_format if weight_format not in ("", "GGUF") else ""
    return " + ".join(p for p in (head, suffix) if p)


@dataclass(frozen=True)
class LeaderboardRow:
    """One run's leaderboard columns. Metric names carry their units."""

    run_id: int
    rig_id: int
    rig: str
    gpus: str
    engine: str
    build: str
    model: str
    model_class: str
    quantization: str
    weight_format: str
    speculative_type: str
    acceptance_pct: float | None
    ctx_size: int | None
    workload: str
    n: int
    decode_tokens_per_s_mean: float | None
    decode_tokens_per_s_stdev: float | None
    decode_tokens_per_s_min: float | None
    decode_tokens_per_s_max: float | None
    decode_tokens_per_s_range: float | None
    power_w_mean: float | None
    tokens_per_kwh: float | None
    electricity_usd_per_mtok: float | None
    provenance: str
    source_title: str
    source_url: str
    date: datetime
    # What the figures are: 'samples', 'published', 'printed' (a llama-bench Markdown
    # table's mean ± SD) or 'sweep' (a sweep-only run ranked by its shortest context's figures).
    summary_source: str = ""
    # A reported run's API price as its article printed it (seed 002's cloud row).
    cost_usd_per_mtok: float | None = None
    # The date its source gives (YYYY, YYYY-MM or YYYY-MM-DD); '' for measured runs.
    published_date: str = ""
    vram_peak_mib: float | None = None
    failed_checks: int = 0
    model_file_id: int | None = None
    gpu_models: tuple[str, ...] = ()
    source_id: int | None = None
    source_author: str = ""
    source_key: str = ""
    # The repetitions its source stated (a workload's n), for rows with no stored samples.
    n_stated: int | None = None
    # Decode t/s ÷ the run's memory-bandwidth bound, as stored (results/hardware/stored.py).
    decode_share_of_bound: float | None = None

    @property
    def speculative_shown(self) -> str:
        """Return the speculative type as a cell shows it: '' for none (a bare "None"
        reads as a missing value) and for a source that did not say ("Unknown" beside
        the engine read as a product: "vLLM Unknown")."""
        blank = ("", SPEC_LABELS[SpeculativeType.NONE], SPEC_LABELS[SpeculativeType.UNKNOWN])
        return "" if self.speculative_type in blank else self.speculative_type

    @property
    def card_not_stated(self) -> bool:
        """Return True on a rig that mixes GPU models (seed 000: an RTX 3090 Ti and an
        RTX 3090): no run records which card ran it, so none is ranked under one
        model (``filters.runs_filter``'s GPU filter leaves them out)."""
        return len(self.gpu_models) > 1

    @property
    def stack(self) -> str:
        return f"{self.engine} {self.build}".strip()

    @property
    def is_sweep(self) -> bool:
        return self.summary_source == "sweep"

    @property
    def date_label(self) -> str:
        """Return the date a visitor should read: the source's for a reported run, else the run's day."""
        if self.provenance == "reported" and self.published_date:
            return self.published_date
        if self.provenance == "reported":
            return "undated"
        return self.date.strftime("%Y-%m-%d")

    @property
    def n_exported(self) -> int | None:
        """Return the n an export prints: the stored repetitions the figures were computed
        from; for a published or printed summary, the repetitions its source stated; else
        None (not stated: an empty cell, never a 0 beside a published SD)."""
        if self.n:
            return self.n
        if self.summary_source in (SummarySource.PUBLISHED, SummarySource.PRINTED):
            return self.n_stated
        return None

    def export(self) -> dict[str, Any]:
        """Return the row as the CSV / JSON exports write it (plain values, ISO date,
        floats rounded to 4 decimals so a mean prints 249.303, not 249.30300000000003;
        ``n`` as ``n_exported``; no speculative type is an empty cell, not "None")."""
        out: dict[str, Any] = {name: export_value(getattr(self, name)) for name in EXPORT_COLUMNS}
        out["date"] = self.date.isoformat()
        out["n"] = self.n_exported
        out["speculative_type"] = self.speculative_shown
        return out


def export_value(value: Any) -> Any:
    """Return ``value`` as an export writes it: floats rounded to 4 decimals (None for
    NaN or infinity, which JSON cannot hold), the rest unchanged."""
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    return value


# The exported columns, in order: every row field but the internal ids.
EXPORT_COLUMNS = [
    name
    for name in LeaderboardRow.__dataclass_fields__
    if name not in ("rig_id", "model_file_id", "gpu_models", "source_id", "source_author", "n_stated")
]

# What the exports' less obvious columns hold (the JSON export's meta and the data card say it).
EXPORT_NOTES = {
    "n": "Repetitions behind the figures: counted from the stored samples when summary_source is "
    "'samples', else as the source stated them; empty when not stated.",
    "summary_source": "Where the figures come from: 'samples' (computed from raw repetitions), "
    "'published' (as an article printed them), 'printed' (llama-bench's mean ± SD) or 'sweep' "
    "(the shortest context of a context sweep).",
    "speculative_type": "Speculative decoding used; empty for none.",
    "decode_share_of_bound": "Decode t/s as a share of the run's memory-bandwidth bound (0.72 for 72%): "
    "bandwidth ÷ bytes read per token, from the hardware catalog and the model file; empty where the run "
    "has no bound or speculative decoding passes it.",
}


# The Run columns a row is built from, as ``QuerySet.values()`` names them.
ROW_VALUES = (
    "pk", "rig_id", "rig__name", "stack__engine", "stack__build", "model_file__name", "model_file__quantization",
    "model_file__weight_format", "model_file__architecture", "model_file__total_params_b",
    "model_file__active_params_b", "configuration__speculative_type", "configuration__ctx_size", "workload__name",
    "workload__version", "acceptance_pct", "n_samples", "decode_tokens_per_s_mean", "decode_tokens_per_s_stdev",
    "decode_tokens_per_s_min", "decode_tokens_per_s_max", "decode_tokens_per_s_range", "power_w_mean",
    "tokens_per_kwh", "provenance", "source__title", "source__url", "created_at", "summary_source",
    "cost_usd_per_mtok", "source__published_date", "model_file_id", "source_id", "source__author_handle",
    "source__key", "workload__repetitions", "failed_checks",
)  # fmt: skip


def row_from_values(
    v: Mapping[str, Any],
    *,
    gpus: str,
    usd_per_kwh: float,
    gpu_models: tuple[str, ...] = (),
    vram_peak_mib: float | None = None,
    decode_share_of_bound: float | None = None,
) -> LeaderboardRow:
    """Return the leaderboard row of one run given as ``ROW_VALUES`` (a
    ``values()`` dict), its rig's GPU label and GPU models, its samples'
    peak VRAM and its stored share of the bound: the one place a
    row is built."""
    return LeaderboardRow(
        run_id=v["pk"],
        rig_id=v["rig_id"],
        rig=v["rig__name"],
        gpus=gpus,
        engine=ENGINE_LABELS.get(v["stack__engine"], v["stack__engine"]),
        build=v["stack__build"],
        model=v["model_file__name"],
        model_class=class_label(
            total_params_b=v["model_file__total_params_b"],
            active_params_b=v["model_file__active_params_b"],
            architecture=v["model_file__architecture"],
            speculative_type=v["configuration__speculative_type"],
            weight_format=v["model_file__weight_format"],
        ),
        quantization=v["model_file__quantization"],
        weight_format=v["model_file__weight_format"],
        speculative_type=SPEC_LABELS.get(v["configuration__speculative_type"], ""),
        acceptance_pct=v["acceptance_pct"],
        ctx_size=v["configuration__ctx_size"],
        workload=f"{v['workload__name']} v{v['workload__version']}",
        n=v["n_samples"],
        decode_tokens_per_s_mean=v["decode_tokens_per_s_mean"],
        decode_tokens_per_s_stdev=v["decode_tokens_per_s_stdev"],
        decode_tokens_per_s_min=v["decode_tokens_per_s_min"],
        decode_tokens_per_s_max=v["decode_tokens_per_s_max"],
        decode_tokens_per_s_range=v["decode_tokens_per_s_range"],
        power_w_mean=v["power_w_mean"],
        tokens_per_kwh=v["tokens_per_kwh"],
        electricity_usd_per_mtok=electricity_usd_per_mtok(v["tokens_per_kwh"], usd_per_kwh),
        provenance=v["provenance"],
        source_title=v["source__title"] or "",
        source_url=v["source__url"] or "",
        date=v["created_at"],
        summary_source=v["summary_source"],
        cost_usd_per_mtok=v["cost_usd_per_mtok"],
        published_date=v["source__published_date"] or "",
        vram_peak_mib=vram_peak_mib,
        failed_checks=v["failed_checks"],
        model_file_id=v["model_file_id"],
        gpu_models=gpu_models,
        source_id=v["source_id"],
        source_author=v["source__author_handle"] or "",
        source_key=v["source__key"] or "",
        n_stated=v["workload__repetitions"],
        decode_share_of_bound=decode_share_of_bound,
    )


def run_row(run: Run, *, usd_per_kwh: float) -> LeaderboardRow:
    """Return ``run`` as a leaderboard row; ``run`` must carry its related rows,
    its prefetched samples and its rig's prefetched GPUs, or this costs queries per row."""
    values: dict[str, Any] = {}
    for name in ROW_VALUES:
        # "model_file__name" is run.model_file.name; "pk", run.pk. No source: None.
        head, _, attr = name.partition("__")
        related = getattr(run, head)
        values[name] = (getattr(related, attr) if related is not None else None) if attr else related
    samples = list(run.samples.all())
    return row_from_values(
        values,
        gpus=run.rig.gpu_summary(),
        usd_per_kwh=usd_per_kwh,
        gpu_models=tuple(dict.fromkeys(g.model for g in run.rig.gpus.all())),
        vram_peak_mib=max((s.vram_peak_mib for s in samples if s.vram_peak_mib is not None), default=None),
        decode_share_of_bound=_stored_share(run),
    )


def _stored_share(run: Run) -> float | None:
    """Return the run's stored share of its bound (``select_related("bound_share")``); None without one."""
    try:
        return run.bound_share.decode_share
    except ObjectDoesNotExist:
        return None


def run_label(run: Run) -> str:
    """Return a short human label for charts and headings: ``#12 rig · model quant · engine spec``."""
    spec = run.configuration.speculative_type
    # "unknown" is a source that did not say: nothing to print ("vLLM Unknown" read as a product).
    spec_part = f" {run.configuration.get_speculative_type_display()}" if spec not in ("", "none", "unknown") else ""
    model = f"{run.model_file.name} {run.model_file.quantization}".strip()
    return f"#{run.pk} {run.rig.name} · {model} · {run.stack.get_engine_display()}{spec_part}"

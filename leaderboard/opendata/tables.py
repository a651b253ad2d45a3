"""The dump's tables: every row the public may see, and nothing of an account.

Each table's rows go through the one public rule (``Run.objects.public()``,
``Campaign.objects.public()``, ``Subscription.objects.public()``: a rig awaiting
review or rejected is absent with all that hangs off it). Left out on purpose:
rig owners (account and free-text name), tokens, alert targets (webhooks,
e-mails), server logs, fingerprints, command lines and the runs' free ``extra``
(they may carry a machine's paths or hostnames); a campaign's parameters keep a
path's file name only."""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from leaderboard.campaigns.models import Campaign, CampaignStatus, Trial, TrialRole, TrialState
from leaderboard.opendata.schema import Column, Converters, Kind, Table
from leaderboard.regressions.models import Confirmation, Subscription, Verdict, VerdictKind
from leaderboard.results.api.serializers.outputs import run_page_path
from leaderboard.results.models import (
    Architecture,
    ConcurrencyLevel,
    Engine,
    RigGpu,
    Run,
    RunStatus,
    Sample,
    SpeculativeType,
    SweepPoint,
    gpu_label,
)
from runners import stats

INT, FLOAT, TEXT, BOOL, TIME = Kind.INT, Kind.FLOAT, Kind.TEXT, Kind.BOOL, Kind.TIME


def _one_of(choices: Any) -> str:
    """Return a value set as the data card lists it: 'a, b or c' (from the choices themselves)."""
    values = [str(v) for v in choices.values]
    return ", ".join(values[:-1]) + " or " + values[-1]


def _public_runs() -> Any:
    return Run.objects.public()


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _portable(value: Any) -> Any:
    """Return ``value`` with every absolute path replaced by its file name: a campaign
    recorded on a rig names its model by the path on that machine."""
    if isinstance(value, dict):
        return {k: _portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "~/")) or PureWindowsPath(value).drive):
        return (PureWindowsPath(value) if PureWindowsPath(value).drive else PurePosixPath(value)).name
    return value


def _run_converters() -> Converters:
    # The GPU label of every public rig, read once per dump (rigs are few beside runs).
    groups: dict[int, list[tuple[str, int]]] = {}
    for rig_id, model, count in (
        RigGpu.objects.public().order_by("rig_id", "position", "id").values_list("rig_id", "model", "count")
    ):
        groups.setdefault(rig_id, []).append((model, count))
    labels = {rig_id: gpu_label(gpus) for rig_id, gpus in groups.items()}
    return {
        "run_uuid": str,
        "page_path": run_page_path,
        "rig_gpus": lambda rig_id: labels.get(rig_id, ""),
    }


_STATS = "Computed by the service from the stored repetitions when summary_source is 'samples'; "
_PUBLISHED = "as the source printed it for 'published' and 'printed' rows"

RUNS = Table(
    name="runs",
    description="One row per public run: what was measured (comparison key, hardware, build, model file, "
    "configuration, workload), its statistics and where the figures come from.",
    columns=(
        Column("run_id", INT, "The run's id on this site; joins the other tables.", "pk"),
        Column("run_uuid", TEXT, "The run's idempotency key; GET /api/runs/{run_uuid}/ returns its detail.", "uuid"),
        Column("page_path", TEXT, "The run's page, a path on this site.", "pk"),
        Column("status", TEXT, _one_of(RunStatus) + "."),
        Column(
            "provenance",
            TEXT,
            "measured (by a Rigboard runner on the rig) or reported (figures an article or a public result "
            "set published, imported with a link to it).",
        ),
        Column(
            "summary_source",
            TEXT,
            "Where the statistics come from: 'samples' (computed from the raw repetitions, in the "
            "repetitions table), 'published' (as an article printed them), 'printed' (llama-bench's "
            "mean ± SD as printed, no repetitions), 'sweep' (the shortest context of its context sweep), "
            "'none' (no figures).",
        ),
        Column(
            "comparison_key",
            TEXT,
            "sha256 of hardware + model file + workload: only runs with the same key measured the same thing.",
        ),
        Column("created_at", TIME, "When the run was stored (a reported run: when it was imported)."),
        Column("started_at", TIME, "When the runner started measuring; empty for reported runs."),
        Column("finished_at", TIME, "When the runner finished; empty for reported runs."),
        Column("rig_id", INT, "The rig's id on this site (its page: /rigs/{rig_id}/)."),
        Column("rig_name", TEXT, "The rig's public name.", "rig__name"),
        Column("rig_gpus", TEXT, "The rig's GPUs as the site labels them, e.g. '6× RTX 3090'.", "rig_id"),
        Column("rig_cpu", TEXT, "The rig's CPU.", "rig__cpu"),
        Column("rig_cpu_cores", INT, "Its CPU cores.", "rig__cpu_cores"),
        Column("rig_ram_gb", FLOAT, "Its memory, GB.", "rig__ram_gb"),
        Column("rig_os", TEXT, "Its operating system.", "rig__os"),
        Column("rig_driver_version", TEXT, "Its GPU driver version.", "rig__driver_version"),
        Column("rig_cuda_version", TEXT, "Its CUDA version.", "rig__cuda_version"),
        Column("engine", TEXT, "The inference engine: " + _one_of(Engine) + ".", "stack__engine"),
        Column("build", TEXT, "The engine's build (commit or version); empty when not stated.", "stack__build"),
        Column("build_flags", TEXT, "Build flags or backend as stated.", "stack__build_flags"),
        Column("model_name", TEXT, "The model file's name.", "model_file__name"),
        Column("model_repo", TEXT, "Where the model file comes from (e.g. a Hugging Face repo).", "model_file__repo"),
        Column("model_quantization", TEXT, "Its quantization (Q4_K_M, IQ2_XXS, NVFP4…).", "model_file__quantization"),
        Column("model_weight_format", TEXT, "GGUF, NVFP4, AWQ-INT4…", "model_file__weight_format"),
        Column("model_architecture", TEXT, _one_of(Architecture) + ".", "model_file__architecture"),
        Column("model_total_params_b", FLOAT, "Total parameters, billions.", "model_file__total_params_b"),
        Column("model_active_params_b", FLOAT, "Active parameters (MoE), billions.", "model_file__active_params_b"),
        Column("model_file_size_bytes", INT, "The file's size, bytes.", "model_file__file_size_bytes"),
        Column("model_sha256", TEXT, "The file's sha256 when known.", "model_file__sha256"),
        Column("ctx_size", INT, "Context size the server was started with, tokens.", "configuration__ctx_size"),
        Column("n_gpu_layers", INT, "Layers offloaded to the GPU.", "configuration__n_gpu_layers"),
        Column("batch_size", INT, "Logical batch size, tokens.", "configuration__batch_size"),
        Column("ubatch_size", INT, "Physical batch size, tokens.", "configuration__ubatch_size"),
        Column("parallel", INT, "Server slots.", "configuration__parallel"),
        Column("threads", INT, "CPU threads.", "configuration__threads"),
        Column("flash_attn", TEXT, "on, off or auto.", "configuration__flash_attn"),
        Column("cache_type_k", TEXT, "KV cache type of K.", "configuration__cache_type_k"),
        Column("cache_type_v", TEXT, "KV cache type of V.", "configuration__cache_type_v"),
        Column("tensor_split", TEXT, "How layers are split over GPUs.", "configuration__tensor_split"),
        Column(
            "speculative_type",
            TEXT,
            "Speculative decoding: " + _one_of(SpeculativeType) + ".",
            "configuration__speculative_type",
        ),
        Column("draft_model", TEXT, "The draft model's name, when one is used.", "configuration__draft_model"),
        Column("draft_n_max", INT, "Most tokens drafted at once.", "configuration__draft_n_max"),
        Column("temperature", FLOAT, "Sampling temperature.", "configuration__temperature"),
        Column("workload_name", TEXT, "The benchmark workload (the prompt and settings measured).", "workload__name"),
        Column("workload_version", TEXT, "Its version.", "workload__version"),
        Column("workload_max_tokens", INT, "Tokens asked for per request.", "workload__max_tokens"),
        Column(
            "workload_repetitions",
            INT,
            "Repetitions the workload asks for or, for a published or printed summary, the n its source stated.",
            "workload__repetitions",
        ),
        Column("n_samples", INT, "Stored repetitions (rows in the repetitions table); 0 for a published summary."),
        Column("failed_checks", INT, "Repetitions whose output check failed; a run with any is not ranked."),
        Column("decode_tokens_per_s_mean", FLOAT, _STATS + _PUBLISHED + ". Generation speed, tokens/s."),
        Column("decode_tokens_per_s_median", FLOAT, "Median over the repetitions, tokens/s."),
        Column("decode_tokens_per_s_stdev", FLOAT, "Sample standard deviation (n−1), tokens/s; " + _PUBLISHED + "."),
        Column("decode_tokens_per_s_min", FLOAT, "Slowest repetition, tokens/s."),
        Column("decode_tokens_per_s_max", FLOAT, "Fastest repetition, tokens/s."),
        Column("decode_tokens_per_s_range", FLOAT, "max − min, tokens/s (or the range an article printed)."),
        Column("decode_tokens_per_s_ci95_low", FLOAT, "95% confidence interval of the mean, low end, tokens/s."),
        Column("decode_tokens_per_s_ci95_high", FLOAT, "95% confidence interval of the mean, high end, tokens/s."),
        Column("prefill_tokens_per_s_mean", FLOAT, "Prompt processing speed, tokens/s."),
        Column("ttft_ms_mean", FLOAT, "Time to first token, milliseconds."),
        Column("acceptance_pct", FLOAT, "Speculative drafts accepted, percent (pooled over repetitions)."),
        Column("power_w_mean", FLOAT, "Mean GPU power while generating, watts (NVML, or as published)."),
        Column("energy_j_total", FLOAT, "GPU energy over the repetitions, joules."),
        Column("tokens_per_kwh", FLOAT, "Generated tokens per kilowatt-hour of GPU energy."),
        Column("cost_usd_per_mtok", FLOAT, "A published API price, US dollars per million tokens (reported runs)."),
        Column("report_key", TEXT, "The id of a reported result in its source file."),
        Column("source_key", TEXT, "An article's key, or 'community:<set>' for a public result set.", "source__key"),
        Column("source_title", TEXT, "The source's title.", "source__title"),
        Column("source_url", TEXT, "The source's link.", "source__url"),
        Column("source_author", TEXT, "The source's author, as the source names them.", "source__author_handle"),
        Column("source_published_date", TEXT, "YYYY, YYYY-MM or YYYY-MM-DD, as given.", "source__published_date"),
    ),
    queryset=_public_runs,
    converters=_run_converters,
)  # fmt: skip

REPETITIONS = Table(
    name="repetitions",
    description="One row per stored repetition of a public run: the raw figures as the runner measured them "
    "(the runs table's statistics are computed from these).",
    columns=(
        Column("run_id", INT, "The run (runs.run_id)."),
        Column("repetition", INT, "1-based repetition number.", "index"),
        Column(
            "decode_tokens_per_s",
            FLOAT,
            "The repetition's decode speed, tokens/s: the server's figure when it reported one, else the client's "
            "(the one rule every statistic uses).",
            ("decode_tokens_per_s_server", "decode_tokens_per_s_client"),
        ),
        Column("decode_tokens_per_s_server", FLOAT, "Decode speed as llama-server timed it, tokens/s."),
        Column("decode_tokens_per_s_client", FLOAT, "Decode speed by the runner's clock over the stream, tokens/s."),
        Column("prefill_tokens_per_s", FLOAT, "Prompt processing speed, tokens/s."),
        Column("ttft_ms", FLOAT, "Time to first token, milliseconds."),
        Column("prompt_tokens", INT, "Prompt tokens."),
        Column("tokens_generated", INT, "Tokens generated."),
        Column("draft_n", INT, "Tokens drafted (speculative decoding)."),
        Column("draft_n_accepted", INT, "Drafted tokens accepted."),
        Column("energy_j", FLOAT, "GPU energy over the repetition, joules."),
        Column("power_w_mean", FLOAT, "Mean GPU power, watts."),
        Column("power_w_peak", FLOAT, "Peak GPU power, watts."),
        Column("vram_peak_mib", FLOAT, "Peak GPU memory, MiB."),
        Column("stop_reason", TEXT, "Why generation stopped (length, eos…)."),
        Column("output_ok", BOOL, "The output check passed; empty when not checked."),
        Column("flags", TEXT, "Output-check and timing-disagreement flags, a JSON list."),
    ),
    queryset=lambda: Sample.objects.filter(run__in=_public_runs().values("pk")),
    converters=lambda: {"decode_tokens_per_s": _decode_rule, "flags": _json_text},
)


def _decode_rule(server: float | None, client: float | None) -> float | None:
    return stats.decode_tokens_per_s(server=server, client=client)


SWEEP_POINTS = Table(
    name="sweep_points",
    description="One row per depth of a public run's context sweep.",
    columns=(
        Column("run_id", INT, "The run (runs.run_id)."),
        Column("ctx_tokens", INT, "Context depth, tokens; empty where an article printed a label only."),
        Column("ctx_label", TEXT, "The depth as printed ('198K')."),
        Column("prefill_tokens_per_s", FLOAT, "Prompt processing speed at this depth, tokens/s."),
        Column("decode_tokens_per_s", FLOAT, "Decode speed at this depth, tokens/s."),
        Column("ttft_ms", FLOAT, "Time to first token, milliseconds."),
        Column("power_w", FLOAT, "GPU power, watts."),
        Column("energy_j", FLOAT, "GPU energy, joules."),
        Column("tokens_per_kwh", FLOAT, "Generated tokens per kilowatt-hour."),
        Column("note", TEXT, "A note the source gave."),
    ),
    queryset=lambda: SweepPoint.objects.filter(run__in=_public_runs().values("pk")),
)

CONCURRENCY_LEVELS = Table(
    name="concurrency_levels",
    description="One row per concurrency level of a public run: N streams at once, with the statistics the "
    "service computed from the level's requests.",
    columns=(
        Column("run_id", INT, "The run (runs.run_id)."),
        Column("concurrency_streams", INT, "Streams sending at once.", "concurrency"),
        Column("n_requests", INT, "Requests asked for at this level."),
        Column("n_ok", INT, "Requests that finished."),
        Column("n_failed", INT, "Requests that failed."),
        Column("wall_s", FLOAT, "The level's wall time, seconds."),
        Column("output_tokens", INT, "Tokens generated over all streams."),
        Column("output_tokens_per_s", FLOAT, "Aggregate generation speed over all streams, tokens/s."),
        Column("requests_per_s", FLOAT, "Requests finished per second."),
        Column("decode_tokens_per_s_mean", FLOAT, "Per-stream decode speed, mean over requests, tokens/s."),
        Column("decode_tokens_per_s_p50", FLOAT, "Per-stream decode speed, median, tokens/s."),
        Column("decode_tokens_per_s_p90", FLOAT, "Per-stream decode speed, 90th percentile, tokens/s."),
        Column("decode_tokens_per_s_p99", FLOAT, "Per-stream decode speed, 99th percentile, tokens/s."),
        Column("ttft_ms_p50", FLOAT, "Time to first token, median, milliseconds."),
        Column("ttft_ms_p90", FLOAT, "Time to first token, 90th percentile, milliseconds."),
        Column("ttft_ms_p99", FLOAT, "Time to first token, 99th percentile, milliseconds."),
        Column("itl_ms_p50", FLOAT, "Gap between streamed chunks, median, milliseconds."),
        Column("itl_ms_p99", FLOAT, "Gap between streamed chunks, 99th percentile, milliseconds."),
        Column("acceptance_pct", FLOAT, "Speculative drafts accepted, percent."),
        Column("power_w_mean", FLOAT, "Mean GPU power over the level, watts."),
        Column("energy_j", FLOAT, "GPU energy over the level, joules."),
        Column("energy_j_per_token", FLOAT, "GPU energy per generated token, joules."),
        Column("note", TEXT, "A note the runner gave."),
    ),
    queryset=lambda: ConcurrencyLevel.objects.filter(run__in=_public_runs().values("pk")),
)

CAMPAIGN_TRIALS = Table(
    name="campaign_trials",
    description="One row per trial of a public rig's tuning campaign: one point of the search space, measured.",
    columns=(
        Column("campaign_id", INT, "The campaign (its page: /campaigns/{campaign_id}/)."),
        Column("campaign_name", TEXT, "The campaign's name.", "campaign__name"),
        Column("campaign_status", TEXT, _one_of(CampaignStatus) + ".", "campaign__status"),
        Column(
            "campaign_objective", TEXT, "The metric the campaign optimises (a runs column's name).", "campaign__spec"
        ),
        Column("rig_id", INT, "The rig (runs.rig_id).", "campaign__rig_id"),
        Column("trial_number", INT, "The trial's number in its campaign.", "number"),
        Column("role", TEXT, _one_of(TrialRole) + " (the best trial measured again)."),
        Column("state", TEXT, _one_of(TrialState) + " (infeasible: broke a constraint)."),
        Column("params", TEXT, "The point of the search space, a JSON object (a path keeps its file name only)."),
        Column(
            "objective_value",
            FLOAT,
            "The objective, mean over the trial's repetitions (its unit: the objective's).",
            "value",
        ),
        Column("metrics", TEXT, "Every figure of the trial, a JSON object keyed by metric name (units in the keys)."),
        Column("run_id", INT, "The measured run (runs.run_id); empty when the server never started."),
        Column("failure_kind", TEXT, "Why a trial failed, as a short kind; empty otherwise."),
        Column("pruned", BOOL, "Stopped early by the pruner."),
        Column("duration_s", FLOAT, "The trial's wall time, seconds."),
        Column("measured_s", FLOAT, "Seconds spent on its requests."),
        Column("created_at", TIME, "When the trial was stored."),
    ),
    queryset=lambda: Trial.objects.filter(campaign__in=Campaign.objects.public().values("pk")),
    converters=lambda: {
        "campaign_objective": lambda spec: (spec or {}).get("objective"),
        "params": lambda params: _json_text(_portable(params)),
        "metrics": _json_text,
    },
)

NIGHTLY_VERDICTS = Table(
    name="nightly_verdicts",
    description="One row per nightly verdict on a public rig: a new build's run judged against its baseline "
    "on the raw samples of one metric.",
    columns=(
        Column("verdict_id", INT, "The verdict's id (its report: /regressions/report/{verdict_id}/).", "pk"),
        Column("rig_id", INT, "The rig (runs.rig_id).", "build__subscription__rig_id"),
        Column("repo_url", TEXT, "The repository whose builds are tracked.", "build__subscription__repo_url"),
        Column("branch", TEXT, "The branch tracked.", "build__subscription__branch"),
        Column("reference_config", TEXT, "The configuration measured on every build.", "reference_config__name"),
        Column("metric", TEXT, "The metric judged (a runs column's name: its unit is in it)."),
        Column("commit_from", TEXT, "The baseline's commit."),
        Column("commit_to", TEXT, "The new build's commit."),
        Column("kind", TEXT, _one_of(VerdictKind) + "."),
        Column(
            "confirmation",
            TEXT,
            "Where a change stands with its re-runs: " + _one_of(Confirmation) + "; empty when none was asked.",
        ),
        Column("p_value", FLOAT, "Mann–Whitney U p-value, new samples against the baseline's."),
        Column("effect_pct", FLOAT, "Change of the median, percent."),
        Column("new_median", FLOAT, "The new run's median of the metric (the metric's unit)."),
        Column("baseline_median", FLOAT, "The baseline's median of the metric (the metric's unit)."),
        Column("n_new", INT, "Samples of the new run."),
        Column("n_baseline", INT, "Samples of the baseline."),
        Column("alpha", FLOAT, "Significance level used."),
        Column("threshold_pct", FLOAT, "Smallest effect called a change, percent."),
        Column("noise_floor_pct", FLOAT, "Run-to-run noise the effect had to exceed, percent."),
        Column("ab_n_pairs", INT, "A/B pairs run to confirm."),
        Column("ab_effect_pct", FLOAT, "Mean paired change B vs A, percent."),
        Column("ab_ci_low_pct", FLOAT, "Its 95% interval, low end, percent."),
        Column("ab_ci_high_pct", FLOAT, "Its 95% interval, high end, percent."),
        Column("first_bad_commit", TEXT, "The first slow commit, when bisection found it."),
        Column("new_run_id", INT, "The new build's run (runs.run_id)."),
        Column("created_at", TIME, "When the verdict was made."),
    ),
    queryset=lambda: Verdict.objects.filter(build__subscription__in=Subscription.objects.public().values("pk")),
)  # fmt: skip

TABLES: tuple[Table, ...] = (RUNS, REPETITIONS, SWEEP_POINTS, CONCURRENCY_LEVELS, CAMPAIGN_TRIALS, NIGHTLY_VERDICTS)

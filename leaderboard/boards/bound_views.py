"""The memory-bandwidth bound on the pages (issue 38): the run page's sentence and
outlier note, the leaderboard's gauge column, a GPU page's distribution of shares,
and /estimate/ (the bound of a GPU × model file pair times what comparable rigs
reach, labelled an estimate and never ranked)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import FilteredRelation, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.boards.bound_text import share_outlier_note
from leaderboard.results.hardware.catalog import gpu_rows, gpu_spec
from leaderboard.results.hardware.estimate import Estimate, estimate
from leaderboard.results.hardware.gauge import GaugeFacts
from leaderboard.results.hardware.runs import RunBound, RunFacts, run_bound
from leaderboard.results.hardware.selectors import (
    bound_of_loaded,
    observation_estimate,
    peer_estimate,
)
from leaderboard.results.hardware.stored import stored_gauges, stored_observations, stored_observations_of
from leaderboard.results.models import Engine, ModelFile, Rig, Run, RunStatus
from leaderboard.results.selectors import model_files_visible_to
from runners.bandwidth.weights import ModelFacts


def run_bound_context(run: Run) -> dict[str, Any]:
    """Return the run page's ``bound`` and ``bound_peers`` (its peers' share of their bounds),
    for a run read with what its page shows (``selectors.runs.run_detail``)."""
    bound = bound_of_loaded(run)
    peers = peer_estimate(bound, stored_observations()) if bound.share is not None else None
    return {"bound": bound, "bound_peers": peers}


def board_bounds(run_ids: Iterable[int]) -> dict[int, GaugeFacts]:
    """Return the gauge cells of a page's rows by run id (one query whatever their number)."""
    return stored_gauges(run_ids)


@dataclass(frozen=True)
class ShareSummary:
    """The share of the bound a group of runs reached: median, quartiles, n."""

    label: str
    n: int
    median: float
    q1: float
    q3: float
    over: int  # non-speculative runs past their bound (data errors)


def share_summaries(bounds: Iterable[RunBound], *, key: str = "engine") -> list[ShareSummary]:
    """Return one summary per engine (or ``key`` of the facts) over the non-speculative
    runs with a share: the plain reference of ``stored_share_summaries``."""
    return summaries_of(
        (str(getattr(rb.facts, key)), rb.share) for rb in bounds if rb.share is not None and not rb.facts.speculative
    )


def summaries_of(shares_by_label: Iterable[tuple[str, float]]) -> list[ShareSummary]:
    """Return one ShareSummary per label of (label, share) pairs, in label order."""
    groups: dict[str, list[float]] = {}
    for label, share in shares_by_label:
        groups.setdefault(label, []).append(share)
    summaries = []
    for label, shares in sorted(groups.items()):
        q1, _, q3 = statistics.quantiles(shares, n=4, method="inclusive") if len(shares) > 1 else (shares[0],) * 3
        over = sum(1 for share in shares if share > 1)
        summaries.append(ShareSummary(label, len(shares), statistics.median(shares), q1, q3, over))
    return summaries


# A GPU page summarises its latest runs: at a million runs a busy GPU's every run (50k
# rows joined to their shares) took 1.1 s of SQL.
SHARES_LATEST = 5000


def stored_share_summaries(runs: QuerySet[Run], *, latest: int = SHARES_LATEST) -> tuple[list[ShareSummary], bool]:
    """Return ``share_summaries`` of the latest ``latest`` of ``runs`` from their stored
    shares (no bound computed: a GPU page computed every run's bound, 4.5 s at 100k
    runs), and whether ``runs`` held more than that. tests/boards/test_bound_sort.py
    holds it equal to the plain path."""
    # One walk of the latest runs, each joined to its share row by key (engine and speculation
    # are stored beside the share): 5,000 ids sent back as parameters cost ~30 ms of CPU a
    # request to prepare (issue 40's profile of the GPU page), and an IN (subquery) was read
    # as a hash join over the whole share table.
    shown = Q(bound_share__speculative=False, bound_share__decode_share__isnull=False)
    rows = list(
        runs.annotate(shown_share=FilteredRelation("bound_share", condition=shown))
        .order_by("-created_at", "-pk")
        .values_list("shown_share__engine", "shown_share__decode_share")[: latest + 1]
    )
    summaries = summaries_of((label, share) for label, share in rows[:latest] if share is not None)
    return summaries, len(rows) > latest


def gpu_bound_context(*, gpu: str, viewer: Any) -> dict[str, Any]:
    """Return a GPU page's shares of the bound per engine (its latest SHARES_LATEST runs)
    and its catalog row."""
    # The GPU's rigs the viewer may see, as a list: the latest runs are then one walk of
    # run_recent_idx with a hashed rig test per entry, where two rig subqueries probed the
    # rig and GPU tables per run (issue 40; measured in benchmarks/README.md, twelfth session).
    rig_ids = list(Rig.objects.visible_to(viewer).filter(gpus__model=gpu).values_list("pk", flat=True).distinct())
    runs = Run.objects.filter(status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False, rig_id__in=rig_ids)
    summaries, capped = stored_share_summaries(runs)
    return {
        "gpu_spec": gpu_spec(gpu),
        "bound_shares": summaries,
        "bound_shares_latest": SHARES_LATEST if capped else None,
        "estimate_gpu": gpu,
    }


def _pair_bound(*, gpu: str, model_file: ModelFile, engine: str) -> RunBound:
    """Return the bound of ``model_file`` wholly on one ``gpu``: its header from its
    latest public run that carried one, else its parameters and quantization."""
    header = (
        Run.objects.public()
        .filter(model_file=model_file, fingerprint__model__gguf__isnull=False)
        .order_by("-created_at")
        .values_list("fingerprint__model__gguf", flat=True)
        .first()
    )
    facts = RunFacts(
        run_id=0,
        engine=engine,
        speculative_type="",
        decode_tokens_per_s=None,
        prefill_tokens_per_s=None,
        header=header if isinstance(header, dict) else None,
        model=ModelFacts(
            total_params_b=model_file.total_params_b,
            active_params_b=model_file.active_params_b,
            quantization=model_file.quantization,
            weight_format=model_file.weight_format,
            file_size_bytes=model_file.file_size_bytes,
            layers=model_file.layers,
        ),
        n_gpu_layers=None,
        tensor_overrides="",
        command_line="",
        extra_args=(),
        cache_type_k="",
        cache_type_v="",
        gpus=((gpu, 1, None),),
        cpu="",
        rig_texts=(),
        architecture=model_file.architecture,
    )
    return run_bound(facts)


def _page(request: HttpRequest, status: int = 200, **values: Any) -> HttpResponse:
    """Render the estimate page with every name it reads set (a blank form, an error, a result)."""
    context: dict[str, Any] = {
        "gpus": _gpu_names(),
        "spec": None,
        "model_file": None,
        "engine": request.GET.get("engine", ""),
        "model_raw": request.GET.get("model", ""),
        "bound": None,
        "estimate": None,
        "measured_run": None,
        "error": "",
        "error_field": "",
        **values,
    }
    return render(request, "boards/estimate.html", context, status=status)


def _error(request: HttpRequest, field: str, message: str) -> HttpResponse:
    return _page(request, 400, error_field=field, error=message)


def _gpu_names() -> list[str]:
    return sorted({spec.name for _, spec in gpu_rows() if spec.bandwidth_gb_s is not None})


@require_GET
def estimate_page(request: HttpRequest) -> HttpResponse:
    """/estimate/?gpu=…&model=…[&engine=…]: an estimate for a pair nobody measured."""
    gpu, model_raw = request.GET.get("gpu", "").strip(), request.GET.get("model", "").strip()
    engine = request.GET.get("engine", "").strip() or Engine.LLAMA_CPP
    if not gpu and not model_raw:
        return _page(request)
    spec = gpu_spec(gpu) if gpu else None
    if spec is None or spec.bandwidth_gb_s is None:
        return _error(request, "gpu", f"gpu: {gpu!r} is not a GPU whose memory bandwidth the catalog states")
    if engine not in Engine.values:
        return _error(request, "engine", f"engine: {engine!r} is not one of {', '.join(Engine.values)}")
    if not model_raw.isdigit():
        return _error(request, "model", "model: give a model file's number (as in /models/<number>/)")
    model_file = model_files_visible_to(request.user).filter(pk=int(model_raw)).first()
    if model_file is None:
        return _error(request, "model", f"model: no model file {model_raw}")
    bound = _pair_bound(gpu=spec.name, model_file=model_file, engine=engine)
    found: Estimate | None = None
    if bound.bound is not None:
        found = estimate(
            bound.bound.tokens_per_s,
            stored_observations(),
            family=spec.family,
            vendor=spec.family.split()[0],
            engine=engine,
            kind=model_file.architecture,
        )
    measured = (
        Run.objects.public()
        .filter(model_file=model_file, rig__gpus__model=spec.name, status=RunStatus.FINISHED)
        .values_list("pk", flat=True)
        .first()
    )
    return _page(
        request,
        spec=spec,
        model_file=model_file,
        engine=engine,
        model_raw=model_raw,
        bound=bound,
        estimate=found,
        measured_run=measured,
    )


def rig_outliers(run_ids: Iterable[int]) -> dict[str, Any]:
    """Return a rig page's ``bound_outliers``: (run id, note) for its runs far below
    what their peers on other rigs reach of their bound, in the page's order (the
    runs' stored shares and the stored pool: no bound computed)."""
    rows = stored_observations_of(run_ids)
    if not rows:
        return {"bound_outliers": []}
    pool = stored_observations()
    notes = []
    for run_id, row in rows.items():
        note = share_outlier_note(row.share, observation_estimate(row, pool))
        if note:
            notes.append((run_id, note))
    return {"bound_outliers": notes}

"""Each run's share of its bound, stored (``RunBoundShare``) so the leaderboard sorts by it.

Written where runs are written (``store_bound_shares``: a new or appended run, a run
whose rig's GPUs changed) and refreshed where the catalog or the method changed
(``refresh_stale``: ``manage.py refresh_bounds``, the nightly beat entry): a share
computed by other catalog rows or other code than today's has another ``digest``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from functools import cache
from itertools import islice
from pathlib import Path

from django.db.models import Exists, OuterRef, QuerySet

from leaderboard.core.datacache import while_data_unchanged
from leaderboard.results.hardware.estimate import Observation
from leaderboard.results.hardware.gauge import GaugeFacts, bound_title, gauge_facts
from leaderboard.results.hardware.runs import NOT_SPECULATIVE
from leaderboard.results.hardware.selectors import POOL_LIMIT, bounds_for_ids, observation_of
from leaderboard.results.models import Run, RunBoundShare, RunStatus

BATCH_RUNS = 2000
UPDATED_FIELDS = ["decode_share", "bound_tokens_per_s", "gpu_family", "bound_title", "engine", "speculative", "digest"]
_HERE = Path(__file__).resolve().parent
_BANDWIDTH = _HERE.parents[2] / "runners" / "bandwidth"
# What a share is computed from besides the run and its rig: the catalog and the method.
DIGEST_SOURCES = (
    _HERE / "gpus.csv",
    _HERE / "cpus.csv",
    _HERE / "catalog.py",
    _HERE / "runs.py",
    _HERE / "gauge.py",
    _BANDWIDTH / "bound.py",
    _BANDWIDTH / "offload.py",
    _BANDWIDTH / "weights.py",
)


@cache
def bound_digest() -> str:
    """Return the digest of the catalog and the bound's code (16 hex digits)."""
    digest = hashlib.sha256()
    for path in DIGEST_SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _batches(ids: Iterable[int], size: int) -> Iterator[list[int]]:
    it = iter(ids)
    while chunk := list(islice(it, size)):
        yield chunk


def store_bound_shares(run_ids: Iterable[int]) -> int:
    """Compute and store the share of each of these runs (an upsert); return how many."""
    stored = 0
    digest = bound_digest()
    for chunk in _batches(run_ids, BATCH_RUNS):
        bounds = bounds_for_ids(chunk)
        rows = [
            RunBoundShare(
                run_id=pk,
                decode_share=rb.share,
                bound_tokens_per_s=rb.bound.tokens_per_s if rb.bound is not None else None,
                gpu_family=rb.gpu_family[:40],
                bound_title=bound_title(rb),
                engine=rb.facts.engine,
                speculative=rb.facts.speculative,
                digest=digest,
            )
            for pk, rb in bounds.items()
        ]
        RunBoundShare.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["run"],
            update_fields=UPDATED_FIELDS,
        )
        stored += len(rows)
    return stored


def store_ranked_shares(runs: Iterable[Run]) -> int:
    """Store the share of those of ``runs`` the leaderboard ranks (finished, with a decode
    figure): the write paths' one call, in their transaction; return how many."""
    return store_bound_shares(
        run.pk for run in runs if run.status == RunStatus.FINISHED and run.decode_tokens_per_s_mean is not None
    )


def stored_gauges(run_ids: Iterable[int]) -> dict[int, GaugeFacts]:
    """Return the gauge cells of these runs by id from their stored shares, in one query;
    a run whose share is missing or stale is computed (``gauge_facts`` of its bound), so
    the cell never shows an older catalog's figure. The plain path (every bound computed)
    stays the reference: tests/boards/test_bound_sort.py holds the two equal."""
    wanted = list(run_ids)
    rows = RunBoundShare.objects.filter(run_id__in=wanted, digest=bound_digest()).values_list(
        "run_id", "decode_share", "bound_tokens_per_s", "bound_title", "run__decode_tokens_per_s_mean"
    )
    gauges = {
        run_id: GaugeFacts(title=title, bounded=bound is not None, decoded=bool(decode), share=share)
        for run_id, share, bound, title, decode in rows
    }
    missing = [pk for pk in wanted if pk not in gauges]
    gauges.update((pk, gauge_facts(rb)) for pk, rb in bounds_for_ids(missing).items())
    return gauges


def _observations(rows: QuerySet[RunBoundShare]) -> dict[int, Observation | None]:
    """Return the peer row (``selectors.observation_of``) of each of these stored shares by
    run id; None for a run with no bound, no decode figure or speculative decoding."""
    found: dict[int, Observation | None] = {}
    for run_id, rig_id, family, engine, architecture, speculative, bound, decode in rows.values_list(
        "run_id", "run__rig_id", "gpu_family", "run__stack__engine", "run__model_file__architecture",
        "run__configuration__speculative_type", "bound_tokens_per_s", "run__decode_tokens_per_s_mean",
    ):  # fmt: skip
        if bound is None or not decode or (speculative or "") not in NOT_SPECULATIVE:
            found[run_id] = None
            continue
        family = family or "not stated"
        found[run_id] = Observation(
            rig_key=str(rig_id),
            family=family,
            vendor=family.split()[0],
            engine=engine,
            kind=architecture or "unknown",
            bound_tokens_per_s=bound,
            decode_tokens_per_s=decode,
            label=f"run {run_id}",
        )
    return found


def stored_observations(limit: int = POOL_LIMIT) -> list[Observation]:
    """Return the estimates' peer pool from the stored shares in one query: the rows
    ``selectors.public_observations`` computes (the latest ``limit`` public finished runs
    with a decode figure, those with a bound and no speculative decoding), without
    computing 5,000 bounds a request (1 s of a run page at 100k runs). The plain path
    stays the reference: tests/boards/test_bound_sort.py holds the two equal.

    Kept until the data changes (``core.datacache``): every run page and estimate reads
    the same pool: 5,000 rows joined to four tables and built in Python on every request (issue 40)."""
    return while_data_unchanged("peer_pool", lambda: _stored_observations(limit), key=str(limit))


def _stored_observations(limit: int) -> list[Observation]:
    latest = (
        Run.objects.public()
        .filter(status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
        .order_by("-created_at", "-pk")
        .values("pk")[:limit]
    )
    return [row for row in _observations(RunBoundShare.objects.filter(run__in=latest)).values() if row is not None]


def stored_observations_of(run_ids: Iterable[int]) -> dict[int, Observation]:
    """Return the peer rows of these runs by id, in their order (those with a bound, a decode
    figure and no speculative decoding), read from their stored shares in one query; a run
    whose share is missing or stale is computed (a rig page's outlier notes: issue 40)."""
    wanted = list(run_ids)
    found = _observations(RunBoundShare.objects.filter(run_id__in=wanted, digest=bound_digest()))
    missing = [pk for pk in wanted if pk not in found]
    found.update((pk, observation_of(rb)) for pk, rb in bounds_for_ids(missing).items())
    return {pk: row for pk in wanted if (row := found.get(pk)) is not None}


def stale_runs(after_id: int = 0, through_id: int | None = None) -> QuerySet[Run, int]:
    """Return the ids past ``after_id`` (up to ``through_id`` when given) of the ranked runs
    (finished, with a decode figure) whose share is missing or was computed by another
    catalog or method, in id order (an anti-join walked along the primary key: a batch
    reads about its own rows)."""
    current = RunBoundShare.objects.filter(run=OuterRef("pk"), digest=bound_digest())
    runs = Run.objects.filter(pk__gt=after_id, status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
    if through_id is not None:
        runs = runs.filter(pk__lte=through_id)
    return runs.filter(~Exists(current)).order_by("pk").values_list("pk", flat=True)


def refresh_stale(limit: int | None = None, *, after_id: int = 0, through_id: int | None = None) -> int:
    """Store the share of every stale run (at most ``limit``; only ids in ``(after_id,
    through_id]`` when given, one worker's slice); return how many were stored."""
    stored = 0
    while limit is None or stored < limit:
        size = BATCH_RUNS if limit is None else min(BATCH_RUNS, limit - stored)
        chunk = list(stale_runs(after_id, through_id)[:size])
        if not chunk:
            break
        stored += store_bound_shares(chunk)
        after_id = chunk[-1]
    return stored

"""Reads for the bound: the facts of many runs in three queries, whatever their number."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models
from django.db.models import Avg, QuerySet

from leaderboard.results.hardware.estimate import Estimate, Observation, estimate
from leaderboard.results.hardware.runs import FACT_VALUES, RunBound, facts_from_values, run_bound
from leaderboard.results.models import RigGpu, Run, RunStatus, Sample


def rig_gpus(rig_ids: Iterable[int]) -> dict[int, list[tuple[str, int, float | None]]]:
    """Return each rig's GPU groups as (model, count, VRAM GB), in the rig's order."""
    gpus: dict[int, list[tuple[str, int, float | None]]] = {}
    for rig_id, model, count, vram in (
        RigGpu.objects.filter(rig_id__in=set(rig_ids))
        .order_by("rig_id", "position", "id")
        .values_list("rig_id", "model", "count", "vram_gb")
    ):
        gpus.setdefault(rig_id, []).append((model, count, vram))
    return gpus


def bounds_of(runs: QuerySet[Run]) -> dict[int, RunBound]:
    """Return the bound of each run of ``runs`` by id, in three queries: the runs'
    facts, their samples' mean prompt and generated tokens (the mean depth a token
    was decoded at is the prompt plus half the generation), their rigs' GPUs."""
    values = list(runs.order_by().values(*FACT_VALUES))
    ids = [v["pk"] for v in values]
    depths = {
        row["run_id"]: row["prompt"] + row["generated"] / 2
        for row in Sample.objects.filter(run_id__in=ids)
        .order_by()
        .values("run_id")
        .annotate(prompt=Avg("prompt_tokens"), generated=Avg("tokens_generated"))
        if row["prompt"] is not None and row["generated"] is not None
    }
    gpus = rig_gpus(v["rig_id"] for v in values)
    return {
        v["pk"]: run_bound(facts_from_values(v, gpus=gpus.get(v["rig_id"], []), depth_tokens=depths.get(v["pk"])))
        for v in values
    }


def bounds_for_ids(ids: Iterable[int]) -> dict[int, RunBound]:
    """Return the bound of each of these runs by id (visibility is the caller's: ids it already chose)."""
    wanted = list(ids)
    return bounds_of(Run.objects.filter(pk__in=wanted)) if wanted else {}


def bound_of_loaded(run: Run) -> RunBound:
    """Return the bound of a run read with its stack, model file, configuration, rig, the
    rig's GPUs and its samples (the run page's ``run_detail``), in no query: what
    ``bounds_for_ids`` reads in three (2.3 ms of the run page's 15 ms of CPU and three of its
    fifteen statements at 100k runs, issue 40). ``bounds_for_ids`` stays the reference:
    tests/results/test_bound_of_loaded.py holds the two equal."""
    values = {name: _value_at(run, name) for name in FACT_VALUES}
    gpus = [(g.model, g.count, g.vram_gb) for g in run.rig.gpus.all()]
    samples = run.samples.all()
    # AVG's reading: the mean of the values given, None where there are none.
    prompt = [s.prompt_tokens for s in samples if s.prompt_tokens is not None]
    generated = [s.tokens_generated for s in samples if s.tokens_generated is not None]
    depth = sum(prompt) / len(prompt) + sum(generated) / len(generated) / 2 if prompt and generated else None
    return run_bound(facts_from_values(values, gpus=gpus, depth_tokens=depth))


def _value_at(run: Run, path: str) -> Any:
    """Return ``values(path)``'s value read off a loaded run: a relation's field, or a JSON
    field's key (None where a key is missing or the value holding it is not an object)."""
    value: Any = run
    for part in path.split("__"):
        if isinstance(value, models.Model):
            value = getattr(value, part)
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


POOL_LIMIT = 5000


def observation_of(rb: RunBound) -> Observation | None:
    """Return a run as an estimate's peer row; None without a bound or a decode figure,
    or for speculative decoding (which may pass the bound)."""
    if rb.bound is None or not rb.facts.decode_tokens_per_s or rb.facts.speculative:
        return None
    family = rb.gpu_family or "not stated"
    return Observation(
        rig_key=str(rb.facts.rig_id),
        family=family,
        vendor=family.split()[0],
        engine=rb.facts.engine,
        kind=rb.facts.architecture or "unknown",
        bound_tokens_per_s=rb.bound.tokens_per_s,
        decode_tokens_per_s=rb.facts.decode_tokens_per_s,
        label=f"run {rb.facts.run_id}",
    )


def public_bounds(limit: int = POOL_LIMIT) -> dict[int, RunBound]:
    """Return the bounds of the latest ``limit`` public finished runs with a decode figure."""
    ids = list(
        Run.objects.public()
        .filter(status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)[:limit]
    )
    return bounds_for_ids(ids)


def public_observations(limit: int = POOL_LIMIT) -> list[Observation]:
    """Return the peer rows of the latest ``limit`` public runs (the estimates' pool)."""
    return [o for rb in public_bounds(limit).values() if (o := observation_of(rb)) is not None]


def peer_estimate(rb: RunBound, pool: list[Observation]) -> Estimate | None:
    """Return what the run's peers (other rigs) reach at its bound; None without a bound or enough peers."""
    row = observation_of(rb)
    return observation_estimate(row, pool) if row is not None else None


def observation_estimate(row: Observation, pool: list[Observation]) -> Estimate | None:
    """Return what a run's peers (other rigs) reach at its bound, the run given as its peer row."""
    return estimate(
        row.bound_tokens_per_s,
        pool,
        family=row.family,
        vendor=row.vendor,
        engine=row.engine,
        kind=row.kind,
        exclude_rig=row.rig_key,
    )

"""Reads for the index pages: every GPU model, model file and rig a visitor may
open, with how many finished runs each has, and the runs with a context sweep.
A fixed number of queries each, whatever the counts; what a viewer may see is
decided by the models' one visibility rule (``visible_to``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from leaderboard.results.models import ModelFile, Rig, RigGpu, Run, RunStatus, gpu_label
from leaderboard.results.selectors import model_files_visible_to


@dataclass(frozen=True)
class GpuEntry:
    """A GPU model: the rigs that have it, its largest VRAM, and the finished runs its
    page ranks (those of rigs with no other model: ``filters.rigs_only_with``)."""

    model: str
    rigs: int
    vram_gb: float | None
    runs: int


@dataclass(frozen=True)
class ModelEntry:
    model_file: ModelFile
    runs: int

    @property
    def file_gb(self) -> float | None:
        """Return the file's size in GB (10⁹ bytes); None when not known."""
        size = self.model_file.file_size_bytes
        return size / 1e9 if size else None


@dataclass(frozen=True)
class RigEntry:
    rig: Rig
    gpus: str
    runs: int


def _finished_runs_by_rig(viewer: Any) -> dict[int, int]:
    finished = Run.objects.visible_to(viewer).filter(status=RunStatus.FINISHED)
    return dict(finished.order_by().values("rig_id").annotate(n=Count("pk")).values_list("rig_id", "n"))


def gpu_index(*, viewer: Any = None) -> list[GpuEntry]:
    """Return every GPU model of a rig ``viewer`` may see, by name (two queries)."""
    groups = RigGpu.objects.filter(rig__in=Rig.objects.visible_to(viewer)).values_list("rig_id", "model", "vram_gb")
    models_of: dict[int, set[str]] = defaultdict(set)
    vram: dict[str, float | None] = {}
    for rig_id, model, vram_gb in groups:
        models_of[rig_id].add(model)
        if vram_gb is not None and (vram.get(model) is None or vram_gb > (vram[model] or 0)):
            vram[model] = float(vram_gb)
        vram.setdefault(model, None)
    runs = _finished_runs_by_rig(viewer)
    entries = []
    for model in sorted(vram, key=str.lower):
        rigs = [rig_id for rig_id, models in models_of.items() if model in models]
        ranked = sum(runs.get(rig_id, 0) for rig_id in rigs if models_of[rig_id] == {model})
        entries.append(GpuEntry(model, len(rigs), vram[model], ranked))
    return entries


def model_index(*, viewer: Any = None) -> list[ModelEntry]:
    """Return every model file with a run ``viewer`` may see, by name and quantization,
    with its finished runs (one query)."""
    visible = Run.objects.visible_to(viewer).filter(status=RunStatus.FINISHED)
    files = (
        model_files_visible_to(viewer)
        .annotate(finished=Count("runs", filter=Q(runs__in=visible.values("pk"))))
        .order_by("name", "quantization", "pk")
    )
    return [ModelEntry(f, f.finished) for f in files]


def rig_index(*, viewer: Any = None) -> list[RigEntry]:
    """Return every rig ``viewer`` may see, by name, with its GPUs and finished runs (three queries)."""
    rigs = Rig.objects.visible_to(viewer).prefetch_related("gpus").order_by("name")
    runs = _finished_runs_by_rig(viewer)
    return [RigEntry(rig, gpu_label((g.model, g.count) for g in rig.gpus.all()), runs.get(rig.pk, 0)) for rig in rigs]


def sweep_runs(*, viewer: Any = None, limit: int = 100) -> list[Run]:
    """Return the finished runs with a context sweep ``viewer`` may see, newest first,
    each with ``depths`` (its sweep's point count); one query."""
    return list(
        Run.objects.visible_to(viewer)
        .filter(status=RunStatus.FINISHED, sweep_points__isnull=False)
        .annotate(depths=Count("sweep_points"))
        .select_related("rig", "model_file", "stack", "configuration", "workload")
        .order_by("-created_at", "-pk")[:limit]
    )

"""Rigboard's data: rigs and their tokens, stacks, model files, configurations,
workloads, runs with their raw samples and sweep points, and what the articles
published (sources, comparisons, experiments, fits)."""

from leaderboard.results.models.bounds import RunBoundShare
from leaderboard.results.models.catalog import (
    Architecture,
    Configuration,
    Engine,
    ModelFile,
    SpeculativeType,
    Stack,
    Workload,
)
from leaderboard.results.models.concurrency import ConcurrencyLevel, ConcurrencyRequest
from leaderboard.results.models.published import (
    PublishedComparison,
    PublishedComparisonRow,
    PublishedExperiment,
    PublishedFit,
    Source,
)
from leaderboard.results.models.rigs import (
    ReviewStatus,
    Rig,
    RigGpu,
    RigQuerySet,
    RigScopedQuerySet,
    RigToken,
    gpu_label,
    viewer_rigs_q,
)
from leaderboard.results.models.runs import (
    CONFIGURATION_GROUP,
    Provenance,
    Run,
    RunQuerySet,
    RunStatus,
    Sample,
    SummarySource,
    SweepPoint,
)
from leaderboard.results.models.spreads import RunSpread

__all__ = [
    "CONFIGURATION_GROUP",
    "Architecture",
    "ConcurrencyLevel",
    "ConcurrencyRequest",
    "Configuration",
    "Engine",
    "ModelFile",
    "Provenance",
    "PublishedComparison",
    "PublishedComparisonRow",
    "PublishedExperiment",
    "PublishedFit",
    "ReviewStatus",
    "Rig",
    "RigGpu",
    "RigQuerySet",
    "RigScopedQuerySet",
    "RigToken",
    "Run",
    "RunBoundShare",
    "RunQuerySet",
    "RunSpread",
    "RunStatus",
    "Sample",
    "Source",
    "SpeculativeType",
    "Stack",
    "SummarySource",
    "SweepPoint",
    "Workload",
    "gpu_label",
    "viewer_rigs_q",
]

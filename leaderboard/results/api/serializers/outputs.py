"""What everyone reads: runs (list and detail), rigs, published sources.

Every serializer reads only fields the selectors in results/selectors.py have
already joined or prefetched, so a page costs the same number of queries
whatever its length."""

from __future__ import annotations

import functools
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.results.models import (
    ConcurrencyLevel,
    ConcurrencyRequest,
    Configuration,
    ModelFile,
    PublishedComparison,
    PublishedComparisonRow,
    PublishedExperiment,
    PublishedFit,
    Rig,
    RigGpu,
    Run,
    Sample,
    Source,
    Stack,
    SweepPoint,
    Workload,
)
from leaderboard.results.services import summary
from leaderboard.results.speedups.outputs import compiled


def represent(serializer_class: Any, instance: Any) -> Any:
    """Return ``serializer_class(instance).data`` as a plain dict, from one
    compiled serializer per class and process.

    A ModelSerializer builds its fields from the model on every instantiation
    (≈ 5 ms for a run's nested detail); built once, the fields are only read
    while representing, so they are shared by requests and threads; compiled
    (results/speedups/outputs.py), they represent a run's detail in a third of DRF's time."""
    return compiled(serializer_class)(instance)


SUMMARY_FIELDS = [*summary.SUMMARY_FIELDS, "cost_usd_per_mtok"]


@functools.cache
def _run_page_pattern() -> str:
    return reverse("boards:run", args=[987654321])


def run_page_path(run_id: int) -> str:
    """Return the path of a run's page (reversed once per process: reverse() per row costs more than the row)."""
    return _run_page_pattern().replace("987654321", str(int(run_id)))


class RigGpuOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = RigGpu
        fields = ["model", "vram_gb", "count", "power_limit_w"]


class RigOutputSerializer(serializers.ModelSerializer):
    gpus = RigGpuOutputSerializer(many=True)
    gpu_summary = serializers.CharField()
    n_runs = serializers.IntegerField(required=False)

    class Meta:
        model = Rig
        fields = [
            "name",
            "owner_name",
            "gpu_summary",
            "gpus",
            "cpu",
            "cpu_cores",
            "ram_gb",
            "os",
            "kernel",
            "driver_version",
            "cuda_version",
            "notes",
            "created_at",
            "n_runs",
        ]


class StackOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Stack
        fields = ["engine", "build", "build_flags", "image"]


class ModelFileOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelFile
        exclude = ["id"]


class ConfigurationOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Configuration
        exclude = ["id"]


class WorkloadOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Workload
        exclude = ["id"]


class SampleOutputSerializer(serializers.ModelSerializer):
    acceptance_pct = serializers.FloatField(allow_null=True)

    class Meta:
        model = Sample
        exclude = ["id", "run"]


class SweepPointOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = SweepPoint
        exclude = ["id", "run"]


class ConcurrencyRequestOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = ConcurrencyRequest
        exclude = ["id", "level"]


class ConcurrencyLevelOutputSerializer(serializers.ModelSerializer):
    """A level with the statistics the service computed and the raw requests."""

    requests = ConcurrencyRequestOutputSerializer(many=True)

    class Meta:
        model = ConcurrencyLevel
        exclude = ["id", "run"]


class RunSummaryOutputSerializer(serializers.ModelSerializer):
    """The summary the service computed from raw samples (or the article published)."""

    class Meta:
        model = Run
        fields = SUMMARY_FIELDS


class RunListOutputSerializer(serializers.ModelSerializer):
    rig = serializers.CharField(source="rig.name")
    gpu_summary = serializers.SerializerMethodField()
    stack = StackOutputSerializer()
    model_file = ModelFileOutputSerializer()
    workload = WorkloadOutputSerializer()
    speculative_type = serializers.CharField(source="configuration.speculative_type")
    # "source" is also an attribute of every DRF field; as a field name it is fine at run time.
    source = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)  # type: ignore[assignment,var-annotated]
    summary = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField(help_text="The run's page on the site (a path on this host).")

    class Meta:
        model = Run
        fields = [
            "uuid",
            "page_url",
            "rig",
            "gpu_summary",
            "status",
            "failure_reason",
            "provenance",
            "source",
            "report_key",
            "comparison_key",
            "stack",
            "model_file",
            "workload",
            "speculative_type",
            "started_at",
            "finished_at",
            "created_at",
            "summary",
        ]

    def get_gpu_summary(self, run: Run) -> str:
        return run.rig.gpu_summary()

    def get_page_url(self, run: Run) -> str:
        return run_page_path(run.pk)

    @extend_schema_field(RunSummaryOutputSerializer)
    def get_summary(self, run: Run) -> dict[str, Any]:
        return represent(RunSummaryOutputSerializer, run)  # type: ignore[no-any-return]


class RunDetailOutputSerializer(RunListOutputSerializer):
    rig_detail = RigOutputSerializer(source="rig")
    configuration = ConfigurationOutputSerializer()
    samples = SampleOutputSerializer(many=True)
    sweep_points = SweepPointOutputSerializer(many=True)
    concurrency_levels = ConcurrencyLevelOutputSerializer(many=True)

    class Meta(RunListOutputSerializer.Meta):
        fields = [
            *RunListOutputSerializer.Meta.fields,
            "rig_detail",
            "configuration",
            "notes",
            "fingerprint",
            "server_log_tail",
            "extra",
            "updated_at",
            "samples",
            "sweep_points",
            "concurrency_levels",
        ]


class PublishedComparisonRowOutputSerializer(serializers.ModelSerializer):
    # Null for a row that maps to no run of the site (the schema says so: issue 22).
    run: serializers.Field = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)

    class Meta:
        model = PublishedComparisonRow
        exclude = ["id", "comparison"]


class PublishedComparisonOutputSerializer(serializers.ModelSerializer):
    rows = PublishedComparisonRowOutputSerializer(many=True)

    class Meta:
        model = PublishedComparison
        fields = ["key", "title", "notes", "rows"]


class PublishedExperimentOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = PublishedExperiment
        exclude = ["id", "source"]


class PublishedFitOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = PublishedFit
        exclude = ["id", "source"]


class SourceOutputSerializer(serializers.ModelSerializer):
    n_runs = serializers.IntegerField(required=False)

    class Meta:
        model = Source
        fields = ["key", "title", "author_handle", "url", "published_date", "published_on", "n_runs"]


class SourceDetailOutputSerializer(SourceOutputSerializer):
    comparisons = PublishedComparisonOutputSerializer(many=True)
    experiments = PublishedExperimentOutputSerializer(many=True)
    fits = PublishedFitOutputSerializer(many=True)

    class Meta(SourceOutputSerializer.Meta):
        fields = [*SourceOutputSerializer.Meta.fields, "comparisons", "experiments", "fits"]

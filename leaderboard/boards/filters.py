"""The leaderboard's filters and sort keys, read from the query string so a
view can be shared by its URL.

Choices come from the database (GPUs, rigs, quantizations, workloads present)
or from the model's choice lists; an unknown value is a form error shown on the
page, never a 500."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django import forms
from django.db.models import Exists, F, Min, OuterRef, Q, QuerySet, Subquery

from leaderboard.intake.models import public_rigs_q
from leaderboard.results.models import (
    CONFIGURATION_GROUP,
    Engine,
    ModelFile,
    Provenance,
    Rig,
    RigGpu,
    Run,
    Sample,
    SpeculativeType,
)

# sort key in the URL → (column label, ORDER BY expression). "-key" sorts descending.
SORTS: dict[str, tuple[str, str]] = {
    "decode": ("Decode t/s", "decode_tokens_per_s_mean"),
    "n": ("n", "n_samples"),
    "stdev": ("σ t/s", "decode_tokens_per_s_stdev"),
    "range": ("Range t/s", "decode_tokens_per_s_range"),
    "rig": ("Rig", "rig__name"),
    "gpu": ("GPUs", "gpu_sort"),
    "engine": ("Engine", "stack__engine"),
    "model": ("Model", "model_file__name"),
    "quant": ("Quant", "model_file__quantization"),
    "spec": ("Speculative", "configuration__speculative_type"),
    "accept": ("Accept %", "acceptance_pct"),
    "ctx": ("Context", "configuration__ctx_size"),
    "power": ("Power W", "power_w_mean"),
    "tpkwh": ("Tokens/kWh", "tokens_per_kwh"),
    # Cheaper electricity per token is more tokens per kWh: the same column, reversed.
    "cost": ("$/MTok", "-tokens_per_kwh"),
    "provenance": ("Provenance", "provenance"),
    "date": ("Date", "created_at"),
}
DEFAULT_SORT = "-decode"
# Columns the ranked queryset never has NULL in (it requires a decode figure).
NEVER_NULL = {
    "decode_tokens_per_s_mean",
    "n_samples",
    "rig__name",
    "stack__engine",
    "model_file__name",
    "model_file__quantization",
    "configuration__speculative_type",
    "provenance",
    "created_at",
}
PER_PAGE_DEFAULT = 50
PER_PAGE_MAX = 500


def _blank_choice(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [("", "any"), *choices]


class LeaderboardFilterForm(forms.Form):
    gpu = forms.ChoiceField(required=False, label="GPU")
    rig = forms.ChoiceField(required=False)
    model = forms.CharField(required=False, max_length=100, label="Model family", help_text="e.g. qwen3.6")
    engine = forms.ChoiceField(required=False, choices=_blank_choice(list(Engine.choices)))
    spec = forms.ChoiceField(
        required=False,
        label="Speculative",
        # "None" in a menu reads as a missing value: say what it means.
        choices=_blank_choice(
            [(v, "off (no drafting)" if v == SpeculativeType.NONE else label) for v, label in SpeculativeType.choices]
        ),
    )
    quant = forms.ChoiceField(required=False, label="Quantization")
    workload = forms.ChoiceField(required=False)
    provenance = forms.ChoiceField(required=False, choices=_blank_choice(list(Provenance.choices)))
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    usd_per_kwh = forms.FloatField(required=False, min_value=0, max_value=10, label="$/kWh")
    best = forms.BooleanField(required=False, label="Best run per configuration")
    failed = forms.BooleanField(required=False, label="Include runs whose output checks failed")
    model_file = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput, label="Model file")
    q = forms.CharField(required=False, max_length=100, label="Search", help_text="rig, GPU or model")

    def __init__(self, *args: Any, options: FilterOptions, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["gpu"].choices = _blank_choice([(g, g) for g in options.gpus])  # type: ignore[attr-defined]
        self.fields["rig"].choices = _blank_choice([(r, r) for r in options.rigs])  # type: ignore[attr-defined]
        self.fields["quant"].choices = _blank_choice([(q, q) for q in options.quantizations])  # type: ignore[attr-defined]
        self.fields["workload"].choices = _blank_choice(  # type: ignore[attr-defined]
            [(str(pk), label) for pk, label in options.workloads]
        )


@dataclass(frozen=True)
class FilterOptions:
    gpus: list[str]
    rigs: list[str]
    quantizations: list[str]
    workloads: list[tuple[int, str]]


def filter_options() -> FilterOptions:
    """Return the values the filter selects offer (four queries, whatever the row count)."""
    from leaderboard.results.models import Workload

    return FilterOptions(
        gpus=list(RigGpu.objects.order_by("model").values_list("model", flat=True).distinct()),
        rigs=list(Rig.objects.filter(public_rigs_q()).order_by("name").values_list("name", flat=True)),
        quantizations=list(
            ModelFile.objects.exclude(quantization="")
            .order_by("quantization")
            .values_list("quantization", flat=True)
            .distinct()
        ),
        workloads=[(w.pk, str(w)) for w in Workload.objects.order_by("name", "version", "pk")],
    )


# The form fields that narrow the runs by one lookup each, when given.
_FIELD_LOOKUPS = {
    "rig": "rig__name",
    "model": "model_file__name__icontains",
    "model_file": "model_file_id",
    "engine": "stack__engine",
    "spec": "configuration__speculative_type",
    "quant": "model_file__quantization",
    "workload": "workload_id",
    "provenance": "provenance",
}


def runs_filter(queryset: QuerySet[Run], data: dict[str, Any]) -> QuerySet[Run]:
    """Return ``queryset`` narrowed by a valid form's ``cleaned_data``."""
    if data.get("gpu"):
        queryset = queryset.filter(rig__in=rigs_only_with(data["gpu"]))
    for name, lookup in _FIELD_LOOKUPS.items():
        if data.get(name):
            queryset = queryset.filter(**{lookup: data[name]})
    # Whole UTC days as a half-open range on the raw column, so its index serves it.
    if data.get("since"):
        queryset = queryset.filter(created_at__gte=_day_start(data["since"]))
    if data.get("until") and data["until"] < date.max:  # up to 9999-12-31 is everything
        queryset = queryset.filter(created_at__lt=_day_start(data["until"] + timedelta(days=1)))
    if data.get("q"):
        # One box for rig, GPU and model names (subqueries: no duplicate rows).
        # The small tables are searched, the runs filtered by id: no join on the ranked scan.
        term = data["q"].strip()
        rigs = Rig.objects.filter(Q(name__icontains=term) | Q(gpus__model__icontains=term)).values("pk")
        model_files = ModelFile.objects.filter(name__icontains=term).values("pk")
        queryset = queryset.filter(Q(rig_id__in=rigs) | Q(model_file_id__in=model_files))
    if not data.get("failed"):
        # A fast but broken run is not a winner: runs with a failed output check
        # are left out unless asked for (the partial index sample_failed_check_idx).
        queryset = queryset.exclude(Exists(Sample.objects.filter(run=OuterRef("pk"), output_ok=False)))
    if data.get("best"):
        queryset = best_of_each_configuration(queryset)
    return queryset


def rigs_only_with(gpu: str) -> QuerySet[RigGpu, Any]:
    """Return the ids of the rigs whose every GPU is the ``gpu`` model, as a subquery.

    A run is ranked under a GPU model only when it must have run on that model: on
    a rig that mixes models no run says which card ran it (seed 000's runs each used
    one of a 3090 Ti and a 3090; the article does not say which), so its runs are on
    the rig's page and the leaderboard, marked "card not stated", not on either GPU's.
    A subquery, not a join: a rig with two GPU groups must not list its runs twice."""
    mixed = RigGpu.objects.exclude(model=gpu).values("rig")
    return RigGpu.objects.filter(model=gpu).exclude(rig__in=mixed).values("rig")


def best_of_each_configuration(queryset: QuerySet[Run]) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that are the fastest (mean decode t/s, ties to
    the later run) of their rig × stack × model file × configuration × workload among
    the rows of ``queryset`` itself: the same filters judge the rivals.

    An anti-join, not a window function: "no faster run of my group" is an index
    probe per run (``run_ranked_group_idx``), so a ranked page of 50 walks the rank
    index and stops, where a window numbers every filtered run first (0.16 s at
    100k runs, nearly all of them alone in their group: benchmarks/site_latency.py).
    The same query on SQLite and PostgreSQL."""
    faster = Q(decode_tokens_per_s_mean__gt=OuterRef("decode_tokens_per_s_mean")) | Q(
        decode_tokens_per_s_mean=OuterRef("decode_tokens_per_s_mean"), pk__gt=OuterRef("pk")
    )
    rivals = queryset.filter(faster, **{field: OuterRef(field) for field in CONFIGURATION_GROUP})
    return queryset.exclude(Exists(rivals.order_by()))


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def parse_sort(raw: str | None) -> str:
    """Return a known sort key (``decode`` or ``-decode``…); the default for anything else."""
    key = (raw or "").strip()
    return key if key.lstrip("-") in SORTS else DEFAULT_SORT


def runs_sort(queryset: QuerySet[Run], sort: str) -> QuerySet[Run]:
    """Return ``queryset`` ordered by ``sort``, missing values last, ties broken
    by decode t/s (fastest first), then by run id."""
    descending = sort.startswith("-")
    expression = SORTS[sort.lstrip("-")][1]
    if expression.startswith("-"):
        expression, descending = expression[1:], not descending
    if expression == "gpu_sort":
        first_gpu = RigGpu.objects.filter(rig=OuterRef("rig")).values("rig").annotate(m=Min("model")).values("m")
        queryset = queryset.annotate(gpu_sort=Subquery(first_gpu))
    field = F(expression)
    if expression in NEVER_NULL:
        # No NULLs to place: plain DESC keeps the order the rank index stores.
        order = field.desc() if descending else field.asc()
    else:
        order = field.desc(nulls_last=True) if descending else field.asc(nulls_last=True)
    if expression == "decode_tokens_per_s_mean":
        return queryset.order_by(order, "-pk" if descending else "pk")
    # Ties (and rows where the column is blank, all last) fall back to the
    # default ranking, so a column blank on every row still gives a meaningful order.
    return queryset.order_by(order, F("decode_tokens_per_s_mean").desc(), "-pk")


def parse_per_page(raw: str | None) -> int:
    """Return the page size asked for, clamped to 1..PER_PAGE_MAX; the default when unreadable."""
    try:
        value = int(raw or PER_PAGE_DEFAULT)
    except ValueError:
        return PER_PAGE_DEFAULT
    return max(1, min(PER_PAGE_MAX, value))

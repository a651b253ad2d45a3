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
from django.db.models import (
    Case,
    CharField,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Cast, Concat, Lower, NullIf, TruncDate

from leaderboard.results.models import (
    CONFIGURATION_GROUP,
    Engine,
    ModelFile,
    Provenance,
    Rig,
    RigGpu,
    Run,
    Sample,
    Source,
    SpeculativeType,
    Workload,
)

# sort key in the URL → (column label, ORDER BY expression). "-key" sorts descending.
# Each orders by the value its column shows (``shown_value``): names case-insensitively,
# the cost a row prints (electricity, else the published price), the date it prints.
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
    "cost": ("$/MTok", "shown_cost"),
    "provenance": ("Provenance", "provenance"),
    "date": ("Date", "shown_date"),
}
DEFAULT_SORT = "-decode"
# Columns the ranked queryset never has NULL in (it requires a decode figure).
NEVER_NULL = {
    "decode_tokens_per_s_mean",
    "rig__name",
    "stack__engine",
    "model_file__name",
    "model_file__quantization",
    "provenance",
    "created_at",
}
PER_PAGE_DEFAULT = 50
PER_PAGE_MAX = 500


def _blank_choice(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [("", "any"), *choices]


# "None" and "Unknown" in a menu read as missing values: say what each means.
_SPEC_MENU: dict[str, str] = {
    SpeculativeType.NONE: "off (no drafting)",
    SpeculativeType.UNKNOWN: "not stated by the source",
}


class LeaderboardFilterForm(forms.Form):
    gpu = forms.ChoiceField(required=False, label="GPU")
    rig = forms.ChoiceField(required=False)
    model = forms.CharField(required=False, max_length=100, label="Model family", help_text="e.g. qwen3.6")
    engine = forms.ChoiceField(required=False, choices=_blank_choice(list(Engine.choices)))
    spec = forms.ChoiceField(
        required=False,
        label="Speculative",
        # "None" in a menu reads as a missing value: say what it means.
        choices=_blank_choice([(v, _SPEC_MENU.get(v, label)) for v, label in SpeculativeType.choices]),
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
        # No workload chosen ranks every one together: said so, not "any".
        self.fields["workload"].choices = [  # type: ignore[attr-defined]
            ("", "all workloads, mixed"),
            *[(str(pk), label) for pk, label in options.workloads],
        ]


@dataclass(frozen=True)
class FilterOptions:
    gpus: list[str]
    rigs: list[str]
    quantizations: list[str]
    workloads: list[tuple[int, str]]


def filter_options() -> FilterOptions:
    """Return the values the filter selects offer (four queries, whatever the row
    count): only names a public rig's runs carry, so a pending rig's GPU, model
    file or workload is named nowhere until staff approve it."""
    from leaderboard.results.selectors import model_files_visible_to, workloads_public

    return FilterOptions(
        gpus=list(RigGpu.objects.public().order_by("model").values_list("model", flat=True).distinct()),
        rigs=list(Rig.objects.public().order_by("name").values_list("name", flat=True)),
        quantizations=list(
            model_files_visible_to(None)
            .exclude(quantization="")
            .order_by("quantization")
            .values_list("quantization", flat=True)
            .distinct()
        ),
        # One entry per name and version a visitor reads (a workload's other fields,
        # its prompt hash or token budget, make rows the menu must not repeat).
        workloads=list(
            {str(w): (w.pk, str(w)) for w in workloads_public().order_by("name", "version", "-pk")}.values()
        ),
    )


# The form fields that narrow the runs by one lookup each, when given.
_FIELD_LOOKUPS = {
    "rig": "rig__name",
    "engine": "stack__engine",
    "spec": "configuration__speculative_type",
    "provenance": "provenance",
}


def chosen_model_files(data: dict[str, Any]) -> list[int] | None:
    """Return the ids of the model files a valid form's ``cleaned_data`` narrows to
    (model name, quant, model file), in one query; None when it names none."""
    if not (data.get("model") or data.get("quant") or data.get("model_file")):
        return None
    files = ModelFile.objects.all()
    if data.get("model"):
        files = files.filter(name__icontains=data["model"])
    if data.get("quant"):
        files = files.filter(quantization=data["quant"])
    if data.get("model_file"):
        files = files.filter(pk=data["model_file"])
    return list(files.order_by("pk").values_list("pk", flat=True))


def runs_filter(
    queryset: QuerySet[Run], data: dict[str, Any], *, model_files: list[int] | None = None
) -> QuerySet[Run]:
    """Return ``queryset`` narrowed by a valid form's ``cleaned_data``; ``model_files``:
    the ids ``chosen_model_files(data)`` returned, when the caller has them already."""
    if data.get("gpu"):
        queryset = queryset.filter(rig__in=rigs_only_with(data["gpu"]))
    for name, lookup in _FIELD_LOOKUPS.items():
        if data.get(name):
            queryset = queryset.filter(**{lookup: data[name]})
    if data.get("rig"):
        # The rig's id as a constant too: PostgreSQL then plans with that rig's own run
        # count (a busy rig's runs are walked in rank order and the walk stops at the
        # page; a small rig's are read by rig and sorted), where a join on the name
        # plans for an average rig and ranks every run of a busy one.
        rig_id = Rig.objects.filter(name=data["rig"]).values_list("pk", flat=True).first()
        queryset = queryset.filter(rig_id=rig_id) if rig_id is not None else queryset.none()
    files = chosen_model_files(data) if model_files is None else model_files
    if files is not None:
        # The model files' ids as constants, as for the rig: one file's runs are then
        # walked in its rank index (run_model_rank_idx) and the walk stops at the page,
        # where a join on the names walked the whole ranking for them (0.34 s at 1M runs).
        queryset = queryset.filter(model_file_id__in=files)
    if data.get("workload"):
        # Every workload of the chosen one's name and version: the menu lists each once.
        chosen = Workload.objects.filter(pk=data["workload"])
        same = Workload.objects.filter(
            name=Subquery(chosen.values("name")[:1]), version=Subquery(chosen.values("version")[:1])
        )
        queryset = queryset.filter(workload__in=same.values("pk"))
    queryset = _dates_filter(queryset, data.get("since"), data.get("until"))
    if data.get("q"):
        # One box for rig, GPU and model names (subqueries: no duplicate rows).
        # The small tables are searched, the runs filtered by id: no join on the ranked scan.
        term = data["q"].strip()
        rigs = Rig.objects.filter(Q(name__icontains=term) | Q(gpus__model__icontains=term)).values("pk")
        named_files = ModelFile.objects.filter(name__icontains=term).values("pk")
        queryset = queryset.filter(Q(rig_id__in=rigs) | Q(model_file_id__in=named_files))
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


def _dates_filter(queryset: QuerySet[Run], since: date | None, until: date | None) -> QuerySet[Run]:
    """Return the runs whose shown date lies in since..until (whole days, either may be None).

    A measured run shows the UTC day it was stored: a half-open range on the raw
    column, so its index serves it. A reported run shows its source's date, which
    may be a year or a month (``2026-03``): it is kept when that period overlaps the
    range, compared as text (``2026-03~`` sorts after every day of March)."""
    if until is not None and until >= date.max:  # up to 9999-12-31 is everything
        until = None
    if since is None and until is None:
        return queryset
    measured = ~Q(provenance=Provenance.REPORTED)
    reported = Q(provenance=Provenance.REPORTED, source__published_date__gt="")
    if since is not None:
        measured &= Q(created_at__gte=_day_start(since))
        reported &= Q(shown_period_end__gte=since.isoformat())
    if until is not None:
        measured &= Q(created_at__lt=_day_start(until + timedelta(days=1)))
        reported &= Q(source__published_date__lte=until.isoformat())
    return queryset.annotate(
        shown_period_end=Concat(F("source__published_date"), Value("~"), output_field=CharField())
    ).filter(measured | reported)


def shown_value(expression: str, usd_per_kwh: float) -> Any:
    """Return the ORDER BY expression of a sort: the value its column shows."""
    if expression in ("rig__name", "model_file__name", "model_file__quantization", "stack__engine"):
        return Lower(expression)
    if expression == "n_samples":
        # A reported run has no samples of its own: its n cell is blank, not 0.
        return NullIf(F("n_samples"), Value(0))
    if expression == "configuration__speculative_type":
        # The label a cell prints ("MTP", "Draft model"); none and not stated are blank cells.
        labels = [
            When(configuration__speculative_type=v, then=Value(str(label).lower()))
            for v, label in SpeculativeType.choices
            if v not in (SpeculativeType.NONE, SpeculativeType.UNKNOWN)
        ]
        return Case(*labels, default=Value(None), output_field=CharField())
    if expression == "shown_cost":
        # A row prints its electricity cost at the page's $/kWh, else the price its article printed.
        electricity = ExpressionWrapper(Value(usd_per_kwh * 1_000_000) / F("tokens_per_kwh"), output_field=FloatField())
        return Case(
            When(tokens_per_kwh__gt=0, then=electricity), default=F("cost_usd_per_mtok"), output_field=FloatField()
        )
    if expression == "shown_date":
        # A reported run prints its source's date (YYYY, YYYY-MM or a day; undated: blank), a measured one its day.
        return Case(
            When(provenance=Provenance.REPORTED, then=NullIf(F("source__published_date"), Value(""))),
            default=Cast(TruncDate("created_at"), CharField()),
            output_field=CharField(),
        )
    return F(expression)


# Sorts whose shown value no index orders, narrowed by sort_window before sorting.
WINDOWED_SORTS = ("date", "cost")


def sort_window(queryset: QuerySet[Run], sort: str, *, rows: int, usd_per_kwh: float) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of ``sort``:
    fewer for the sorts on an expression (WINDOWED_SORTS), every run for the others."""
    if sort.lstrip("-") == "date":
        return date_sort_window(queryset, sort, rows=rows)
    if sort.lstrip("-") == "cost":
        return cost_sort_window(queryset, sort, rows=rows, usd_per_kwh=usd_per_kwh)
    return queryset


# Room for the division's rounding: a run past the edge by less than this is kept.
_EDGE_SLACK = 1e-9


def model_rank_window(queryset: QuerySet[Run], model_files: list[int], *, rows: int) -> QuerySet[Run]:
    """Return the runs of ``queryset`` (filtered to ``model_files``) that can be among
    the first ``rows`` of the default ranking (decode t/s, then run id, descending):
    each model file's first ``rows`` in that order, a walk of its rank index
    (``run_model_rank_idx``) that stops there.

    One index serves ``model_file_id IN (...)`` only as unordered: the plan walked
    the whole ranking (``run_rank_idx``) for the few files' runs, 35k rows read for
    57 kept (0.2-0.5 s at a million runs); a union of the files' walks reads ~50 each."""
    if rows < 1 or len(model_files) < 2:
        return queryset
    walks = [
        queryset.filter(model_file_id=model_file)
        .order_by(F("decode_tokens_per_s_mean").desc(), "-pk")
        .values("pk")[:rows]
        for model_file in model_files
    ]
    return queryset.filter(pk__in=walks[0].union(*walks[1:], all=True))


def cost_sort_window(queryset: QuerySet[Run], sort: str, *, rows: int, usd_per_kwh: float) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of a sort on
    the shown cost (``cost`` / ``-cost``): the electricity cost where a run has tokens/kWh,
    else the published price (``shown_value``).

    The electricity cost falls as tokens/kWh rises, so the ``rows``-th run by tokens/kWh
    (an index, ``run_ranked_kwh_idx``) names a cost no run past the page can beat: kept
    are the runs at least that efficient and the runs whose published price is at least
    that low (``run_published_cost_idx``). At no price every electricity cost is 0 and
    ties: nothing is left out."""
    if rows < 1 or usd_per_kwh <= 0:
        return queryset
    cheapest_first = not sort.startswith("-")
    efficient = queryset.filter(tokens_per_kwh__gt=0).order_by(
        F("tokens_per_kwh").desc(nulls_last=True) if cheapest_first else F("tokens_per_kwh").asc()
    )
    edge = efficient.values_list("tokens_per_kwh", flat=True)[rows - 1 : rows].first()
    if edge is None:
        return queryset
    cost = usd_per_kwh * 1_000_000 / edge
    if cheapest_first:
        kept = Q(tokens_per_kwh__gte=edge * (1 - _EDGE_SLACK)) | Q(cost_usd_per_mtok__lte=cost * (1 + _EDGE_SLACK))
    else:
        kept = Q(tokens_per_kwh__gt=0, tokens_per_kwh__lte=edge * (1 + _EDGE_SLACK)) | Q(
            cost_usd_per_mtok__gte=cost * (1 - _EDGE_SLACK)
        )
    return queryset.filter(kept)


def date_sort_window(queryset: QuerySet[Run], sort: str, *, rows: int) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of a sort on
    the shown date (``date`` / ``-date``).

    The shown date is an expression over two tables (a reported run's source date, a
    measured run's day), which no index orders: sorted as it is, every filtered run is
    read (90 ms at 100k runs, growing with the table). But a measured run shows the day
    of ``created_at``, so the ``rows``-th measured run in ``created_at`` order names a day
    no run past the page can reach: kept are the measured runs from that day on and the
    reported runs whose date sorts there too (the same text comparison as the sort), an
    index range of about a day's runs. A run with no date sorts last either way."""
    if rows < 1:
        return queryset
    descending = sort.startswith("-")
    measured = ~Q(provenance=Provenance.REPORTED)
    edge = (
        queryset.filter(measured)
        .order_by("-created_at" if descending else "created_at")
        .values_list("created_at", flat=True)[rows - 1 : rows]
        .first()
    )
    if edge is None:  # fewer measured runs than that: nothing to leave out
        return queryset
    day = edge.astimezone(UTC).date()
    shown = NullIf(F("published_date"), Value(""))
    if descending:
        kept = measured & Q(created_at__gte=_day_start(day))
        sources = Source.objects.annotate(shown=shown).filter(shown__gte=day.isoformat())
    else:
        kept = measured & Q(created_at__lt=_day_start(day + timedelta(days=1)))
        sources = Source.objects.annotate(shown=shown).filter(shown__lte=day.isoformat())
    # Both sides on the runs' own columns (a source id list, not a join), so each is an index range.
    return queryset.filter(kept | Q(provenance=Provenance.REPORTED, source_id__in=sources.values("pk")))


def parse_sort(raw: str | None) -> str:
    """Return a known sort key (``decode`` or ``-decode``…); the default for anything else."""
    key = (raw or "").strip()
    return key if key.lstrip("-") in SORTS else DEFAULT_SORT


# A filter that fixes the value a sort's column shows (one rig, one engine…): every
# row ties on it, so that sort orders as the default ranking does.
_FIXED_BY = {"rig": "rig", "engine": "engine", "quant": "quant", "spec": "spec", "provenance": "provenance"}


def ranking_sort(sort: str, data: dict[str, Any]) -> str:
    """Return the sort to order by for ``sort`` under a valid form's ``cleaned_data``:
    the default ranking where a filter leaves one value in the sorted column (its
    tie-break, decode t/s then run id, is then the whole order), else ``sort``.

    The same rows in the same order, by a plan that fits: ``/?rig=X&sort=rig``
    ordered a busy rig's every run by its name before keeping 50 (188 ms at a
    million runs); by decode t/s it walks the rig's rank index and stops."""
    return DEFAULT_SORT if data.get(_FIXED_BY.get(sort.lstrip("-"), "")) else sort


def runs_sort(queryset: QuerySet[Run], sort: str, *, usd_per_kwh: float = 0.15) -> QuerySet[Run]:
    """Return ``queryset`` ordered by ``sort`` on the values the column shows
    (``usd_per_kwh`` prices the electricity cost), missing values last, ties
    broken by decode t/s (fastest first), then by run id."""
    descending = sort.startswith("-")
    expression = SORTS[sort.lstrip("-")][1]
    if expression == "gpu_sort":
        first_gpu = RigGpu.objects.filter(rig=OuterRef("rig")).values("rig").annotate(m=Min(Lower("model"))).values("m")
        queryset = queryset.annotate(gpu_sort=Subquery(first_gpu))
    field = shown_value(expression, usd_per_kwh)
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

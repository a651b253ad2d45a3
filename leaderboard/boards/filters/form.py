"""The leaderboard's filter form and the values its selects offer.

Choices come from the database (GPUs, rigs, quantizations, workloads present)
or from the model's choice lists; an unknown value is a form error shown on the
page, never a 500."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms

from leaderboard.boards.speedups.inputs import INPUT_RENDERER
from leaderboard.core.datacache import while_data_unchanged
from leaderboard.results.models import Engine, Provenance, Rig, RigGpu, SpeculativeType


def _blank_choice(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [("", "any"), *choices]


# "None" and "Unknown" in a menu read as missing values: say what each means.
_SPEC_MENU: dict[str, str] = {
    SpeculativeType.NONE: "off (no drafting)",
    SpeculativeType.UNKNOWN: "not stated by the source",
}


class LeaderboardFilterForm(forms.Form):
    # Its inputs written in Python, its selects by the select_field tag (boards/speedups/).
    default_renderer = INPUT_RENDERER

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
    file or workload is named nowhere until staff approve it. Kept until the data
    changes (``core.datacache``): a page builds its forms more than once."""
    return while_data_unchanged("filter_options", _filter_options)


def _filter_options() -> FilterOptions:
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

"""Forms of the owner pages."""

from __future__ import annotations

from typing import Any

from django import forms

from leaderboard.results.models import Rig
from leaderboard.results.services.rigs import GpuSpec, gpu_spec_parse


class RigForm(forms.ModelForm):
    class Meta:
        model = Rig
        fields = ["owner_name", "cpu", "cpu_cores", "ram_gb", "os", "kernel", "driver_version", "cuda_version", "notes"]
        # Every field in words (the model's names read "Ram gb", "Os").
        labels = {
            "owner_name": "Owner (shown on the rig's page)",
            "cpu": "CPU",
            "cpu_cores": "CPU cores",
            "ram_gb": "RAM (GB)",
            "os": "Operating system",
            "kernel": "Kernel",
            "driver_version": "GPU driver version",
            "cuda_version": "CUDA version",
            "notes": "Notes",
        }
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}


class RigRegisterForm(RigForm):
    name = forms.SlugField(label="Rig name", max_length=200, help_text="Letters, digits, - and _; your runs name it.")
    gpus = forms.CharField(
        label="GPUs",
        # Several lines tall: one line per group of identical cards.
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": "RTX 3090:24:2:350\nRTX 3060:12"}),
        required=False,
        help_text="One group per line: MODEL[:VRAM_GB[:COUNT[:POWER_LIMIT_W]]], e.g. RTX 3090:24:2:350. "
        "Empty: CPU only.",
    )

    class Meta(RigForm.Meta):
        fields = ["name", "gpus", *RigForm.Meta.fields]

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if Rig.objects.filter(name=name).exists():
            raise forms.ValidationError("A rig with this name exists; pick another.")
        return name

    def clean_gpus(self) -> list[GpuSpec]:
        specs = []
        for line in str(self.cleaned_data.get("gpus") or "").splitlines():
            if line.strip():
                try:
                    specs.append(gpu_spec_parse(line.strip()))
                except ValueError as exc:
                    raise forms.ValidationError(str(exc)) from exc
        return specs

    def validate_unique(self) -> None:
        """The name is checked in clean_name; the rig is created by the service."""

    def rig_fields(self) -> dict[str, Any]:
        return {k: v for k, v in self.cleaned_data.items() if k not in ("name", "gpus")}


class TokenForm(forms.Form):
    label = forms.CharField(max_length=200, required=False)


class LlamaBenchUploadForm(forms.Form):
    """A llama-bench file, or its Markdown table pasted; one of the two."""

    file = forms.FileField(required=False, help_text="llama-bench -o json, -o jsonl, -o csv or -o md output.")
    paste = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 10, "cols": 100, "placeholder": "| model | size | params | ..."}),
        help_text="Or paste llama-bench's Markdown table (its default output); several tables and build lines too.",
    )
    repetitions = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1000,
        help_text="The -r the table was run with (a Markdown table does not print it); left empty, n is 'not stated'.",
    )
    notes = forms.CharField(max_length=2000, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("file")) == bool((data.get("paste") or "").strip()):
            raise forms.ValidationError("Give a file or a pasted table (one of the two).")
        return data

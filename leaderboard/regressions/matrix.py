"""Reads for the commit × rig matrix: one page per watched branch (repository
URL + branch), its commits newest first against every visible subscription of
that branch and reference configuration, grouped by backend. A cell is the
verdict on that commit's build there: the change and its verdict in words.

Queries are fixed in number whatever the size of the matrix (the page's
query-count test holds it to that): subscriptions, their rigs' GPUs and
reference configurations, the builds, their commits' subjects, the verdicts
with their baseline runs."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404
from django.urls import reverse

from leaderboard.core.labels import signed_pct
from leaderboard.regressions.backends import subscription_backend
from leaderboard.regressions.models import BuildRecord, BuildStatus, Subscription, Verdict
from leaderboard.regressions.repos import commit_subjects
from leaderboard.regressions.selectors_aa import AA_OVER_LEVEL, RigAaSummary, rigs_aa_summaries
from leaderboard.regressions.states import BENCHMARKED_PHASES
from leaderboard.regressions.verdict import METRIC
from leaderboard.regressions.words import verdict_words
from leaderboard.results.models import Run
from runners.builds.releases import release_number, release_url

# Columns are grouped in this order; a backend not named here comes after, by name.
BACKEND_ORDER = ("CUDA", "ROCm", "Vulkan", "Metal", "SYCL", "CPU")
# The newest commits a page shows; older ones are on each column's timeline.
MAX_COMMITS = 60


def matrix_url(repo_url: str, branch: str) -> str:
    """Return the address of a branch's matrix page."""
    return reverse("regressions:matrix") + "?" + urlencode({"repo": repo_url, "branch": branch})


@dataclass(frozen=True)
class Branch:
    """A watched branch and how many visible subscriptions follow it."""

    repo_url: str
    branch: str
    subscriptions: int

    @property
    def url(self) -> str:
        return matrix_url(self.repo_url, self.branch)


@dataclass(frozen=True)
class Column:
    """One subscription × reference configuration: a rig's view of the branch."""

    subscription_id: int
    reference_id: int
    rig_id: int
    rig_name: str
    reference_name: str
    backend: str
    build_flags: str
    aa: RigAaSummary | None = None  # the rig's own A/A checks (selectors_aa.py)

    @property
    def timeline_url(self) -> str:
        return reverse("regressions:timeline", args=[self.subscription_id, self.reference_id])


@dataclass(frozen=True)
class Cell:
    """One commit on one column. ``state`` is the CSS class and ``word`` what
    the cell says (regression, improvement, no change, inconclusive, not
    built); ``detail`` says why when the word alone would mislead; ``source``
    which runs the verdict rests on (the nightly run, with its re-run or A/B
    confirmation, or a fan-out's A/B pairs alone)."""

    state: str
    word: str
    effect_pct: float | None = None
    p_value: float | None = None
    detail: str = ""
    url: str = ""
    source: str = ""
    aa_note: str = ""  # set where the rig's A/A checks call changes above the level

    @property
    def effect_label(self) -> str:
        return "" if self.effect_pct is None else signed_pct(self.effect_pct)


@dataclass(frozen=True)
class Row:
    commit: str
    first_built_at: dt.datetime
    cells: list[Cell]
    subject: str = ""

    @property
    def short_commit(self) -> str:
        return self.commit[:10]

    @property
    def release_url(self) -> str:
        """Return the release's page upstream when this commit is a release (bN); else ''."""
        number = release_number(self.commit)
        return release_url(number) if number is not None else ""


@dataclass(frozen=True)
class BackendGroup:
    name: str
    columns: list[Column]


@dataclass(frozen=True)
class Matrix:
    repo_url: str
    branch: str
    groups: list[BackendGroup]
    rows: list[Row]
    commits_total: int

    @property
    def columns(self) -> list[Column]:
        return [c for g in self.groups for c in g.columns]

    def cells_in(self, state: str) -> list[tuple[Row, Column, Cell]]:
        """Return every (commit, column, cell) whose cell is in ``state``, newest commit first:
        what the page names above the table, where a phone shows one column of it."""
        columns = self.columns
        return [(row, columns[i], cell) for row in self.rows for i, cell in enumerate(row.cells) if cell.state == state]

    @property
    def regressions(self) -> list[tuple[Row, Column, Cell]]:
        return self.cells_in("regression")


def branches_list(*, viewer: Any = None) -> list[Branch]:
    """Return the branches the visible subscriptions watch, by repository and
    branch, with how many subscriptions follow each (one query)."""
    rows = (
        Subscription.objects.visible_to(viewer)
        .values("repo_url", "branch")
        .annotate(n=Count("id"))
        .order_by("repo_url", "branch")
    )
    return [Branch(r["repo_url"], r["branch"], r["n"]) for r in rows]


def _backend_key(name: str) -> tuple[int, str]:
    return (BACKEND_ORDER.index(name), "") if name in BACKEND_ORDER else (len(BACKEND_ORDER), name)


def _compare_url(verdict: Verdict) -> str:
    """Return the compare page of the verdict's run against its first baseline run (the pair's figures)."""
    baselines = sorted(r.pk for r in verdict.baseline_runs.all())
    if not baselines:
        return ""
    query = {"runs": f"{baselines[0]},{verdict.new_run_id}", "baseline": baselines[0]}
    return reverse("boards:compare") + "?" + urlencode(query)


def verdict_cell(verdict: Verdict) -> Cell:
    """Return the cell of a judged build, in the verdict's words (words.py)."""
    words = verdict_words(verdict)
    # A regression that stands opens its report upstream can act on; any other verdict its figures.
    url = reverse("regressions:report", args=[verdict.pk]) if words.state == "regression" else _compare_url(verdict)
    return Cell(words.state, words.word, verdict.effect_shown_pct, verdict.p_shown, words.detail, url, words.source)


def build_cell(build: BuildRecord | None, verdict: Verdict | None, column: Column) -> Cell:
    """Return the cell of one commit on one column (``build`` None: the rig did not build it)."""
    if build is None:
        return Cell("not-built", "not built")
    timeline = f"{column.timeline_url}#build-{build.pk}"
    source = "fan-out: A/B check of a regression found on another rig" if build.fanout_of_id else "nightly run"
    if build.status == BuildStatus.FAILED:
        return Cell("not-built", "not built", detail="build failed", url=timeline, source=source)
    if build.status == BuildStatus.ERROR:
        return Cell("not-built", "not built", detail="error (not the build's fault)", url=timeline, source=source)
    if verdict is not None:
        return verdict_cell(verdict)
    if build.fanout_of_id:
        detail = "A/B pairs not all back yet"
    elif build.status in BENCHMARKED_PHASES:
        detail = "no verdict: the first build, or its run is missing"
    else:
        detail = f"{build.get_status_display().lower()}, awaiting its runs"
    return Cell("inconclusive", "inconclusive", detail=detail, url=timeline, source=source)


def _columns(subscriptions: Sequence[Subscription]) -> list[BackendGroup]:
    by_backend: dict[str, list[Column]] = {}
    for sub in subscriptions:
        backend = subscription_backend(sub)
        for ref in sub.reference_configs.all():
            by_backend.setdefault(backend, []).append(
                Column(sub.pk, ref.pk, sub.rig_id, sub.rig.name, ref.name, backend, sub.build_flags)
            )
    return [
        BackendGroup(name, sorted(cols, key=lambda c: (c.rig_name, c.reference_name, c.reference_id)))
        for name, cols in sorted(by_backend.items(), key=lambda item: _backend_key(item[0]))
    ]


def matrix_get(*, repo_url: str, branch: str, viewer: Any = None) -> Matrix:
    """Return the matrix of one branch as ``viewer`` (None: the public) may see
    it: the MAX_COMMITS newest commits (by when a rig first queued them; a
    bisection's builds left out) against each visible subscription's reference
    configurations. Raise Http404 when no visible subscription watches it."""
    subscriptions: QuerySet[Subscription] = (
        Subscription.objects.visible_to(viewer)
        .filter(repo_url=repo_url, branch=branch)
        .select_related("rig")
        .prefetch_related("rig__gpus", "reference_configs")
    )
    subs = list(subscriptions)
    if not subs:
        raise Http404("no visible rig watches this branch")
    aa = rigs_aa_summaries(rig_ids=[s.rig_id for s in subs])
    groups = [
        BackendGroup(g.name, [dataclasses.replace(c, aa=aa.get(c.rig_id)) for c in g.columns]) for g in _columns(subs)
    ]
    nightly = BuildRecord.objects.filter(subscription__in=subs, bisect_of__isnull=True)
    builds = list(nightly.order_by("created_at", "id"))
    first_seen: dict[str, dt.datetime] = {}
    for build in builds:
        first_seen.setdefault(build.commit, build.created_at)
    commits = sorted(first_seen, key=lambda c: first_seen[c], reverse=True)
    shown = set(commits[:MAX_COMMITS])
    by_key = {(b.subscription_id, b.commit): b for b in builds if b.commit in shown}
    verdicts = (
        Verdict.objects.filter(build__in=by_key.values(), metric=METRIC)
        .select_related(None)
        .prefetch_related(Prefetch("baseline_runs", queryset=Run.objects.only("id")))
    )
    verdict_by = {(v.build_id, v.reference_config_id): v for v in verdicts}
    columns = [c for g in groups for c in g.columns]
    subjects = commit_subjects(repo_url, commits[:MAX_COMMITS], rigs=[s.rig_id for s in subs])
    rows = []
    for commit in commits[:MAX_COMMITS]:
        cells = []
        for col in columns:
            built = by_key.get((col.subscription_id, commit))
            verdict = verdict_by.get((built.pk, col.reference_id)) if built else None
            cell = build_cell(built, verdict, col)
            if verdict is not None and col.aa is not None and col.aa.exceeds_level:
                cell = dataclasses.replace(cell, aa_note=AA_OVER_LEVEL)
            cells.append(cell)
        rows.append(Row(commit, first_seen[commit], cells, subjects.get(commit, "")))
    return Matrix(repo_url, branch, groups, rows, len(commits))

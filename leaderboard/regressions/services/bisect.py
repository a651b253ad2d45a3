"""Bisection of a confirmed regression: build and benchmark the midpoint of the
suspect commit range on the same rig, place it on the slow or the fast side
of the regression (bisect_step), halve the range, repeat until one commit is
left: the first slow commit, put on the verdict (and so on the timeline).

The service walks the range in a bare mirror of the repository (first-parent
line, as the nightly builds follow it); the rig builds each midpoint like a
nightly build, tagged ``bisect_of`` so it never becomes a baseline itself.

Between two releases (``bN`` tags) the range is first the releases between
them, halved the same way until two consecutive releases are left (stored as
the verdict's release window); then, where the service has the repository's
history (releases from git), the commits inside that window. A subscription
whose releases come from source distributions has no history: the first
release with the change is its answer."""

from __future__ import annotations

from leaderboard.regressions.models import BisectStatus, BuildRecord, ReleaseSource, Verdict, VerdictKind
from leaderboard.regressions.repos import mirror_dir
from leaderboard.regressions.services.detection import build_queue
from leaderboard.regressions.services.releases import ReleaseListErrors, release_list
from leaderboard.regressions.states import BENCHMARKED_PHASES, BuildRunRole
from leaderboard.regressions.verdict import nearer_to_bad, run_median
from leaderboard.results.models import Run, RunStatus
from runners.builds.gitrepo import commits_between, mirror
from runners.builds.releases import release_number, release_tag, releases_between

_STATE_FIELDS = ["bisect_status", "bisect_good", "bisect_bad", "release_window_from", "release_window_to"]


def _range(verdict: Verdict) -> list[str]:
    """Return what is still suspect, oldest first, ending at ``bisect_bad``:
    the releases in (good, bad] while both ends are releases with another
    between them; else the first-parent commits in the service's mirror. Two
    consecutive releases are stored as the release window on the way; with
    no history to go into (source distributions) the window's end is all
    that is left. Raise GitError or ReleaseError if upstream cannot be read."""
    sub = verdict.build.subscription
    good, bad = release_number(verdict.bisect_good), release_number(verdict.bisect_bad)
    if good is not None and bad is not None:
        between = releases_between(list(release_list(subscription=sub)), after=good, upto=bad)
        if len(between) > 1:
            return [release_tag(n) for n in between]
        verdict.release_window_from, verdict.release_window_to = verdict.bisect_good, verdict.bisect_bad
        if sub.release_source == ReleaseSource.SDIST:
            return [verdict.bisect_bad]
    repo = mirror(sub.repo_url, mirror_dir(sub.repo_url))
    return commits_between(repo, verdict.bisect_good, verdict.bisect_bad)


def _next_step(verdict: Verdict) -> Verdict:
    try:
        suspects = _range(verdict)
    except ReleaseListErrors as exc:
        verdict.bisect_status = BisectStatus.FAILED
        verdict.reason = f"bisection stopped: {exc}"[:300]
        verdict.save(update_fields=[*_STATE_FIELDS, "reason"])
        return verdict
    if len(suspects) <= 1:
        verdict.bisect_status = BisectStatus.DONE
        verdict.first_bad_commit = verdict.bisect_bad
        verdict.save(update_fields=[*_STATE_FIELDS, "first_bad_commit"])
        return verdict
    # The last commit of the lower half: a regression there means the first bad one is at or before it.
    midpoint = suspects[(len(suspects) - 1) // 2]
    sub = verdict.build.subscription
    existing = BuildRecord.objects.filter(subscription=sub, commit=midpoint).first()
    if existing is not None and existing.status in BENCHMARKED_PHASES:
        return bisect_step(build=existing, verdict=verdict) or verdict
    if existing is None:
        build_queue(subscription=sub, commit=midpoint, previous_commit=verdict.bisect_good, bisect_of=verdict)
    verdict.save(update_fields=_STATE_FIELDS)
    return verdict


def bisect_start(*, verdict: Verdict) -> Verdict:
    """Start bisecting a regression between its baseline and its build; return
    the verdict (bisect_status running, or done at once for a one-commit range).
    A verdict that is no regression, or has no baseline, is returned unchanged."""
    if verdict.kind != VerdictKind.REGRESSION or not verdict.commit_from or verdict.bisect_status:
        return verdict
    verdict.bisect_status = BisectStatus.RUNNING
    verdict.bisect_good, verdict.bisect_bad = verdict.commit_from, verdict.commit_to
    return _next_step(verdict)


def bisect_step(*, build: BuildRecord, verdict: Verdict | None = None) -> Verdict | None:
    """Place a bisection build's run on the slow or the fast side, narrow the
    range and queue the next midpoint (or name the first slow commit).
    Return the verdict being bisected; None if ``build`` is no bisection build.

    The regression is already confirmed; a midpoint only has to be told
    apart from it: it is slow when its median is nearer (as a ratio) to the
    regressed build's than to the baseline's. A second significance test
    would call a slow midpoint fast whenever it fell short of the noise floor
    by chance, and a fast one slow whenever one run drifted."""
    verdict = verdict or build.bisect_of
    if verdict is None or verdict.bisect_status != BisectStatus.RUNNING:
        return verdict
    # A midpoint's own run, or the judged run of a nightly build of the same commit.
    build_run = build.build_runs.filter(
        reference_config=verdict.reference_config, role__in=(BuildRunRole.MIDPOINT, BuildRunRole.JUDGED)
    ).first()
    run = Run.objects.filter(uuid=build_run.run_uuid, status=RunStatus.FINISHED).first() if build_run else None
    slow = None
    if run is not None and build.status in BENCHMARKED_PHASES:
        median = run_median(run.build_decode_samples())
        slow = nearer_to_bad(median=median, good=verdict.baseline_median, bad=verdict.new_median)
    if slow is None:
        # A midpoint that does not build or run cannot be placed: stop, say where.
        verdict.bisect_status = BisectStatus.FAILED
        verdict.reason = f"bisection stopped at {build.commit[:10]}: {build.get_status_display().lower()}"[:300]
        verdict.save(update_fields=["bisect_status", "reason"])
        return verdict
    if slow:
        verdict.bisect_bad = build.commit
    else:
        verdict.bisect_good = build.commit
    return _next_step(verdict)

"""The regression report upstream can act on: one confirmed regression, every
rig's answer on the same commit range, and the command lines that reproduce it.

``regression_report(verdict_id=…)`` gathers it (a dataclass, no HTML);
``report_markdown`` writes it as Markdown ready to paste into a llama.cpp
issue; the page (views_report.py) and the alert webhook (services/alerts.py)
use the same two.

Per rig, the figures are those of its A/B pairs (regressions/ab.py): the
baseline (A) and candidate (B) run medians, each side's n, mean and 95%
confidence interval (t), the paired effect with its own 95% CI and p-value,
and the rig's noise: the spread of its pairs and the run-to-run noise floor
the first verdict was judged with. A rig confirmed by a re-run instead (the
old rule) shows its first run and the re-run's effect."""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet
from django.http import Http404

from leaderboard.core.labels import field_label
from leaderboard.regressions.backends import subscription_backend
from leaderboard.regressions.models import BuildStatus, Confirmation, Verdict, VerdictKind
from leaderboard.regressions.repos import commit_subjects
from leaderboard.results.models import Rig
from runners.portable import portable_text
from runners.stats import t_quantile_975


@dataclass(frozen=True)
class SideFigures:
    """One side's run medians: n, mean and 95% CI of the mean (None below 2)."""

    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None

    @classmethod
    def of(cls, values: Sequence[float | None]) -> SideFigures:
        clean = [v for v in values if v is not None and math.isfinite(v)]
        if not clean:
            return cls(0, None, None, None)
        mean = statistics.fmean(clean)
        if len(clean) < 2:
            return cls(1, mean, None, None)
        half = t_quantile_975(len(clean) - 1) * statistics.stdev(clean) / math.sqrt(len(clean))
        return cls(len(clean), mean, mean - half, mean + half)

    def text(self) -> str:
        if self.mean is None:
            return "—"
        if self.ci_low is None or self.ci_high is None:
            return f"{self.mean:.2f} (n={self.n})"
        return f"{self.mean:.2f} [{self.ci_low:.2f}, {self.ci_high:.2f}] (n={self.n})"


@dataclass(frozen=True)
class RigAnswer:
    """One rig's answer on the regression's commit range."""

    rig: str
    backend: str
    hardware: str
    reference_config: str
    status: str  # "reproduces", "does not reproduce", "pending", "no result"
    baseline: SideFigures
    candidate: SideFigures
    effect_pct: float | None
    effect_ci_pct: tuple[float, float] | None
    p_value: float | None
    n_pairs: int
    pair_spread_pct: float | None
    noise: str
    how: str
    verdict_id: int | None


@dataclass(frozen=True)
class Report:
    verdict: Verdict
    title: str
    repo_url: str
    branch: str
    commit_from: str
    commit_to: str
    compare_url: str
    first_bad_commit: str
    first_bad_subject: str
    first_bad_url: str
    bisect_status: str
    answers: list[RigAnswer]
    summary: list[str] = field(default_factory=list)
    llama_server_command: str = ""
    llama_bench_command: str = ""


def _github_commit_url(repo_url: str, sha: str) -> str:
    url = repo_url.strip().removesuffix("/").removesuffix(".git")
    return f"{url}/commit/{sha}" if sha and url.startswith(("https://", "http://")) else ""


def _answer(verdict: Verdict) -> RigAnswer:
    sub = verdict.build.subscription
    pairs = list(verdict.pairs())
    if pairs:
        baseline = SideFigures.of([p.a_median for p in pairs])
        candidate = SideFigures.of([p.b_median for p in pairs])
        how = f"A/B, {verdict.ab_n_pairs or len(pairs)} interleaved pairs (ABBA)"
    else:
        baseline = SideFigures(verdict.n_baseline, verdict.baseline_median, None, None)
        candidate = SideFigures(verdict.n_new, verdict.new_median, None, None)
        how = "one run each (medians of n repetitions)"
        if verdict.confirm_effect_pct is not None:
            how += f"; re-run {verdict.confirm_effect_pct:+.2f}%"
    if verdict.confirmation == Confirmation.PENDING:
        status = "pending"
    elif verdict.kind == VerdictKind.REGRESSION and verdict.stands:
        status = "reproduces"
    else:
        status = "does not reproduce"
    ab = verdict.ab_effect_pct is not None
    ci = (verdict.ab_ci_low_pct, verdict.ab_ci_high_pct) if ab else (None, None)
    return RigAnswer(
        rig=sub.rig.name,
        backend=subscription_backend(sub),
        hardware=sub.rig.gpu_summary() or sub.rig.cpu or "",
        reference_config=verdict.reference_config.name,
        status=status,
        baseline=baseline,
        candidate=candidate,
        effect_pct=verdict.ab_effect_pct if ab else verdict.effect_pct,
        effect_ci_pct=(ci[0], ci[1]) if ci[0] is not None and ci[1] is not None else None,
        p_value=verdict.ab_p_value if ab else verdict.p_value,
        n_pairs=len(pairs),
        pair_spread_pct=verdict.ab_spread_pct,
        noise=verdict.noise.describe(),
        how=how,
        verdict_id=verdict.pk,
    )


def _summary(answers: Sequence[RigAnswer]) -> list[str]:
    lines = []
    for backend in sorted({a.backend for a in answers}):
        rigs = {a.rig: a.status for a in answers if a.backend == backend}
        settled = [s for s in rigs.values() if s in ("reproduces", "does not reproduce")]
        yes = sum(1 for s in settled if s == "reproduces")
        pending = len(rigs) - len(settled)
        line = f"{backend}: reproduces on {yes} of {len(settled)} rig{'s' if len(settled) != 1 else ''}"
        lines.append(line + (f" ({pending} pending)" if pending else ""))
    return lines


def _commands(verdict: Verdict) -> tuple[str, str]:
    """Return the llama-server command line the candidate run recorded, and the
    llama-bench line measuring the same decode (model, threads, layers, tokens)."""
    server_line = verdict.new_run.configuration.command_line if verdict.new_run.configuration else ""
    spec = verdict.reference_config.spec or {}
    server = spec.get("server") or {}
    workload = spec.get("workload") or {}
    argv = ["llama-bench", "-m", str(server.get("model") or "MODEL.gguf"), "-p", "0"]
    argv += ["-n", str(workload.get("max_tokens") or 128), "-r", str(workload.get("repetitions") or 5)]
    for key, flag in (("threads", "-t"), ("n_gpu_layers", "-ngl"), ("flash_attn", "-fa"), ("batch_size", "-b")):
        if server.get(key) not in (None, ""):
            argv += [flag, str(server[key])]
    argv += ["-o", "md"]
    return server_line, shlex.join(argv)


def regression_report(*, verdict_id: int, rigs: QuerySet[Rig] | None = None) -> Report:
    """Return the report for a regression verdict (a fan-out verdict gives its
    origin's report), made of the rigs in ``rigs`` (a page passes
    ``Rig.objects.visible_to(viewer)``; None, every rig: the alert to the
    subscription's own addresses). Raise Http404 for no such verdict, one that
    was never a regression on its own rig, or one whose rig is not in ``rigs``."""
    shown = Rig.objects.all() if rigs is None else rigs
    verdict = (
        Verdict.objects.select_related("build__subscription__rig", "reference_config", "new_run__configuration")
        .filter(pk=verdict_id)
        .first()
    )
    if verdict is not None and verdict.fanout_of_id is not None:
        verdict = verdict.fanout_of
    if verdict is None or verdict.kind != VerdictKind.REGRESSION:
        raise Http404("no regression with this id")
    if not shown.filter(pk=verdict.build.subscription.rig_id).exists():
        raise Http404("no regression with this id")  # a hidden rig's: as if there were none
    sub = verdict.build.subscription
    same_range = (
        Verdict.objects.filter(
            Q(fanout_of=verdict)
            | Q(
                commit_to=verdict.commit_to,
                build__subscription__repo_url=sub.repo_url,
                build__subscription__branch=sub.branch,
                build__bisect_of__isnull=True,
                fanout_of__isnull=True,
            )
        )
        .exclude(pk=verdict.pk)
        .filter(build__subscription__rig__in=shown)
    )
    others = same_range.select_related("build__subscription__rig", "reference_config").order_by(
        "build__subscription__rig__name", "id"
    )
    answers = [_answer(verdict), *(_answer(v) for v in others)]
    # Fan-out builds without a verdict: pairs not all back yet, or the rig could not build.
    empty = SideFigures(0, None, None, None)
    for build in verdict.fanout_builds.select_related("subscription__rig").filter(
        verdicts__isnull=True, subscription__rig__in=shown
    ):
        status = "pending" if build.status in (BuildStatus.QUEUED, BuildStatus.BENCHMARKED) else "no result"
        how = "A/B pairs queued" if status == "pending" else f"{build.get_status_display()}: {build.error[:120]}"
        answers.append(
            RigAnswer(
                rig=build.subscription.rig.name,
                backend=subscription_backend(build.subscription),
                hardware="",
                reference_config="",
                status=status,
                baseline=empty,
                candidate=empty,
                effect_pct=None,
                effect_ci_pct=None,
                p_value=None,
                n_pairs=0,
                pair_spread_pct=None,
                noise="",
                how=how,
                verdict_id=None,
            )  # fmt: skip
        )
    first_bad = verdict.first_bad_commit
    subject = commit_subjects(sub.repo_url, [first_bad or verdict.commit_to], rigs=shown).get(
        first_bad or verdict.commit_to, ""
    )
    effect = f"{verdict.ab_effect_pct if verdict.ab_effect_pct is not None else verdict.effect_pct or 0:+.1f}%"
    where = first_bad or verdict.commit_to
    title = f"Decode regression ({effect} {field_label(verdict.metric)}) at {where[:10]} on {sub.rig.name}"
    server_line, bench_line = _commands(verdict)
    return Report(
        verdict=verdict,
        title=title,
        # A report is pasted into an upstream issue: the recording rig's paths and ports mean nothing there.
        repo_url=portable_text(sub.repo_url),
        branch=sub.branch,
        commit_from=verdict.commit_from,
        commit_to=verdict.commit_to,
        compare_url=verdict.compare_url,
        first_bad_commit=first_bad,
        first_bad_subject=subject,
        first_bad_url=_github_commit_url(sub.repo_url, where),
        bisect_status=verdict.get_bisect_status_display() if verdict.bisect_status else "not bisected",
        answers=answers,
        summary=_summary(answers),
        llama_server_command=portable_text(server_line),
        llama_bench_command=portable_text(bench_line),
    )

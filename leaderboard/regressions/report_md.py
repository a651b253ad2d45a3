"""The regression report as Markdown, ready to paste into a llama.cpp issue
(GitHub-flavoured: a table per report, commands in fenced blocks)."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from leaderboard.regressions.report import Report, RigAnswer
from leaderboard.regressions.words import DOES_NOT_REPRODUCE


def report_url(verdict_id: int) -> str:
    """Return the report page's public URL."""
    return settings.RIGBOARD_PUBLIC_URL.rstrip("/") + reverse("regressions:report", args=[verdict_id])


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(a: RigAnswer) -> str:
    ci = f" [{a.effect_ci_pct[0]:+.2f}%, {a.effect_ci_pct[1]:+.2f}%]" if a.effect_ci_pct else ""
    p = "—" if a.p_value is None else f"{a.p_value:.2g}"
    spread = "" if a.pair_spread_pct is None else f"pairs SD {a.pair_spread_pct:.2f}%; "
    cells = [
        a.rig, a.backend, a.hardware or "—", a.reference_config or "—", a.status,
        a.baseline.text(), a.candidate.text(), _pct(a.effect_pct) + ci, p, spread + a.noise, a.how,
    ]  # fmt: skip
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def report_markdown(report: Report) -> str:
    """Return the report as Markdown."""
    v = report.verdict
    lines = [f"### {report.title}", ""]
    if report.first_bad_commit:
        subject = f" — {report.first_bad_subject}" if report.first_bad_subject else ""
        link = f" ({report.first_bad_url})" if report.first_bad_url else ""
        lines.append(f"**First bad commit** (bisected): `{report.first_bad_commit}`{subject}{link}")
    else:
        subject = f" — {report.first_bad_subject}" if report.first_bad_subject else ""
        lines.append(f"**First bad commit**: {report.bisect_status}; the range ends at `{report.commit_to}`{subject}")
    rng = f"`{report.commit_from[:10]}..{report.commit_to[:10]}` on `{report.branch}` of {report.repo_url}"
    lines += [f"**Range**: {rng}" + (f" ({report.compare_url})" if report.compare_url else ""), ""]
    lines += ["**Where it reproduces** (grouped by backend):", ""]
    lines += [f"- {line}" for line in report.summary] + [""]
    not_here = [a.rig for a in report.answers if a.status == DOES_NOT_REPRODUCE]
    if not_here:
        lines += [f"Does not reproduce on: {', '.join(not_here)}.", ""]
    lines += [
        f"{v.metric} per rig: baseline (A, `{report.commit_from[:10]}`) and candidate (B, `{report.commit_to[:10]}`) "
        "run medians as mean [95% CI] (n); effect = paired change B vs A [95% CI]; p = paired t-test on log ratios.",
        "",
        "| rig | backend | hardware | reference | result | baseline t/s | candidate t/s | effect | p | noise | how |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_row(a) for a in report.answers),
        "",
        "**Reproduce** (the candidate run's exact server command; then the same decode with llama-bench):",
        "",
        "```sh",
        report.llama_server_command or "# (the run recorded no command line)",
        report.llama_bench_command,
        "```",
        "",
        f"Build each commit with `cmake -B build {v.build.subscription.build_flags}`.".replace("  ", " "),
        "",
        f"Report: {report_url(v.pk)}",
    ]
    return "\n".join(lines) + "\n"

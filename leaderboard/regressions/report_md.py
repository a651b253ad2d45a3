"""The regression report as Markdown, ready to paste into a llama.cpp issue
(GitHub-flavoured: a table per report, commands in fenced blocks)."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from leaderboard.regressions.report import Report, RigAnswer, rigs_by_standing
from leaderboard.regressions.words import DOES_NOT_REPRODUCE, WITHIN_NOISE


def report_url(verdict_id: int) -> str:
    """Return the report page's public URL."""
    return settings.RIGBOARD_PUBLIC_URL.rstrip("/") + reverse("regressions:report", args=[verdict_id])


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# The table's header, one definition for the page and the Markdown: each column
# says what its figures are (report.py's module doc).
COLUMNS = (
    "rig",
    "backend",
    "hardware",
    "reference",
    "result",
    "test",
    "baseline t/s: mean [95% CI] (n)",
    "candidate t/s: mean [95% CI] (n)",
    "effect: % [95% CI]",
    "p",
    "noise",
)


def side_text(a: RigAnswer, side: str) -> str:
    """Return one side's figures; a recording under load says so before them."""
    text = (a.baseline if side == "baseline" else a.candidate).text()
    return f"under load: {text}" if a.loaded and text != "—" else text


def effect_text(a: RigAnswer) -> str:
    ci = f" [{a.effect_ci_pct[0]:+.2f}%, {a.effect_ci_pct[1]:+.2f}%]" if a.effect_ci_pct else ""
    return _pct(a.effect_pct) + ci


def noise_text(a: RigAnswer) -> str:
    spread = f"A/B pairs differ by about {a.pair_spread_pct:.1f}% (SD); " if a.pair_spread_pct is not None else ""
    return spread + (a.noise_words or a.noise)


def _row(a: RigAnswer) -> str:
    p = "—" if a.p_value is None else f"{a.p_value:.2g}"
    test = f"{a.test} ({a.how})" if a.test else a.how
    cells = [
        a.rig, a.backend, a.hardware or "—", a.reference_config or "—", a.status, test,
        side_text(a, "baseline"), side_text(a, "candidate"), effect_text(a), p, noise_text(a),
    ]  # fmt: skip
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def report_markdown(report: Report) -> str:
    """Return the report as Markdown."""
    v = report.verdict
    lines = [f"### {report.title}", ""]
    subject = f" — {report.first_bad_subject}" if report.first_bad_subject else ""
    link = f" ({report.first_bad_url})" if report.first_bad_url else ""
    lines.append(f"**Where**: {report.where}{subject}{link}")
    rng = f"`{report.commit_from[:10]}..{report.commit_to[:10]}` on `{report.branch}` of {report.repo_label}"
    lines += [f"**Range**: {rng}" + (f" ({report.compare_url})" if report.compare_url else ""), ""]
    lines += ["**Where it reproduces** (grouped by backend):", ""]
    lines += [f"- {line}" for line in report.summary] + [""]
    standing = rigs_by_standing(report.answers)
    if standing.get(DOES_NOT_REPRODUCE):
        lines += [f"Does not reproduce on: {', '.join(standing[DOES_NOT_REPRODUCE])}.", ""]
    if standing.get(WITHIN_NOISE):
        lines += [
            f"Within the rig's noise floor on: {', '.join(standing[WITHIN_NOISE])} (a slowdown its first run "
            "measured, but no larger than that rig's run-to-run noise, and no A/B asked: not shown either way).",
            "",
        ]
    lines += [
        f"{v.metric} per rig, baseline `{report.commit_from[:10]}` (A) against candidate `{report.commit_to[:10]}` "
        "(B). With A/B blocks, n counts blocks and each figure is a block's mean for that build; with A/B pairs, "
        "n counts pairs and each figure is a run's median; with the re-run rule, n counts one run's repetitions. "
        "The effect is B's change from A on a log scale with its 95% CI.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *(_row(a) for a in report.answers),
        "",
    ]
    loaded = list(dict.fromkeys(a.rig for a in report.answers if a.loaded))
    if loaded:
        lines += [f"Recorded under load on {', '.join(loaded)}: those figures are not the rig's speed.", ""]
    r = report.reproduce
    if r is not None:
        sha = f" (sha256 `{r.model_sha256}`)" if r.model_sha256 else " (sha256 not recorded)"
        source = f", from {r.model_source}" if r.model_source else ""
        lines += [
            "**Reproduce**: build, start the server, send the request (the run's), then the same decode "
            "with llama-bench.",
            "",
            f"Model: `{r.model_file}`{sha}{source}.",
            "",
            "```sh",
            *r.source,
            r.server,
            r.client,
            r.bench,
            "```",
            "",
            r.bench_note,
            "",
        ]
    lines.append(f"Report: {report_url(v.pk)}")
    return "\n".join(lines) + "\n"

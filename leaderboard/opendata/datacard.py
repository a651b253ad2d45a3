"""The data card: what the dump holds, how its rows differ, whose figures they are
and under which licence. Built once (``datacard_build``) from the table
definitions and the sources the public runs cite; the dump's DATACARD.md
(``datacard_markdown``) and the /data/ page render the same DataCard."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Count

from leaderboard.opendata.schema import SCHEMA_VERSION, Table
from leaderboard.opendata.tables import TABLES
from leaderboard.results.models import Provenance, Run, Source, SummarySource
from leaderboard.results.services.community import CommunityDataError, community_sets

COMMUNITY_PREFIX = "community:"
NOT_STATED = "not stated"


@dataclass(frozen=True)
class SourceLicence:
    """A source the public runs cite, with the licence its figures are under."""

    key: str
    title: str
    url: str
    runs: int
    licence: str


@dataclass(frozen=True)
class DataCard:
    tables: tuple[Table, ...]
    kinds: tuple[tuple[str, str], ...]  # (what a row is, how its figures came to be)
    sources: tuple[SourceLicence, ...]
    own_licence: str
    left_out: tuple[str, ...]
    schema_version: int = SCHEMA_VERSION
    created_at: datetime | None = None
    row_counts: tuple[tuple[str, int], ...] = ()


# How measured, reported and printed rows differ: the provenance and summary_source columns.
KINDS = (
    (
        f"measured ({Provenance.MEASURED}, summary_source {SummarySource.SAMPLES})",
        "A Rigboard runner measured the run on the rig and sent every repetition; the service computed "
        "the statistics from them (the repetitions table holds them, so any statistic can be recomputed).",
    ),
    (
        f"reported ({Provenance.REPORTED}, summary_source {SummarySource.PUBLISHED})",
        "Figures an article or a public result set printed, imported with a link to the source: a mean "
        "(and an SD or range where printed), no repetitions; n as the source stated it (workload_repetitions).",
    ),
    (
        f"printed summary (summary_source {SummarySource.PRINTED})",
        "A row of llama-bench's Markdown table: the mean ± SD llama-bench printed, no repetitions; n as the "
        "command's -r stated it, else empty. Measured by llama-bench, not by a Rigboard runner.",
    ),
    (
        f"sweep headline (summary_source {SummarySource.SWEEP})",
        "A run whose figures are all per context depth: its headline is the shortest depth's, the "
        "sweep_points table holds every depth.",
    ),
)

LEFT_OUT = (
    "Rigs awaiting review or rejected, and everything of theirs (runs, repetitions, campaigns, verdicts).",
    "Accounts: rig owners (account and name), e-mail addresses, API tokens, alert webhooks and addresses.",
    "Server logs, fingerprints, command lines and the runs' free-form extra data, which may carry a "
    "machine's paths or host names; a campaign's parameters keep a path's file name only.",
    "Per-chunk timings (inter-token gaps) and a concurrency level's single requests: the API's run "
    "detail (GET /api/runs/{run_uuid}/) has them.",
)


def _licences() -> dict[str, str]:
    try:
        return {COMMUNITY_PREFIX + s.key: s.license or NOT_STATED for s in community_sets()}
    except CommunityDataError:
        return {}


def cited_sources() -> tuple[SourceLicence, ...]:
    """Return every source the public runs cite, by key, with its run count and licence:
    a public result set's as its repository states it; an article's 'not stated'
    (its figures are quoted with a link to it)."""
    licences = _licences()
    counted = (
        Source.objects.filter(runs__in=Run.objects.public().values("pk"))
        .annotate(public_runs=Count("runs"))
        .order_by("key")
    )
    return tuple(
        SourceLicence(
            key=s.key,
            title=s.title,
            url=s.url,
            runs=s.public_runs,
            licence=licences.get(s.key, f"{NOT_STATED} (an article's figures, quoted with a link to it)"),
        )
        for s in counted
    )


def datacard_build(*, created_at: datetime | None = None, row_counts: dict[str, int] | None = None) -> DataCard:
    """Return the data card of the board as it is now (of a dump when ``created_at`` and ``row_counts`` are given)."""
    return DataCard(
        tables=TABLES,
        kinds=KINDS,
        sources=cited_sources(),
        own_licence=settings.RIGBOARD_DATA_LICENSE or NOT_STATED,
        left_out=LEFT_OUT,
        created_at=created_at,
        row_counts=tuple((row_counts or {}).items()),
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


LOADING = (
    ("pandas", 'pandas.read_parquet("runs.parquet")'),
    ("polars", 'polars.read_parquet("runs.parquet")'),
    ("DuckDB", "duckdb.sql(\"SELECT * FROM 'runs.parquet'\")"),
)


def datacard_markdown(card: DataCard) -> str:
    """Return the data card as Markdown (the dump's DATACARD.md)."""
    lines = ["# Rigboard open data: data card", ""]
    if card.created_at is not None:
        lines += [
            f"Dump of {card.created_at.isoformat().replace('+00:00', 'Z')}, schema version {card.schema_version}.",
            "",
        ]
    if card.row_counts:
        lines += ["| table | rows |", "| --- | ---: |", *(f"| {name} | {rows} |" for name, rows in card.row_counts), ""]
    lines += [
        "Every table is a Parquet file and a CSV file with the same columns; `manifest.json` lists each "
        "file's rows, bytes and sha256. Units are in the column names (`_tokens_per_s`, `_ms`, `_w`, `_j`, "
        "`_mib`, `_pct`, `_b` for billions of parameters, `_usd_per_mtok`). Tables join on `run_id`.",
        "",
        "## Loading",
        "",
        *(f"- {tool}: `{code}`" for tool, code in LOADING),
        "",
        "## Measured, reported and printed rows",
        "",
        *(f"- **{what}**: {how}" for what, how in card.kinds),
        "",
        "## What is not here",
        "",
        *(f"- {item}" for item in card.left_out),
        "",
        "## Sources and licences",
        "",
        f"Runs measured on this site's rigs: licence {card.own_licence}.",
        "",
        "| source | runs | licence | link |",
        "| --- | ---: | --- | --- |",
        *(f"| {_cell(s.title)} (`{s.key}`) | {s.runs} | {_cell(s.licence)} | {s.url or '–'} |" for s in card.sources),
        "",
    ]
    for table in card.tables:
        lines += [f"## {table.name}", "", table.description, "", "| column | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{c.name}` | {c.kind} | {_cell(c.description)} |" for c in table.columns]
        lines.append("")
    return "\n".join(lines)

"""Public result sets as *reported* runs with their provenance (``community_data/``).

Each set is a README kept verbatim as fetched, with the commit it was read at and
the day it was retrieved (``community_data/sources.json``); ``sources.py`` turns it
into rows. Every row becomes one reported run:

- its Source is the set (the README at that commit); the row's own link is the
  README line at that commit (``…/blob/<commit>/README.md#L95``), kept with the
  retrieval date, the column and the cell as printed in ``Run.extra['community']``,
  and, where the source links one, the page with the details (an issue);
- its workload is the set's own test (``XiongjieDai/…: llama-bench tg512``,
  ``geerlingguy/ai-benchmarks: eval rate``), never Rigboard's, so comparisons stay
  within one source's method;
- its rig is the system as the source names it, prefixed with the set's author,
  with its GPUs mapped onto Rigboard's GPU model names, so GPU pages gather them;
- its figure is the summary as published (``summary_source='published'``): decode
  for eval rate and tg, prefill for pp; a llama-bench table row from an issue is the
  mean ± SD llama-bench printed (``summary_source='printed'``), its row link the
  issue. No samples: none were published.

Idempotent: a row's run has a uuid5 of its set, line and column; a stored one is
left alone (the source file is pinned to its commit, so a row never changes
without its line moving too). Rigs are found by name and never modified.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from pydantic import ValidationError

from leaderboard.results.models import Provenance, Rig, Run, RunStatus, Source, SummarySource
from leaderboard.results.services.community.sources import PARSERS, CommunityRow, SourceFormatError
from leaderboard.results.services.rigs import GpuSpec, rig_create
from leaderboard.results.services.runs import run_create
from runners.delivery import schema
from runners.delivery.schema_types import field_errors

DATA_DIR = Path(__file__).resolve().parents[2] / "community_data"
MANIFEST = DATA_DIR / "sources.json"
FORMAT = "community-sets/1"
RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:rigboard:community-sets")

__all__ = [
    "CommunityDataError",
    "CommunityImport",
    "CommunitySet",
    "community_import",
    "community_sets",
    "row_run_uuid",
]


class CommunityDataError(ValueError):
    """A set cannot be imported; the message names the set and the line."""


@dataclass(frozen=True)
class CommunitySet:
    """One public result set as the manifest describes it."""

    key: str
    title: str
    author: str
    repo: str
    path: str
    commit: str
    committed_on: str
    retrieved_on: str
    file: Path
    # The licence the set's repository states ("none stated" when it states none).
    license: str = ""

    @property
    def url(self) -> str:
        """The set's page: its file at the commit read, or (a set of issue threads,
        which have no commit) the repository's issues."""
        if not self.commit:
            return f"https://github.com/{self.repo}/{self.path}"
        return f"https://github.com/{self.repo}/blob/{self.commit}/{self.path}"

    def line_url(self, line: int) -> str:
        return f"{self.url}#L{line}"

    def rows(self) -> list[CommunityRow]:
        """Return the set's rows from its source file; raise CommunityDataError if it cannot be read."""
        try:
            return PARSERS[self.key](self.file.read_text(encoding="utf-8"))
        except (OSError, SourceFormatError, KeyError) as exc:
            raise CommunityDataError(f"{self.key}: {exc}") from exc


@dataclass
class CommunityImport:
    """What one import did, per set: rows read, runs created, runs already stored."""

    rows: Counter[str] = field(default_factory=Counter)
    created: Counter[str] = field(default_factory=Counter)
    rigs_created: int = 0

    def lines(self) -> list[str]:
        per_set = [
            f"{key}: {rows} rows, {self.created[key]} new runs, {rows - self.created[key]} already stored"
            for key, rows in self.rows.items()
        ]
        return [*per_set, f"rigs created: {self.rigs_created}"]


def community_sets(manifest: Path = MANIFEST) -> list[CommunitySet]:
    """Return the sets the manifest lists; raise CommunityDataError for a bad manifest."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise CommunityDataError(f"{manifest}: expected format {FORMAT!r}")
        return [
            CommunitySet(
                **{k: item[k] for k in ("key", "title", "author", "repo", "path", "commit")},
                committed_on=item["committed_on"],
                retrieved_on=item["retrieved_on"],
                file=manifest.parent / item["file"],
                license=item["license"],
            )
            for item in data["sets"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommunityDataError(f"{manifest}: {exc}") from exc


def row_run_uuid(row: CommunityRow) -> uuid.UUID:
    """Return the uuid of the run a row is imported as (stable across imports)."""
    return uuid.uuid5(RUN_NAMESPACE, row.report_key)


def rig_name(row: CommunityRow, source_set: CommunitySet) -> str:
    return f"{source_set.author}: {row.system}"[:200]


def _checked(part: type[schema.Payload], data: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        return schema.validated(part, data)
    except ValidationError as exc:
        problems = "; ".join(f"{where}.{path}: {' '.join(why)}" for path, why in field_errors(exc).items())
        raise CommunityDataError(problems) from None


def run_create_kwargs(row: CommunityRow, source_set: CommunitySet, source: Source) -> dict[str, Any]:
    """Return run_create's keyword arguments (all but ``rig``) for one row; the run parts
    are checked by the run payload's definition (runners/delivery/schema.py)."""
    where = f"{row.set_key} line {row.line} {row.column}"
    decode = row.metric == "decode"
    parts: list[tuple[type[schema.Payload], dict[str, Any]]] = [
        (
            schema.StackInput,
            {
                "engine": row.engine,
                "build": row.build,
                "build_flags": f"backend: {row.backend}" if row.backend else "",
            },
        ),
        (
            schema.ModelFileInput,
            {
                "name": row.model_name,
                "quantization": row.quantization,
                "weight_format": "GGUF" if row.engine == "llama.cpp" else "",
                "total_params_b": row.params_b,
            },
        ),
        (schema.ConfigurationInput, {"speculative_type": "none" if row.engine == "llama.cpp" else "unknown"}),
        (schema.WorkloadInput, {"name": row.workload, "max_tokens": row.max_tokens, "repetitions": row.repetitions}),
    ]
    stack, model_file, configuration, workload = (_checked(part, data, where) for part, data in parts)
    # The set's own workload row, shared by its runs: its method, said once.
    workload["description"] = f"As {source_set.repo} measured and published it ({source_set.url})."
    run: dict[str, Any] = {
        "uuid": row_run_uuid(row),
        "status": RunStatus.FINISHED,
        "provenance": Provenance.REPORTED,
        "source": source,
        "report_key": row.report_key,
        "notes": "; ".join(row.notes),
        # A llama-bench table row is the mean ± SD llama-bench printed; other rows, a figure as published.
        "summary_source": SummarySource.PRINTED if row.printed_summary else SummarySource.PUBLISHED,
        "decode_tokens_per_s_mean" if decode else "prefill_tokens_per_s_mean": row.tokens_per_s,
        "extra": {
            "community": {
                "set": source_set.key,
                "set_title": source_set.title,
                "repo": source_set.repo,
                "file": source_set.path,
                "commit": source_set.commit,
                "retrieved_on": source_set.retrieved_on,
                "line": row.line,
                "column": row.column,
                "printed": row.printed,
                "row_url": row.row_url or source_set.line_url(row.line),
                "details_url": row.details_url,
                "system": row.system,
                "power_w_peak": row.power_w_peak,
            }
        },
    }
    if decode and row.printed_summary:
        run["decode_tokens_per_s_stdev"] = row.stddev_ts
    if row.printed_summary:
        run["extra"]["llama_bench"] = {
            "format": "md",
            "line": row.line,
            "summary": {
                "mean_ts": row.tokens_per_s,
                "stddev_ts": row.stddev_ts,
                "n": row.repetitions,
                "n_label": str(row.repetitions) if row.repetitions else "not stated",
                "source": "llama-bench -o md: mean ± SD as printed, no samples",
            },
        }
    return {
        "stack": stack,
        "model_file": model_file,
        "configuration": configuration,
        "workload": workload,
        "run": run,
    }


def source_title_text(source_set: CommunitySet) -> str:
    """Return a community set's title with where it was read: "… (commit 0123abcd45, retrieved
    2026-11-24)", or "… (retrieved 2026-11-24)" for a set read from a page with no commit
    (an issue thread): never an empty "(commit , …)"."""
    when = [f"commit {source_set.commit[:10]}"] if source_set.commit.strip() else []
    if source_set.retrieved_on:
        when.append(f"retrieved {source_set.retrieved_on}")
    return f"{source_set.title} ({', '.join(when)})" if when else source_set.title


def _source(source_set: CommunitySet) -> Source:
    values = {
        "title": source_title_text(source_set),
        "author_handle": source_set.author,
        "url": source_set.url,
        "published_date": source_set.committed_on,
    }
    source, _ = Source.objects.update_or_create(key=f"community:{source_set.key}", defaults=values)
    return source


def _rigs(rows: Sequence[CommunityRow], source_set: CommunitySet, report: CommunityImport) -> dict[str, Rig]:
    """Return the set's rigs by name, creating the missing ones with their GPUs."""
    wanted = {rig_name(row, source_set): row for row in rows}
    rigs = {rig.name: rig for rig in Rig.objects.filter(name__in=wanted)}
    for name, row in wanted.items():
        if name in rigs:
            continue
        rigs[name] = rig_create(
            name=name,
            gpus=[GpuSpec(model=g.model, vram_gb=g.vram_gb, count=g.count) for g in row.gpus],
            cpu=row.cpu,
            notes=f"A system as {source_set.repo} names it: {row.system}. Reported there, not measured by Rigboard.",
        )
        report.rigs_created += 1
    return rigs


def community_import(*, sets: Sequence[CommunitySet] | None = None, only: Sequence[str] = ()) -> CommunityImport:
    """Import every row of the public result sets (``only``: those keys) in one transaction.

    Return the rows read and runs created per set. Raise CommunityDataError naming the
    set and line when a source file or a row cannot be read; nothing is stored then."""
    chosen = [s for s in (sets if sets is not None else community_sets()) if not only or s.key in only]
    report = CommunityImport()
    with transaction.atomic():
        for source_set in chosen:
            rows = source_set.rows()
            source = _source(source_set)
            rigs = _rigs(rows, source_set, report)
            stored = set(Run.objects.filter(uuid__in=[row_run_uuid(r) for r in rows]).values_list("uuid", flat=True))
            report.rows[source_set.key] += len(rows)
            for row in rows:
                if row_run_uuid(row) in stored:
                    continue
                result = run_create(rig=rigs[rig_name(row, source_set)], **run_create_kwargs(row, source_set, source))
                report.created[source_set.key] += int(result.created)
    return report

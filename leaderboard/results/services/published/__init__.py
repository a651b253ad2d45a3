"""Import of the figures the articles published (``published_data/published_results.json``)
as *reported* runs citing their article, with the articles' comparison tables, tuning
experiments and fitted formulas (mapping decisions: ``mapping.py``).

Idempotent: a report's run has a uuid5 of its report id, and its Run.extra keeps a
sha256 of the report as imported. An unchanged report is left alone; a changed one is
deleted and stored again through ``run_create`` (the API's ingest) in the same
transaction, so nothing is ever half-updated. Reports missing from the file are never
deleted: importing a partial file (``--path``) must not lose runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.db import transaction

from leaderboard.results.models import Provenance, Rig, Run, Source
from leaderboard.results.published_data import PUBLISHED_RESULTS
from leaderboard.results.services.published.mapping import (
    FORMAT,
    IMPORTER_VERSION,
    PublishedDataError,
    content_digest,
    load_printed,
    read_text,
    report_run_uuid,
    run_create_kwargs,
)
from leaderboard.results.services.published.tables import (
    ImportReport,
    KindCounts,
    comparisons_import,
    experiments_import,
    fits_import,
    rigs_import,
    sources_import,
)
from leaderboard.results.services.runs import run_create

DEFAULT_PATH = PUBLISHED_RESULTS

__all__ = [
    "DEFAULT_PATH",
    "ImportReport",
    "KindCounts",
    "PublishedDataError",
    "published_import",
    "report_run_uuid",
]


def _report_import(report: Mapping[str, Any], rig: Rig, source: Source) -> str:
    """Store one report as a reported run; return 'created', 'updated' or 'unchanged'."""
    rid = read_text(report["id"], "report id")
    content_sha256 = content_digest({"importer_version": IMPORTER_VERSION, "rig": rig.name, "report": report})
    outcome = "created"
    existing = Run.objects.filter(uuid=report_run_uuid(rid)).first()
    if existing is not None:
        if existing.provenance != Provenance.REPORTED:
            raise PublishedDataError(f"report {rid}: its uuid belongs to a measured run")
        if existing.extra.get("published", {}).get("content_sha256") == content_sha256:
            return "unchanged"
        # Samples and sweep points go with it (CASCADE); comparison rows are relinked after.
        existing.delete()
        outcome = "updated"
    result = run_create(rig=rig, **run_create_kwargs(report, content_sha256, source))
    if not result.created:  # the uuid was deleted above, so this would be a bug
        raise PublishedDataError(f"report {rid}: run was not stored")
    return outcome


def published_import(*, path: Path | None = None) -> ImportReport:
    """Import the published results file at ``path`` (default: the copy shipped in
    published_data/) in one transaction; return what was created, updated and left unchanged.

    Raise PublishedDataError, naming the report and field, if the file is not in the
    ``published-results/1`` format or holds a value this importer cannot store as printed;
    nothing is stored then."""
    file_path = path or DEFAULT_PATH
    try:
        # Decimals keep their printed digits (249.30) for the pages that show figures as printed.
        data = load_printed(file_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PublishedDataError(f"{file_path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PublishedDataError(f"{file_path}: expected format {FORMAT!r}")
    for kind in ("reports", "comparisons", "experiments", "fits"):
        data.setdefault(kind, [])
    ids = [r.get("id") for r in data["reports"]]
    if len(set(ids)) != len(ids):
        raise PublishedDataError(f"{file_path}: report ids are not unique")
    report = ImportReport()
    try:
        with transaction.atomic():
            sources = sources_import(data, report)
            rigs = rigs_import(data, report)
            for item in data["reports"]:
                outcome = _report_import(item, rigs[item["rig"]["name"]], sources[item["source"]["file"]])
                report.counts["runs"].add(outcome)
            comparisons_import(data, sources, report)
            experiments_import(data, sources, report)
            fits_import(data, sources, report)
    except (KeyError, TypeError, AttributeError) as exc:
        # A missing key or a wrong shape somewhere in the file: refuse it whole.
        raise PublishedDataError(f"{file_path}: unexpected structure ({type(exc).__name__}: {exc})") from exc
    return report

"""Upserts of the rows other than runs: sources, rigs, and the articles' comparison
tables, tuning experiments and fitted formulas; plus the import's per-kind counts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.db import models

from leaderboard.results.models import (
    Provenance,
    PublishedComparison,
    PublishedComparisonRow,
    PublishedExperiment,
    PublishedFit,
    Rig,
    RigGpu,
    Run,
    Source,
)
from leaderboard.results.services.published.mapping import (
    PublishedDataError,
    first_given,
    printed_digits,
    read_count,
    read_number,
    read_text,
    report_run_uuid,
)

KINDS = ("sources", "rigs", "runs", "comparisons", "comparison_rows", "experiments", "fits")


@dataclass
class KindCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0

    def add(self, outcome: str, n: int = 1) -> None:
        setattr(self, outcome, getattr(self, outcome) + n)


@dataclass
class ImportReport:
    """What an import did, per kind of row; ``warnings`` lists what it chose not to touch."""

    counts: dict[str, KindCounts] = field(default_factory=lambda: {kind: KindCounts() for kind in KINDS})
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"{kind}: {c.created} created, {c.updated} updated, {c.unchanged} unchanged, {c.deleted} deleted"
            for kind, c in self.counts.items()
        ]


_PARTIAL_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")


def _published_date(raw: object, key: str) -> tuple[str, date | None]:
    """Return (the date as the source gives it, the full date or None).

    Articles often give only a month ('2026-03'): it is kept as text, and only a
    full date fills published_on (the one used for sorting)."""
    if raw is None or raw == "":
        return "", None
    if not isinstance(raw, str) or not _PARTIAL_DATE.fullmatch(raw):
        raise PublishedDataError(f"source {key}: date {raw!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
    try:
        if len(raw) == len("2026-03-01"):
            return raw, date.fromisoformat(raw)
        date.fromisoformat(f"{raw}-01" if len(raw) == len("2026-03") else f"{raw}-01-01")
    except ValueError:
        raise PublishedDataError(f"source {key}: date {raw!r} is not a real date") from None
    return raw, None


def _upsert(model: type[models.Model], lookup: dict[str, Any], values: dict[str, Any]) -> tuple[Any, str]:
    """Create the row ``lookup`` names with ``values``, or update the fields that differ.
    Return the row and 'created', 'updated' or 'unchanged'."""
    obj = model._default_manager.filter(**lookup).first()
    if obj is None:
        return model._default_manager.create(**lookup, **values), "created"
    changed = [name for name, value in values.items() if getattr(obj, name) != value]
    for name in changed:
        setattr(obj, name, values[name])
    if changed:
        obj.save(update_fields=changed)
    return obj, "updated" if changed else "unchanged"


def sources_import(data: Mapping[str, Any], report: ImportReport) -> dict[str, Source]:
    """Upsert one Source per source file; fields are the first non-null value the file
    gives for that file (reports repeat them)."""
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    for r in data["reports"]:
        src = r["source"]
        by_key.setdefault(read_text(src["file"], f"report {r['id']}: source.file"), []).append(src)
    for kind in ("comparisons", "experiments", "fits"):
        for item in data[kind]:
            by_key.setdefault(read_text(item["source_file"], f"{kind}: source_file"), [])
    sources = {}
    for key, entries in by_key.items():
        raw_date = first_given(e.get("date") for e in entries)
        published_date, published_on = _published_date(raw_date, key)
        values = {
            "title": read_text(first_given(e.get("title") for e in entries), f"source {key}: title"),
            "author_handle": read_text(first_given(e.get("author_handle") for e in entries), f"source {key}: author"),
            "url": read_text(first_given(e.get("url") for e in entries), f"source {key}: url"),
            "published_on": published_on,
            "published_date": published_date,
        }
        sources[key], outcome = _upsert(Source, {"key": key}, values)
        report.counts["sources"].add(outcome)
    return sources


def rigs_import(data: Mapping[str, Any], report: ImportReport) -> dict[str, Rig]:
    """Upsert one Rig per rig name. Reports naming the same rig must agree on its GPUs
    (model and count); other fields take the first non-null value in file order, and the
    distinct notes are joined. A rig a runner uses (it has a token or measured runs) is
    not modified."""
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for r in data["reports"]:
        by_name.setdefault(read_text(r["rig"]["name"], f"report {r['id']}: rig.name"), []).append(r)
    rigs = {}
    for name, reports in by_name.items():
        where = f"rig {name!r}"
        shapes = {tuple((g["name"], g["count"]) for g in r["rig"]["gpus"]) for r in reports}
        if len(shapes) > 1:
            raise PublishedDataError(f"{where}: reports disagree on its GPUs: {sorted(shapes)}")
        gpus = []
        for position, group in enumerate(zip(*(r["rig"]["gpus"] for r in reports), strict=True)):
            gpus.append(
                {
                    "model": read_text(group[0]["name"], f"{where}: gpu name"),
                    "count": read_count(group[0]["count"], f"{where}: gpu count") or 1,
                    "vram_gb": read_number(first_given(g["vram_gb"] for g in group), f"{where}: vram_gb"),
                    "power_limit_w": read_number(
                        first_given(g["power_limit_w"] for g in group), f"{where}: power_limit_w"
                    ),
                    "position": position,
                }
            )
        notes = list(dict.fromkeys(read_text(r["rig"].get("notes"), f"{where}: notes") for r in reports))
        values = {
            "cpu": read_text(first_given(r["rig"].get("cpu") for r in reports), f"{where}: cpu"),
            "ram_gb": read_number(first_given(r["rig"].get("ram_gb") for r in reports), f"{where}: ram_gb"),
            "owner_name": read_text(first_given(r["source"].get("author_handle") for r in reports), f"{where}: author"),
            "notes": "\n\n".join(n for n in notes if n),
        }
        existing = Rig.objects.filter(name=name).first()
        if existing is not None and (
            existing.tokens.exists() or existing.runs.filter(provenance=Provenance.MEASURED).exists()
        ):
            report.warnings.append(f"{where} is used by a runner; its fields and GPUs were left as they are")
            report.counts["rigs"].add("unchanged")
            rigs[name] = existing
            continue
        rig, outcome = _upsert(Rig, {"name": name}, values)
        stored = [
            {k: getattr(g, k) for k in ("model", "count", "vram_gb", "power_limit_w", "position")}
            for g in rig.gpus.order_by("position", "id")
        ]
        if stored != gpus:
            rig.gpus.all().delete()
            RigGpu.objects.bulk_create([RigGpu(rig=rig, **g) for g in gpus])
            outcome = "created" if outcome == "created" else "updated"
        report.counts["rigs"].add(outcome)
        rigs[name] = rig
    return rigs


COMPARISON_FIGURES = ("decode_tokens_per_s", "prefill_tokens_per_s", "power_w", "cost_usd_per_mtok", "gain_pct")


def comparisons_import(data: Mapping[str, Any], sources: Mapping[str, Source], report: ImportReport) -> None:
    for item in data["comparisons"]:
        key = read_text(item["id"], "comparison id")
        values = {
            "source": sources[item["source_file"]],
            "title": read_text(item.get("title"), f"comparison {key}: title"),
            "notes": read_text(item.get("notes"), f"comparison {key}: notes"),
        }
        comparison, outcome = _upsert(PublishedComparison, {"key": key}, values)
        report.counts["comparisons"].add(outcome)
        for position, row in enumerate(item["rows"], start=1):
            where = f"comparison {key}: row {position}"
            run = None
            if row.get("report_id") is not None:
                run = Run.objects.filter(uuid=report_run_uuid(row["report_id"])).first()
                if run is None:
                    raise PublishedDataError(f"{where}: no report {row['report_id']!r} in the file")
            row_values = {
                "label": read_text(row["label"], f"{where}: label"),
                "run": run,
                "note": read_text(row.get("note"), f"{where}: note"),
                **{name: read_number(row.get(name), f"{where}: {name}") for name in COMPARISON_FIGURES},
                "printed": printed_digits(row, COMPARISON_FIGURES),
            }
            _, outcome = _upsert(PublishedComparisonRow, {"comparison": comparison, "position": position}, row_values)
            report.counts["comparison_rows"].add(outcome)
        removed, _ = comparison.rows.filter(position__gt=len(item["rows"])).delete()
        report.counts["comparison_rows"].add("deleted", removed)


def experiments_import(data: Mapping[str, Any], sources: Mapping[str, Source], report: ImportReport) -> None:
    """Upsert the tuning phases; ``position`` is their order in the file within their source."""
    positions: dict[str, int] = {}
    for item in data["experiments"]:
        key = item["source_file"]
        positions[key] = positions.get(key, 0) + 1
        where = f"experiment {key} #{positions[key]}"
        values = {
            "phase": read_text(item.get("phase"), f"{where}: phase"),
            "label": read_text(item["label"], f"{where}: label"),
            "decode_tokens_per_s": read_number(item.get("decode_tokens_per_s"), f"{where}: decode_tokens_per_s"),
            "printed": printed_digits(item, ["decode_tokens_per_s"]),
            "config": dict(item.get("config") or {}),
            "notes": read_text(item.get("notes"), f"{where}: notes"),
        }
        _, outcome = _upsert(PublishedExperiment, {"source": sources[key], "position": positions[key]}, values)
        report.counts["experiments"].add(outcome)
    for key, count in positions.items():
        removed, _ = PublishedExperiment.objects.filter(source=sources[key], position__gt=count).delete()
        report.counts["experiments"].add("deleted", removed)


def fits_import(data: Mapping[str, Any], sources: Mapping[str, Source], report: ImportReport) -> None:
    for item in data["fits"]:
        where = f"fit {item.get('name')!r}"
        lookup = {"source": sources[item["source_file"]], "name": read_text(item["name"], f"{where}: name")}
        values = {
            "formula": read_text(item["formula"], f"{where}: formula"),
            "notes": read_text(item.get("notes"), f"{where}: notes"),
        }
        _, outcome = _upsert(PublishedFit, lookup, values)
        report.counts["fits"].add(outcome)

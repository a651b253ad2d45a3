"""A batch of runs (``POST /api/runs/bulk/``, ``manage.py import_runs``): its parser,
and each run checked against the run payload's one definition as ``POST /api/runs/``
checks it, so that a bad run is refused on its own and the rest are stored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from leaderboard.results.api.parsers import BoundedJSONParser
from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import Rig
from leaderboard.results.services.bulk import BulkRunOutcome, bulk_refusal, runs_store_bulk
from runners.delivery import schema


class RefusedRun:
    """A run of a batch holding values no field may take (NaN, a NUL character):
    the parser's errors for it, without the ``runs.<index>.`` prefix."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors


class BulkJSONParser(BoundedJSONParser):
    """The bounded JSON parser with the batch's own size limit; a value no field may
    take refuses only the run it is in."""

    limit_setting = "RIGBOARD_MAX_BULK_BODY_BYTES"

    def refused(self, data: Any, errors: dict[str, list[str]]) -> Any:
        runs = data.get("runs") if isinstance(data, dict) else None
        per_run: dict[int, dict[str, list[str]]] = {}
        for path, why in errors.items():
            head, _, rest = path.partition(".")
            position, _, name = rest.partition(".")
            if head != "runs" or not isinstance(runs, list) or not position.isdigit() or not name:
                return super().refused(data, errors)
            per_run.setdefault(int(position), {})[name] = why
        for index, run_errors in per_run.items():
            runs[index] = RefusedRun(run_errors)  # type: ignore[index]
        return data


def _checked(rig: Rig, index: int, document: Any) -> dict[str, Any] | BulkRunOutcome:
    """Return the validated payload, or its refusal. A run that leaves out ``rig`` is
    the token's rig's; one that names another rig is refused with 403, as POST /api/runs/ does."""
    if isinstance(document, RefusedRun):
        return bulk_refusal(index, None, 400, document.errors)
    if isinstance(document, dict):
        claimed = document.get("rig")
        if claimed is None:
            document = {**document, "rig": rig.name}
        elif isinstance(claimed, str) and claimed != rig.name:
            why = f"This token belongs to rig {rig.name!r}; it cannot submit runs for rig {claimed!r}."
            return bulk_refusal(index, document, 403, {"rig": [why]})
    data, problems = payload_checked(schema.RunCreateInput, document)
    return data if data is not None else bulk_refusal(index, document, 400, problems)


def runs_submit(*, rig: Rig, documents: Sequence[Any]) -> list[BulkRunOutcome]:
    """Check and store each run document as a measured run of ``rig``; return one
    outcome per document, in order (``services.bulk.BulkRunOutcome``)."""
    outcomes: dict[int, BulkRunOutcome] = {}
    datas: dict[int, Mapping[str, Any]] = {}
    for index, document in enumerate(documents):
        checked = _checked(rig, index, document)
        if isinstance(checked, BulkRunOutcome):
            outcomes[index] = checked
        else:
            datas[index] = checked
    outcomes.update(runs_store_bulk(rig=rig, datas=datas))
    return [outcomes[index] for index in range(len(documents))]

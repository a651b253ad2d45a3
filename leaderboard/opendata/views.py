"""/data/: the data card and the latest dump's files; /data/files/…: the files themselves."""

from __future__ import annotations

import mimetypes

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.opendata.datacard import LOADING, datacard_build
from leaderboard.opendata.selectors import dump_file, dump_manifest, latest_dump_name

_TYPES = {
    ".parquet": "application/vnd.apache.parquet",
    ".csv": "text/csv",
    ".md": "text/markdown",
    ".json": "application/json",
}


@require_GET
def data_page(request: HttpRequest) -> HttpResponse:
    name = latest_dump_name()
    manifest = dump_manifest(name) if name else None
    card = datacard_build()
    counts = manifest["row_counts"] if manifest else {}
    context = {
        "card": card,
        "manifest": manifest,
        "loading": LOADING,
        "tables": [(table, counts.get(table.name)) for table in card.tables],
    }
    return render(request, "opendata/data.html", context)


@require_GET
def data_file(request: HttpRequest, dump: str, filename: str) -> FileResponse:
    """One file of a dump (``latest``: the newest), if that dump's manifest lists it."""
    path = dump_file(dump, filename)
    if path is None or not path.is_file():
        raise Http404("no such dump file")
    suffix = path.suffix.lower()
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    response = FileResponse(path.open("rb"), content_type=content_type, as_attachment=suffix in (".parquet", ".csv"))
    if dump == "latest":
        # The newest dump changes nightly; a named one never does.
        response["Cache-Control"] = "public, max-age=3600"
    else:
        response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response

"""The figures the articles published, as shipped with the service (README.md):
``PUBLISHED_RESULTS`` is the file; import_published loads it into the database,
and a campaign's analysis reads seed 003's printed fit from it."""

from __future__ import annotations

from pathlib import Path

PUBLISHED_RESULTS = Path(__file__).resolve().with_name("published_results.json")

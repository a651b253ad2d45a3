"""Writes: ingest of runs (from the API and from published data), summaries, keys."""

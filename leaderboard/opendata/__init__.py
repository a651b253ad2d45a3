"""The public board as an open dataset: nightly Parquet and CSV dumps of what the
public may see (tables.py: the one definition of each table and its columns),
written atomically with a manifest (writer.py), described by a data card
(datacard.py) served at /data/ (views.py)."""

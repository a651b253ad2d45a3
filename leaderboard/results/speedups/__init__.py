"""Speed-ups that step past Django's or DRF's public API, fenced here, each with
the plain path it replaces kept as its reference and a test that the two agree.

Kept because the ingest target (``make bench-ingest``: ≥ 200 runs/s, p95 ≤ 100 ms
on 2 CPUs) needs them, measured by turning each off in turn (gunicorn CPU per
POSTed run, benchmarks/README.md); ``compiled`` serves the pages' CPU instead
(issue 40, measured with benchmarks/site_phases.py):

- ``outputs``: output serializers compiled into plain functions. Reference:
  ``serializer_class(instance).data``; test: tests/results/test_compiled_outputs.py
  (every published run and source). Off: ≈ 23 ms per run instead of ≈ 6-8 ms.
- ``ingest_sql``: a run, its samples and sweep points in one INSERT (PostgreSQL),
  setting the objects' ``_state`` by hand. Reference: ``run_rows_save`` (the ORM,
  also the path off PostgreSQL); test: tests/results/test_speedups.py. Off: +2 to
  +6 ms per run.
- ``bulk_sql``: the new runs of a ``POST /api/runs/bulk/`` batch, their samples and
  sweep points in one INSERT per table. Reference: the ORM's ``bulk_create``
  (``runs_rows_save``), and for the whole bulk intake storing the same runs one by
  one (``services.bulk.runs_store_one_by_one``); test: tests/results/test_bulk_speedup.py.
  Needed for ≥ 1/5 of COPY's rate (``make bench-ingest``'s bulk line).
- ``lookup``: the catalog rows, the rig's GPUs and an existing run in one round
  trip. Reference: the ORM branch in the same module (other databases); test:
  tests/results/test_ingest_lookup.py.
- ``cursor``: a server-binding cursor (``connection._prepare_cursor``) so the
  constant statements above and the token lookup (results/auth.py) are prepared
  once per connection. Reference: ``connection.cursor()`` (other databases).
- ``compiled``: reads by a list of ids compiled once per connection from the ORM's
  querysets (``AnyOf``: the ids one array parameter; the prepared cursor), for the
  pages' reads by their rows' ids: the board rows' four (boards/speedups/row_reads.py)
  and the nightly timeline links (regressions/selectors.py). Reference: each one's
  ``__in`` ORM reading (also the path off PostgreSQL); tests:
  tests/boards/test_row_reads_speedup.py, tests/boards/test_nightly_links.py.
  Figures: benchmarks/README.md (thirty-first and thirty-second sessions).
- ``prefetch``: objects ingest built attached as if prefetched (``_result_cache``),
  so the 201 body costs no read-back. Reference: GET's read
  (``selectors.run_get``); test: the 201 body equals GET's
  (tests/results/test_compiled_outputs.py).
"""

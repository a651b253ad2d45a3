"""Speed-ups of the pages that step past Django's template engine, fenced here,
each with the plain path it replaces kept as its reference and a test that the
two agree (tests/boards/test_cells_speedup.py). The page uses the fast path; the
reference is rendered only by that test, so there is one path in production and
no setting to keep in step with it.

Each was kept for what it saves of the pages' CPU, measured side by side (figures
in benchmarks/README.md):

- ``cells``: one leaderboard row's cells built with format_html, reversing each
  URL once per page. Reference: templates/boards/_leaderboard_cells.html.
  Off: the page's CPU p50 23.1 → 32.6 ms.
- ``rows_table_cells`` (same module): a plain run table's row (a rig page's best
  runs and history, a source's runs). Reference: templates/boards/_rows_table_cells.html.
  A rig page's CPU at 100k runs: see benchmarks/README.md (2026-11-27, tenth session).
- ``select``: a filter form's ``<select>`` built with format_html. Reference:
  ``{{ bound_field }}``, Django's widget. Off: 23.1 → 29.4 ms.
- ``inputs``: a form renderer writing Django's ``<input>`` widgets in Python (the
  filter form's seven inputs), the widgets' contexts still Django's. Reference: Django's
  ``DjangoTemplates`` renderer. Figures: benchmarks/README.md (thirty-third session).
- ``row_reads``: the rows' four reads (``rows_by_ids``: every board, rig, run and
  source page, every export chunk) compiled once per connection from the ORM's
  querysets, the ids bound as one array and the statements prepared. Reference:
  ``row_reads.row_parts_orm`` (also the path off PostgreSQL); test:
  tests/boards/test_row_reads_speedup.py. Figures: benchmarks/README.md (thirty-first
  session).
"""

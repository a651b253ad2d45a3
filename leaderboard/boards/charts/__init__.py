"""The boards' Plotly figures as plain dicts: pure functions from plain data to
``{"data": [...], "layout": {...}}``, serialised into the page with
``json_script`` and drawn by the vendored plotly.js basic bundle (scatter and bar).
One figure, or one tight family, per module: ``sweep`` (seed 001's context
panes), ``repetitions`` (decode t/s per repetition, draft acceptance), ``bars``
(a ranking), ``distributions`` (compared runs' repetitions), ``steps`` (a tuning
journey), ``power_law`` (a printed fit), ``board`` (the leaderboard as a
picture), ``concurrency`` (streams); ``palette`` their colours and ``labels``
the context labels (198K) read and written. ``chartdata`` turns models into
their plain data.

Plotly renders trace names, hover text and category labels as a subset of
HTML, so every user-provided string is escaped (``core.charts.esc``) before it
enters a figure. Every hover text names its unit.
"""

"""benchmarks/site_latency.py's SQL column (issue 40's cpu/sql ratio): every statement a
request runs is counted, each at the clock's resolution, where DEBUG's query log keeps
each time rounded to the millisecond. (The script prints figures; this does not time
anything against a clock: the statements sleep on the server a known least time.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import site_latency  # noqa: E402

pytestmark = pytest.mark.django_db

SLEEP_S = 0.0004  # under half a millisecond: DEBUG's log rounds each such statement to 0.000 or 0.001


def test_the_clock_counts_each_statement_at_its_own_resolution() -> None:
    clock = site_latency.SqlClock()
    with CaptureQueriesContext(connection) as log, connection.execute_wrapper(clock), connection.cursor() as cursor:
        for _ in range(5):
            cursor.execute("SELECT pg_sleep(%s)", [SLEEP_S])
        cursor.executemany("SELECT pg_sleep(%s)", [[SLEEP_S], [SLEEP_S]])
    assert clock.statements == 6
    # Seven sleeps of 0.4 ms on the server: at least 2.8 ms, whatever the machine.
    assert clock.seconds >= 7 * SLEEP_S
    # The log's times are whole milliseconds (three decimals of a second): what the clock is not.
    assert all(len(entry["time"].split(".")[1]) == 3 for entry in log.captured_queries)
    assert clock.seconds * 1000 != pytest.approx(sum(float(entry["time"]) for entry in log.captured_queries) * 1000)
    clock.reset()
    assert (clock.seconds, clock.statements) == (0.0, 0)


def test_timed_requests_gives_one_figure_a_request_and_the_pages_statements(
    client: Client, board_run, settings
) -> None:
    settings.DEBUG = True  # the log column reads connection.queries, kept only with DEBUG on (as the script runs)
    wall, cpu, sql, sql_log, statements = site_latency.timed_requests(client, "/", 3)
    assert len(wall) == len(cpu) == len(sql) == len(sql_log) == 3
    assert statements > 0 and all(s > 0 for s in sql)
    # The SQL is part of the request's wall time, not more.
    assert all(s < w for s, w in zip(sql, wall, strict=True))
    with CaptureQueriesContext(connection) as seen:
        client.get("/")
    assert statements == len(seen.captured_queries)

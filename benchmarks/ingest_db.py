"""The PostgreSQL side of the ingest benchmark: the benchmark's own database,
row counts, the COPY reference, and CPU accounting of gunicorn workers and
PostgreSQL backends (from /proc, so the figures hold on a shared machine)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

TABLES = ("results_run", "results_sample", "results_sweeppoint")


def with_database(url: str, name: str) -> str:
    scheme, rest = url.split("://", 1)
    server = rest.split("/", 1)[0]
    return f"{scheme}://{server}/{name}"


def recreate_database(server_url: str, name: str) -> None:
    with psycopg.connect(with_database(server_url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(server_url: str, name: str) -> None:
    with psycopg.connect(with_database(server_url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def cpu_seconds(pid: int) -> float:
    """Return user + system CPU seconds ``pid`` has used so far; 0.0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def backend_pids(database_url: str, name: str) -> list[int]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
        ).fetchall()
    return [row[0] for row in rows]


def cpu_snapshot(server_pid: int, database_url: str, name: str) -> dict[str, dict[int, float]]:
    """CPU seconds so far of each gunicorn worker and each PostgreSQL backend on the benchmark database."""
    return {
        "service": {pid: cpu_seconds(pid) for pid in children(server_pid)},
        "postgres": {pid: cpu_seconds(pid) for pid in backend_pids(database_url, name)},
    }


def cpu_used(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    # A process that appeared during the run (a backend opened on first use) started from zero.
    return {side: sum(seconds - before[side].get(pid, 0.0) for pid, seconds in after[side].items()) for side in after}


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def copy_reference(database_url: str, runs: int) -> float:
    """COPY ``runs`` copies of a stored run (its run row, samples and sweep points)
    into the same tables in one transaction; return the seconds taken, commit included."""
    with psycopg.connect(database_url) as conn:
        template_id = conn.execute("SELECT max(id) FROM results_run").fetchone()[0]  # type: ignore[index]
        lines: dict[str, list[list[str]]] = {}
        columns: dict[str, list[str]] = {}
        for table in TABLES:
            key = "id" if table == "results_run" else "run_id"
            query = sql.SQL("COPY (SELECT * FROM {} WHERE {} = {}) TO STDOUT").format(
                sql.Identifier(table), sql.Identifier(key), sql.Literal(template_id)
            )
            with conn.cursor() as cur:
                columns[table] = [
                    row[0]
                    for row in cur.execute(
                        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                        "AND NOT attisdropped ORDER BY attnum",
                        (table,),
                    )
                ]
                with cur.copy(query) as copy:
                    text = b"".join(bytes(chunk) for chunk in copy).decode()
            lines[table] = [line.split("\t") for line in text.splitlines()]
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('results_run', 'id')) FROM generate_series(1, %s)", (runs,)
            )
        ]
        conn.commit()
        buffers = {}
        for table in TABLES:
            cols = columns[table]
            out = []
            for run_id in ids:
                for row in lines[table]:
                    values = dict(zip(cols, row, strict=True))
                    if table == "results_run":
                        values["id"], values["uuid"] = str(run_id), str(uuid.uuid4())
                    else:
                        values["run_id"] = str(run_id)
                    out.append("\t".join(values[c] for c in cols if table == "results_run" or c != "id"))
            buffers[table] = ("\n".join(out) + "\n").encode()
        started = time.perf_counter()
        with conn.cursor() as cur:
            for table in TABLES:
                cols = [c for c in columns[table] if table == "results_run" or c != "id"]
                statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                    sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols))
                )
                with cur.copy(statement) as copy:
                    copy.write(buffers[table])
        conn.commit()
        return time.perf_counter() - started


def table_counts(database_url: str) -> dict[str, int]:
    with psycopg.connect(database_url) as conn:
        return {
            table: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]  # type: ignore[index]
            for table in TABLES
        }

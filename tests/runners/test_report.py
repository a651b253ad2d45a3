"""The runner's table reproduces seed 004's published figures from its raw rows."""

from __future__ import annotations

from dataclasses import dataclass

from runners.harness.report import samples_table, summary_line, sweep_table
from runners.harness.sweep import SweepPoint

# Seed 004's per-run rows: (t/s, draft_n, accepted). Its article publishes
# 249.30 t/s AVG, 86.6% acceptance, σ ≈ 3.0 and range 10.15.
SEED_004 = [
    (253.73, 1634, 1454), (248.63, 1672, 1441), (251.65, 1653, 1448), (251.75, 1653, 1448),
    (250.43, 1657, 1446), (245.62, 1692, 1434), (248.14, 1672, 1440), (249.72, 1661, 1445),
    (249.78, 1663, 1444), (243.58, 1707, 1430),
]  # fmt: skip


@dataclass
class Row:
    index: int
    decode_tokens_per_s: float | None
    draft_n: int | None
    draft_n_accepted: int | None


def test_it_prints_seed_004s_table() -> None:
    rows = [Row(i, tps, d, a) for i, (tps, d, a) in enumerate(SEED_004, start=1)]
    lines = samples_table(rows).splitlines()
    assert lines[0] == "| run | t/s | draft_n | accepted | accept % |"
    assert lines[2] == "| 1 | 253.73 | 1634 | 1454 | 89.0% |"
    assert lines[11] == "| 10 | 243.58 | 1707 | 1430 | 83.8% |"
    assert lines[12] == "| AVG | 249.30 | | | 86.6% (σ 3.0, range 10.15) |"
    assert summary_line(rows).startswith("decode t/s: mean 249.30, median 249.75, n 10, 95% CI 247.")


def test_it_marks_figures_the_server_did_not_report() -> None:
    rows = [Row(1, 50.0, None, None), Row(2, 52.0, None, None)]
    lines = samples_table(rows).splitlines()
    assert lines[2] == "| 1 | 50.00 | — | — | — |"
    assert lines[-1] == "| AVG | 51.00 | | | (σ 1.4, range 2.00) |"


def test_it_prints_the_sweep_with_deltas_and_skips() -> None:
    points = [
        SweepPoint(32768, "32K", 1000.0, 249.30, 30.0),
        SweepPoint(65536, "64K", 900.0, 252.64, 70.0),
        SweepPoint(262144, "256K", note="skipped: needs 262272 tokens (262144 + 128), n_ctx is 131072"),
    ]
    lines = sweep_table(points).splitlines()
    assert "| 32K | 1000.00 | 249.30 | 30 | — | baseline |" in lines[2]
    assert "| 64K | 900.00 | 252.64 | 70 | — | +1.3% |" in lines[3]
    assert lines[4].startswith("| 256K | — | — | — | — | — | skipped: needs 262272")

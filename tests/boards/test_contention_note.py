"""What else used the rig while a run's repetitions ran (the runner's
extra["contention"]), in words on the run page; a busy machine is called busy at
the A/B rule's own limits (runners/ab_design.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from leaderboard.boards.formatting import contention_note
from runners.ab_design import HEAVY_CPU_SHARE


def _reading(**changes: Any) -> dict[str, Any]:
    found = {"wall_s": 12.0, "others_cpu_s": 1.2, "others_cpu_share": 0.05, "over": "repetitions"}
    return {"contention": {**found, "gpu_others_util_pct": None, "gpu_others_mem_mib": None, **changes}}


def test_a_quiet_machine_is_said_quiet_with_its_figures() -> None:
    assert contention_note(_reading()) == (
        "While the repetitions ran, other processes used 5% of the machine's CPUs (1.2 CPU-seconds in 12.0 s)."
    )


def test_a_machine_busier_than_the_ab_rule_judges_is_called_busy() -> None:
    note = contention_note(_reading(others_cpu_share=HEAVY_CPU_SHARE + 0.01, others_cpu_s=6.2))
    assert note.endswith(": a busy machine, so this run may be slower than the rig alone.")
    assert "26% of the machine's CPUs" in note
    gpu = contention_note(_reading(gpu_others_util_pct=35.0, gpu_others_mem_mib=2048.0))
    assert "on the GPU, other processes peaked at 35% SM use and held 2,048 MiB: a busy machine" in gpu


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({}, ""),
        ({"contention": "garbled"}, ""),
        ({"contention": {"reason": "an attached server"}}, "was not measured: an attached server."),
        (_reading(others_cpu_share=None, others_cpu_s=None), "not measured (no /proc on this rig)."),
    ],
)
def test_what_was_not_measured_is_said_so_and_a_run_without_it_says_nothing(extra: Any, said: str) -> None:
    note = contention_note(extra)
    assert note.endswith(said) and (note == "") == (said == "")


@pytest.mark.django_db
def test_the_run_page_says_it(make_run: Callable[..., Any], client: Any) -> None:
    run = make_run()
    run.extra = {**run.extra, **_reading(others_cpu_share=0.4, others_cpu_s=9.6)}
    run.save(update_fields=["extra"])

    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert '<p class="note" id="contention">While the repetitions ran, other processes used 40%' in page

"""The run-to-run noise floor in stored verdicts: measured on earlier runs of
the same comparison (repeats of a first build, then successive accepted
builds), recorded on the verdict, configurable per subscription, shown on
the timeline. Runs are ingested through the real run_create."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.models import BuildRun
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.states import BuildRunRole
from leaderboard.regressions.verdict import DEFAULT_NOISE_K
from tests.fixtures.regressions import post_run

pytestmark = pytest.mark.django_db(transaction=True)

# Tight samples: any two runs a few percent apart are "significant" to the U test.
BASE = [100.0, 100.1, 99.9, 100.05, 99.95, 100.02, 99.98, 100.01, 99.99, 100.03]


def _report(build: Any) -> dict[str, Any]:
    runs = [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in build.build_runs.all()]
    return {"build_id": build.pk, "status": "built", "error": "", "build": {"build_time_s": 1.0}, "runs": runs}


def _scaled(factor: float) -> list[float]:
    return [v * factor for v in BASE]


def test_a_first_build_says_the_noise_floor_is_unknown(nightly_setup: Callable[..., Any]) -> None:
    _, _, make_build = nightly_setup(alert_emails="", webhook_url="")
    _, (verdict,) = build_report_record(report=_report(make_build("a", BASE)))
    assert verdict.kind == "none" and verdict.noise_floor_pct is None and verdict.noise_n_runs == 0
    assert verdict.reason.endswith("noise floor unknown: first builds (0 earlier runs, need 3)")


def test_drift_between_builds_within_the_noise_floor_is_no_regression_and_k_is_configurable(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    # Accepted builds whose runs drift (b is within 3% of a, c is faster: no regression).
    for char, factor in (("a", 1.0), ("b", 0.975), ("c", 1.025)):
        build_report_record(report=_report(make_build(char, _scaled(factor))))
    # 10% below the last build: significant and past 3%, but runs of these
    # builds already spread by 2.5% (SD), so the floor is 5 × 2.5% (as a log
    # ratio: a slowdown of 11.8% or a speedup of 13.3%).
    _, (verdict,) = build_report_record(report=_report(make_build("d", _scaled(1.025 * 0.9))))

    assert verdict.kind == "none" and "within the noise floor" in verdict.reason, verdict.reason
    assert verdict.p_value is not None and verdict.p_value < 0.01 and verdict.effect_pct == pytest.approx(-10.0)
    assert (verdict.noise_n_runs, verdict.noise_k) == (3, DEFAULT_NOISE_K)
    assert verdict.noise_spread_pct == pytest.approx(2.5, abs=0.01)
    assert verdict.noise_floor_pct == pytest.approx(12.5, abs=0.05)  # a factor of e^0.125
    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()
    assert "-11.8% / +13.3%" in html and "unknown" in html  # d's floor; a's verdict had none

    sub.noise_k = 2.0
    sub.save(update_fields=["noise_k"])
    _, (strict,) = build_report_record(report=_report(verdict.build))
    assert strict.kind == "regression" and strict.noise_floor_pct == pytest.approx(5.0, abs=0.05)
    assert "and the noise floor -4.88%/+5.13% (2 × SD 2.50% of 3 runs)" in strict.reason


def test_the_repeated_runs_of_a_first_build_give_the_second_its_noise_floor(nightly_setup: Callable[..., Any]) -> None:
    _, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    first = make_build("a", BASE)
    for repeat, factor in ((1, 1.005), (2, 0.995)):
        extra = BuildRun.objects.create(
            build=first, reference_config=ref, repeat=repeat, role=BuildRunRole.NOISE, run_uuid=uuid.uuid4()
        )
        post_run(first, _scaled(factor), build_run=extra)
    _, first_verdicts = build_report_record(report=_report(first))
    assert len(first_verdicts) == 1 and first_verdicts[0].new_run.uuid == first.build_runs.get(repeat=0).run_uuid

    _, (verdict,) = build_report_record(report=_report(make_build("b", _scaled(0.95))))

    assert verdict.kind == "regression", verdict.reason
    assert verdict.noise_n_runs == 3 and verdict.noise_floor_pct == pytest.approx(2.5, abs=0.01)
    assert list(verdict.baseline_runs.all()) == [first_verdicts[0].new_run]

"""`make demo`'s data on the embedded default (SQLite), end to end: the Makefile's
own `demo-data` target twice (it must be idempotent), then the pages a visitor of
the demo opens show what was measured on the development machine, labelled so:
the runs (a context sweep, a concurrency sweep, llama-bench rows), a campaign
and the nightly pages of real llama.cpp releases replayed there, each as recorded
in leaderboard/results/demo_data/."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.embedded import ROOT, embedded_env, run_embedded

DEMO_DATA = ROOT / "leaderboard" / "results" / "demo_data"

READ = r"""
import json
import django
django.setup()
from django.test import Client
from leaderboard.campaigns.models import Campaign
from leaderboard.regressions.models import Subscription
from leaderboard.results.models import Rig, Run
rig = Rig.objects.get(name="rigboard-dev-vm-demo")
runs = Run.objects.filter(rig=rig)
client = Client(HTTP_HOST="127.0.0.1")
sweep = runs.filter(sweep_points__isnull=False).distinct().get()
# The runner's own runs (runs/*.json): the campaign's and the nightly's add many more of the same workload.
from pathlib import Path
recorded = [json.loads(p.read_text())["uuid"] for p in Path("leaderboard/results/demo_data/runs").glob("*.json")]
game = [f'href="/runs/{r.pk}/"' for r in runs.filter(workload__name="space-invaders-html", uuid__in=recorded)]
# Narrowed to the rig: the public result sets put hundreds of faster runs on the first pages.
board = client.get("/", {"rig": rig.name}).text
shown = client.get("/", {"rig": rig.name, "failed": "on"}).text
campaign = Campaign.objects.get(rig=rig)
campaign_page = client.get(f"/campaigns/{campaign.pk}/")
from leaderboard.regressions.matrix import matrix_url
concurrent = runs.filter(concurrency_levels__isnull=False).distinct().get()
concurrency_page = client.get(f"/concurrency/?runs={concurrent.pk}")
rig_page = client.get(f"/rigs/{rig.pk}/").text
from leaderboard.regressions.models import Verdict
gpu_campaign = Campaign.objects.get(rig__name="lent-h200-demo")
# The replay of real llama.cpp releases (benchmarks/replay_releases.sh), recorded on this machine.
releases = Subscription.objects.get(rig__name="rigboard-dev-vm-releases-demo")
release_pages = [client.get(f"/regressions/{releases.pk}/{r.pk}/").text for r in releases.reference_configs.all()]
release_builds = releases.builds.order_by("created_at")
matrix_address = matrix_url(releases.repo_url, releases.branch)
release_matrix = client.get(matrix_address)
releases_rig_page = client.get(f"/rigs/{releases.rig_id}/").text
# b10423 -> b10429 replayed with every step judged by A/B blocks, quiet and beside the test suite.
screens = {}
for name in ("rigboard-dev-vm-b10429-demo", "rigboard-dev-vm-b10429-loaded-demo"):
    screen = Subscription.objects.get(rig__name=name)
    caught = Verdict.objects.get(build__subscription=screen, kind="regression")
    screens[name] = {
        "sub": [screen.follows, screen.confirm_mode, screen.screen_every_step],
        "verdicts": sorted([v.build.commit, v.reference_config.name, v.kind, v.confirmation]
                           for v in Verdict.objects.filter(build__subscription=screen).select_related("build",
                                                                                                      "reference_config")),
        "caught": [caught.build.commit, caught.effect_pct, caught.ab_effect_pct, caught.ab_ci_high_pct],
        "report": client.get(f"/regressions/report/{caught.pk}/").text,
    }
# 30 consecutive releases, b10280 -> b10568, each step judged by its first run only (REPLAY_SCREEN=0).
window = Subscription.objects.get(rig__name="rigboard-dev-vm-b10568-window-demo")
two = window.reference_configs.get(name="Gemma 3 270M decode, 2 threads")
missed = Verdict.objects.get(build__subscription=window, build__commit="b10429", reference_config=two)
# b10441 -> b10448 (the fix) replayed with every step judged by A/B blocks.
fix = Subscription.objects.get(rig__name="rigboard-dev-vm-b10448-demo")
found = Verdict.objects.get(build__subscription=fix, build__commit="b10448", reference_config__name=two.name)
print(json.dumps({
    "screens": screens,
    "window": {
        "sub": [window.follows, window.confirm_mode, window.screen_every_step],
        "commits": list(window.builds.order_by("created_at").values_list("commit", flat=True)),
        "verdicts": sorted([v.build.commit, v.reference_config.name, v.kind, v.confirmation]
                           for v in Verdict.objects.filter(build__subscription=window).select_related("build",
                                                                                                      "reference_config")),
        "missed": [missed.kind, missed.effect_pct, missed.noise_floor_pct],
        "page": client.get(f"/regressions/{window.pk}/{two.pk}/").text,
        "notes": window.rig.notes,
    },
    "fix": {
        "sub": [fix.follows, fix.confirm_mode, fix.screen_every_step],
        "verdicts": sorted([v.build.commit, v.reference_config.name, v.kind, v.confirmation]
                           for v in Verdict.objects.filter(build__subscription=fix).select_related("build",
                                                                                                   "reference_config")),
        "found": [found.kind, found.confirmation, found.effect_pct, found.noise_floor_pct, found.ab_effect_pct,
                  found.ab_ci_low_pct],
        "page": client.get(f"/regressions/{fix.pk}/{found.reference_config_id}/").text,
    },
    "releases": {
        "follows": [releases.follows, releases.release_source, releases.confirm_mode, releases.is_active],
        "builds": [[b.commit, b.status, [[v.reference_config.name, v.kind, v.confirmation] for v in
                    b.verdicts.select_related("reference_config").order_by("reference_config_id", "pk")]]
                   for b in release_builds],
        "pages": release_pages, "matrix": release_matrix.text, "matrix_status": release_matrix.status_code,
        "index_links_matrix": matrix_address.replace("&", "&amp;") in client.get("/regressions/").text,
        "rig_page_links_the_timelines": all(f"/regressions/{releases.pk}/{r.pk}/" in releases_rig_page
                                            for r in releases.reference_configs.all()),
        # Every recorded nightly rig follows llama.cpp itself: no local repository among them.
        "repos": sorted(set(Subscription.objects.values_list("repo_url", flat=True))),
        "rigs_on_matrix": sorted(Subscription.objects.values_list("rig__name", flat=True)),
    },
    "gpu_campaign": {
        "page": client.get(f"/campaigns/{gpu_campaign.pk}/").text,
        "roles": sorted(gpu_campaign.trials.values_list("role", flat=True)),
        "linked": all(t.run_id for t in gpu_campaign.trials.all()),
    },
    "runs": runs.count(),
    "measured": sorted(set(runs.values_list("provenance", flat=True))),
    "workloads": sorted(set(runs.values_list("workload__name", flat=True))),
    "rig_page": client.get(f"/rigs/{rig.pk}/").status_code,
    "rig_page_lists": all(f'/runs/{r.pk}/' in rig_page for r in (sweep, concurrent)),
    "board_default_hides_failed_checks": not any(link in board for link in game),
    "board_shows_them_on_request": all(link in shown for link in game),
    "sweep_points": sweep.sweep_points.count(),
    "run_page": client.get(f"/runs/{sweep.pk}/").status_code,
    "campaign": {
        "name": campaign.name, "status": campaign.status, "page": campaign_page.status_code,
        "page_text": campaign_page.content.decode(),
        "trials": [[t.number, t.state, t.value, str(t.run_uuid) if t.run_uuid else None, t.run_id is not None]
                   for t in campaign.trials.all()],
    },
    "concurrency": {
        "levels": sorted(concurrent.concurrency_levels.values_list("concurrency", flat=True)),
        "page": concurrency_page.status_code, "page_text": concurrency_page.content.decode(),
    },
}))
"""


def _recorded() -> dict:
    (campaign_file,) = sorted((DEMO_DATA / "campaigns").glob("*.json"))
    return {
        "campaign": json.loads(campaign_file.read_text()),
        "releases": [json.loads(p.read_text()) for p in sorted((DEMO_DATA / "nightly").glob("releases-*.json"))],
        "screens": {p.stem: json.loads(p.read_text()) for p in (DEMO_DATA / "nightly").glob("screen-*.json")},
        "window": json.loads((DEMO_DATA / "nightly" / "window-b10280-b10568.json").read_text()),
        "run_files": len(list((DEMO_DATA / "runs").glob("*.json"))),
        "llama_bench_rows": sum(len(json.loads(p.read_text())) for p in (DEMO_DATA / "llama-bench").glob("*.json")),
    }


@pytest.mark.slow
def test_make_demo_data_stores_what_was_measured_once_and_the_pages_show_it(tmp_path):
    env = embedded_env(tmp_path)
    bin_dir = Path(sys.executable).parent
    make = ["make", "-s", "demo-data", f"BIN={bin_dir}"]
    first = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "stored as run" in first.stdout and "4 new runs" in first.stdout
    assert "stored as campaign" in first.stdout and "12 new builds" in first.stdout
    # The public result sets (leaderboard/results/community_data/), every row once.
    assert "geerlingguy-ai-benchmarks: 102 rows, 102 new runs" in first.stdout
    assert "geerlingguy-ai-benchmarks-issues: 18 rows, 18 new runs" in first.stdout
    assert "xiongjiedai-gpu-benchmarks: 796 rows, 796 new runs" in first.stdout
    again = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already stored as run" in again.stdout and "0 new runs" in again.stdout
    assert "already stored as campaign" in again.stdout and "0 new builds" in again.stdout
    assert "xiongjiedai-gpu-benchmarks: 796 rows, 0 new runs, 796 already stored" in again.stdout

    recorded = _recorded()
    result = run_embedded(READ, tmp_path)
    campaign_runs = recorded["campaign"]["runs"]
    assert result["runs"] == recorded["run_files"] + recorded["llama_bench_rows"] + len(campaign_runs)
    assert result["measured"] == ["measured"]
    assert "space-invaders-html" in result["workloads"]
    assert any(name.startswith("llama-bench") for name in result["workloads"])
    assert result["rig_page"] == 200 and result["rig_page_lists"]
    assert result["sweep_points"] == 3 and result["run_page"] == 200
    # Gemma 270M cannot write the game: its runs are marked, not ranked by default.
    assert result["board_default_hides_failed_checks"]
    assert result["board_shows_them_on_request"]

    # The campaign: every recorded trial stored as posted, with its run, and its page shows them.
    campaign = result["campaign"]
    assert campaign["name"] == recorded["campaign"]["campaign"]["name"] and campaign["status"] == "finished"
    assert [t[:4] for t in campaign["trials"]] == [
        [t["number"], t["state"], t["value"], t["run_uuid"]] for t in recorded["campaign"]["trials"]
    ]
    assert all(linked for *_, uuid, linked in campaign["trials"] if uuid)
    assert campaign["page"] == 200
    budget = recorded["campaign"]["campaign"]["budget"]["trials"]
    searched = [t for t in recorded["campaign"]["trials"] if t.get("role", "search") == "search"]
    assert f"{len(searched)} of {budget}" in campaign["page_text"]
    # A real failure (llama-server refuses a quantized V cache without flash attention), named on the page.
    (failed,) = [t for t in recorded["campaign"]["trials"] if t["state"] == "failed"]
    assert "quantized V cache requires flash_attn" in failed["log_tail"]
    assert "cache_type_v = q8_0 with flash_attn = off: failed in the one trial that had it" in campaign["page_text"]
    assert "confirmed by 10 repetitions" in campaign["page_text"]

    # The concurrency sweep: levels 1, 2 and 4, on the concurrency page.
    concurrency = result["concurrency"]
    assert concurrency["levels"] == [1, 2, 4] and concurrency["page"] == 200

    # Real llama.cpp history: consecutive releases replayed on this machine, each built from its
    # source distribution, judged again here from the raw runs to the verdicts the replay recorded,
    # every release linked upstream, at 1 and 2 threads, on the timeline and the matrix.
    releases, (recording,) = result["releases"], recorded["releases"]
    assert releases["follows"] == ["releases", "sdist", "ab", False]
    assert len(recording["builds"]) >= 12
    assert releases["builds"] == [
        [
            night["commit"],
            "failed" if night["reports"][0]["status"] == "failed" else "benchmarked",
            [[v["reference_config"], v["kind"], v["confirmation"]] for v in night["verdicts_recorded"]],
        ]
        for night in recording["builds"]
    ]
    commits = [night["commit"] for night in recording["builds"]]
    assert all(c.startswith("b") and c[1:].isdigit() for c in commits)
    assert len(releases["pages"]) == 2
    for page in releases["pages"]:
        assert all(f"https://github.com/ggml-org/llama.cpp/releases/tag/{c}" in page for c in commits)
        assert "/tmp/" not in page and "/root/" not in page
    assert all(c in releases["matrix"] for c in commits)
    # One commit x rig matrix of llama.cpp's releases, linked from /regressions/, every replayed rig a
    # column; the synthetic repository of the tests (a planted sleep) is not in the demo.
    assert releases["matrix_status"] == 200 and releases["index_links_matrix"]
    assert releases["repos"] == ["https://github.com/ggml-org/llama.cpp"]
    assert all(rig in releases["matrix"] for rig in releases["rigs_on_matrix"]) and len(releases["rigs_on_matrix"]) == 5
    assert 'class="cell regression"' in releases["matrix"] and ">CPU<" in releases["matrix"]
    assert releases["rig_page_links_the_timelines"]
    # The timeline says which decode figure builds are compared by.
    assert all("builds are compared by it" in page for page in releases["pages"])
    # b10423 -> b10429 (llama.cpp#27126) with every step judged by A/B blocks, judged again here to
    # the recorded verdicts: quiet, the first run caught the 2-thread regression and the blocks
    # confirmed it; beside the test suite, the first run saw no change and the blocks found it.
    for rig, stem, first_word, how in [
        ("rigboard-dev-vm-b10429-demo", "screen-b10423-b10429-quiet", "ab_confirmed", "interleaved blocks (both"),
        ("rigboard-dev-vm-b10429-loaded-demo", "screen-b10423-b10429-loaded", "ab_found",
         "found where the nightly run saw no change"),
    ]:  # fmt: skip
        screen, recording = result["screens"][rig], recorded["screens"][stem]
        assert screen["sub"] == ["releases", "blocks", True]
        assert screen["verdicts"] == sorted(
            [night["commit"], v["reference_config"], v["kind"], v["confirmation"]]
            for night in recording["builds"]
            for v in night["verdicts_recorded"]
        )
        assert ["b10429", "Gemma 3 270M decode, 2 threads", "regression", first_word] in screen["verdicts"]
        commit, _, ab_effect, ab_ci_high = screen["caught"]
        assert commit == "b10429" and ab_effect < -3.0 and ab_ci_high < 0
        assert how in screen["report"] and f"{ab_effect:+.1f}" in screen["report"]
    # 30 consecutive releases (benchmarks/README.md, 2026-11-28), each step judged by its first
    # run only: judged again here to the recorded verdicts, it calls nothing, and shows the
    # 2-thread regression of b10429 (llama.cpp#27126) as "no change", inside its noise floor.
    # What the demo shows is what the screen missed, and its rig says so.
    window, recording = result["window"], recorded["window"]
    assert window["sub"] == ["releases", "blocks", False]
    assert window["commits"] == [night["commit"] for night in recording["builds"]]
    assert len(window["commits"]) == 30 and window["commits"][0] == "b10280" and window["commits"][-1] == "b10568"
    assert window["verdicts"] == sorted(
        [night["commit"], v["reference_config"], v["kind"], v["confirmation"]]
        for night in recording["builds"]
        for v in night["verdicts_recorded"]
    )
    assert not [v for v in window["verdicts"] if v[2] != "none"]
    kind, effect, floor = window["missed"]
    assert kind == "none" and effect < -20 and floor > abs(effect)
    assert ["b10326", "Gemma 3 270M decode, 1 thread", "none", "ab_refuted"] in window["verdicts"]
    assert "b10429" in window["page"] and "b10448" in window["page"]
    assert "missed b10429" in window["notes"] and "llama.cpp#27126" in window["notes"]
    # b10441 -> b10448, the fix, with every step judged by A/B blocks, judged again here to the
    # recorded verdicts: the first run's gain at 2 threads was inside its noise floor, and the
    # blocks found it (the 30 releases above, screened by the first run alone, missed it).
    fix, recording = result["fix"], recorded["screens"]["screen-b10441-b10448-quiet"]
    assert fix["sub"] == ["releases", "blocks", True]
    assert fix["verdicts"] == sorted(
        [night["commit"], v["reference_config"], v["kind"], v["confirmation"]]
        for night in recording["builds"]
        for v in night["verdicts_recorded"]
    )
    kind, confirmation, first_run, floor, ab_effect, ab_ci_low = fix["found"]
    assert (kind, confirmation) == ("improvement", "ab_found")
    assert first_run > 10 and floor is not None and 100 * math.log1p(first_run / 100) <= floor  # inside it
    assert ab_effect > 10 and ab_ci_low > 0
    assert "b10448" in fix["page"] and f"{ab_effect:+.1f}" in fix["page"]
    # The campaign measured on a lent H200 (benchmarks/README.md): 8 search trials and the
    # confirmation, each a stored run.
    gpu = result["gpu_campaign"]
    assert gpu["roles"] == ["confirmation"] + ["search"] * 8 and gpu["linked"]
    assert "confirmed by 10 repetitions" in gpu["page"]
    assert "None of these runs has a concurrency sweep" not in concurrency["page_text"]

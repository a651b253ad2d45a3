"""Subscribing a rig from the site: its owner (allow-listed repositories, -D
flags only), staff (any https/git/file URL, any rig), everyone else refused;
reference configurations made from the rig's own runs are what the nightly
job sends the rig."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.intake.models import ReviewStatus, RigOwnership
from leaderboard.regressions.models import BuildRecord, BuildRun, ReferenceConfig, Subscription
from leaderboard.regressions.services.detection import build_dispatch_spec
from leaderboard.results.models import Rig, Run
from runners.config import RigConfig

pytestmark = pytest.mark.django_db

MAINLINE = "https://github.com/ggml-org/llama.cpp"
FORK = "https://github.com/ikawrakow/ik_llama.cpp"
COMMAND = "llama-server --model /models/gemma-3-270m-Q4_K_M.gguf --host 127.0.0.1 --port 40111 --ctx-size 2048 -t 2"


def _user(name: str, *, staff: bool = False) -> User:
    return User.objects.create_user(name, f"{name}@example.org", "a-long-pass-phrase-91", is_staff=staff)


def _client(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def world(make_rig, make_run) -> dict[str, Any]:
    owner, other, staff = _user("owner"), _user("other"), _user("staff", staff=True)
    rig = make_rig(name="owners-rig", gpus=[("RTX 4090", 1)], owner=owner)
    RigOwnership.objects.create(rig=rig, owner=owner)
    run = make_run(
        rig=rig,
        configuration={"ctx_size": 2048, "threads": 2, "flash_attn": "on", "temperature": 0.0, "command_line": COMMAND},
        workload={"name": "space-invaders-html", "version": "1", "max_tokens": 128, "repetitions": 5, "warmup": 1},
    )
    bench = make_run(rig=rig, configuration={"ctx_size": 4096})  # no command line: not re-runnable
    stranger_rig = make_rig(name="strangers-rig")
    stranger_run = make_run(rig=stranger_rig, configuration={"ctx_size": 1024, "command_line": COMMAND + " -c 1"})
    return {
        "owner": owner, "other": other, "staff": staff, "rig": rig, "run": run, "bench": bench,
        "stranger_rig": stranger_rig, "stranger_run": stranger_run,
    }  # fmt: skip


def _post(client: Client, rig: Rig, runs: list[Run], **fields: Any) -> Any:
    data = {"rig": rig.pk, "repo_url": MAINLINE, "branch": "master", "build_flags": "-DGGML_CUDA=ON", **fields}
    data["runs"] = [r.pk for r in runs]
    return client.post(f"/regressions/subscribe/?rig={rig.pk}", data)


def test_an_owner_subscribes_their_rig_with_a_reference_config_made_from_its_run(world):
    client = _client(world["owner"])
    page = client.get(f"/regressions/subscribe/?rig={world['rig'].pk}").content.decode()
    assert f"run {world['run'].pk}:" in page and f"run {world['bench'].pk}:" not in page
    assert "strangers-rig" not in page and FORK in page

    response = _post(client, world["rig"], [world["run"]], build_flags="-DGGML_CUDA=ON  -DGGML_CUDA_FA_ALL_QUANTS=ON")

    assert response.status_code == 302 and "/regressions/matrix/?repo=" in response["Location"]
    sub = Subscription.objects.get(rig=world["rig"])
    assert (sub.repo_url, sub.branch, sub.build_flags) == (
        MAINLINE, "master", "-DGGML_CUDA=ON -DGGML_CUDA_FA_ALL_QUANTS=ON",
    )  # fmt: skip
    ref = ReferenceConfig.objects.get(subscription=sub)
    assert ref.spec["server"] == {
        "model": "/models/gemma-3-270m-Q4_K_M.gguf", "ctx_size": 2048, "threads": 2, "flash_attn": "on",
    }  # fmt: skip
    assert ref.spec["workload"] == {
        "name": "space-invaders-html", "max_tokens": 128, "repetitions": 5, "warmup": 1, "temperature": 0.0,
    }  # fmt: skip
    assert ref.spec["model"] == {"name": "gemma-3-270m", "quantization": "Q4_K_M"}
    RigConfig.from_mapping(ref.spec)  # the runner takes it as it is
    # The nightly job sends the rig exactly this reference configuration.
    build = BuildRecord.objects.create(subscription=sub, commit="a" * 40)
    BuildRun.objects.create(build=build, reference_config=ref)
    assert build_dispatch_spec(build=build)["runs"][0]["config"] == ref.spec
    # The matrix it lands on names the rig under CUDA.
    matrix = client.get(response["Location"]).content.decode()
    assert "owners-rig" in matrix and ">CUDA<" in matrix
    assert f'href="/regressions/{sub.pk}/references/"' in matrix  # its owner may add more
    assert (
        f'href="/regressions/{sub.pk}/references/"'
        not in _client(world["other"]).get(response["Location"]).content.decode()
    )


@pytest.mark.parametrize(
    ("fields", "field", "why"),
    [
        ({"repo_url": "https://github.com/someone/evil.cpp"}, "repo_url", "not one of the available choices"),
        ({"repo_url": "file:///srv/llama.cpp"}, "repo_url", "not one of the available choices"),
        ({"build_flags": "-DGGML_CUDA=ON -P /tmp/evil.cmake"}, "build_flags", "only -DNAME=VALUE"),
        ({"build_flags": "-DCMAKE_C_COMPILER=$(evil)"}, "build_flags", "only -DNAME=VALUE"),
        ({"build_flags": '-DX="unclosed'}, "build_flags", "cannot be split"),
        ({"build_flags": "-DGGML_CUDA=ON " * 100}, "build_flags", "at most 1000"),
        ({"branch": "--upload-pack=touch /tmp/x"}, "branch", "not a branch name"),
        ({"branch": "a..b"}, "branch", "not a branch name"),
        ({"branch": "b" * 201}, "branch", "at most 200"),
        ({"branch": ""}, "branch", "required"),
    ],
)
def test_an_owner_is_refused_a_repository_off_the_list_and_unsafe_flags_or_branches(world, fields, field, why):
    response = _post(_client(world["owner"]), world["rig"], [world["run"]], **fields)

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == [field] and why in " ".join(errors[field]), errors
    assert not Subscription.objects.exists()


def test_runs_must_be_the_rigs_own_and_re_runnable(world):
    client = _client(world["owner"])
    for run in (world["bench"], world["stranger_run"]):
        response = _post(client, world["rig"], [run])
        assert response.status_code == 400 and list(response.context["form"].errors) == ["runs"]
    response = _post(client, world["rig"], [])
    assert response.status_code == 400 and "runs" in response.context["form"].errors
    assert not Subscription.objects.exists()


def test_the_same_subscription_twice_is_refused_naming_the_branch(world):
    client = _client(world["owner"])
    assert _post(client, world["rig"], [world["run"]]).status_code == 302
    again = _post(client, world["rig"], [world["run"]])
    assert again.status_code == 400 and "already follows" in " ".join(again.context["form"].errors["branch"])
    assert Subscription.objects.count() == 1


def test_another_account_cannot_subscribe_or_change_someone_elses_rig(world):
    owner_client = _client(world["owner"])
    assert _post(owner_client, world["rig"], [world["run"]]).status_code == 302
    sub = Subscription.objects.get()

    other = _client(world["other"])
    page = other.get(f"/regressions/subscribe/?rig={world['rig'].pk}").content.decode()
    assert "owners-rig" not in page and f"run {world['run'].pk}:" not in page
    response = _post(other, world["rig"], [world["run"]], branch="other")
    assert response.status_code == 400 and "rig" in response.context["form"].errors
    assert other.get(f"/regressions/{sub.pk}/references/").status_code == 404
    assert other.post(f"/regressions/{sub.pk}/references/", {"runs": [world["run"].pk]}).status_code == 404
    assert Subscription.objects.count() == 1 and ReferenceConfig.objects.count() == 1
    # Signed out: the log-in page, nothing stored.
    anonymous = Client().post("/regressions/subscribe/", {"rig": world["rig"].pk})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_staff_subscribe_any_rig_to_any_https_git_or_file_repository(world):
    staff = _client(world["staff"])
    stranger, run = world["stranger_rig"], world["stranger_run"]
    for url in (FORK, "file:///srv/mirrors/llama.cpp", "git://example.org/llama.cpp"):
        response = _post(staff, stranger, [run], repo_url=url, build_flags="-DGGML_VULKAN=ON -G Ninja")
        assert response.status_code == 302, response.context["form"].errors if response.context else response
    assert set(Subscription.objects.filter(rig=stranger).values_list("repo_url", flat=True)) == {
        FORK, "file:///srv/mirrors/llama.cpp", "git://example.org/llama.cpp",
    }  # fmt: skip
    for url in ("ssh://git@example.org/llama.cpp", "/srv/llama.cpp", "http://example.org/llama.cpp"):
        refused = _post(staff, stranger, [run], repo_url=url)
        assert refused.status_code == 400 and list(refused.context["form"].errors) == ["repo_url"]


def test_reference_configs_are_added_to_a_subscription_from_the_rigs_runs(world, make_run):
    client = _client(world["owner"])
    assert _post(client, world["rig"], [world["run"]]).status_code == 302
    sub = Subscription.objects.get()
    second = make_run(
        rig=world["rig"],
        configuration={"ctx_size": 8192, "threads": 4, "command_line": COMMAND.replace("-t 2", "-t 4")},
    )
    page = client.get(f"/regressions/{sub.pk}/references/").content.decode()
    assert f"run {second.pk}:" in page

    response = client.post(f"/regressions/{sub.pk}/references/", {"runs": [second.pk]})

    assert response.status_code == 302
    specs = [r.spec["server"]["threads"] for r in sub.reference_configs.order_by("id")]
    assert specs == [2, 4]
    refused = client.post(f"/regressions/{sub.pk}/references/", {"runs": [world["stranger_run"].pk]})
    assert refused.status_code == 400 and list(refused.context["form"].errors) == ["runs"]


def test_a_pending_rigs_subscription_stays_hidden_from_the_public(world):
    rig = world["rig"]
    rig.review_status = ReviewStatus.PENDING
    rig.save(update_fields=["review_status"])
    assert _post(_client(world["owner"]), rig, [world["run"]]).status_code == 302

    index = Client().get("/regressions/").content.decode()
    assert "owners-rig" not in index
    assert Client().get("/regressions/matrix/?repo=" + MAINLINE + "&branch=master").status_code == 404
    owner_matrix = _client(world["owner"]).get("/regressions/matrix/?repo=" + MAINLINE + "&branch=master")
    assert owner_matrix.status_code == 200 and "owners-rig" in owner_matrix.content.decode()


def test_an_owner_subscribes_to_releases_from_their_sdist_confirmed_as_chosen(world):
    client = _client(world["owner"])
    page = client.get(f"/regressions/subscribe/?rig={world['rig'].pk}").content.decode()
    assert 'name="follows"' in page and 'name="release_source"' in page and 'name="confirm_mode"' in page
    response = _post(client, world["rig"], [world["run"]], follows="releases", release_source="sdist",
                     confirm_mode="ab")  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    sub = Subscription.objects.get(rig=world["rig"])
    assert (sub.follows, sub.release_source, sub.confirm_mode) == ("releases", "sdist", "ab")
    # Left out, the defaults: every head, git, A/B blocks; a value off the list names its field.
    Subscription.objects.all().delete()
    assert _post(client, world["rig"], [world["run"]]).status_code == 302
    sub = Subscription.objects.get(rig=world["rig"])
    assert (sub.follows, sub.release_source, sub.confirm_mode) == ("commits", "git", "blocks")
    bad = _post(client, world["rig"], [world["run"]], branch="other", confirm_mode="guess")
    assert bad.status_code == 400 and "guess is not one of the available choices" in bad.content.decode()


def test_every_step_is_judged_by_blocks_when_chosen_and_only_with_blocks(world):
    client = _client(world["owner"])
    page = client.get(f"/regressions/subscribe/?rig={world['rig'].pk}").content.decode()
    assert 'name="screen_every_step"' in page and "checked" in page.split('name="screen_every_step"')[1].split(">")[0]
    refused = _post(client, world["rig"], [world["run"]], follows="releases", confirm_mode="rerun",
                    screen_every_step="on")  # fmt: skip
    assert refused.status_code == 400
    errors = refused.context["form"].errors
    assert (
        list(errors) == ["screen_every_step"] and "needs confirmation by A/B blocks" in errors["screen_every_step"][0]
    )
    assert not Subscription.objects.exists()
    chosen = _post(client, world["rig"], [world["run"]], follows="releases", confirm_mode="blocks",
                   screen_every_step="on")  # fmt: skip
    assert chosen.status_code == 302
    sub = Subscription.objects.get(rig=world["rig"])
    assert (sub.follows, sub.confirm_mode, sub.screen_every_step) == ("releases", "blocks", True)

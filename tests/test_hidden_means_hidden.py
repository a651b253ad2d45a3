"""Hidden means hidden (issue 21): a community rig awaiting review shows nothing to
anyone but its owner and staff.

A pending rig whose every text carries one marker is given measured runs with
samples, a context sweep, concurrency levels, a llama-bench import, a campaign
with trials, a regression subscription and a job. Then every URL pattern the
project routes (walked from the URL resolver, its converters filled with the
pending objects' ids, uuids and names and with public ones), a few addresses
that take ids in the query string, and every link reachable from ``/`` are
fetched anonymously and as a second account: the marker must appear in no body
and every direct address of a pending object must answer 404. The same crawl as
the owner and as staff must find every marker.

A route the test does not know how to fill fails the test, so a new page or
endpoint is crawled (and has to apply the public filter) from the day it is added.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urljoin, urlsplit

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from leaderboard.campaigns.services import campaign_create, trial_record
from leaderboard.intake.owners import owned_rig_register
from leaderboard.intake.services import llama_bench_import
from leaderboard.jobs.models import BenchmarkJob
from leaderboard.regressions.models import BuildRecord, BuildRun, ReferenceConfig, Subscription, Verdict, VerdictKind
from leaderboard.results.models import Rig, RigGpu, Run
from leaderboard.results.services.rigs import GpuSpec
from leaderboard.results.services.runs import run_create
from runners.llamabench import WORKLOAD_PREFIX
from tests.fixtures.concurrency import level_payload
from tests.fixtures.data import run_payload

pytestmark = pytest.mark.django_db

MARK = "zqx7pend"
# Each text of the pending rig, so the owner's and staff's crawls can be checked to find every one.
MARKERS = {
    "rig name": f"{MARK}-rig",
    "GPU model": f"{MARK.upper()}-GPU",
    "CPU": f"{MARK}-cpu",
    "model file": f"{MARK}-model",
    "quantization": f"{MARK.upper()}Q",
    "workload": f"{MARK}-workload",
    "llama-bench test": f"{MARK}test",
    "llama-bench model file": f"{MARK}-bench.gguf",
    "campaign": f"{MARK}-campaign",
    "rig notes": f"{MARK}-rig-notes",
    "run notes": f"{MARK}-run-notes",
}
PEER_RIG = f"{MARK}-peer-rig"
LLAMA_BENCH = Path(__file__).resolve().parent / "fixtures" / "llama_bench" / "gemma-cpu.jsonl"

# Prefixes not crawled, with the reason.
SKIPPED_PREFIXES = {
    "admin/": "the Django admin is staff-only by its own login, not a public read",
    "accounts/": "allauth's sign-up, login and e-mail mechanics show no rig data",
    "static/": "files, not data",
    "api/schema/": "the OpenAPI document describes routes, not rows",
    "api/docs/": "Swagger UI: a static page that loads the schema",
}


@dataclass(frozen=True)
class Fill:
    """What a path parameter is filled with: the pending object's value, and a public one."""

    pending: str | None
    public: str


@dataclass
class World:
    owner: User
    other: User
    staff: User
    pending_rig: Rig
    public_rig: Rig
    fills: dict[str, Fill]
    pending_run_ids: list[int]
    public_run_ids: list[int]


def _user(name: str, *, staff: bool = False) -> User:
    user = User.objects.create_user(name, f"{name}@example.org", "a-long-pass-phrase-91", is_staff=staff)
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    return user


def _measured(rig: Rig, *, model: str, quant: str, workload: str, tps: float, notes: str = "", **extra: Any) -> Run:
    payload = run_payload(
        model_file={"name": model, "quantization": quant, "weight_format": "GGUF"},
        workload={"name": workload, "version": "1", "max_tokens": 64, "repetitions": 3},
        run={"uuid": uuid.uuid4(), "status": "finished", "provenance": "measured", "notes": notes},
        samples=[
            {"index": i, "decode_tokens_per_s_server": tps * f, "tokens_generated": 64, "prompt_tokens": 300}
            for i, f in enumerate([1.0, 1.01, 0.99], start=1)
        ],
        **extra,
    )
    return run_create(rig=rig, **payload).run


def _sweep() -> list[dict[str, Any]]:
    return [
        {"ctx_tokens": depth, "prefill_tokens_per_s": 900.0 - depth / 100, "decode_tokens_per_s": 50.0 - depth / 1000}
        for depth in (512, 4096, 16384)
    ]


def _campaign(rig: Rig, name: str, run: Run) -> int:
    campaign = campaign_create(
        rig=rig,
        data={"name": name, "strategy": "grid", "space": {"threads": [1, 2, 4]}, "budget": {"trials": 3}},
    )
    for number, threads in enumerate([1, 2], start=1):
        trial_record(
            campaign=campaign,
            data={
                "number": number,
                "params": {"threads": threads},
                "state": "complete",
                "value": 10.0 * threads,
                "samples": [10.0 * threads, 10.2 * threads],
                "run_uuid": str(run.uuid),
            },
        )
    return campaign.pk


def _subscription(rig: Rig, run: Run) -> tuple[int, int, int]:
    """Return the rig's subscription, reference configuration and a regression
    verdict on its build (whose report names the rig)."""
    sub = Subscription.objects.create(rig=rig, repo_url="https://github.com/ggml-org/llama.cpp", branch="master")
    ref = ReferenceConfig.objects.create(subscription=sub, name=f"{rig.name} decode", spec={})
    build = BuildRecord.objects.create(subscription=sub, commit="a" * 40, status="benchmarked")
    BuildRun.objects.create(build=build, reference_config=ref, run_uuid=run.uuid)
    verdict = Verdict.objects.create(
        build=build, reference_config=ref, new_run=run, kind=VerdictKind.REGRESSION, effect_pct=-10.0,
        p_value=0.001, new_median=90.0, baseline_median=100.0, noise_spread_pct=1.0, noise_floor_pct=5.0,
        confirm_effect_pct=-10.0, commit_from="b" * 40, commit_to="a" * 40,
    )  # fmt: skip
    return sub.pk, ref.pk, verdict.pk


def _job(rig: Rig) -> int:
    job = BenchmarkJob.objects.create(rig=rig, spec={"note": rig.name}, soft_time_limit_s=60, time_limit_s=90)
    return job.pk


def _llama_bench_text() -> str:
    rows = []
    for line in LLAMA_BENCH.read_text().splitlines():
        row = json.loads(line)
        row["model_filename"] = f"/models/{MARKERS['llama-bench model file']}"
        row["model_type"] = f"gemma3 270M {MARKERS['quantization']}"
        rows.append(json.dumps(row))
    return "\n".join(rows) + "\n"


@pytest.fixture
def world() -> World:
    owner, other, staff = _user("owner"), _user("other"), _user("staff", staff=True)

    public_rig = Rig.objects.create(name="public-rig", cpu="Ryzen 9 9950X", owner_name="staff")
    RigGpu.objects.create(rig=public_rig, model="RTX 4090", count=1, vram_gb=24)
    public_run = _measured(
        public_rig, model="public-model", quant="Q4_K_M", workload="public-workload", tps=100.0,
        sweep_points=_sweep(), concurrency_levels=[level_payload(1, 100.0), level_payload(4, 60.0)],
    )  # fmt: skip
    public_bench = _measured(
        public_rig, model="public-bench.gguf", quant="Q8_0", workload=f"{WORKLOAD_PREFIX}tg128 @ d0", tps=80.0
    )

    pending, _ = owned_rig_register(
        owner=owner,
        name=MARKERS["rig name"],
        gpus=[GpuSpec(model=MARKERS["GPU model"], vram_gb=24)],
        cpu=MARKERS["CPU"],
        owner_name=f"{MARK}-owner",
        notes=MARKERS["rig notes"],
    )
    run = _measured(
        pending, model=MARKERS["model file"], quant=MARKERS["quantization"], workload=MARKERS["workload"],
        tps=88888.0, notes=MARKERS["run notes"], sweep_points=_sweep(),
        concurrency_levels=[level_payload(1, 88888.0), level_payload(4, 77777.0)],
    )  # fmt: skip
    bench_test = _measured(
        pending, model=MARKERS["model file"], quant=MARKERS["quantization"],
        workload=f"{WORKLOAD_PREFIX}{MARKERS['llama-bench test']} @ d0", tps=99999.0,
    )  # fmt: skip
    imported = llama_bench_import(rig=pending, text=_llama_bench_text(), notes=MARKERS["run notes"]).runs

    # A second pending rig with the public rig's hardware: its run shares the public
    # run's comparison key, so it is a "same key" peer of a public run.
    peer, _ = owned_rig_register(owner=owner, name=PEER_RIG, gpus=[GpuSpec(model="RTX 4090", vram_gb=24)])
    peer.cpu = public_rig.cpu
    peer.save(update_fields=["cpu"])
    peer_run = _measured(
        peer, model="public-model", quant="Q4_K_M", workload="public-workload", tps=88888.0,
        concurrency_levels=[level_payload(1, 88888.0), level_payload(4, 77777.0)],
    )  # fmt: skip

    pending_sub, pending_ref, pending_verdict = _subscription(pending, run)
    public_sub, public_ref, public_verdict = _subscription(public_rig, public_run)
    pending_token = pending.tokens.first()
    public_token = public_rig.tokens.create(key_hash="0" * 64, prefix="rb_public")
    assert pending_token is not None
    fills = {
        "rig_id": Fill(str(pending.pk), str(public_rig.pk)),
        "run_id": Fill(str(run.pk), str(public_run.pk)),
        "uuid": Fill(str(run.uuid), str(public_run.uuid)),
        "name": Fill(quote(pending.name), quote(public_rig.name)),
        "model": Fill(quote(MARKERS["GPU model"]), quote("RTX 4090")),
        "model_file_id": Fill(str(run.model_file_id), str(public_run.model_file_id)),
        "campaign_id": Fill(
            str(_campaign(pending, MARKERS["campaign"], run)), str(_campaign(public_rig, "pub", public_run))
        ),
        "job_id": Fill(str(_job(pending)), str(_job(public_rig))),
        "subscription_id": Fill(str(pending_sub), str(public_sub)),
        "reference_id": Fill(str(pending_ref), str(public_ref)),
        "verdict_id": Fill(str(pending_verdict), str(public_verdict)),
        "token_id": Fill(str(pending_token.pk), str(public_token.pk)),
        # Published data belongs to no community rig: only public values exist.
        "source_id": Fill(None, "999999"),
        "comparison_id": Fill(None, "999999"),
        "key": Fill(None, "no-such-source"),
        # A dump's files hold only public rows (tests/opendata/test_dump.py checks them).
        "dump": Fill(None, "latest"),
        "filename": Fill(None, "manifest.json"),
    }  # fmt: skip
    return World(
        owner=owner,
        other=other,
        staff=staff,
        pending_rig=pending,
        public_rig=public_rig,
        fills=fills,
        pending_run_ids=[run.pk, bench_test.pk, peer_run.pk, *(r.pk for r in imported)],
        public_run_ids=[public_run.pk, public_bench.pk],
    )


def url_patterns() -> Iterator[tuple[str, str]]:
    """Yield (route, view name) for every URL pattern the project routes, routes
    joined from their includes (``api/runs/<uuid:uuid>/``)."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, str]]:
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, route)
            elif isinstance(p, URLPattern):
                yield route, p.lookup_str

    yield from walk(get_resolver().url_patterns, "")


PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")


def fill_route(route: str, fills: dict[str, Fill], side: str) -> str | None:
    """Return ``route`` as a path with each parameter filled from ``fills``
    (``side`` pending or public); None when a pending fill is asked for a
    parameter that has no pending object. Raise KeyError for an unknown parameter."""
    missing = False

    def sub(match: re.Match[str]) -> str:
        nonlocal missing
        fill = fills[match["name"]]
        value = fill.pending if side == "pending" else fill.public
        if value is None:
            missing = True
            return ""
        return value

    path = "/" + PARAM.sub(sub, route)
    return None if missing else path


def _query_addresses(world: World) -> list[str]:
    """Addresses whose ids or names come in the query string."""
    ids = ",".join(str(i) for i in world.pending_run_ids)
    both = ",".join(str(i) for i in [*world.public_run_ids, *world.pending_run_ids])
    rig = world.pending_rig.name
    return [
        f"/compare/?runs={ids}",
        f"/compare/?runs={both}",
        f"/sweeps/?runs={ids}",
        f"/concurrency/?runs={ids}",
        f"/concurrency/?runs={both}",
        "/?concurrency=1",
        "/?concurrency=4",
        "/?best=1",
        "/leaderboard.csv",
        "/leaderboard.json",
        "/api/runs/",
        "/api/rigs/",
        "/api/campaigns/",
        f"/api/runs/?rig={quote(rig)}",
        "/llama-bench/",
        f"/llama-bench/?test={quote(WORKLOAD_PREFIX + MARKERS['llama-bench test'] + ' @ d0')}",
        f"/llama-bench/compare/?rig={quote(rig)}",
        f"/runs/{world.fills['run_id'].public}/",
        f"/gpus/{quote('RTX 4090')}/",
        # The commit × rig matrix of the branch the pending and the public rig both follow.
        "/regressions/matrix/?repo=" + quote("https://github.com/ggml-org/llama.cpp") + "&branch=master",
        f"/regressions/subscribe/?rig={world.pending_rig.pk}",
    ]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def _crawlable(path: str) -> bool:
    return not any(path.lstrip("/").startswith(p) for p in SKIPPED_PREFIXES)


@dataclass
class Crawl:
    bodies: dict[str, str]
    statuses: dict[str, int]
    direct: dict[str, tuple[int, int]]  # pending address -> (its status, the public twin's status)
    unfilled: list[str]


def crawl(client: Client, world: World, *, link_limit: int = 150) -> Crawl:
    """Fetch every routed pattern (pending and public fills), the query addresses,
    then follow links from ``/`` breadth first (at most ``link_limit`` pages)."""
    result = Crawl(bodies={}, statuses={}, direct={}, unfilled=[])

    def get(path: str) -> int:
        if path in result.statuses:
            return result.statuses[path]
        response = client.get(path)
        body = b"".join(response.streaming_content) if response.streaming else response.content  # type: ignore[attr-defined]
        text = body.decode("utf-8", "replace")
        # A 404 page echoes the path it was asked for, a form the values it was
        # given: those are the test's own words, not the site's.
        parts = urlsplit(path)
        echoes = {path, parts.path, unquote(parts.path), *(v for _, v in parse_qsl(parts.query))}
        for echoed in sorted((e for e in echoes if MARK in e.lower()), key=len, reverse=True):
            text = text.replace(echoed, "").replace(escape(echoed), "")
        result.bodies[path] = text
        result.statuses[path] = response.status_code
        return response.status_code

    for route, view in url_patterns():
        if not _crawlable(route):
            continue
        try:
            pending = fill_route(route, world.fills, "pending")
            public = fill_route(route, world.fills, "public")
        except KeyError as exc:
            result.unfilled.append(f"{route} ({view}): no value for parameter {exc}")
            continue
        assert public is not None
        public_status = get(public)
        if pending is not None and pending != public:
            result.direct[pending] = (get(pending), public_status)
    for path in _query_addresses(world):
        get(path)
    # Every pending run by its page and its API detail, not only the one the routes were filled with.
    public_run = f"/runs/{world.fills['run_id'].public}/"
    for run_id in world.pending_run_ids:
        result.direct[f"/runs/{run_id}/"] = (get(f"/runs/{run_id}/"), get(public_run))

    queue, seen = ["/"], {"/"}
    while queue and len(seen) <= link_limit:
        path = queue.pop(0)
        if get(path) != 200 or path.endswith((".csv", ".json")) or path.startswith("/api/"):
            continue
        parser = _Links()
        parser.feed(result.bodies[path])
        for href in parser.links:
            parts = urlsplit(urljoin("http://testserver" + path, href))
            if parts.netloc != "testserver" or not _crawlable(parts.path):
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return result


def _client(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def leaks(result: Crawl) -> list[str]:
    """Return what a crawl found that it should not: bodies naming the marker or
    linking to a pending address, and pending addresses answering anything but 404 (or the same 302/401/403/405 their
    public twin gets: an endpoint that asks for a login or a token before looking)."""
    found = []
    for path, body in result.bodies.items():
        if MARK in body.lower():
            at = body.lower().index(MARK)
            found.append(f"{path} [{result.statuses[path]}] shows {body[max(0, at - 60) : at + 40]!r}")
    # A link to a pending object's address gives it away (its id, its figures beside the link) too.
    for path, body in result.bodies.items():
        for target in result.direct:
            if f'href="{target}"' in body:
                found.append(f"{path} [{result.statuses[path]}] links to {target}")
    for path, (status, public_status) in result.direct.items():
        if status != 404 and not (status == public_status and status in (302, 401, 403, 405)):
            found.append(f"{path} answers {status} (public twin {public_status}), not 404")
    return found


@pytest.mark.parametrize("who", ["anonymous", "other account"])
def test_a_pending_rig_shows_nothing_to_the_public(world, who):
    result = crawl(_client(None if who == "anonymous" else world.other), world)
    assert not result.unfilled, "routes the crawl cannot fill (teach fills, and filter the view):\n" + "\n".join(
        result.unfilled
    )
    assert len(result.statuses) > 40  # the crawl really walked the site
    found = leaks(result)
    assert not found, f"{len(found)} leaks:\n" + "\n".join(found)


@pytest.mark.parametrize("who", ["owner", "staff"])
def test_the_owner_and_staff_see_everything_of_a_pending_rig(world, who):
    result = crawl(_client(world.owner if who == "owner" else world.staff), world)
    assert not result.unfilled
    everything = "\n".join(result.bodies.values())
    missing = [kind for kind, text in MARKERS.items() if text not in everything]
    assert not missing, f"the {who} does not see: {missing}"
    for path in (f"/runs/{world.fills['run_id'].pending}/", f"/rigs/{world.pending_rig.pk}/"):
        assert result.statuses[path] == 200, path
        assert "pending review" in result.bodies[path].lower(), path


def test_a_route_the_crawl_cannot_fill_fails_it(world):
    """The guard against a new unfiltered route: an unknown parameter is reported, not skipped."""
    with pytest.raises(KeyError):
        fill_route("things/<int:thing_id>/", world.fills, "pending")
    assert fill_route("runs/<int:run_id>/", world.fills, "pending") == f"/runs/{world.fills['run_id'].pending}/"


def test_the_leak_check_can_fail(world):
    """A body naming the marker, a link to a pending address and a pending address
    answering 200 are each reported."""
    planted = Crawl(
        bodies={"/x/": f"<td>{MARKERS['rig name']}</td>", "/z/": '<a href="/y/">#7</a>'},
        statuses={"/x/": 200, "/z/": 200},
        direct={"/y/": (200, 200)},
        unfilled=[],
    )
    assert len(leaks(planted)) == 3

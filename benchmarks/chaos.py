"""Chaos run: concurrent rigs post runs through the real runner client (live
open / append / finish, spool and retry) to Rigboard under gunicorn while
PostgreSQL and Redis are each restarted once and one rig's runner process is
killed (kill -9) and started again; prints runs attempted, stored, lost, the
5xx answers clients saw, and how long each fault took to recover from.

    .venv/bin/python benchmarks/chaos.py            # ~1 min; --rigs, --runs, --samples

It never touches the shared services: it creates a scratch PostgreSQL cluster
(initdb, as the `postgres` user when run as root) and a scratch redis-server,
each on a free loopback port in a temporary directory, and removes both at the
end. The service uses them (DATABASE_URL, CELERY_BROKER_URL); gunicorn runs
with the deployed settings (DEBUG off, 3 gthread workers).

Each rig is a separate process (`chaos.py rig …`, so it can be killed) that
measures runs with synthetic samples (the faults are in the delivery, not in
llama-server, which would only burn the shared CPUs) and delivers them with
runners.delivery.client exactly as `python -m runners run` does: spool flushed before
each run, the run opened live, each sample appended, the run finished, spooled
when the service cannot take it. Before finishing a run it appends its uuid to
a ledger (fsync'd): the runs attempted. A staff client queues a benchmark job
every second through POST /api/jobs/ (the only request that needs Redis).

Beside them, a racer sends each of its runs' four requests at once from four
threads released by a barrier (the open, an append of the first samples, the
finish and the whole document, each through the runner's client: what is not
shown stored is spooled), and a token reader asks GET /api/jobs/ with a rig's
token every 0.2 s, so the PostgreSQL restart meets authenticated requests too.

At the end every rig (and the racer) flushes its spool once more (`python -m
runners flush`) and the ledgers are checked against the database: a run is
stored when it is there, finished, with every sample its rig measured; a token
request is lost when it failed after PostgreSQL was back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis as redis_lib  # noqa: E402
import requests  # noqa: E402
from ingest_service import free_port, manage, service_env, start_gunicorn  # noqa: E402

from runners.delivery.client import ServiceClient  # noqa: E402
from runners.delivery.live import LiveRun  # noqa: E402

PG_BIN = Path("/usr/lib/postgresql")
FAULT_DOWN_S = 3.0


def wait_for(check, timeout_s: float, what: str) -> float:
    """Poll ``check`` until it is true; return the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if check():
            return time.monotonic() - start
        time.sleep(0.1)
    raise SystemExit(f"{what} did not come up within {timeout_s:.0f} s")


def can_connect(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# --- scratch services ---------------------------------------------------------------


class ScratchPostgres:
    """A throw-away cluster: initdb into a temp dir, trust auth, loopback port."""

    def __init__(self, workdir: Path) -> None:
        versions = sorted((p for p in PG_BIN.iterdir() if (p / "bin" / "initdb").exists()), key=lambda p: p.name)
        if not versions:
            raise SystemExit(f"no PostgreSQL server binaries under {PG_BIN}")
        self.bin = versions[-1] / "bin"
        self.dir = workdir / "pg"
        self.port = free_port()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.dir.mkdir()
        if self.as_user:
            shutil.chown(workdir, "postgres")
            shutil.chown(self.dir, "postgres")
        self._run(
            str(self.bin / "initdb"), "-D", str(self.dir / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/rigboard"

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> float:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.dir / "data"),
            "-l",
            str(self.dir / "log"),
            "-o",
            options,
            "-w",
            "start",
        )
        return wait_for(lambda: can_connect(self.port), 30, "PostgreSQL")

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def create_database(self) -> None:
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "rigboard")


class ScratchRedis:
    """A throw-away redis-server with an append-only file, as docker-compose runs it."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "redis"
        self.dir.mkdir()
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir)]
        command += ["--save", "", "--appendonly", "yes", "--loglevel", "warning"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        return wait_for(lambda: can_connect(self.port), 30, "Redis")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


# --- the service ----------------------------------------------------------------------


def chaos_env(pg: ScratchPostgres, redis_url: str) -> dict[str, str]:
    """ingest.py's service settings on the scratch services. Four rigs here post a
    run a second each and staff a job a second, far above any real rig: the
    account write limit is off too (the rig one is, in service_env)."""
    env = service_env(pg.url, redis_url)
    env.update(LOG_LEVEL="ERROR", RIGBOARD_THROTTLE_ACCOUNT_WRITES="off")
    return env


SETUP = """
from django.contrib.auth.models import User
from leaderboard.results.models import Rig, RigGpu, RigToken
tokens = {}
for i in range(%d):
    rig = Rig.objects.create(name=f"chaos-{i}", cpu="chaos", ram_gb=64, os="Linux")
    RigGpu.objects.create(rig=rig, model="RTX 3090", count=1, vram_gb=24)
    tokens[rig.name] = RigToken.issue(rig=rig, label="chaos benchmark")[1]
staff = User.objects.create_user("chaos-staff", is_staff=True)
# A logged-in staff session, as the admin's login would make it.
from django.contrib import auth
from django.contrib.sessions.backends.db import SessionStore
session = SessionStore()
session[auth.SESSION_KEY] = str(staff.pk)
session[auth.BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[auth.HASH_SESSION_KEY] = staff.get_session_auth_hash()
session.create()
import json; print(json.dumps({"tokens": tokens, "session": session.session_key}))
"""

REPORT = """
import json, sys
from leaderboard.results.models import Run
uuids = json.load(sys.stdin)
out = {}
for run in Run.objects.filter(uuid__in=uuids).prefetch_related("samples"):
    out[str(run.uuid)] = [run.status, run.samples.count()]
left_open = Run.objects.filter(status="running").count()
from leaderboard.jobs.models import BenchmarkJob
jobs = {s: BenchmarkJob.objects.filter(status=s).count() for s in ("queued", "failed")}
print(json.dumps({"runs": out, "left_open": left_open, "jobs": jobs}))
"""


# --- a rig (its own process) ----------------------------------------------------------


def run_document(rig: str, run_uuid: str, rng: random.Random) -> dict:
    return {
        "uuid": run_uuid,
        "rig": rig,
        "status": "finished",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "stack": {"engine": "llama.cpp", "build": "b7000-chaos"},
        "model_file": {"name": "gemma-3-270m", "quantization": "Q4_K_M", "weight_format": "GGUF"},
        "configuration": {"ctx_size": 4096, "speculative_type": "none"},
        "workload": {"name": "chaos", "version": "1", "max_tokens": 16, "repetitions": 0},
        "fingerprint": {"cpu": "chaos"},
        "extra": {"seed": rng.random()},
    }


def rig_main(args: argparse.Namespace) -> int:
    """One rig: measure --runs runs of --samples samples each and deliver them."""
    rng = random.Random(args.seed)
    client = ServiceClient(args.url, args.token, spool_dir=args.spool, rig=args.rig, timeout_s=10.0)
    events = open(args.events, "a", buffering=1)  # noqa: SIM115 - for the life of the process

    def on_response(response: requests.Response, *_: object, **__: object) -> None:
        events.write(json.dumps({"t": time.time(), "status": response.status_code}) + "\n")

    client.session.hooks["response"].append(on_response)
    ledger = Path(args.ledger)
    done = set(ledger.read_text().split()) if ledger.exists() else set()
    while len(done) < args.runs:
        flushed = client.flush()  # as `runners run` does before measuring
        if flushed.posted:
            events.write(json.dumps({"t": time.time(), "flushed": len(flushed.posted)}) + "\n")
        run_uuid = str(uuid.uuid4())
        document = run_document(args.rig, run_uuid, rng)
        live = LiveRun(client, run_uuid)
        live.open(document)
        samples = []
        for index in range(1, args.samples + 1):
            time.sleep(args.sample_s)  # the repetition being measured
            sample = {"index": index, "decode_tokens_per_s_server": 40 + rng.random(), "tokens_generated": 16}
            samples.append(sample)
            live.add(samples=[sample])
        with ledger.open("a") as out:  # measured: from here on it must not be lost
            out.write(run_uuid + "\n")
            out.flush()
            os.fsync(out.fileno())
        done.add(run_uuid)
        document.update(samples=samples, finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        document["workload"]["repetitions"] = len(samples)
        delivery = live.close(document)
        events.write(json.dumps({"t": time.time(), "delivery": delivery.outcome}) + "\n")
    return 0


# --- racing deliveries and token requests (threads of the driver) ----------------------


@dataclass
class RaceLog:
    uuids: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    token_codes: list[tuple[float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


RACE_SAMPLES = 3


def race_send(client: ServiceClient, what: str, run: dict, barrier: threading.Barrier, log: RaceLog) -> None:
    """Send one of a run's four requests once ``barrier`` lets the four go; count its outcome."""
    whole, run_uuid = run["whole"], run["whole"]["uuid"]
    barrier.wait(timeout=30)
    if what == "open":
        outcome = client.send("/api/runs/", run["open"]).outcome
    elif what == "append":
        outcome = client.send(f"/api/runs/{run_uuid}/samples/", {"samples": whole["samples"][:2]}).outcome
    elif what == "finish":
        outcome = client.checked(whole, client.send(f"/api/runs/{run_uuid}/finish/", run["finish"])).outcome
        if outcome != "posted":  # as LiveRun.close: the whole run, spooled if need be
            outcome = client.post_run(whole).outcome
    else:
        outcome = client.post_run(whole).outcome
    with log.lock:
        log.outcomes[f"{what} {outcome}"] = log.outcomes.get(f"{what} {outcome}", 0) + 1


def race_loop(url: str, token: str, rig: str, spool: Path, stop: threading.Event, log: RaceLog) -> None:
    """Send one run's open, append, finish and whole POST at once, run after run."""
    rng = random.Random(7)
    clients = [ServiceClient(url, token, spool_dir=spool, rig=rig, timeout_s=10.0) for _ in range(4)]
    while not stop.is_set():
        whole = run_document(rig, str(uuid.uuid4()), rng)
        samples = [{"index": i, "decode_tokens_per_s_server": 40.0 + i, "tokens_generated": 16} for i in (1, 2, 3)]
        whole.update(samples=samples, finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        whole["workload"]["repetitions"] = RACE_SAMPLES
        run = {
            "whole": whole,
            "open": {**whole, "status": "running", "samples": [], "finished_at": None},
            "finish": {"status": "finished", "samples": samples, "finished_at": whole["finished_at"]},
        }
        log.uuids.append(whole["uuid"])  # measured: from here on it must not be lost
        barrier = threading.Barrier(4)
        threads = [
            threading.Thread(target=race_send, args=(client, what, run, barrier, log))
            for client, what in zip(clients, ("open", "append", "finish", "full"), strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def token_loop(url: str, token: str, stop: threading.Event, log: RaceLog) -> None:
    """A rig's token read every 0.2 s: the request whose first query is the token lookup."""
    with requests.Session() as session:
        session.headers["Authorization"] = f"Token {token}"
        while not stop.wait(0.2):
            sent = time.time()  # when it was sent: one sent while PostgreSQL was down may fail
            try:
                code = session.get(f"{url}/api/jobs/", timeout=10).status_code
            except requests.RequestException:
                code = 0
            log.token_codes.append((sent, code))


# --- the driver -----------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    started: float = 0.0
    cleared: float = 0.0
    recovered: float | None = None  # first 2xx after ``cleared``
    errors_s: float | None = None  # the last failed answer, after ``started``
    errors: int = 0


@dataclass
class StaffLog:
    codes: list[tuple[float, int]] = field(default_factory=list)


def inject(fault: Fault, *, after_s: float, stop: Callable[[], object], start: Callable[[], object]) -> None:
    """Wait ``after_s``, then ``stop`` something for FAULT_DOWN_S and ``start`` it
    again, recording when the fault began and when it was cleared."""
    time.sleep(after_s)
    fault.started = time.time()
    stop()
    time.sleep(FAULT_DOWN_S)
    start()
    fault.cleared = time.time()


def staff_loop(url: str, rig: str, session_key: str, stop: threading.Event, log: StaffLog) -> None:
    """Queue a job every second as staff (session + CSRF over plain HTTP: the
    production cookies are Secure, so they are sent by hand)."""
    csrf = secrets.token_hex(16)  # a 32-character CSRF secret, as cookie and header
    headers = {"Cookie": f"csrftoken={csrf}; sessionid={session_key}", "X-CSRFToken": csrf}
    spec = {"attach": {"url": "http://127.0.0.1:9"}, "workload": {"max_tokens": 16, "repetitions": 1, "warmup": 0}}
    while not stop.wait(1.0):
        try:
            response = requests.post(
                f"{url}/api/jobs/", json={"rig": rig, "kind": "suite", "spec": spec}, headers=headers, timeout=10
            )
            log.codes.append((time.time(), response.status_code))
        except requests.RequestException:
            log.codes.append((time.time(), 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    rig = sub.add_parser("rig", help="(internal) one rig's runner process")
    for name in ("url", "token", "rig", "spool", "ledger", "events"):
        rig.add_argument(f"--{name}", required=True)
    rig.add_argument("--runs", type=int, required=True)
    rig.add_argument("--samples", type=int, required=True)
    rig.add_argument("--sample-s", type=float, required=True)
    rig.add_argument("--seed", type=int, required=True)
    parser.add_argument("--rigs", type=int, default=4)
    parser.add_argument("--runs", type=int, default=30, help="runs per rig")
    parser.add_argument("--samples", type=int, default=4, help="samples per run")
    parser.add_argument("--sample-s", type=float, default=0.15, help="seconds per sample (the measuring)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    if args.command == "rig":
        return rig_main(args)

    workdir = Path(tempfile.mkdtemp(prefix="rigboard-chaos-"))
    pg, redis = ScratchPostgres(workdir), ScratchRedis(workdir)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        pg.start()
        pg.create_database()
        redis.start()
        env = chaos_env(pg, redis.url)
        manage(env, "migrate", "--noinput", "-v", "0")
        setup = json.loads(manage(env, "shell", "-c", SETUP % args.rigs).strip().splitlines()[-1])
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        processes.append(start_gunicorn(env, port, workers=3))
        print(f"scratch PostgreSQL :{pg.port}, Redis :{redis.port}, gunicorn :{port} (3 workers x 4 threads)")
        return drive(args, workdir, url, setup["tokens"], setup["session"], pg, redis, env)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
        redis.stop()
        with contextlib.suppress(subprocess.CalledProcessError):
            pg.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def drive(args, workdir: Path, url: str, tokens: dict[str, str], session_key: str, pg, redis, env) -> int:
    rigs = sorted(tokens)

    def spawn(name: str, seed: int) -> subprocess.Popen[bytes]:
        base = workdir / name
        command = [sys.executable, __file__, "rig", "--url", url, "--token", tokens[name], "--rig", name]
        command += ["--spool", str(base / "spool"), "--ledger", str(base / "ledger"), "--events", str(base / "events")]
        command += ["--runs", str(args.runs), "--samples", str(args.samples), "--sample-s", str(args.sample_s)]
        command += ["--seed", str(seed)]
        return subprocess.Popen(command, cwd=ROOT, stderr=open(base / "stderr", "a"))  # noqa: SIM115

    for name in rigs:
        (workdir / name).mkdir()
    agents = {name: spawn(name, i) for i, name in enumerate(rigs)}
    stop, staff, race = threading.Event(), StaffLog(), RaceLog()
    staff_thread = threading.Thread(target=staff_loop, args=(url, rigs[0], session_key, stop, staff), daemon=True)
    staff_thread.start()
    racer = workdir / "racer"
    helpers = [
        threading.Thread(target=race_loop, args=(url, tokens[rigs[0]], rigs[0], racer, stop, race), daemon=True),
        threading.Thread(target=token_loop, args=(url, tokens[rigs[-1]], stop, race), daemon=True),
    ]
    for helper in helpers:
        helper.start()
    start = time.time()
    faults = [Fault("PostgreSQL restart"), Fault("Redis restart"), Fault(f"kill -9 of {rigs[-1]}'s runner")]

    def kill_runner() -> None:
        agents[rigs[-1]].send_signal(signal.SIGKILL)
        agents[rigs[-1]].wait()

    def restart_runner() -> None:  # as the supervisor (systemd, compose) does
        agents[rigs[-1]] = spawn(rigs[-1], 99)

    inject(faults[0], after_s=4, stop=pg.stop, start=pg.start)
    inject(faults[1], after_s=4, stop=redis.stop, start=redis.start)
    inject(faults[2], after_s=3, stop=kill_runner, start=restart_runner)

    for name, agent in agents.items():
        if agent.wait(timeout=600) != 0:
            print(f"{name}'s runner exited with {agent.returncode}; see {workdir / name / 'stderr'}")
    stop.set()
    staff_thread.join(timeout=15)
    for helper in helpers:
        helper.join(timeout=60)
    racer_flush = ServiceClient(url, tokens[rigs[0]], spool_dir=racer, rig=rigs[0]).flush()
    if racer_flush.remaining:
        print(f"racer: {len(racer_flush.remaining)} runs still spooled after the final flush")
    # A last `python -m runners flush` on every rig.
    for name in rigs:
        flushed = ServiceClient(url, tokens[name], spool_dir=workdir / name / "spool", rig=name).flush()
        if flushed.remaining:
            print(f"{name}: {len(flushed.remaining)} runs still spooled after the final flush")
    elapsed = time.time() - start

    ledger = {u: name for name in rigs for u in (workdir / name / "ledger").read_text().split()}
    asked = sorted([*ledger, *race.uuids])
    report = json.loads(manage(env, "shell", "-c", REPORT, stdin=json.dumps(asked)).strip().splitlines()[-1])
    raced_ok = [u for u in race.uuids if report["runs"].get(u) == ["finished", RACE_SAMPLES]]
    raced_lost = len(race.uuids) - len(raced_ok)
    ledger_runs = {u: v for u, v in report["runs"].items() if u in ledger}
    report["runs"] = ledger_runs
    stored = {u for u, (status, n) in report["runs"].items() if status == "finished" and n == args.samples}
    incomplete = {u for u in report["runs"] if u not in stored}
    lost = set(ledger) - set(report["runs"])
    events = [json.loads(line) for name in rigs for line in (workdir / name / "events").read_text().splitlines()]
    answers = sorted((e["t"], e["status"]) for e in events if "status" in e)
    spooled = sum(1 for e in events if e.get("delivery") == "spooled")
    codes_5xx = [c for _, c in answers if c >= 500]

    def first_ok_after(t: float, log: list[tuple[float, int]]) -> float | None:
        return next((s for s, c in log if s >= t and 200 <= c < 300), None)

    for fault, log in ((faults[0], answers), (faults[1], staff.codes)):
        ok = first_ok_after(fault.cleared, log)
        fault.recovered = None if ok is None else ok - fault.cleared
        bad = [t for t, c in log if fault.started <= t <= fault.cleared + 30 and not 200 <= c < 300]
        fault.errors_s = (max(bad) - fault.started) if bad else 0.0
        fault.errors = len(bad)
    killed_events = [json.loads(line) for line in (workdir / rigs[-1] / "events").read_text().splitlines()]
    flushed_at = next((e["t"] for e in killed_events if "flushed" in e and e["t"] >= faults[2].cleared), None)
    killed_answers = sorted((e["t"], e["status"]) for e in killed_events if "status" in e)
    first_after_kill = first_ok_after(faults[2].cleared, killed_answers)
    faults[2].recovered = None if first_after_kill is None else first_after_kill - faults[2].cleared

    # Every job the service holds as queued must have its message in the rig's queue (Redis restarted with its AOF).
    broker = redis_lib.Redis.from_url(redis.url)
    messages = broker.llen(f"rig.{rigs[0]}")
    staff_5xx = [c for _, c in staff.codes if c >= 500]
    timeline = ", ".join(f"{f.name} at +{f.started - start:.0f} s ({f.cleared - f.started:.1f} s down)" for f in faults)
    print(f"{args.rigs} rigs x {args.runs} runs x {args.samples} samples, {elapsed:.0f} s; faults: {timeline}")
    print(f"runs attempted (measured, in the ledgers): {len(ledger)}")
    print(f"runs stored (finished, every sample):      {len(stored)}")
    print(f"runs lost:                                 {len(lost)}")
    print(f"runs stored incomplete:                    {len(incomplete)}")
    print(f"runs left open on the service:             {report['left_open']} (the killed runner's run in hand)")
    print(f"runs spooled then delivered by retry:      {spooled}")
    print(f"rig requests: {len(answers)} answered, 5xx seen: {len(codes_5xx)} "
          f"({', '.join(f'{c}: {codes_5xx.count(c)}' for c in sorted(set(codes_5xx))) or 'none'}); "
          f"5xx left after retry (runs not stored): {len(lost) + len(incomplete)}")  # fmt: skip
    print(f"staff job requests: {len(staff.codes)}, 5xx seen: {len(staff_5xx)} "
          f"({', '.join(f'{c}: {staff_5xx.count(c)}' for c in sorted(set(staff_5xx))) or 'none'}), "
          f"no answer: {sum(1 for _, c in staff.codes if c == 0)}; jobs queued {report['jobs']['queued']}, "
          f"failed (broker unreachable) {report['jobs']['failed']}, messages in rig.{rigs[0]} {messages}, "
          f"jobs lost {max(0, report['jobs']['queued'] - messages)}")  # fmt: skip
    print(f"racing runs (open, append, finish, whole POST at once): {len(race.uuids)}, "
          f"stored whole {len(raced_ok)}, lost or incomplete {raced_lost}; "
          f"answers: {', '.join(f'{k}: {v}' for k, v in sorted(race.outcomes.items()))}")  # fmt: skip
    token_after = [(t, c) for t, c in race.token_codes if t >= faults[0].cleared]
    token_failed = [f"{c} at +{t - faults[0].cleared:.1f} s" for t, c in token_after if not 200 <= c < 300]
    token_lost = len(token_failed)
    print(f"token requests (GET /api/jobs/ with a rig token): {len(race.token_codes)}, "
          f"{len(race.token_codes) - len(token_after)} sent before PostgreSQL was back, {len(token_after)} after; "
          f"failed after it was back (lost): {token_lost} {', '.join(token_failed)}".rstrip())  # fmt: skip
    for fault in faults:
        recovered = "never" if fault.recovered is None else f"{fault.recovered:.1f} s"
        seen = f"{fault.errors} failed answers until +{fault.errors_s:.1f} s, " if fault.errors_s is not None else ""
        print(f"recovery, {fault.name}: {seen}first 2xx {recovered} after it was back")
    if flushed_at is not None:
        print(f"the restarted runner flushed its spool {flushed_at - faults[2].cleared:.1f} s after it started")
    clean = not lost and not incomplete and not raced_lost and not token_lost
    return 0 if clean and messages >= report["jobs"]["queued"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""The bulk phase of the ingest benchmark: ``--bulk-clients`` clients POST ``--bulk-runs``
new runs to ``/api/runs/bulk/`` in batches of ``--bulk-batch``; the bodies are built
before the clock starts, so the clients' JSON costs nothing measured. Every run must
come back 201 ("created").

Each batch goes on a new connection. A batch is a second of Python work, which holds
its gunicorn worker's interpreter lock: two keep-alive clients that happened to land on
one worker would share one core for the whole phase (measured: ≈ 550 runs/s when they
did, ≈ 900 when they did not, the same code); a new connection goes to a worker that is
free to accept it, as a concurrent importer's requests would."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field


@dataclass
class BulkResult:
    """What the bulk phase measured: runs created, the wall time from the first send to
    the last answer, each batch's latency, and the first failures (status, text)."""

    created: int = 0
    wall_s: float = 0.0
    batch_latencies_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def runs_per_s(self) -> float:
        return self.created / self.wall_s if self.wall_s > 0 else 0.0


def bulk_bodies(make_run: object, runs: int, batch: int, seed: int) -> list[bytes]:
    """Return the request bodies: ``runs`` new runs (``make_run(rng)`` → one run's JSON bytes) in batches."""
    rng = random.Random(seed)
    documents = [json.loads(make_run(rng)) for _ in range(runs)]  # type: ignore[operator]
    return [json.dumps({"runs": documents[i : i + batch]}).encode() for i in range(0, runs, batch)]


def _client(port: int, token: str, bodies: list[bytes], result: BulkResult, lock: threading.Lock) -> None:
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Accept": "application/json"}
    for body in bodies:
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        try:
            conn.request("POST", "/api/runs/bulk/", body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException) as exc:
            with lock:
                result.failures.append(repr(exc))
            conn.close()
            continue
        latency = time.perf_counter() - started
        created, problem = 0, ""
        if response.status == 200:
            doc = json.loads(answer)
            created = doc["created"]
            bad = [r for r in doc["runs"] if r["status"] != 201]
            if bad:
                problem = f"{len(bad)} runs not created, first: {json.dumps(bad[0])[:300]}"
        else:
            problem = f"HTTP {response.status}: {answer[:300].decode(errors='replace')}"
        with lock:
            result.created += created
            result.batch_latencies_s.append(latency)
            if problem:
                result.failures.append(problem)
        conn.close()


def bulk_phase(port: int, token: str, bodies: list[bytes], clients: int) -> BulkResult:
    """POST ``bodies`` from ``clients`` threads (round-robin share each) and return what was measured."""
    result, lock = BulkResult(), threading.Lock()
    shares = [bodies[i::clients] for i in range(clients)]
    threads = [
        threading.Thread(target=_client, args=(port, token, share, result, lock), daemon=True) for share in shares
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    result.wall_s = time.perf_counter() - began
    return result

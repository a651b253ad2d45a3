"""A decoding neighbour for the drift rounds of benchmarks/ab_confirmation.py
(issue 36: "a real speed step — a second process decoding on the same cores,
started and stopped at random moments").

While a round runs, a background thread starts a second llama-server (the
same binary and model as A, its own threads), keeps it decoding (one
completion after another), stops it, and starts it again, the gaps and the
spells drawn from exponential distributions (``mean_off_s``, ``mean_on_s``)
from a seeded generator: a rig's neighbour does not wait for a confirmation's
block boundaries. Every spell is recorded (seconds from the round's start), so
a JSON says which blocks and runs shared the machine with it.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from runners.config import ServerConfig
from runners.harness.server import LlamaServer
from runners.harness.server.errors import ServerError

PROMPT = "Write a long story about a lighthouse keeper and the ships she saw."


@dataclass
class Spell:
    """One neighbour spell: started and stopped, seconds from the round's start; tokens it decoded."""

    started_s: float
    stopped_s: float | None = None
    completions: int = 0
    error: str = ""
    pid: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"started_s": self.started_s, "stopped_s": self.stopped_s, "completions": self.completions,
                "error": self.error, "pid": self.pid}  # fmt: skip


@dataclass
class DecodingNeighbour:
    """A second llama-server decoding on and off at random moments; a context manager."""

    binary: str
    model: str
    threads: int = 1
    mean_on_s: float = 60.0
    mean_off_s: float = 90.0
    max_tokens: int = 64
    seed: int = 0
    spells: list[Spell] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="decoding-neighbour", daemon=True)
        self._t0 = 0.0

    def __enter__(self) -> DecodingNeighbour:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def now_s(self) -> float:
        return time.monotonic() - self._t0

    def on_share(self, start_s: float, stop_s: float) -> float:
        """Return the share of [start_s, stop_s] (round seconds) the neighbour was on."""
        if stop_s <= start_s:
            return 0.0
        on = 0.0
        for spell in self.spells:
            end = spell.stopped_s if spell.stopped_s is not None else self.now_s()
            on += max(0.0, min(end, stop_s) - max(spell.started_s, start_s))
        return on / (stop_s - start_s)

    def record(self) -> dict[str, Any]:
        return {"threads": self.threads, "mean_on_s": self.mean_on_s, "mean_off_s": self.mean_off_s,
                "max_tokens": self.max_tokens, "seed": self.seed,
                "spells": [s.as_dict() for s in self.spells]}  # fmt: skip

    def _loop(self) -> None:
        while not self._stop.wait(self._rng.expovariate(1.0 / self.mean_off_s)):
            spell = Spell(started_s=self.now_s())
            self.spells.append(spell)
            self._spell(spell, self._rng.expovariate(1.0 / self.mean_on_s))
            spell.stopped_s = self.now_s()

    def _spell(self, spell: Spell, on_s: float) -> None:
        """Start the server, decode until ``on_s`` has passed (or the round ends), stop it."""
        config = ServerConfig(binary=self.binary, model=self.model, ctx_size=2048, threads=self.threads, parallel=1,
                              startup_timeout_s=120.0, stop_grace_s=5.0)  # fmt: skip
        deadline = time.monotonic() + on_s
        with tempfile.TemporaryDirectory(prefix="rigboard-neighbour-") as logs:
            server = LlamaServer(config, log_dir=logs)
            try:
                server.start()
                spell.pid = server.process.pid if server.process else None
                with requests.Session() as session:
                    while time.monotonic() < deadline and not self._stop.is_set():
                        body = {"prompt": PROMPT, "n_predict": self.max_tokens, "temperature": 0.8,
                                "seed": spell.completions}  # fmt: skip
                        session.post(f"{server.base_url}/completion", json=body, timeout=120).raise_for_status()
                        spell.completions += 1
            except (ServerError, requests.RequestException) as exc:
                spell.error = str(exc)[:200]
            finally:
                server.stop()


def neighbour_for(binary: str, model: str, args: Any, round_index: int) -> DecodingNeighbour:
    """The neighbour of one drift round, from ab_confirmation.py's arguments (its own seed a round)."""
    return DecodingNeighbour(binary=binary, model=model, threads=args.neighbour_threads,
                             mean_on_s=args.neighbour_on_s, mean_off_s=args.neighbour_off_s,
                             max_tokens=args.max_tokens, seed=args.neighbour_seed + round_index)  # fmt: skip

"""The rig side's environment, read in one place (as ``leaderboard/settings.py`` is
for the service): typed readers that fail loudly, naming the variable.

Read when used, not at import, so a test or a service manager may set them before
the worker starts. (Child processes, git and the compiler, are handed the whole
environment as it is: that passes it on, it reads no setting.)

  RIGBOARD_BROKER_URL      the service's Redis broker (the rig's Celery worker: required)
  RIGBOARD_URL             the service's base URL (else the one the job carries)
  RIGBOARD_TOKEN           this rig's API token (never sent through the broker)
  RIGBOARD_RIG             this rig's name: the worker then also consumes rig.<name>
                           without -Q, and refuses jobs queued for another rig
  RIGBOARD_SPOOL_DIR       where undelivered runs wait (runner default otherwise)
  RIGBOARD_SPOOL_FALLBACK_DIRS   where a run goes when its spool directory cannot take
                           it (paths separated by ``os.pathsep``; default: the temp
                           directory, then the home directory)
  RIGBOARD_BUILD_CACHE_DIR where the nightly keeps its llama.cpp builds
                           (default ~/.cache/rigboard/builds)
  RIGBOARD_VISIBILITY_TIMEOUT_S   seconds before an unacknowledged job of a dead
                           worker is handed out again (default 24 h; keep it above
                           every job's time limit, or a live job is delivered twice
                           and the second delivery aborts it). Recovery from a dead
                           worker does not wait for it: the service's sweeper closes
                           the silent run and its job in minutes (README, "When a rig dies")
  RIGBOARD_RESTORE_INTERVAL_S     how often a worker looks for such jobs (default 10)
  RIGBOARD_AB_HEAVY_CPU_SHARE     others' share of the machine's CPU time beyond which an
                           A/B block is held back and tried later (default 0.25,
                           runners/ab_design.py); a rig with a known background load may
                           raise it, 1 never holds one back (its contention is still
                           measured and reported, and uneven sides still said)
  RIGBOARD_SERVER_NICE     the niceness the llama-servers this rig benchmarks run at
                           (-20 … 19; unset: the worker's own). A dedicated rig sets -10 so
                           that a neighbour at 0 (a compile, a CPU hog) takes less from a
                           1-thread server (benchmarks/server_nice.py: 95% of its speed kept
                           beside 3 busy loops, 84% at 0): the run-to-run noise a nightly
                           floor is measured on stays closer to the server's own. Below the
                           worker's own needs root, CAP_SYS_NICE or RLIMIT_NICE; a server
                           that cannot get it is not started (runners/harness/server/process.py)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runners.ab_design import HEAVY_CPU_SHARE


class RigEnvError(RuntimeError):
    """A required environment variable is missing or malformed."""


def env_str(name: str, default: str = "", *, environ: Mapping[str, str] | None = None) -> str:
    """Return the variable ``name`` ('' counts as unset: ``default``)."""
    return (os.environ if environ is None else environ).get(name, "") or default


def env_int(name: str, default: int, *, environ: Mapping[str, str] | None = None) -> int:
    """Return the variable ``name`` as an integer (``default`` when unset); raise
    RigEnvError naming it when it is not one."""
    raw = env_str(name, environ=environ)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise RigEnvError(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, default: float, *, environ: Mapping[str, str] | None = None) -> float:
    """Return the variable ``name`` as a number (``default`` when unset); raise
    RigEnvError naming it when it is not one."""
    raw = env_str(name, environ=environ)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise RigEnvError(f"{name} must be a number, got {raw!r}") from exc


def ab_heavy_cpu_share() -> float:
    """Return RIGBOARD_AB_HEAVY_CPU_SHARE (default runners.ab_design.HEAVY_CPU_SHARE)."""
    return env_float("RIGBOARD_AB_HEAVY_CPU_SHARE", HEAVY_CPU_SHARE)


SERVER_NICE_RANGE = range(-20, 20)


def server_nice(environ: Mapping[str, str] | None = None) -> int | None:
    """Return RIGBOARD_SERVER_NICE (None when unset); raise RigEnvError naming it
    when it is no integer in -20 … 19."""
    if not env_str("RIGBOARD_SERVER_NICE", environ=environ):
        return None
    nice = env_int("RIGBOARD_SERVER_NICE", 0, environ=environ)
    if nice not in SERVER_NICE_RANGE:
        raise RigEnvError(f"RIGBOARD_SERVER_NICE must be a niceness from -20 to 19, got {nice}")
    return nice


def env_paths(name: str, *, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Return the variable ``name`` as paths separated by ``os.pathsep``, each with
    ``~`` expanded ([] when unset)."""
    return [Path(part).expanduser() for part in env_str(name, environ=environ).split(os.pathsep) if part]


def spool_fallback_dirs() -> list[Path]:
    """Return RIGBOARD_SPOOL_FALLBACK_DIRS ([] when unset: the spool's own defaults)."""
    return env_paths("RIGBOARD_SPOOL_FALLBACK_DIRS")


def build_cache_dir() -> Path:
    """Return RIGBOARD_BUILD_CACHE_DIR, ~ expanded (default ~/.cache/rigboard/builds)."""
    return Path(env_str("RIGBOARD_BUILD_CACHE_DIR", "~/.cache/rigboard/builds")).expanduser()


@dataclass(frozen=True)
class RigEnv:
    """What the rig's Celery worker reads of its environment."""

    broker_url: str
    service_url: str
    token: str
    rig: str
    spool_dir: str
    visibility_timeout_s: int
    restore_interval_s: int
    # A copy of every run document the rig's nightly and A/B runs post, as <run uuid>.json
    # ('' keeps none): what a recording of the rig's timeline is made from.
    runs_dir: str = ""
    # RIGBOARD_SERVER_NICE, read here too so a malformed one stops the worker at start.
    server_nice: int | None = None

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> RigEnv:
        """Return the rig's settings from ``environ`` (default: the process
        environment); raise RigEnvError for a malformed number."""
        return cls(
            broker_url=env_str("RIGBOARD_BROKER_URL", environ=environ),
            service_url=env_str("RIGBOARD_URL", environ=environ),
            token=env_str("RIGBOARD_TOKEN", environ=environ),
            rig=env_str("RIGBOARD_RIG", environ=environ),
            spool_dir=env_str("RIGBOARD_SPOOL_DIR", environ=environ),
            visibility_timeout_s=env_int("RIGBOARD_VISIBILITY_TIMEOUT_S", 24 * 60 * 60, environ=environ),
            restore_interval_s=env_int("RIGBOARD_RESTORE_INTERVAL_S", 10, environ=environ),
            runs_dir=env_str("RIGBOARD_RUNS_DIR", environ=environ),
            server_nice=server_nice(environ),
        )

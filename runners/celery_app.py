"""The rig's own Celery app: no Django, configured from the environment.

A rig runs ``celery -A runners.celery_app worker -Q rig.<name> --pool=solo -c 1``
(one benchmark at a time: two jobs sharing a GPU would measure each other).
Environment:
  RIGBOARD_BROKER_URL      the service's Redis broker (required)
  RIGBOARD_URL             the service's base URL (else the one the job carries)
  RIGBOARD_TOKEN           this rig's API token (never sent through the broker)
  RIGBOARD_RIG             this rig's name: the worker then also consumes rig.<name>
                           without -Q, and refuses jobs queued for another rig
  RIGBOARD_SPOOL_DIR       where undelivered runs wait (runner default otherwise)
  RIGBOARD_VISIBILITY_TIMEOUT_S   seconds before an unacknowledged job of a dead
                           worker is handed out again (default 24 h; keep it above
                           every job's time limit, or a live job is delivered twice
                           and the second delivery aborts it). Recovery from a dead
                           worker does not wait for it: the service's sweeper closes
                           the silent run and its job in minutes (README, "When a rig dies")
  RIGBOARD_RESTORE_INTERVAL_S     how often a worker looks for such jobs (default 10)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup


class RigEnvError(RuntimeError):
    """A required environment variable is missing or malformed."""


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise RigEnvError(f"{name} must be an integer, got {raw!r}") from exc


@dataclass(frozen=True)
class RigEnv:
    broker_url: str
    service_url: str
    token: str
    rig: str
    spool_dir: str
    visibility_timeout_s: int
    restore_interval_s: int

    @classmethod
    def read(cls) -> RigEnv:
        """Return the rig's settings from the environment (read when used, so a
        test or a service manager may set them before the worker starts)."""
        return cls(
            broker_url=os.environ.get("RIGBOARD_BROKER_URL", ""),
            service_url=os.environ.get("RIGBOARD_URL", ""),
            token=os.environ.get("RIGBOARD_TOKEN", ""),
            rig=os.environ.get("RIGBOARD_RIG", ""),
            spool_dir=os.environ.get("RIGBOARD_SPOOL_DIR", ""),
            visibility_timeout_s=_env_int("RIGBOARD_VISIBILITY_TIMEOUT_S", 24 * 60 * 60),
            restore_interval_s=_env_int("RIGBOARD_RESTORE_INTERVAL_S", 10),
        )


def queue_name(rig: str) -> str:
    """Return the queue a rig's worker consumes (the service's Rig.queue_name)."""
    return f"rig.{rig}"


def make_app(env: RigEnv | None = None) -> Celery:
    """Return the rig's Celery app for ``env`` (default: the process environment)."""
    env = env or RigEnv.read()
    # set_as_current=False: imported inside the service's process (tests, spec
    # checks), the rig app must not become the default app that the service's
    # shared tasks bind to.
    app = Celery(
        "rigboard_rig",
        broker=env.broker_url or None,
        include=["runners.tasks", "runners.builds.nightly"],
        set_as_current=False,
    )
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # The rig reports over the REST API; nobody reads Celery results.
        task_ignore_result=True,
        # A job is acknowledged when it ends, so a worker that dies mid-job leaves
        # it in the broker to be redelivered (and then aborted, not run twice).
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=queue_name(env.rig) if env.rig else "celery",
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": env.visibility_timeout_s,
            "unacked_restore_interval": env.restore_interval_s,
            "unacked_restore_throttle": 1,
        },
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()


@celeryd_after_setup.connect
def _consume_own_queue(sender: str, instance: Any, **kwargs: Any) -> None:
    # With RIGBOARD_RIG set, the worker consumes its rig's queue even when
    # started without -Q, so a forgotten flag cannot leave jobs waiting.
    rig = RigEnv.read().rig
    if rig:
        instance.app.amqp.queues.select_add(queue_name(rig))

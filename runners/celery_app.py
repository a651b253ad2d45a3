"""The rig's own Celery app: no Django, configured from the environment.

A rig runs ``celery -A runners.celery_app worker -Q rig.<name> --pool=solo -c 1``
(one benchmark at a time: two jobs sharing a GPU would measure each other).
Its environment (RIGBOARD_BROKER_URL, RIGBOARD_RIG, …) is read by runners.env.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup

from runners.env import RigEnv, RigEnvError

__all__ = ["RigEnv", "RigEnvError", "app", "make_app", "queue_name"]


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
        include=["runners.tasks", "runners.builds.nightly", "runners.builds.ab_task"],
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

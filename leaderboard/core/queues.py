"""Sending a job to a rig's own Celery queue (``rig.<name>``), by task name.

The rig's worker registers the task (runners/tasks.py, runners/builds/nightly.py);
the service never imports it and only names it."""

from __future__ import annotations

import warnings
from datetime import datetime
from typing import Any

from celery.exceptions import AlwaysEagerIgnored

from leaderboard.celery import app as celery_app

# A broker that blinks is tried again within about 4 s; one that stays down fails the send.
RETRY_POLICY = {"max_retries": 3, "interval_start": 0.5, "interval_step": 1, "interval_max": 2}


def rig_task_send(
    *,
    task_name: str,
    spec: dict[str, Any],
    queue: str,
    task_id: str,
    time_limit: int | None,
    expires: datetime | None = None,
) -> None:
    """Send ``task_name(spec)`` to ``queue`` under ``task_id``. Raise whatever
    the broker raised if it could not be reached (the caller records why).

    Celery gets only the hard ``time_limit`` (None: none). Its soft limit is
    always None, not omitted: Celery would otherwise take the default of a task
    of that name registered in this process (CELERY_TASK_SOFT_TIME_LIMIT), and
    in a prefork pool a soft limit raises wherever the task is when it fires:
    mid-build, in the stop of llama-server, in the POST of the run or the spool
    write. The rig enforces its own soft limit around the measuring only. A
    worker that receives the message after ``expires`` drops it unrun."""
    with warnings.catch_warnings():
        # Rig jobs always travel through the broker; eager mode (no broker, the
        # embedded default) concerns only the service's own tasks.
        warnings.simplefilter("ignore", AlwaysEagerIgnored)
        celery_app.send_task(
            task_name,
            args=[spec],
            queue=queue,
            task_id=task_id,
            time_limit=time_limit,
            soft_time_limit=None,
            expires=expires,
            retry=True,
            retry_policy=RETRY_POLICY,
            # The rig reports over the API and nothing reads a rig task's Celery
            # result: without this, sending subscribes to the result first, and
            # with Redis down that alone retries for about 20 s.
            ignore_result=True,
        )

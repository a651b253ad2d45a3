"""Whether a queued job's message is still in the broker.

A Redis broker restarted without persistence forgets every queued message: the
job would wait for its whole queue TTL (24 h by default) and then expire as if
no worker had come. The sweeper asks here and sends the job again instead.
Only the Redis transport can be asked; for another broker the answer is None
(cannot tell) and the job waits as before."""

from __future__ import annotations

import logging

import redis

from leaderboard.celery import app as celery_app

logger = logging.getLogger(__name__)

# kombu's Redis transport: a queue's messages of priority p > 0 are in
# "<queue>\x06\x16<p>"; a message a worker holds unacknowledged is in "unacked".
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)
_UNACKED = "unacked"


def job_message_in_broker(*, queue: str, task_id: str) -> bool | None:
    """Return True when the message ``task_id`` waits in ``queue`` or is held
    by a worker, False when the broker has it nowhere, None when the broker
    cannot be asked (not Redis, unreachable)."""
    url = str(celery_app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    needle = task_id.encode()
    try:
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        try:
            for step in _PRIORITY_STEPS:
                key = queue if step == 0 else f"{queue}{_PRIORITY_SEP}{step}"
                if any(needle in message for message in client.lrange(key, 0, -1)):
                    return True
            return any(needle in message for message in client.hvals(_UNACKED))
        finally:
            client.close()
    except redis.RedisError as exc:
        logger.warning("could not look for task %s in the broker: %s", task_id, exc)
        return None

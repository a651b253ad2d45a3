"""Closing runs whose runner went silent.

A runner keeps the run it has open on the service alive: it appends each
repetition and sweep point, and in between sends an empty append every minute
(runners/delivery/client.py, ``HEARTBEAT_S``), so ``Run.updated_at`` is never much older
than a minute while the runner lives. A run still open past
RIGBOARD_RUN_SILENCE_S since then lost its runner (killed, its machine off):
it is closed as aborted with the samples and sweep points it had. A runner that
was only cut off from the service (its heartbeats lost) and sends more later
reopens the run (``run_append``): nothing it measured is refused."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Run, RunStatus
from leaderboard.results.services.append import CLOSED_FOR_SILENCE, run_append


def runs_close_silent(*, now: datetime | None = None, silence: timedelta | None = None) -> list[Run]:
    """Close as aborted every open run not heard from for ``silence`` (default
    RIGBOARD_RUN_SILENCE_S) and return them. A run its runner closed meanwhile
    keeps the runner's account."""
    now = now or timezone.now()
    silence = silence if silence is not None else timedelta(seconds=settings.RIGBOARD_RUN_SILENCE_S)
    closed = []
    for run in Run.objects.filter(status=RunStatus.RUNNING, updated_at__lt=now - silence):
        heard = timezone.localtime(run.updated_at).strftime("%Y-%m-%d %H:%M:%S %Z")
        reason = (
            f"no word from the runner for over {int(silence.total_seconds())} s (last at {heard}): "
            "the runner was lost (killed, or its machine went off); closed with the samples it had sent"
        )
        with contextlib.suppress(ApplicationError):  # closed by the runner meanwhile
            closed.append(
                run_append(
                    run=run,
                    status=RunStatus.ABORTED,
                    failure_reason=reason,
                    finished_at=now,
                    extra={CLOSED_FOR_SILENCE: now.isoformat()},
                )
            )
    return closed

"""Replays: a window of consecutive llama.cpp releases replayed on one
subscription's rig through the nightly chain (services/replay.py, issue 35).
Imported by models.py, so Django registers them with the app."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class ReplayStepState(models.TextChoices):
    """Where one release of a replay stands (services/replay.py moves it; _ALLOWED there)."""

    PENDING = "pending", "Not started"
    QUEUED = "queued", "Built and benchmarked on the rig, judged by the service"
    DONE = "done", "Settled: judged, confirmed and bisected as the chain decided"


class Replay(models.Model):
    """A window of consecutive releases replayed on one subscription's rig,
    oldest first, through the nightly chain (services/replay.py): the rig's
    timeline of them. Its state is its steps', so a replay interrupted by a
    kill or a reboot goes on from the first step not done."""

    subscription = models.ForeignKey("regressions.Subscription", on_delete=models.CASCADE, related_name="replays")
    first_release = models.PositiveIntegerField()
    last_release = models.PositiveIntegerField()
    label = models.CharField(
        max_length=300, blank=True, help_text="What the recording was: the date, the machine, its load."
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["subscription", "first_release", "last_release"], name="uniq_replay")
        ]

    def __str__(self) -> str:
        return f"replay b{self.first_release}..b{self.last_release} on {self.subscription.rig}"


class ReplayStep(models.Model):
    """One release of a replay: its build (made once, whichever replay or
    nightly asked first), when it was queued and settled, and the load of
    the machine driving the replay meanwhile (min and max of the 1-minute
    load average, sampled while waiting: the rig's own when the replay runs on it)."""

    replay = models.ForeignKey(Replay, on_delete=models.CASCADE, related_name="steps")
    release = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=ReplayStepState.choices, default=ReplayStepState.PENDING)
    build = models.ForeignKey(
        "regressions.BuildRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    queued_at = models.DateTimeField(null=True, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    load_1m_min = models.FloatField(null=True, blank=True)
    load_1m_max = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["replay", "release"]
        constraints = [models.UniqueConstraint(fields=["replay", "release"], name="uniq_replay_step")]

    def __str__(self) -> str:
        return f"b{self.release} [{self.state}]"

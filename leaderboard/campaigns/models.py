"""A campaign (what to search on which rig) and its trials (each a measured run, or a failure)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.results.models import Rig, RigScopedQuerySet, Run
from runners.campaign import states


class CampaignStatus(models.TextChoices):
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


class CampaignOrigin(models.TextChoices):
    """Who runs the trials: the values the rig's words are (runners/campaign/states.py)."""

    TERMINAL = states.CampaignOrigin.TERMINAL.value, "Terminal (the rig's CLI)"
    SERVICE = states.CampaignOrigin.SERVICE.value, "Service (each trial a job on the rig's queue)"


class Campaign(models.Model):
    """``spec`` is the checked runners.campaign.spec.CampaignSpec as a dict (space,
    strategy, objective, constraints, budget, repetitions, seed); ``base_config``
    the rig config whose [server] every trial starts from."""

    rig = models.ForeignKey(Rig, on_delete=models.PROTECT, related_name="campaigns")
    name = models.CharField(max_length=200)
    spec = models.JSONField()
    base_config = models.JSONField(default=dict, blank=True)
    origin = models.CharField(max_length=16, choices=CampaignOrigin.choices, default=CampaignOrigin.TERMINAL)
    status = models.CharField(max_length=16, choices=CampaignStatus.choices, default=CampaignStatus.RUNNING)
    status_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Seen exactly when its rig is: Campaign.objects.public() / .visible_to(user).
    objects = RigScopedQuerySet["Campaign"].as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} on {self.rig_id}"

    @property
    def budget_trials(self) -> int | None:
        value = (self.spec.get("budget") or {}).get("trials")
        return int(value) if value else None


class TrialState(models.TextChoices):
    """A trial's state: the rig's (runners/campaign/states.py), and "running" while its job is in hand."""

    RUNNING = "running", "Running (a job on the rig's queue)"
    COMPLETE = states.TrialState.COMPLETE.value, "Complete"
    FAILED = states.TrialState.FAILED.value, "Failed"
    INFEASIBLE = states.TrialState.INFEASIBLE.value, "Breaks a constraint"
    ABORTED = states.TrialState.ABORTED.value, "Aborted"


class TrialRole(models.TextChoices):
    """A trial's role: the rig's (runners/campaign/states.TrialRole)."""

    SEARCH = states.TrialRole.SEARCH.value, "Search"
    CONFIRMATION = states.TrialRole.CONFIRMATION.value, "Confirmation"


class Trial(models.Model):
    """One point of the space, measured. ``run`` is the measured run (None when the
    server never started, or until a spooled run arrives: ``run_uuid`` finds it)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="trials")
    number = models.PositiveIntegerField()
    params = models.JSONField()
    state = models.CharField(max_length=16, choices=TrialState.choices)
    role = models.CharField(max_length=16, choices=TrialRole.choices, default=TrialRole.SEARCH)
    value = models.FloatField(null=True, blank=True, help_text="The campaign's objective (mean over repetitions).")
    metrics = models.JSONField(default=dict, blank=True)
    samples = models.JSONField(default=list, blank=True, help_text="The objective per repetition.")
    repetitions = models.JSONField(
        default=dict,
        blank=True,
        help_text="Every objective's (and peak VRAM's) value per repetition, by metric (runners.campaign.figures).",
    )
    run_uuid = models.UUIDField(null=True, blank=True)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="campaign_trials")
    job = models.OneToOneField(
        BenchmarkJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="campaign_trial"
    )
    failure_kind = models.CharField(max_length=32, blank=True)
    failure_reason = models.TextField(blank=True)
    log_tail = models.TextField(blank=True)
    pruned = models.BooleanField(default=False)
    duration_s = models.FloatField(null=True, blank=True)
    measured_s = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["campaign", "number"]
        constraints = [models.UniqueConstraint(fields=["campaign", "number"], name="campaign_trial_number_unique")]

    def __str__(self) -> str:
        return f"trial {self.number} of campaign {self.campaign_id}"

    @property
    def overhead_s(self) -> float | None:
        """Return the seconds the trial took beyond its requests (start, load, delivery)."""
        if self.duration_s is None or self.measured_s is None:
            return None
        return self.duration_s - self.measured_s

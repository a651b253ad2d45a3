"""A/A checks: a rig measuring its own false alarms (issue 36).

Every so often (``Subscription.aa_every_days``) the service sends an idle
subscribed rig an A/B confirmation with the *same* build as A and B
(services/aa_checks.py). Any change it calls is a false alarm; counted per rig
(selectors_aa.py), with its one-sided 95% bound, they say whether that rig's
verdicts can be trusted at the level the rule claims. Imported by models.py,
so Django registers it with the app."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from leaderboard.regressions.states import AaStatus
from runners.ab_design import AbDesign, ContentionCall


class AaCheck(models.Model):
    """One A/A confirmation on a rig: the build, the design the rig could run,
    the blocks it reported (raw, in order, with their contention) and the rule's
    answer (regressions/ab_blocks.py or ab.py)."""

    subscription = models.ForeignKey("regressions.Subscription", on_delete=models.CASCADE, related_name="aa_checks")
    reference_config = models.ForeignKey(
        "regressions.ReferenceConfig", on_delete=models.CASCADE, related_name="aa_checks"
    )
    commit = models.CharField(max_length=40, help_text="The build run as both A and B.")
    status = models.CharField(max_length=16, choices=AaStatus.choices, default=AaStatus.QUEUED, db_index=True)
    design = models.CharField(max_length=16, choices=[(d.value, d.value) for d in AbDesign], blank=True)
    decision = models.CharField(max_length=16, blank=True, help_text="The rule's answer (ab.Decision).")
    n_blocks = models.PositiveSmallIntegerField(default=0)
    effect_pct = models.FloatField(null=True, blank=True)
    ci_low_pct = models.FloatField(null=True, blank=True)
    ci_high_pct = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    contention = models.CharField(
        max_length=16, choices=[(c.value, c.value) for c in ContentionCall], blank=True,
        help_text="The worst contention call of the blocks judged.",
    )  # fmt: skip
    blocks = models.JSONField(default=list, blank=True, help_text="Each block as the rig reported it.")
    ab_block_limit = models.PositiveSmallIntegerField(
        default=0, help_text="The block limit fixed when the check began (0: the subscription's ab_max_pairs)."
    )
    # The power check (services/aa_checks.py): the same judged blocks with a known slowdown
    # planted in B's rates, judged by the same rule: caught, missed, or undecided in the blocks measured.
    power_planted_pct = models.FloatField(null=True, blank=True, help_text="The slowdown planted in B's rates, %.")
    power_decision = models.CharField(max_length=16, blank=True, help_text="The rule's answer on the planted blocks.")
    reason = models.CharField(max_length=300, blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"A/A {self.commit[:10]} on {self.subscription_id}: {self.status} {self.decision}"

    @property
    def power_caught(self) -> bool:
        """True if the planted slowdown was called a regression."""
        return self.power_decision == "regression"

    @property
    def called_a_change(self) -> bool:
        """True if the rule called this A/A a regression or an improvement (a false alarm)."""
        return self.status == AaStatus.SETTLED and self.decision in ("regression", "improvement")

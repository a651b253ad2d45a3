"""Rigs, their GPUs, and the API tokens rigs submit runs with."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


def gpu_label(gpus: Iterable[tuple[str, int]]) -> str:
    """Return e.g. ``6× RTX 3090`` or ``RTX 3090 Ti + RTX 3090`` from (model, count)
    groups in the rig's order; '' for none. The one GPU label of every page and the API."""
    return " + ".join(f"{count}× {model}" if count > 1 else model for model, count in gpus)


class ReviewStatus(models.TextChoices):
    PENDING = "pending", "pending review"
    APPROVED = "approved", "approved"
    REJECTED = "rejected", "rejected"


def viewer_rigs_q(user: AbstractBaseUser | AnonymousUser | None = None, *, token_rig_id: int | None = None) -> Q:
    """Return the filter on Rig that keeps what ``user`` (and the holder of rig
    ``token_rig_id``'s token) may see: approved rigs for everyone, their own rigs
    for an owner and a token, everything for staff (an empty Q).

    The one definition of "the public may see this" (issue 21): every public
    read filters through it, by way of the ``public()`` and ``visible_to()``
    methods of RigQuerySet and RigScopedQuerySet."""
    if user is not None and user.is_authenticated and getattr(user, "is_staff", False):
        return Q()
    visible = Q(review_status=ReviewStatus.APPROVED)
    if user is not None and user.is_authenticated:
        visible |= Q(owner=user)
    if token_rig_id is not None:
        visible |= Q(pk=token_rig_id)
    return visible


_M = TypeVar("_M", bound=models.Model)


class RigQuerySet(models.QuerySet["Rig"]):
    def public(self) -> RigQuerySet:
        """Return the rigs anyone may see: approved ones (staff-made rigs are approved when created)."""
        return self.filter(viewer_rigs_q())

    def hidden(self) -> RigQuerySet:
        """Return the rigs awaiting review or rejected."""
        return self.exclude(viewer_rigs_q())

    def visible_to(self, user: Any, *, token_rig_id: int | None = None) -> RigQuerySet:
        """Return the rigs ``user`` may open: public ones, their own, all for staff."""
        return self.filter(viewer_rigs_q(user, token_rig_id=token_rig_id))


class RigScopedQuerySet(models.QuerySet[_M]):
    """A queryset of rows that belong to a rig through ``rig_path`` (``rig``,
    ``campaign__rig``…): they are seen exactly when their rig is.

    ``public()`` excludes the few hidden rigs (NOT IN over a small subquery, so a
    ranking over the runs table gains no join); ``visible_to()`` keeps the rows of
    the rigs ``Rig.objects.visible_to`` keeps."""

    rig_path = "rig"

    def public(self) -> Self:
        return self.exclude(**{f"{self.rig_path}__in": Rig.objects.hidden().values("pk")})

    def visible_to(self, user: Any, *, token_rig_id: int | None = None) -> Self:
        q = viewer_rigs_q(user, token_rig_id=token_rig_id)
        if not q:
            return self.all()
        return self.filter(**{f"{self.rig_path}__in": Rig.objects.filter(q).values("pk")})


class Rig(models.Model):
    """A machine that runs benchmarks (or, for reported results, the one an
    article describes).

    ``review_status`` says whether the public may see it and everything hanging
    off it: a community account's rig is pending until staff approve it; a rig
    staff make (admin, create_rig, importers) is approved when created."""

    name = models.CharField(max_length=200, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="rigs"
    )
    owner_name = models.CharField(max_length=200, blank=True, help_text="Shown publicly; free text.")
    cpu = models.CharField(max_length=200, blank=True)
    cpu_cores = models.PositiveIntegerField(null=True, blank=True)
    ram_gb = models.FloatField(null=True, blank=True)
    os = models.CharField(max_length=200, blank=True)
    kernel = models.CharField(max_length=200, blank=True)
    driver_version = models.CharField(max_length=100, blank=True)
    cuda_version = models.CharField(max_length=100, blank=True)
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    review_status = models.CharField(max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.APPROVED)
    review_reason = models.TextField(blank=True, help_text="Shown to the owner (why it was rejected).")

    objects = RigQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue_name(self) -> str:
        """Return the Celery queue this rig's worker consumes."""
        return f"rig.{self.name}"

    @property
    def is_public(self) -> bool:
        return self.review_status == ReviewStatus.APPROVED

    def gpu_summary(self) -> str:
        """Return e.g. ``6× RTX 3090`` or ``RTX 3090 Ti + RTX 3090``; '' without GPUs.

        Uses the prefetched ``gpus`` when the caller prefetched them."""
        return gpu_label((gpu.model, gpu.count) for gpu in self.gpus.all())


class RigGpu(models.Model):
    """A group of identical GPUs in a rig (``count`` of them)."""

    rig = models.ForeignKey(Rig, on_delete=models.CASCADE, related_name="gpus")
    model = models.CharField(max_length=200)
    vram_gb = models.FloatField(null=True, blank=True)
    count = models.PositiveIntegerField(default=1)
    power_limit_w = models.FloatField(null=True, blank=True)
    position = models.PositiveIntegerField(default=0)

    objects = RigScopedQuerySet["RigGpu"].as_manager()

    class Meta:
        ordering = ["rig", "position", "id"]

    def __str__(self) -> str:
        return f"{self.count}× {self.model}"


def hash_token(raw_token: str) -> str:
    """Return the hex sha256 of a raw API token (what is stored)."""
    return hashlib.sha256(raw_token.encode()).hexdigest()


class RigTokenQuerySet(models.QuerySet["RigToken"]):
    def active(self) -> RigTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class RigToken(models.Model):
    """An API token for one rig. Only its sha256 is stored; the raw token is
    shown once, when it is created."""

    rig = models.ForeignKey(Rig, on_delete=models.CASCADE, related_name="tokens")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="First characters, to tell tokens apart.")
    label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = RigTokenQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.rig})"

    @classmethod
    def issue(cls, *, rig: Rig, label: str = "") -> tuple[RigToken, str]:
        """Create a token for ``rig``; return it and the raw token (never stored)."""
        raw = "rb_" + secrets.token_urlsafe(32)
        token = cls.objects.create(rig=rig, key_hash=hash_token(raw), prefix=raw[:10], label=label)
        return token, raw

"""Rigs, their GPUs, and the API tokens rigs submit runs with."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.conf import settings
from django.db import models
from django.utils import timezone


def gpu_label(gpus: Iterable[tuple[str, int]]) -> str:
    """Return e.g. ``6× RTX 3090`` or ``RTX 3090 Ti + RTX 3090`` from (model, count)
    groups in the rig's order; '' for none. The one GPU label of every page and the API."""
    return " + ".join(f"{count}× {model}" if count > 1 else model for model, count in gpus)


class Rig(models.Model):
    """A machine that runs benchmarks (or, for reported results, the one an
    article describes)."""

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

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue_name(self) -> str:
        """Return the Celery queue this rig's worker consumes."""
        return f"rig.{self.name}"

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

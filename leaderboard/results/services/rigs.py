"""Rigs and their API tokens: registering a rig, issuing and revoking tokens.

Used by the admin and by ``manage.py create_rig``; a raw token is returned to
the caller exactly once and only its sha256 is stored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.results.hardware.stored import BATCH_RUNS, store_bound_shares
from leaderboard.results.models import Rig, RigGpu, RigToken, Run, RunBoundShare, RunStatus


@dataclass(frozen=True)
class GpuSpec:
    """One group of identical GPUs: ``count`` × ``model`` with ``vram_gb`` each."""

    model: str
    vram_gb: float | None = None
    count: int = 1
    power_limit_w: float | None = None


def gpu_spec_parse(text: str) -> GpuSpec:
    """Return the GpuSpec in ``MODEL[:VRAM_GB[:COUNT[:POWER_LIMIT_W]]]``, e.g. ``RTX 3090:24:2:350``.

    Raise ValueError naming the part that is wrong."""
    parts = [p.strip() for p in text.split(":")]
    if not parts[0]:
        raise ValueError(f"GPU {text!r}: the model name is empty")
    if len(parts) > 4:
        raise ValueError(f"GPU {text!r}: expected MODEL[:VRAM_GB[:COUNT[:POWER_LIMIT_W]]]")
    try:
        vram = float(parts[1]) if len(parts) > 1 and parts[1] else None
        count = int(parts[2]) if len(parts) > 2 and parts[2] else 1
        power = float(parts[3]) if len(parts) > 3 and parts[3] else None
    except ValueError as exc:
        raise ValueError(f"GPU {text!r}: VRAM and power must be numbers, count an integer") from exc
    if count < 1 or (vram is not None and vram <= 0) or (power is not None and power <= 0):
        raise ValueError(f"GPU {text!r}: VRAM, count and power must be positive")
    return GpuSpec(model=parts[0], vram_gb=vram, count=count, power_limit_w=power)


# The vendor words a detected GPU name carries that the site's GPU names leave out
# ("NVIDIA GeForce RTX 3090" is the site's "RTX 3090").
_VENDOR_WORDS = {"nvidia", "geforce", "amd", "radeon"}


def gpu_specs_from_fingerprint(fingerprint: Mapping[str, Any] | None) -> list[GpuSpec]:
    """Return the GPU groups a run's fingerprint detected (``gpus``: name, vram_mib,
    power_limit_w per card), identical cards grouped in order: the name without vendor
    words, VRAM in GiB (rounded), the power limit in watts. [] when it lists none."""
    groups: dict[tuple[str, float | None, float | None], int] = {}
    for gpu in (fingerprint or {}).get("gpus") or []:
        if not isinstance(gpu, Mapping) or not str(gpu.get("name") or "").strip():
            continue
        words = [w for w in str(gpu["name"]).split() if w.lower() not in _VENDOR_WORDS]
        mib, limit = gpu.get("vram_mib"), gpu.get("power_limit_w")
        key = (
            " ".join(words) or str(gpu["name"]).strip(),
            round(float(mib) / 1024) if isinstance(mib, int | float) and mib > 0 else None,
            float(limit) if isinstance(limit, int | float) and limit > 0 else None,
        )
        groups[key] = groups.get(key, 0) + 1
    return [GpuSpec(model=m, vram_gb=v, count=n, power_limit_w=w) for (m, v, w), n in groups.items()]


@transaction.atomic
def rig_create(*, name: str, gpus: Sequence[GpuSpec] = (), **fields: Any) -> Rig:
    """Create a rig with its GPU groups; ``fields`` are other Rig fields (cpu, os…).

    Raise ApplicationError (409) if a rig with that name exists."""
    if Rig.objects.filter(name=name).exists():
        raise ApplicationError(f"a rig named {name!r} already exists", field="name", status_code=409)
    rig = Rig.objects.create(name=name, **fields)
    RigGpu.objects.bulk_create(
        RigGpu(rig=rig, model=g.model, vram_gb=g.vram_gb, count=g.count, power_limit_w=g.power_limit_w, position=i)
        for i, g in enumerate(gpus)
    )
    return rig


# The Rig fields a rig may report about itself (``rig_hardware_update``), besides its GPUs.
HARDWARE_FIELDS = ("cpu", "cpu_cores", "ram_gb", "os", "driver_version", "cuda_version")


@transaction.atomic
def rig_hardware_update(*, rig: Rig, gpus: Sequence[GpuSpec] | None, **fields: Any) -> Rig:
    """Replace ``rig``'s GPU groups with ``gpus`` (None keeps them) and set the HARDWARE_FIELDS
    given in ``fields`` (what the rig detected about itself); return the rig. Name, owner and
    notes are not the rig's to change. Raise ApplicationError naming an unknown field."""
    for name in fields:
        if name not in HARDWARE_FIELDS:
            raise ApplicationError(f"{name} is not a hardware field", field=name)
    for name, value in fields.items():
        setattr(rig, name, value)
    if fields:
        rig.save(update_fields=list(fields))
    if gpus is None:
        return rig
    RigGpu.objects.filter(rig=rig).delete()
    RigGpu.objects.bulk_create(
        RigGpu(rig=rig, model=g.model, vram_gb=g.vram_gb, count=g.count, power_limit_w=g.power_limit_w, position=i)
        for i, g in enumerate(gpus)
    )
    rig_bound_shares_renew(rig)
    return rig


def rig_bound_shares_renew(rig: Rig) -> None:
    """Recompute the stored bound shares of ``rig``'s runs, whose GPUs changed: now for a
    rig of up to BATCH_RUNS ranked runs; past that the shares are dropped (its runs sort
    last by the bound) and the nightly refresh or ``manage.py refresh_bounds`` stores them."""
    ranked = Run.objects.filter(rig=rig, status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
    ids = list(ranked.values_list("pk", flat=True)[: BATCH_RUNS + 1])
    if len(ids) <= BATCH_RUNS:
        store_bound_shares(ids)
    else:
        RunBoundShare.objects.filter(run__rig=rig).delete()


def rig_token_issue(*, rig: Rig, label: str = "") -> tuple[RigToken, str]:
    """Issue a new API token for ``rig``; return the stored token and the raw
    token, which is never stored and must be shown to the admin now."""
    return RigToken.issue(rig=rig, label=label)


def rig_token_revoke(*, token: RigToken) -> RigToken:
    """Revoke ``token`` (idempotent: a revoked token keeps its first revocation time)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token

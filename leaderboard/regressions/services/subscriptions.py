"""Subscribing a rig to a branch from the site: the subscription, and its
reference configurations taken from the rig's own runs.

A reference configuration is the runner config the nightly job runs on each
new build (``ReferenceConfig.spec``: runners/config.py's shape without
``service`` and ``run_uuid``; the rig sets ``server.binary`` to the build).
Made from a run, it is that run's llama-server configuration (the model path
read from the command line it ran), workload and model, checked with the
runner's own parser so a spec the rig would refuse is refused here."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import ConfirmMode, Follows, ReferenceConfig, ReleaseSource, Subscription
from leaderboard.results.models import Rig, Run
from runners.config import ConfigError, RigConfig

# llama-server's flags for the model file and the speculative type, as a command line may spell them.
_MODEL_FLAGS = ("--model", "-m")
_SPEC_TYPE_FLAGS = ("--spec-type",)
_NAME_MAX = ReferenceConfig._meta.get_field("name").max_length or 200


def _flag_value(argv: Sequence[str], flags: Sequence[str]) -> str:
    """Return the value of the first of ``flags`` in ``argv`` (``--flag v`` or ``--flag=v``), '' if absent."""
    for i, word in enumerate(argv):
        for flag in flags:
            if word == flag and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(flag + "="):
                return word.split("=", 1)[1]
    return ""


def reference_spec_from_run(*, run: Run) -> dict[str, Any]:
    """Return the reference configuration spec that re-runs ``run`` on a new
    build. Raise ApplicationError (field ``runs``) when the run cannot be
    re-run: no llama-server command line with a model path on record (an
    imported or llama-bench result), or a configuration the runner refuses."""
    conf = run.configuration
    try:
        argv = shlex.split(conf.command_line)
    except ValueError:
        argv = []
    model_path = _flag_value(argv, _MODEL_FLAGS)
    if not model_path:
        raise ApplicationError(
            f"run {run.pk} has no llama-server command line with a model path on record; pick a run the runner made",
            field="runs",
        )
    server: dict[str, Any] = {"model": model_path}
    for name in ("ctx_size", "n_gpu_layers", "threads", "batch_size", "ubatch_size", "parallel", "draft_n_max"):
        if getattr(conf, name) is not None:
            server[name] = getattr(conf, name)
    for name in ("flash_attn", "cache_type_k", "cache_type_v", "tensor_split", "draft_model"):
        if getattr(conf, name):
            server[name] = getattr(conf, name)
    if conf.tensor_overrides.strip():
        server["tensor_overrides"] = [line.strip() for line in conf.tensor_overrides.splitlines() if line.strip()]
    spec_type = _flag_value(argv, _SPEC_TYPE_FLAGS)
    if spec_type:
        server["spec_type"] = spec_type
    if conf.extra_args:
        server["extra_args"] = [str(a) for a in conf.extra_args]
    workload: dict[str, Any] = {"name": run.workload.name}
    for name in ("max_tokens", "repetitions", "warmup"):
        if getattr(run.workload, name) is not None:
            workload[name] = getattr(run.workload, name)
    for name in ("temperature", "top_k", "top_p", "min_p", "thinking"):
        if getattr(conf, name) is not None:
            workload[name] = getattr(conf, name)
    spec = {
        "server": server,
        "workload": workload,
        "model": {"name": run.model_file.name, "quantization": run.model_file.quantization},
    }
    try:
        RigConfig.from_mapping(spec)
    except ConfigError as exc:
        raise ApplicationError(f"run {run.pk}: {exc.field}: {exc.reason}", field="runs") from exc
    return spec


def reference_name_for(run: Run) -> str:
    """Return a reference configuration's name for ``run``: model, quantization, workload and run id."""
    quant = f" {run.model_file.quantization}" if run.model_file.quantization else ""
    name = f"{run.model_file.name}{quant} · {run.workload.name} (from run {run.pk})"
    return name if len(name) <= _NAME_MAX else name[: _NAME_MAX - 1] + "…"


def reference_configs_add(*, subscription: Subscription, runs: Sequence[Run]) -> list[ReferenceConfig]:
    """Add a reference configuration per run (each a run of the subscription's
    rig); a run already chosen is not added twice. Return the new ones; raise
    ApplicationError naming ``runs`` for a run of another rig or one that cannot be re-run."""
    added = []
    with transaction.atomic():
        for run in runs:
            if run.rig_id != subscription.rig_id:
                raise ApplicationError(f"run {run.pk} is not a run of {subscription.rig.name}", field="runs")
            spec = reference_spec_from_run(run=run)
            ref, created = ReferenceConfig.objects.get_or_create(
                subscription=subscription, name=reference_name_for(run), defaults={"spec": spec}
            )
            if created:
                added.append(ref)
    return added


def subscription_create(
    *,
    rig: Rig,
    repo_url: str,
    branch: str,
    build_flags: str,
    runs: Sequence[Run] = (),
    aa_every_days: int = 7,
    follows: str = Follows.COMMITS,
    release_source: str = ReleaseSource.GIT,
    confirm_mode: str = ConfirmMode.BLOCKS,
    screen_every_step: bool = False,
) -> Subscription:
    """Subscribe ``rig`` to ``repo_url`` @ ``branch`` (every new head, or its
    releases from ``release_source``) with ``build_flags`` and a reference
    configuration per run; changes confirmed by ``confirm_mode`` (every step judged by
    A/B blocks with ``screen_every_step``). The caller has checked who may point the
    rig where (the form: owners pick from RIGBOARD_REGRESSION_REPOS). Raise
    ApplicationError (409, field ``branch``) when the rig already follows it with those flags."""
    try:
        with transaction.atomic():
            sub = Subscription.objects.create(
                rig=rig, repo_url=repo_url, branch=branch, build_flags=build_flags, aa_every_days=aa_every_days,
                follows=follows, release_source=release_source, confirm_mode=confirm_mode,
                screen_every_step=screen_every_step,
            )  # fmt: skip
            reference_configs_add(subscription=sub, runs=runs)
    except IntegrityError as exc:
        raise ApplicationError(
            f"{rig.name} already follows {repo_url} @ {branch} with these build flags", field="branch", status_code=409
        ) from exc
    return sub


def subscription_aa_frequency_set(
    *, subscription: Subscription, aa_every_days: int, resolve_pct: float | None = None
) -> Subscription:
    """Set how often the subscription's rig runs an A/A check (0: never) and,
    given, the slowdown its confirmations are sized to catch (0: the fixed
    limit); the caller has checked who may (the rig's owner or staff)."""
    subscription.aa_every_days = aa_every_days
    if resolve_pct is not None:
        subscription.resolve_pct = resolve_pct
    subscription.save(update_fields=["aa_every_days", "resolve_pct"])
    return subscription

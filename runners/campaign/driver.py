"""``python -m runners campaign --config rig.toml --campaign campaign.toml``.

Opens the campaign on the service (``POST /api/campaigns/`` with the rig's
token), measures trials with the rig's pipeline (each posted as a run, as
``python -m runners run`` posts one), and records each trial as it finishes
(``POST /api/campaigns/<id>/trials/``). Without a service URL it measures and
prints only. Ctrl-C stops the campaign: the trial in hand is posted as aborted
with its samples (the pipeline does that) and the campaign is closed cancelled.

``--output FILE`` also writes what was (or would have been) posted, as one JSON
document: the campaign as opened, its trial records and the run document of
each trial (``run --output``'s shape), with the campaign's start, end and
status (``CAMPAIGN_FORMAT``). ``manage.py import_campaign`` stores such a file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests

from runners.campaign.quality import perplexity_for
from runners.campaign.search import Prune, TrialResult, run_search
from runners.campaign.spec import CampaignSpec
from runners.campaign.trial import measure_trial
from runners.config import ConfigError, RigConfig, read_spec

CAMPAIGN_FORMAT = "rigboard-campaign/1"


def campaign_body(spec: CampaignSpec, base: Mapping[str, Any], rig: str) -> dict[str, Any]:
    """Return what ``POST /api/campaigns/`` takes to open ``spec`` on ``rig``."""
    return {**spec.as_dict(), "rig": rig, "base_config": dict(base), "origin": "terminal"}


class CampaignService:
    """The service's campaign endpoints, with the rig's token."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})

    def open(self, spec: CampaignSpec, base: Mapping[str, Any], rig: str) -> dict[str, Any]:
        """Create the campaign; return the service's answer ({id, ...}). Raise ConfigError on a 400."""
        body = campaign_body(spec, base, rig)
        resp = self.session.post(f"{self.url}/api/campaigns/", json=body, timeout=self.timeout_s)
        if resp.status_code == 400:
            errors = resp.json().get("errors", {})
            field = next(iter(errors), "campaign")
            raise ConfigError(f"campaign.{field}", "; ".join(map(str, errors.get(field, []))) or resp.text)
        resp.raise_for_status()
        return dict(resp.json())

    def trial(self, campaign_id: int, trial: TrialResult) -> None:
        resp = self.session.post(
            f"{self.url}/api/campaigns/{campaign_id}/trials/", json=trial.payload(), timeout=self.timeout_s
        )
        resp.raise_for_status()

    def close(self, campaign_id: int, status: str, reason: str = "") -> None:
        resp = self.session.post(
            f"{self.url}/api/campaigns/{campaign_id}/finish/",
            json={"status": status, "reason": reason},
            timeout=self.timeout_s,
        )
        resp.raise_for_status()


def model_quality(models: list[str], binary: str, cache_dir: str) -> dict[str, dict[str, Any]]:
    """Return each model file's perplexity figures with ``perplexity_margin_pct``, its
    distance above the best (lowest) perplexity among the campaign's model files."""
    figures = {model: perplexity_for(model, binary=binary, cache_dir=cache_dir) for model in models}
    known = [f["perplexity"] for f in figures.values() if f.get("perplexity")]
    best = min(known) if known else None
    for entry in figures.values():
        if best and entry.get("perplexity"):
            entry["perplexity_margin_pct"] = (entry["perplexity"] / best - 1) * 100
    return figures


def run_campaign(
    rig_spec: dict[str, Any], campaign_spec: Mapping[str, Any], *, output_path: str = ""
) -> tuple[int | None, list[TrialResult]]:
    """Run the campaign from the terminal; return (the service's campaign id or None, the trials).
    With ``output_path``, the campaign is also written there (module doc), even when it stops early."""
    spec = CampaignSpec.from_mapping(campaign_spec)
    rig = RigConfig.from_mapping(rig_spec)  # a bad rig config fails before anything starts
    if rig.server is None:
        raise ConfigError("server", "a campaign launches llama-server itself: give [server]")
    base = {k: v for k, v in rig_spec.items() if k not in ("service", "run_uuid", "output_path")}
    service = CampaignService(rig.service.url, rig.service.token) if rig.service.url else None
    campaign_id = int(service.open(spec, base, rig.service.rig)["id"]) if service else None

    server = rig.server
    quality = model_quality([str(m) for m in spec.space.get("model", [server.model])], server.binary, rig.cache_dir)

    def measure(number: int, params: dict[str, Any], prune: Prune) -> TrialResult:
        extra = quality.get(str(params.get("model") or server.model), {})
        return measure_trial(rig_spec, spec, number, params, extra_metrics=extra, prune=prune)

    def report(trial: TrialResult) -> None:
        value = f"{trial.value:.2f}" if trial.value is not None else trial.failure_kind
        print(f"trial {trial.number}: {trial.state} {value} {json.dumps(trial.params)}", flush=True)
        if service is not None and campaign_id is not None:
            service.trial(campaign_id, trial)

    status, reason = "finished", ""
    started_at = _now()
    trials: list[TrialResult] = []

    def report_and_keep(trial: TrialResult) -> None:
        trials.append(trial)
        report(trial)

    try:
        run_search(spec, measure, on_trial=report_and_keep)
    except KeyboardInterrupt:
        status, reason = "cancelled", "interrupted on the rig"
    except Exception as exc:
        status, reason = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if output_path:
            recorded = {
                "format": CAMPAIGN_FORMAT,
                "campaign": campaign_body(spec, base, rig.service.rig),
                "status": status,
                "status_reason": reason,
                "started_at": started_at,
                "finished_at": _now(),
                "trials": [t.payload() for t in trials],
                "runs": [t.run for t in trials if t.run is not None],
            }
            _write_json(Path(output_path).expanduser(), recorded)
        if service is not None and campaign_id is not None:
            service.close(campaign_id, status, reason)
    return campaign_id, trials


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    # A temporary name, then a rename: an interrupted write leaves no half file.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser("campaign", help="search the configuration space of llama-server on this rig")
    cmd.add_argument("--config", required=True, help="rig config, TOML or .json (its [server] is the base)")
    cmd.add_argument("--campaign", required=True, help="campaign definition, TOML or .json")
    cmd.add_argument("--no-post", action="store_true", help="measure and print; post nothing")
    cmd.add_argument("--output", default="", help="also write the campaign, its trials and their runs here (JSON)")


def main(args: argparse.Namespace) -> int:
    rig_spec = read_spec(args.config)
    if args.no_post:
        rig_spec.setdefault("service", {})["url"] = ""
    campaign_id, trials = run_campaign(rig_spec, read_spec(args.campaign), output_path=args.output)
    done = [t for t in trials if t.state == "complete" and t.value is not None]
    print(f"\ncampaign {campaign_id or '(not posted)'}: {len(trials)} trials, {len(done)} complete")
    if done:
        best = max(done, key=lambda t: t.value or 0.0)
        print(f"best: {best.value:.2f} with {json.dumps(best.params)}")
    return 0 if trials else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(argparse.Namespace()))

"""Command line: ``rigboard-runner`` (or ``python -m runners``) ``init``, ``doctor``,
``run --config rig.toml``, ``attach --url URL``, ``flush``, ``campaign``.

Exit codes: 0 finished and delivered (or spooled), 1 the run failed, 2 a bad
config, 3 the server could not be started, 4 the service rejected the run,
5 the run could not be written to the spool directory (full, read-only): it
was written to a fallback directory instead (``flush`` delivers it from there;
its path is on stderr) or, when no directory took it, printed as JSON on stdout.
``flush`` exits 0 when it delivered every spooled run of the rig, 1 when it
rejected, quarantined or could not deliver (yet) any of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from runners.campaign import driver as campaign_cli
from runners.config import ConfigError, RigConfig, read_spec
from runners.delivery.client import DeliveryOutcome, ServiceClient
from runners.harness.power_source import open_power_source, unmeasured_text
from runners.harness.progress import ProgressBar
from runners.harness.server import ServerError
from runners.onboard import doctor
from runners.onboard import init as init_cli
from runners.pipeline import JobResult, run_job


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rigboard-runner", description="Rigboard rig-side benchmark runner.")
    sub = parser.add_subparsers(dest="command", required=True)
    init_cli.add_parser(sub)
    doctor.add_parser(sub)
    for name, help_text in (("run", "launch llama-server from the config and benchmark it"),
                            ("attach", "benchmark a server that is already running")):  # fmt: skip
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument(
            "--config",
            default="rig.toml" if name == "run" else None,
            help="rig config, TOML or .json (run: ./rig.toml)",
        )
        cmd.add_argument("--no-post", action="store_true", help="measure and print; post nothing")
        cmd.add_argument("--output", help="also write the run JSON to this file")
        cmd.add_argument("--repetitions", type=int, help="override workload.repetitions")
        cmd.add_argument("--max-tokens", type=int, help="override workload.max_tokens")
        cmd.add_argument("--sweep", action=argparse.BooleanOptionalAction, default=None, help="run the context sweep")
        if name == "attach":
            cmd.add_argument("--url", required=True, help="base URL of the running server")
            cmd.add_argument(
                "--engine",
                default="",
                help="engine if detection guesses wrong (llama.cpp, vllm…); openai: any /v1 server",
            )
            cmd.add_argument("--model", default="", help="model name to request")
            cmd.add_argument("--api-key", default="", help="bearer token of the server, if it wants one")
    campaign_cli.add_parser(sub)
    flush = sub.add_parser("flush", help="re-post runs waiting in the spool directory")
    flush.add_argument("--config", help="rig config with the [service] table")
    flush.add_argument("--url", help="service URL (instead of --config)")
    flush.add_argument("--token", help="rig token (instead of --config)")
    flush.add_argument("--spool-dir", help="spool directory (instead of --config)")
    flush.add_argument("--rig", help="rig name, whose own spool is flushed (instead of --config)")
    return parser


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    spec: dict[str, Any] = read_spec(args.config) if args.config else {}
    workload = spec.setdefault("workload", {})
    if args.repetitions is not None:
        workload["repetitions"] = args.repetitions
    if args.max_tokens is not None:
        workload["max_tokens"] = args.max_tokens
    if args.sweep is not None:
        spec.setdefault("sweep", {})["enabled"] = args.sweep
    if args.no_post:
        spec.setdefault("service", {})["url"] = ""
    if args.output:
        spec["output_path"] = args.output
    if args.command == "attach":
        spec.pop("server", None)
        spec["attach"] = {"url": args.url, "engine": args.engine, "model": args.model, "api_key": args.api_key}
    return spec


def _flush(args: argparse.Namespace) -> int:
    service: dict[str, Any] = dict(read_spec(args.config).get("service", {})) if args.config else {}
    for key, value in (("url", args.url), ("token", args.token), ("spool_dir", args.spool_dir), ("rig", args.rig)):
        if value:
            service[key] = value
    config = RigConfig.from_mapping({"service": service, "attach": {"url": "http://unused"}}).service
    if not config.url:
        raise ConfigError("service.url", "required to flush (give --url or --config)")
    client = ServiceClient(
        config.url, config.token, spool_dir=config.spool_dir, rig=config.rig, timeout_s=config.timeout_s
    )
    try:
        result = client.flush()
    finally:
        client.close()
    _tell_quarantined(result.quarantined)
    print(json.dumps(result.as_dict(), indent=1))
    # Anything quarantined, rejected or still waiting needs a look (or another flush).
    return 0 if result.complete else 1


def _tell_quarantined(quarantined: Sequence[str]) -> None:
    for line in quarantined:
        print(f"spool: quarantined {line}", file=sys.stderr)


def _tell_unsaved(result: JobResult) -> int:
    """Tell where a run the spool directory could not take went; return 5, or 0
    when it went to the spool directory (or was not spooled at all)."""
    if result.delivered == DeliveryOutcome.UNSAVED:
        print(
            f"the run could not be written anywhere ({result.spool_fallback}); "
            "it follows as JSON on stdout: save it and post it with the rig's token",
            file=sys.stderr,
        )
        print(result.unsaved_json)
        return 5
    if result.spool_fallback:
        print(
            f"the spool directory could not take the run ({result.spool_fallback}); "
            f"it was written to {result.spool_path} instead, and `python -m runners flush` delivers it from there",
            file=sys.stderr,
        )
        return 5
    return 0


def _tell_unmeasured() -> None:
    """Say on stderr which figures this rig cannot measure (no power source), before the run."""
    with open_power_source() as source:
        line = unmeasured_text(source)
    if line:
        print(line, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "flush":
            return _flush(args)
        if args.command == "campaign":
            return campaign_cli.main(args)
        if args.command == "init":
            return init_cli.main(args)
        if args.command == "doctor":
            return doctor.main(args)
        spec = _spec(args)
        _tell_unmeasured()
        result = run_job(spec, progress=ProgressBar())
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except ServerError as exc:
        print(f"server error ({exc.kind}): {exc.reason}", file=sys.stderr)
        if exc.log_tail:
            print("--- server log tail ---\n" + exc.log_tail, file=sys.stderr)
        return 3
    _tell_quarantined((result.flushed or {}).get("quarantined", []))
    print(result.table)
    if result.summary_line:
        print(result.summary_line)
    if result.sweep_table:
        print("\n" + result.sweep_table)
    if result.concurrency_table:
        print("\n" + result.concurrency_table)
    print(f"\nrun {result.run_uuid}: {result.status}", end="")
    print(f" ({result.failure_reason})" if result.failure_reason else "")
    delivered = result.delivered
    where = f" to {result.spool_path}" if result.spool_path else ""
    print(f"delivery: {delivered}{where} {result.delivery_detail}".rstrip())
    if result.page_url:
        print(f"run page: {result.page_url}")
    unsaved = _tell_unsaved(result)
    if delivered == DeliveryOutcome.REJECTED:
        return 4
    if unsaved:
        return unsaved
    return 0 if result.status == "finished" else 1


def entry() -> None:
    """The ``rigboard-runner`` console script."""
    sys.exit(main())

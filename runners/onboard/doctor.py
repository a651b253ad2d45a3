"""``rigboard-runner doctor``: check the rig against its config, one line per check.

Each line is ``ok``, ``warn`` (the run works, something will be missing) or ``FAIL``
(the run would fail or be refused) with what to fix. Exit 0 with no FAIL, 1 with one,
2 when the config itself cannot be read. The checks: the power source (NVML readable,
an energy counter present), the server binary (starts, lists the flags the config
uses), the model file (GGUF, fits the VRAM, or the RAM without a GPU), the service
(answers), the token (valid, for the config's rig), the rig record (matches the
detected hardware), the spool directory (writable), the clock (within a minute of
the service's).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners.config import ConfigError, RigConfig, load_rig_config
from runners.harness.fingerprint import server_flags
from runners.harness.gguf import GgufError, read_header
from runners.harness.power_source import UNMEASURED_WITHOUT_POWER
from runners.harness.server import ServerError, read_version, resolve_binary
from runners.onboard.detect import RigFacts, detect_rig, facts_as_dict
from runners.onboard.service import WhoAmI, update_hardware, whoami

CLOCK_TOLERANCE_S = 60.0
# The model's weights are not all it needs: the KV cache and compute buffers come on top.
FIT_MARGIN = 1.1


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # ok | warn | FAIL
    detail: str
    fix: str = ""

    def line(self) -> str:
        return f"{self.state:<4} {self.name}: {self.detail}" + (f" — fix: {self.fix}" if self.fix else "")


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser("doctor", help="check this rig and its config; say what to fix")
    cmd.add_argument("--config", default="rig.toml", help="the rig config (default: ./rig.toml)")
    cmd.add_argument(
        "--update-rig",
        action="store_true",
        help="when the service's record of the rig differs from the detected hardware, update it "
        "(on a terminal doctor asks)",
    )


def main(args: argparse.Namespace, *, ask: Callable[[str], str] = input) -> int:
    try:
        config = load_rig_config(args.config)
    except ConfigError as exc:
        print(Check("config", "FAIL", str(exc), f"correct {exc.field} in {args.config}").line())
        return 2
    if args.update_rig:
        update: Callable[[str], bool] | None = lambda _question: True  # noqa: E731
    elif sys.stdin.isatty():
        update = lambda question: ask(f"{question} [y/N] ").strip().lower() in ("y", "yes")  # noqa: E731
    else:
        update = None
    checks = run_checks(config, update_rig=update)
    for check in checks:
        print(check.line())
    failed = [c for c in checks if c.state == "FAIL"]
    print(f"{len(failed)} of {len(checks)} checks failed" if failed else f"all {len(checks)} checks passed")
    return 1 if failed else 0


def run_checks(config: RigConfig, *, update_rig: Callable[[str], bool] | None = None) -> list[Check]:
    """Return every check's result for ``config``, in order. ``update_rig`` is asked (with
    the question) whether to update a rig record that differs from the detected hardware."""
    facts = detect_rig()
    checks = [power_check(facts)]
    if config.server is not None:
        checks += server_checks(config)
        checks.append(model_check(config, facts))
    checks += service_checks(config, facts, update_rig=update_rig)
    checks.append(spool_check(config.service.spool_dir))
    return checks


def power_check(facts: RigFacts) -> Check:
    if not facts.gpus:
        return Check(
            "power",
            "warn",
            f"no power source ({facts.power_reason or 'no GPU seen'}): {', '.join(UNMEASURED_WITHOUT_POWER)} "
            "will be empty",
            "on an NVIDIA rig install the driver and nvidia-ml-py; elsewhere the run goes on without them",
        )
    names = ", ".join(f"{g.name} ({g.vram_mib} MiB)" for g in facts.gpus)
    if not facts.energy_counter:
        return Check(
            "power",
            "warn",
            f"{facts.power_source}: {names}; no energy counter, energy is integrated from sampled power",
            "none needed (GPUs before Volta have no counter); expect energy within a few percent",
        )
    return Check("power", "ok", f"{facts.power_source}: {names}, energy counter present")


def server_checks(config: RigConfig) -> list[Check]:
    server = config.server
    assert server is not None  # noqa: S101 - run_checks asks only for a launch config
    try:
        binary = resolve_binary(server.binary)
        version = read_version(binary)
    except ServerError as exc:
        return [
            Check(
                "server",
                "FAIL",
                exc.reason,
                "install llama.cpp (llama-server on PATH) or set server.binary to its path; "
                "`rigboard-runner init --server DIR` finds it",
            )
        ]
    cache_dir = Path(config.cache_dir).expanduser()
    known = set(server_flags(binary, cache_dir=cache_dir))
    used = sorted({a for a in server.argv(port=0)[1:] if a.startswith("-") and not _is_number(a)})
    missing = [flag for flag in used if flag not in known]
    checks = [Check("server", "ok", f"{binary} runs ({version})")]
    if not known:
        checks.append(Check("server flags", "warn", f"{binary} --help listed no flags", "check the binary by hand"))
    elif missing:
        checks.append(
            Check(
                "server flags",
                "FAIL",
                f"this llama-server does not know {', '.join(missing)}",
                "update llama.cpp, or remove the fields that set them from [server]",
            )
        )
    else:
        checks.append(Check("server flags", "ok", f"knows every flag the config uses ({len(used)})"))
    return checks


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def model_check(config: RigConfig, facts: RigFacts) -> Check:
    server = config.server
    assert server is not None  # noqa: S101 - run_checks asks only for a launch config
    path = Path(server.model).expanduser()
    if not path.is_file():
        return Check("model", "FAIL", f"no file at {server.model}", "set server.model to a GGUF file")
    try:
        header = read_header(path)
    except GgufError as exc:
        return Check("model", "FAIL", f"{path.name}: {exc.reason}", "download the model again (a GGUF file)")
    size_mib = path.stat().st_size / (1024 * 1024)
    on_gpu = server.n_gpu_layers != 0 and bool(facts.gpus)
    what = f"{path.name}: GGUF {header.quantization or '?'}, {size_mib / 1024:.2f} GiB"
    if on_gpu and facts.vram_mib_total is not None:
        room, where = float(facts.vram_mib_total), "VRAM"
    elif facts.ram_gb is not None:
        room, where = facts.ram_gb * 1024, "RAM"
    else:
        return Check("model", "warn", f"{what}; cannot tell whether it fits (no VRAM or RAM figure)")
    if size_mib * FIT_MARGIN > room:
        return Check(
            "model",
            "FAIL",
            f"{what} does not fit the {room / 1024:.1f} GiB of {where} (with 10% for the KV cache)",
            "pick a smaller quantization, or offload layers: lower server.n_gpu_layers",
        )
    return Check("model", "ok", f"{what}, fits the {room / 1024:.1f} GiB of {where}")


def service_checks(
    config: RigConfig, facts: RigFacts, *, update_rig: Callable[[str], bool] | None = None
) -> list[Check]:
    service = config.service
    if not service.url:
        return [Check("service", "warn", "no service.url: runs are measured and printed, not posted")]
    answer = whoami(service.url, service.token, timeout_s=min(service.timeout_s, 15.0))
    if answer.outcome == "down":
        return [Check("service", "FAIL", answer.detail, "check service.url and the network; runs spool meanwhile")]
    checks = [Check("service", "ok", f"{service.url} answers ({answer.elapsed_ms or 0:.0f} ms)")]
    if answer.outcome == "bad_token":
        checks.append(
            Check("token", "FAIL", f"refused: {answer.detail}", "issue a new token on your rig page; set service.token")
        )
    elif answer.outcome != "ok" or answer.rig is None:
        checks.append(Check("token", "FAIL", f"unexpected answer: {answer.detail}", "check service.url"))
    elif service.rig and answer.rig.get("name") != service.rig:
        checks.append(
            Check(
                "token",
                "FAIL",
                f"the token is rig {answer.rig.get('name')!r}'s, the config says {service.rig!r}",
                "use this rig's token, or set service.rig to the token's rig",
            )
        )
    else:
        checks.append(Check("token", "ok", f"valid for rig {answer.rig.get('name')!r}"))
        record = rig_record_check(answer.rig, facts)
        if record.state == "FAIL" and update_rig is not None:
            record = _update_record(config, facts, record, update_rig)
        checks.append(record)
    checks.append(clock_check(answer))
    return checks


def _gpu_name(name: str) -> str:
    words = [w for w in name.lower().replace("-", " ").split() if w not in ("nvidia", "geforce", "amd", "radeon")]
    return " ".join(words)


def rig_record_check(record: dict[str, Any], facts: RigFacts) -> Check:
    """Compare the service's record of the rig with what was detected: GPU models and counts
    (when a power source sees the GPUs) and RAM (within 10%)."""
    detected = facts_as_dict(facts)
    differences = []
    if facts.gpus:
        have = sorted((_gpu_name(g["model"]), g["count"]) for g in detected["gpus"])
        said = sorted((_gpu_name(str(g.get("model", ""))), int(g.get("count") or 1)) for g in record.get("gpus", []))
        if have != said:
            differences.append(f"GPUs: detected {_gpus_text(detected['gpus'])}, recorded {_gpus_text(record['gpus'])}")
    ram = record.get("ram_gb")
    if facts.ram_gb and ram and abs(float(ram) - facts.ram_gb) > 0.1 * facts.ram_gb:
        differences.append(f"RAM: detected {facts.ram_gb} GiB, recorded {ram} GiB")
    if differences:
        return Check(
            "rig record",
            "FAIL",
            "; ".join(differences),
            f"`rigboard-runner doctor --update-rig`, or edit rig {record.get('name')!r} on the site (My rigs → Edit)",
        )
    scope = "GPUs and RAM" if facts.gpus else "RAM (no GPU figures to compare)"
    return Check("rig record", "ok", f"the service's record matches the detected {scope}")


def _update_record(config: RigConfig, facts: RigFacts, record: Check, ask: Callable[[str], bool]) -> Check:
    """Put the detected hardware on the service when ``ask`` agrees; return the check's new line."""
    if not ask(f"The service's record of the rig differs ({record.detail}). Update it to what was detected?"):
        return record
    hardware = facts_as_dict(facts)
    if not facts.gpus:
        del hardware["gpus"]  # no GPU figures here (no NVML): keep the GPUs on record
    answer = update_hardware(config.service.url, config.service.token, hardware)
    if answer.outcome != "ok" or answer.rig is None:
        return Check("rig record", "FAIL", f"{record.detail}; the update failed: {answer.detail}", record.fix)
    return Check(
        "rig record",
        "ok",
        f"updated on the service: {_gpus_text(answer.rig.get('gpus', []))}, RAM {answer.rig.get('ram_gb')} GiB",
    )


def _gpus_text(gpus: list[dict[str, Any]]) -> str:
    return " + ".join(f"{g.get('count') or 1}× {g.get('model')}" for g in gpus) or "none"


def clock_check(answer: WhoAmI) -> Check:
    skew = answer.clock_skew_s
    if skew is None:
        return Check("clock", "warn", "the service sent no Date header: cannot compare clocks")
    if abs(skew) > CLOCK_TOLERANCE_S:
        return Check(
            "clock",
            "FAIL",
            f"this rig's clock is {skew:+.0f} s off the service's",
            "turn on time synchronisation (timedatectl set-ntp true, or your OS's NTP setting)",
        )
    return Check("clock", "ok", f"within {abs(skew):.0f} s of the service's")


def spool_check(spool_dir: str) -> Check:
    folder = Path(spool_dir).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=folder, prefix=".doctor-")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return Check(
            "spool",
            "FAIL",
            f"cannot write in {folder}: {exc.strerror or exc}",
            "set service.spool_dir to a folder you can write (runs wait there while the service is away)",
        )
    return Check("spool", "ok", f"{folder} is writable")

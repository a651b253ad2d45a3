"""System memory as the OS states it: type and configured speed of the populated
modules, for the bandwidth bound of CPU runs and offloaded layers (issue 38).

Read from SMBIOS (``dmidecode -t memory``, type 17 records) where the OS lets the
user run it (root, or a readable /sys/firmware/dmi/tables), else from macOS's
``system_profiler``. The channel count is not in these records (two modules may
share a channel); the service takes it from the CPU's specification. Nothing
found is {}: never a guess."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

_DEVICE_SPLIT = re.compile(r"\n(?=Memory Device\b)")
_FIELD = re.compile(r"^\s*(?P<key>[A-Za-z ]+):\s*(?P<value>.+?)\s*$", re.M)
_SPEED = re.compile(r"(?P<n>\d+)\s*(?:MT/s|MHz)")


def parse_dmidecode(text: str) -> dict[str, Any]:
    """Return {'type', 'speed_mt_s', 'modules', 'size_gb'} from ``dmidecode -t memory``
    output: the populated devices' type and configured speed (the slowest, which all
    run at), or {} when no device is populated."""
    types, speeds, sizes = set(), [], []
    for block in _DEVICE_SPLIT.split(text):
        if not block.startswith("Memory Device"):
            continue
        fields = {m.group("key").strip(): m.group("value") for m in _FIELD.finditer(block)}
        size = fields.get("Size", "")
        if not size or size.startswith(("No Module", "Not Installed", "0")):
            continue
        if fields.get("Type", "Unknown") not in ("Unknown", "Other", ""):
            types.add(fields["Type"])
        speed = _SPEED.search(fields.get("Configured Memory Speed") or fields.get("Configured Clock Speed") or "")
        if speed:
            speeds.append(int(speed.group("n")))
        amount = re.match(r"(\d+)\s*(GB|MB|TB)", size)
        if amount:
            sizes.append(int(amount.group(1)) * {"MB": 1 / 1024, "GB": 1, "TB": 1024}[amount.group(2)])
    if not sizes:
        return {}
    found: dict[str, Any] = {"modules": len(sizes), "size_gb": round(sum(sizes), 1)}
    if len(types) == 1:
        found["type"] = types.pop()
    if speeds:
        found["speed_mt_s"] = min(speeds)
    return found


def system_memory() -> dict[str, Any]:
    """Return what the OS states of the system memory ({} when it states nothing readable)."""
    tool = shutil.which("dmidecode")
    if tool:
        try:
            done = subprocess.run([tool, "-t", "memory"], capture_output=True, timeout=20, check=False)  # noqa: S603
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0:
            found = parse_dmidecode(done.stdout.decode("utf-8", "replace"))
            if found:
                return {**found, "source": "dmidecode"}
    return {}

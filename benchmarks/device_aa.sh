#!/usr/bin/env bash
# Issue 25's A/A confirmations on a lent machine that reaches no registry (the device tool's
# 16-core H100/H200 machines): the A/B rule of leaderboard/regressions/ab.py with the same
# build as A and B, through benchmarks/ab_confirmation.py, on STREAMS independent streams,
# each pinned to its own core (taskset), until DEADLINE_S seconds after the script started (less
# 30 s to merge: the device tool's one command may run 600 s); then the streams' saved
# confirmations merged into one JSON under $OUT and totalled.
#
# .device/ (carried) is made as benchmarks/device_setup.sh says. llama-server is built there on
# the CPU with the suite's portable flags; the model is a random-weight GGUF (make_random_gguf.py:
# no model can be downloaded there). Then on the lent machine (device tool, carry .device), from
# the repo root:
#
#   STREAMS=14 DEADLINE_S=560 bash benchmarks/device_aa.sh
set -euo pipefail
started=$(date +%s)
STREAMS=${STREAMS:-14}
DEADLINE_S=${DEADLINE_S:-560}
OUT=${OUT:-/tmp/device-aa-out}
mkdir -p "$OUT" /tmp/aa
# shellcheck source=benchmarks/device_setup.sh
source benchmarks/device_setup.sh
device_setup cpu
[ -f /tmp/random-small.gguf ] || python3 benchmarks/make_random_gguf.py /tmp/random-small.gguf \
  --n-embd 512 --n-layer 8 --n-ff 1408 --n-head 8 --n-head-kv 4 --n-vocab 32000
{ nproc; lscpu | grep -E "Model name|Thread|Core|Socket|L3"; uptime; "$LLAMA_SERVER" --version 2>&1 | tail -2; } | tee "$OUT/machine.txt"
cores=$(nproc)
pin_cmd() { command -v taskset >/dev/null && echo "taskset -c $1"; }
left_s=$((started + DEADLINE_S - 30 - $(date +%s)))
echo "streams: $STREAMS for $left_s s"
for i in $(seq 0 $((STREAMS - 1))); do
  core=$(( (cores - STREAMS + i) % cores )); pin=$(pin_cmd "$core" || true)
  $pin timeout -s INT "$left_s" python3 benchmarks/ab_confirmation.py --aa 10000 --power 0 \
    --slowdowns --drift 0 --binary "$LLAMA_SERVER" --model /tmp/random-small.gguf \
    --json "/tmp/aa/stream-$i.json" >"/tmp/aa/stream-$i.log" 2>&1 &
done
wait || true
uptime | tee -a "$OUT/machine.txt"
tail -5 /tmp/aa/stream-0.log
python3 - "$OUT/ab_confirmation_device_aa.json" /tmp/aa/stream-*.json <<'PY'
import json, sys
from pathlib import Path
streams = [json.loads(Path(p).read_text()) for p in sys.argv[2:] if Path(p).is_file()]
merged = {"meta": {"streams": [s["meta"] for s in streams], "machine": Path(sys.argv[1]).with_name("machine.txt").read_text()},
          "aa": [c for s in streams for c in s["aa"]], "power": {},
          "drift": {"rerun_aa": [], "ab_aa": [], "rerun_slow": [], "ab_slow": []}}
Path(sys.argv[1]).write_text(json.dumps(merged, indent=1))
print(f"{len(streams)} streams, {len(merged['aa'])} A/A confirmations")
PY
python3 benchmarks/ab_confirmation.py --from-json "$OUT/ab_confirmation_device_aa.json"

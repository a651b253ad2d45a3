#!/usr/bin/env bash
# Issue 36 on a lent GPU machine (the device tool's H100/H200; it reaches no registry): the
# interleaved A/B design on a fully offloaded model, with contention read through the real NVML.
#   1. builds a CUDA llama-server (sm_90, FlashAttention kernels off: ~3.5 min on 16 cores);
#   2. writes a random-weight 1.1B f16 GGUF (TinyLlama's shapes, make_random_gguf.py; no model
#      can be downloaded there and the tree may carry 64 MiB);
#   3. gpu_contention.py: interleaved A/A blocks quiet, then beside a third server decoding on
#      the same GPU (must be called heavy from NVML's per-process utilisation), and the design
#      the rig chose from its free VRAM;
#   4. ab_confirmation.py --design interleaved --n-gpu-layers 99: A/A confirmations until
#      DEADLINE_S seconds after the start (each saved as it ends).
#
# .device/ (carried) is made as benchmarks/device_setup.sh says; then (device tool, carry .device,
# timeout_s 590), from the repo root:
#
#   DEADLINE_S=540 bash benchmarks/device_gpu_ab.sh
#
# CONTENTION=0 skips step 3 (measured once, results/gpu_contention_2026-11-27_h200.json) and gives
# its time to the A/A sets.
set -uo pipefail
started=$(date +%s)
DEADLINE_S=${DEADLINE_S:-540}
OUT=${OUT:-/tmp/device-gpu-out}
mkdir -p "$OUT"
# shellcheck source=benchmarks/device_setup.sh
source benchmarks/device_setup.sh
device_setup cuda || exit 1
MODEL=/tmp/random-1.1b-f16.gguf
[ -f $MODEL ] || python3 benchmarks/make_random_gguf.py $MODEL >/dev/null || exit 1
{ nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv; nproc; uptime;
  "$LLAMA_SERVER" --version 2>&1 | tail -2; } | tee "$OUT/machine.txt"
if [ "${CONTENTION:-1}" != 0 ]; then
  echo "== contention through NVML (t = $(($(date +%s) - started)) s)"
  timeout 150 python3 benchmarks/gpu_contention.py --binary "$LLAMA_SERVER" --model $MODEL \
    --n-gpu-layers 99 --blocks 2 --json "$OUT/gpu_contention.json"
  echo "gpu_contention.py: exit $? (0: every block beside the neighbour called heavy)"
fi
left_s=$((started + DEADLINE_S - $(date +%s)))
echo "== interleaved A/A on the GPU for $left_s s"
[ "$left_s" -gt 60 ] && timeout -s INT "$left_s" python3 benchmarks/ab_confirmation.py --design interleaved \
  --aa 1000 --power 0 --slowdowns --drift 0 --binary "$LLAMA_SERVER" --model $MODEL --n-gpu-layers 99 \
  --max-tokens 64 --reps-per-side 12 --json "$OUT/ab_confirmation_gpu_aa.json" >"$OUT/aa.log" 2>&1
tail -3 "$OUT/aa.log"
[ -f "$OUT/ab_confirmation_gpu_aa.json" ] && python3 benchmarks/ab_confirmation.py --from-json "$OUT/ab_confirmation_gpu_aa.json"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
echo "done at t = $(($(date +%s) - started)) s"

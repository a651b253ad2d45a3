#!/usr/bin/env bash
# On a lent GPU machine (no registry), from the repo root, with .device/ carried (made as
# benchmarks/device_setup.sh says, its wheels with the campaign's extra ones: optuna nvidia-ml-py
# requests numpy PyYAML): build a CUDA llama-server, write a random-weight GGUF and run a grid
# campaign over n_gpu_layers (NVML power recorded by the runner). `gpu_campaign.sh build` only builds.
set -euo pipefail
OUT=${OUT:-/tmp/gpu-campaign-out}
mkdir -p "$OUT"
# shellcheck source=benchmarks/device_setup.sh
source benchmarks/device_setup.sh
device_setup cuda
[ "${1:-}" = build ] && { ls -la "$(dirname "$LLAMA_SERVER")"; exit 0; }
[ -f /tmp/random-1.1b-f16.gguf ] || python3 benchmarks/make_random_gguf.py /tmp/random-1.1b-f16.gguf
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv | tee "$OUT/gpu.txt"
"$LLAMA_SERVER" --version 2>&1 | tail -2 | tee -a "$OUT/gpu.txt"
python3 -m runners campaign --no-post --config benchmarks/gpu_campaign_rig.json --campaign benchmarks/gpu_campaign.json \
  --output "$OUT/campaign_h200.json" 2>&1 | tee "$OUT/campaign.log" | grep -v "^ *$" | tail -40

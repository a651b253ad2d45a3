# Rigboard: `make demo` runs the service with data to look at; `make test` runs everything CI runs.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# A portable llama.cpp build: a native one dies with "Illegal instruction" on CPUs
# other than the one that built it.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/rigboard
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# pytest-xdist: one test process per core. Its default scheduling hands each process tests in
# collection order, so each still runs pytest-django's plain tests before the transactional ones
# (whose flush empties what the data migrations stored); --maxschedchunk 1 keeps two at most
# waiting on a process (not a quarter of the suite), so neither ends long after the other.
# PYTEST_PROCESSES=0 runs them all here.
PYTEST_PROCESSES ?= auto

.PHONY: install install-dev system-deps demo demo-data test lint typecheck migrations-check pytest bench-ingest clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt

install-dev: $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt

# What the tests drive that pip cannot install: Debian's Chromium for the page
# tests (Playwright never downloads a browser) and ccache for the llama.cpp
# rebuilds of the nightly tests. Installed with apt-get when missing (as root);
# otherwise the target fails and says what to install: a test run never skips
# the browser tests silently.
system-deps:
	@if command -v chromium >/dev/null 2>&1 && command -v ccache >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium, chromium-driver and ccache with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver ccache >/dev/null; \
	else \
	  echo "make test needs Debian's chromium and ccache: sudo apt-get install chromium chromium-driver ccache" >&2; exit 1; \
	fi

# The embedded default: SQLite, tasks in-process, the articles' published results,
# two public result sets (leaderboard/results/community_data/README.md) and what was measured on Rigboard's own development machine (labelled so): runs,
# a campaign and a nightly timeline (leaderboard/results/demo_data/README.md).
# DEBUG is off by default (settings.py); the demo and the tests turn it on for
# themselves (a development SECRET_KEY, loopback hosts, tracebacks on 500s).
DEMO_RIG := rigboard-dev-vm-demo
DEMO_GPU_RIG := lent-h200-demo
DEMO_RELEASES_RIG := rigboard-dev-vm-releases-demo
DEMO_SCREEN_RIG := rigboard-dev-vm-b10429-demo
DEMO_SCREEN_LOADED_RIG := rigboard-dev-vm-b10429-loaded-demo
DEMO_WINDOW_RIG := rigboard-dev-vm-b10568-window-demo
DEMO_FIX_RIG := rigboard-dev-vm-b10448-demo
DEMO_DATA := leaderboard/results/demo_data
demo: export DEBUG ?= true
# Static files as production serves them: collected, compressed, by WhiteNoise
# (settings.py, RIGBOARD_STATIC_COLLECTED); runserver's own uncompressed handler is off.
demo: export RIGBOARD_STATIC_COLLECTED ?= true
demo: install demo-data
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py runserver --nostatic 127.0.0.1:8000

# Idempotent: every step stores nothing twice (tests/test_demo_data.py runs it twice).
demo-data: export DEBUG ?= true
demo-data:
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py import_published
	$(BIN)/python manage.py import_community
	$(BIN)/python manage.py import_runs --create-rig --rig $(DEMO_RIG) --cpu "AMD EPYC (2 cores, no GPU)" \
	  --notes "Rigboard's development VM: the demo's runs were measured here, on two cores shared with other work" \
	  $(DEMO_DATA)/runs/*.json
	$(BIN)/python manage.py import_llama_bench --rig $(DEMO_RIG) $(DEMO_DATA)/llama-bench/*.json
	$(BIN)/python manage.py import_campaign --rig $(DEMO_RIG) $(DEMO_DATA)/campaigns/*.json
	$(BIN)/python manage.py import_nightly --create-rig --rig $(DEMO_RELEASES_RIG) --cpu "AMD EPYC (2 cores, no GPU)" \
	  --notes "Rigboard's development VM replaying real llama.cpp releases (benchmarks/replay_releases.sh): each built from its source distribution, benchmarked with Gemma 3 270M at 1 and 2 threads, changes confirmed by A/B pairs" \
	  $(DEMO_DATA)/nightly/releases-*.json
	$(BIN)/python manage.py import_nightly --create-rig --rig $(DEMO_SCREEN_RIG) --cpu "AMD EPYC (2 cores, no GPU)" \
	  --notes "Rigboard's development VM replaying b10423 -> b10429 (llama.cpp#27126) on a quiet machine, every step judged by A/B blocks (screen_every_step): the regression at 2 threads confirmed by the blocks" \
	  $(DEMO_DATA)/nightly/screen-b10423-b10429-quiet.json
	$(BIN)/python manage.py import_nightly --create-rig --rig $(DEMO_SCREEN_LOADED_RIG) --cpu "AMD EPYC (2 cores, no GPU)" \
	  --notes "The same replay while the test suite ran beside b10423's first runs: the first run at 2 threads saw b10429 as no change (+51%, inside a 152% noise floor), the A/B blocks found the regression" \
	  $(DEMO_DATA)/nightly/screen-b10423-b10429-loaded.json
	$(BIN)/python manage.py import_nightly --create-rig --rig $(DEMO_WINDOW_RIG) --cpu "AMD EPYC (2 cores, no GPU)" \
	  --notes "Rigboard's development VM replaying 30 consecutive releases, b10280 -> b10568, quiet, steps judged by the first run only (REPLAY_SCREEN=0, no A/B blocks unless it calls a change): it called none, and missed b10429's 2-thread regression (llama.cpp#27126, inside a 27% noise floor) and its fix in b10448 (benchmarks/README.md, 2026-11-28)" \
	  $(DEMO_DATA)/nightly/window-b10280-b10568.json
	$(BIN)/python manage.py import_nightly --create-rig --rig $(DEMO_FIX_RIG) --cpu "AMD EPYC (2 cores, no GPU)" \
	  --notes "Rigboard's development VM replaying b10441 -> b10448 (the fix of llama.cpp#27126: llama-server decodes on its own thread again) on a quiet machine, every step judged by A/B blocks: the first run's +30% at 2 threads lay inside its noise floor, the blocks found the improvement" \
	  $(DEMO_DATA)/nightly/screen-b10441-b10448-quiet.json
	$(BIN)/python manage.py import_runs --create-rig --rig $(DEMO_GPU_RIG) --cpu "16 cores (a lent NVIDIA H200 machine)" \
	  --notes "A lent H200, 2026-11-23: a campaign over n_gpu_layers on a random-weight 1.1B f16 model (speed and power only: random weights answer nothing right)" \
	  $(DEMO_DATA)/gpu/h200-confirmation-run.json
	$(BIN)/python manage.py import_campaign --rig $(DEMO_GPU_RIG) $(DEMO_DATA)/gpu/campaign_h200.json
	# The open-data dump of what was just stored (/data/ serves it; RIGBOARD_DUMP_DIR, pruned to RIGBOARD_DUMP_KEEP).
	$(BIN)/python manage.py dump_board

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck:
	DEBUG=true $(BIN)/mypy leaderboard runners

migrations-check:
	DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) $(BIN)/python manage.py makemigrations --check --dry-run

# Exit code 5 means pytest collected nothing: an empty suite is a failure, said plainly.
pytest:
	@mkdir -p test-artifacts
	@echo "test artifacts: $(CURDIR)/test-artifacts"
	DEBUG=$${DEBUG:-true} DATABASE_URL=$(TEST_DATABASE_URL) RIGBOARD_TEST_REDIS_URL=$(TEST_REDIS_URL) \
	  $(BIN)/pytest -p no:cacheprovider -n $(PYTEST_PROCESSES) --maxschedchunk 1 $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "FAILED: pytest collected no tests (exit code 5); check PYTEST_ARGS and tests/" >&2; fi; \
	  exit $$rc

test: install-dev system-deps lint typecheck migrations-check pytest

# Single POSTs, then the bulk intake (POST /api/runs/bulk/), then COPY: runs/s side by side.
bench-ingest:
	DATABASE_URL=$(TEST_DATABASE_URL) $(BIN)/python benchmarks/ingest.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles test-artifacts

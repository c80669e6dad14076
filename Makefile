# Two commands for a newcomer: `make run` (the console with embedded PostgreSQL and Redis) and
# `make test` (the test suite on real PostgreSQL and Redis, embedded unless DATABASE_URL /
# REDIS_URL point elsewhere).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# mypy's Django plugin loads the settings: point them at servers it never contacts, so no
# embedded PostgreSQL / Redis starts for a type check.
MYPY_ENV := DATABASE_URL=postgres://mypy@127.0.0.1:1/mypy REDIS_URL=redis://127.0.0.1:1/0 \
	SECRET_KEY=mypy-only

.PHONY: run test lint soak bench-placement bench-topology bench-e2e stop clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m console.run

# TEST_WORKERS pytest-xdist processes (auto: one per CPU, at most 4), each with its own test
# database (console/settings/test.py names it by process) on the one embedded PostgreSQL.
TEST_WORKERS ?= auto
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses 4 $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) .ci/check_sizes.py
	$(PY) .ci/check_doc_paths.py
	$(MYPY_ENV) $(VENV)/bin/mypy
	$(PY) manage.py makemigrations --check --dry-run

# The concurrency test and the fault suite SOAK_RUNS times (default 20), each run on a fresh
# embedded PostgreSQL and Redis; prints pass/fail counts (.ci/soak.py). Not part of `make test`.
soak: $(STAMP)
	$(PY) .ci/soak.py

bench-placement: $(STAMP)
	$(PY) -m scheduling.placement.lab.bench --nodes ../shared/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv --pods ../shared/data/alibaba-gpu-v2023/openb_pod_list_default.csv --policy all --seeds 42-51

# Topology-aware gangs on the openb trace with a synthetic rack layout (issue 31; prints JSON,
# the last line is the summary; see scheduling/placement/lab/bench_topology.py). Slow on a
# shared machine: run it as `nice -n 19 make bench-topology`. TRACE_DIR / BENCH_ARGS override.
TRACE_DIR ?= ../shared/data/alibaba-gpu-v2023
bench-topology: $(STAMP)
	$(PY) -m scheduling.placement.lab.bench_topology --nodes $(TRACE_DIR)/openb_node_list_gpu_node.csv --pods $(TRACE_DIR)/openb_pod_list_default.csv --seeds 42-46 $(BENCH_ARGS)

# End to end on the embedded PostgreSQL/Redis with one worker (prints JSON; see
# console/bench_e2e/__main__.py). BENCH_ARGS e.g. "--phases load --scale 0.25".
bench-e2e: $(STAMP)
	$(PY) -m console.bench_e2e $(BENCH_ARGS)

# Stops the embedded PostgreSQL and Redis this checkout started, wherever they run (also those
# started with another CONSOLE_DATA_DIR); exits 1 and names the folders when only other
# checkouts' servers run (console/embedded.py).
stop: $(STAMP)
	$(PY) -m console.embedded stop

# stop, then remove the data folder: CONSOLE_DATA_DIR, default .console
clean: $(STAMP)
	$(PY) -m console.embedded clean

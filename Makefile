# One command to run, one to test; both create .venv and install what they need.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-unit check format bench bench-compare bench-idle clean java bytecode

$(STAMP): pyproject.toml client/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ./client
	$(BIN)/pip install -q -e '.[dev,spark]'
	touch $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q openjdk-17-jre-headless; }

run: $(STAMP) bytecode
	$(BIN)/quorumq cluster start --nodes 3 --demo

# The project's modules compiled to bytecode, as an installed package has them: the editable install
# writes none, and with PYTHONDONTWRITEBYTECODE set every node process would compile them again as it
# starts (~0.15 s of CPU each; the tests start over a thousand). A stale file is recompiled in memory.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j0 raft_log queue_state metadata_state cluster api cli spark_io \
		jepsen_tests bench node_simulation client/quorumq > /dev/null

# The static checks: lint, format, the import contracts, the type checker (pyproject.toml's
# [tool.importlinter] and [tool.mypy]), the Markdown links (scripts/check_links.py, no network) and
# the HTTP API page made from the OpenAPI document (scripts/http_api_page.py).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python scripts/check_links.py
	$(BIN)/python scripts/http_api_page.py --check

test: check java bytecode
	$(BIN)/pytest

# The fast part: the checks and the tests that start no node process, no Spark and no Docker (the
# marks tests/conftest.py gives by directory).
test-unit: check
	$(BIN)/pytest -m "not process and not docker and not spark"

format: $(STAMP)
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

bench: $(STAMP) bytecode
	$(BIN)/python -m bench.state_machine
	$(BIN)/python -m bench.raft_core
	$(BIN)/python -m bench.storage
	$(BIN)/python -m bench.deliveries

# quorumq vs RabbitMQ quorum queues (installs rabbitmq-server with apt-get when missing); ARGS=--backlog 100000
bench-compare: $(STAMP) bytecode
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m bench.compare $(ARGS)

# Many idle quorum queues on quorumq and RabbitMQ: declare rate, idle CPU and RSS, restart to online
# (docs/benchmarks.md "Idle queues"); ARGS="--broker quorumq --large"
bench-idle: $(STAMP) bytecode
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m bench.idle_queues $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cancel .ruff_cache

# make run   - the whole system on this machine (SQLite + a file-system broker unless
#              DATABASE_URL / REDIS_URL are set): creates .venv, installs, migrates, starts.
# make test  - the test suite (against DATABASE_URL / REDIS_URL when set).
# make lint  - ruff and the purity rule of armada/core.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export ARMADA_DEV ?= 1

.PHONY: install browser run test lint format lock wheel proto

# The exact, tested dependencies come from requirements.lock (`make lock` updates it from
# pyproject.toml's ranges); the project itself is installed editable on top, with no more.
$(BIN)/armadactl: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# Lookout's front-end packages (htmx, and axe-core for the accessibility checks of the
# browser tests) come from the npm registry through package-lock.json; nothing is committed.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(BIN)/armadactl node_modules/.package-lock.json

run: install
	$(BIN)/python manage.py runall

# The browser tests drive the system's Chromium (Debian package chromium) through Playwright.
browser:
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium) \
	  || { echo "the browser tests need Chromium: apt-get install chromium"; exit 1; }

# requirements.lock from pyproject.toml's ranges, keeping the pinned versions that still fit
# (`make lock UPGRADE=--upgrade` moves everything to the newest versions the ranges allow).
lock: install
	$(BIN)/uv pip compile pyproject.toml --extra server --extra dev --python-version 3.11 \
	  $(UPGRADE) -o requirements.lock

# The wheel (site files and htmx included: setup.py) in dist/.
wheel: install
	rm -rf build dist
	$(BIN)/python -m build --wheel --outdir dist .

# The whole suite, in three pytest processes at once (tests/run_suite.py: the end-to-end
# tests, the tests that start no process, and the rest, each with a database of its own).
# With PYTEST_ARGS (a selection), just that.
test: install browser
ifeq ($(strip $(PYTEST_ARGS)),)
	$(BIN)/python tests/run_suite.py
else
	$(BIN)/pytest $(PYTEST_ARGS)
endif

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/check_core_purity.py

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The executor API's Python module from its .proto (commit both; a test checks they agree).
proto: install
	$(BIN)/python -m grpc_tools.protoc -I armada/executor/api --python_out=armada/executor/api \
	  --pyi_out=armada/executor/api armada/executor/api/executorapi.proto

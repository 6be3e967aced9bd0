# make run   - the whole system on this machine (SQLite + a file-system broker unless
#              DATABASE_URL / REDIS_URL are set): creates .venv, installs, migrates, starts.
# make test  - the test suite (against DATABASE_URL / REDIS_URL when set).
# make lint  - ruff and the purity rule of armada/core.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export ARMADA_DEV ?= 1

.PHONY: install browser run test lint format

$(BIN)/armadactl: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# Lookout's front-end packages (htmx, and axe-core for the accessibility checks of the
# browser tests) come from the npm registry through package-lock.json; nothing is committed.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(BIN)/armadactl node_modules/.package-lock.json

run: install
	$(BIN)/python manage.py runall

# The browser tests drive the system's Chromium (Debian packages chromium, chromium-driver).
browser:
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver) \
	  || { echo "the browser tests need Chromium: apt-get install chromium chromium-driver"; exit 1; }

test: install browser
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/check_core_purity.py

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

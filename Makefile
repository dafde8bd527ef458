# mlscale: `make demo` and `make test` set themselves up on a fresh machine.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install system-packages browser demo airflow lint format docs provider-info test test-fast bench emulator-up emulator-down lock clean

$(STAMP): pyproject.toml provider/pyproject.toml emulator/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# three distributions: the provider, the emulator with the local stack, and this example project
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ./provider -e ./emulator -e '.[dev]'
	# these folders are on sys.path (Airflow's plugins folder, the editable src/ folders): an egg-info left
	# there by the build would register the provider and its plugin twice
	rm -rf plugins/*.egg-info provider/src/*.egg-info emulator/src/*.egg-info
	touch $(STAMP)

install: $(STAMP)

demo: install  ## the example DAG end to end on the local emulator, with a summary
	$(BIN)/mlscale demo

airflow: install  ## the emulator and Airflow standalone with mlscale loaded; prints the URL and login
	$(BIN)/mlscale airflow

# Debian's chromium (the browser test), redis-server (the stack tests' Celery broker) and a JDK (javac: the
# emulator's Spark jobs), as command:package, installed with apt when missing and running as root; without them
# the browser test is skipped and the stack runs LocalExecutor (Spark jobs need the JDK).
SYSTEM_PACKAGES := chromium:chromium redis-server:redis-server javac:openjdk-17-jdk-headless
system-packages:
	@missing="$$(for p in $(SYSTEM_PACKAGES); do command -v $${p%%:*} >/dev/null || echo $${p#*:}; done)"; \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } || \
	  echo "not installed (needs root and apt): $$missing"

browser: system-packages

lint: install  ## ruff: lint and format check (CI runs it before the tests)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install  ## ruff: fix what it can and format
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

provider-info: install  ## rewrite provider_info.py's module and link lists from the code (a test checks them)
	$(BIN)/python provider/scripts/generate_provider_info.py

docs: install  ## the documentation site (docs/_build/html), warnings as errors
	AIRFLOW_HOME=$(CURDIR)/.mlscale/docs-airflow $(BIN)/sphinx-build -q -W --keep-going -b html docs docs/_build/html

test: install system-packages  ## the whole suite: unit, emulator, Airflow, end-to-end and browser tests
	$(BIN)/python -m pytest -q

test-fast: install  ## unit tests only (no emulator server, no Airflow run)
	$(BIN)/python -m pytest -q -m "not emulator and not e2e"

bench: install  ## benchmarks, each printed as a ratio against a baseline measured in the same run
	$(BIN)/python benchmarks/run.py

emulator-up: install
	$(BIN)/mlscale emulator up

emulator-down: install
	$(BIN)/mlscale emulator down

lock: install  ## re-pin constraints.txt from the current venv
	( echo "# Reproducible installs: every package mlscale's venv holds, pinned. Regenerate with 'make lock'."; \
	  $(BIN)/python -m pip freeze --exclude-editable | sed 's/+cpu$$//' | grep -v '^mlscale' ) > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) .mlscale .pytest_cache

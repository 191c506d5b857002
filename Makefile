# The two README commands: `make demo` and `make test`. Everything else is a step of theirs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install jmeter chromium tmux servers packages setup lint test test-fast demo clean

# Re-run whenever pyproject.toml changes: the editable install also writes the package
# metadata, the `loadguard.commands` entry points the CLI finds the lab's commands by.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Provision JMeter 5.6.3 + jmeter-plugins into $LOADGUARD_HOME (default ~/.cache/loadguard).
# Idempotent: a complete cached home is reused in well under a second.
jmeter: install
	$(BIN)/loadguard jmeter install

lint: install
	$(BIN)/ruff check loadguard tests benchmarks
	$(BIN)/ruff format --check loadguard tests benchmarks
	$(BIN)/mypy

# The Debian packages the suite needs, as command:package pairs: TOOLS installed with
# their recommends, SERVERS without. `make packages` installs every one that is missing
# after one index update; each target below, its own. Idempotent.
TOOLS ?= chromium:chromium tmux:tmux
SERVERS ?= influxd:influxdb prometheus:prometheus
packages:
	@tools=""; servers=""; \
	for pair in $(TOOLS); do command -v $${pair%%:*} >/dev/null || tools="$$tools $${pair#*:}"; done; \
	for pair in $(SERVERS); do command -v $${pair%%:*} >/dev/null || servers="$$servers $${pair#*:}"; done; \
	if [ -n "$$tools$$servers" ]; then \
	  echo "apt-get install$$tools$$servers"; \
	  apt-get update -q || exit $$?; \
	  if [ -n "$$tools" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$tools || exit $$?; fi; \
	  if [ -n "$$servers" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$servers || exit $$?; fi; \
	fi

# Debian's headless Chromium, for the report rendering test.
chromium:
	@$(MAKE) --no-print-directory packages TOOLS=chromium:chromium SERVERS=

# Debian's tmux, for the live-console test in a real 80-column terminal.
tmux:
	@$(MAKE) --no-print-directory packages TOOLS=tmux:tmux SERVERS=

# Debian's InfluxDB 1.x and Prometheus, for the live-output tests (the tests start their
# own instances on free loopback ports; a missing binary fails them).
servers:
	@$(MAKE) --no-print-directory packages TOOLS=

# The whole suite, real JMeter included (a missing JMeter is a failure here, not a skip).
# Three passes: the unit and fuzz tests (pure CPU, ~1,500 of them) on $(UNIT_WORKERS) pytest-xdist
# workers, a file per worker so a module fixture runs once; then the faults and integration
# tests (real JMeter) on $(INTEGRATION_WORKERS) workers by scope (tests/conftest.py): the
# files that load the CPU or judge latencies one after another in the scope "cpu", each
# other file a scope of its own beside them; last, the real TeaStore's tests (marked
# "alone"), one at a time with nothing beside them. Every pass always runs; the target
# fails if any did.
# Byte-compiled first: with PYTHONDONTWRITEBYTECODE=1 (CI's clone held no __pycache__
# after a whole run) every `python -m loadguard` the tests start compiled the package
# again, about 0.4 s of CPU each; compileall writes the .pyc files all of them then read.
# The set-up's steps run side by side (`setup`): the Debian packages download and unpack
# while pip installs the virtualenv, then JMeter is fetched and the linters run.
UNIT_WORKERS ?= 2
# Three integration workers on two cores: those tests mostly wait on real-time JMeter runs
# (two workers kept the CPU 46 % busy over their 9 minutes; three, 57 % over 7).
INTEGRATION_WORKERS ?= 3
setup:
	$(MAKE) -j3 --output-sync=target jmeter packages lint

test: setup
	$(BIN)/python -m compileall -q loadguard tests
	@status=0; \
	echo "LOADGUARD_REQUIRE_JMETER=1 $(BIN)/pytest -q --durations=10 -n $(UNIT_WORKERS) --dist loadfile tests/unit tests/fuzz"; \
	LOADGUARD_REQUIRE_JMETER=1 $(BIN)/pytest -q --durations=10 -n $(UNIT_WORKERS) --dist loadfile tests/unit tests/fuzz || status=$$?; \
	echo "LOADGUARD_REQUIRE_JMETER=1 $(BIN)/pytest -q --durations=25 -n $(INTEGRATION_WORKERS) --dist loadscope -m 'not alone' tests --ignore=tests/unit --ignore=tests/fuzz"; \
	LOADGUARD_REQUIRE_JMETER=1 $(BIN)/pytest -q --durations=25 -n $(INTEGRATION_WORKERS) --dist loadscope -m 'not alone' tests --ignore=tests/unit --ignore=tests/fuzz || status=$$?; \
	echo "LOADGUARD_REQUIRE_JMETER=1 $(BIN)/pytest -q --durations=10 -p no:xdist -m alone tests --ignore=tests/unit --ignore=tests/fuzz"; \
	LOADGUARD_REQUIRE_JMETER=1 $(BIN)/pytest -q --durations=10 -p no:xdist -m alone tests --ignore=tests/unit --ignore=tests/fuzz || status=$$?; \
	exit $$status

# Unit tests only, for a quick edit loop.
test-fast: install
	$(BIN)/pytest -q -n $(UNIT_WORKERS) --dist loadfile tests/unit tests/fuzz

# The full loop on the embedded demo target: results land in results/<timestamp>/.
demo: jmeter
	$(BIN)/loadguard demo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

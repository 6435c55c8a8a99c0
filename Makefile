# The two commands: `make run` and `make test`. Everything else is set up by them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Sail 0.7 (the `--engine sail` server) refuses PySpark 4.3 in its own process: its child finds
# PySpark's 4.2 Connect client here first (galene/engine/sail.py); the FE keeps PySpark 4.3.
SAIL_PYSPARK := $(VENV)/sail-pyspark
SAIL_PYSPARK_VERSION := 4.2.0

.PHONY: run test check-java tools lint bench clean

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# pydoris (test extras) needs mysqlclient, built from source against MariaDB's C client headers.
	@pkg-config --exists libmariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get install -y -qq libmariadb-dev pkg-config || (apt-get update -qq && apt-get install -y -qq libmariadb-dev pkg-config)) >/dev/null 2>&1 || echo "warning: could not install libmariadb-dev"; \
	  else echo "warning: libmariadb-dev missing (apt-get install libmariadb-dev pkg-config): pydoris' mysqlclient cannot build"; fi; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps --upgrade --target $(SAIL_PYSPARK) pyspark-client==$(SAIL_PYSPARK_VERSION)
	@touch $(STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || { echo "Galene needs Java 17+ for Spark: install OpenJDK 17 (apt-get install -y openjdk-17-jre-headless)"; exit 1; }
	@java -version 2>&1 | awk -F'"' '/version/ { split($$2, v, "."); if ((v[1] == 1 ? v[2] : v[1]) + 0 < 17) { print "Galene needs Java 17+, found " $$2; exit 1 } }'

# Client tools the end-to-end tests drive (the mariadb CLI), and what the cluster fault tests use
# (Debian's iptables and haproxy). Installed when missing and we are root.
tools:
	@command -v mariadb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq mariadb-client) >/dev/null 2>&1 || echo "warning: could not install mariadb-client"; \
	  else echo "warning: mariadb CLI missing (apt-get install mariadb-client)"; fi; }
	@for t in iptables haproxy; do command -v $$t >/dev/null 2>&1 || PATH="$$PATH:/usr/sbin:/sbin" command -v $$t >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get install -y -qq $$t || (apt-get update -qq && apt-get install -y -qq $$t)) >/dev/null 2>&1 || echo "warning: could not install $$t"; \
	  else echo "warning: $$t missing (apt-get install $$t): the cluster fault tests that need it skip"; fi; }; done

run: check-java $(STAMP)
	$(VENV)/bin/galene start $(ARGS)

# Two pytest-xdist workers: most of a test's time is spent waiting on the processes it starts, so
# two of them overlap well on a 2-core box. Each module runs whole on one worker (conftest.py).
TEST_WORKERS ?= 2
test: check-java $(STAMP) tools
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check galene tests

bench: $(STAMP)
	$(PY) bench/streamload_big.py
	$(PY) bench/query_overhead.py

clean:
	rm -rf galene-data .pytest_cache

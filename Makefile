# The two commands: `make run` and `make test`. Everything else is set up by them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Sail 0.7 (the `--engine sail` server) refuses PySpark 4.3 in its own process: its child finds
# PySpark's 4.2 Connect client here first (galene/engine/sail.py); the FE keeps PySpark 4.3.
SAIL_PYSPARK := $(VENV)/sail-pyspark
SAIL_PYSPARK_VERSION := 4.2.0

.PHONY: run test check-java jvm-archive tools lint bench clean

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

# Client tools the end-to-end tests drive (the mariadb CLI, MariaDB Connector/J, node's mysql2,
# doris-mcp-server), and what the cluster fault tests use (Debian's iptables and haproxy).
# Installed when missing and we are root; a test whose tool is missing skips, naming it.
NODE_CLIENTS := tests/clients/node
MCP_VENV := .venv-mcp
tools: $(NODE_CLIENTS)/node_modules/.installed $(MCP_VENV)/.installed
	@test -f /usr/share/java/mariadb-java-client.jar || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get install -y -qq libmariadb-java || (apt-get update -qq && apt-get install -y -qq libmariadb-java)) >/dev/null 2>&1 || echo "warning: could not install libmariadb-java"; \
	  else echo "warning: MariaDB Connector/J missing (apt-get install libmariadb-java)"; fi; }
	@command -v mariadb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq mariadb-client) >/dev/null 2>&1 || echo "warning: could not install mariadb-client"; \
	  else echo "warning: mariadb CLI missing (apt-get install mariadb-client)"; fi; }
	@for t in iptables haproxy; do command -v $$t >/dev/null 2>&1 || PATH="$$PATH:/usr/sbin:/sbin" command -v $$t >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get install -y -qq $$t || (apt-get update -qq && apt-get install -y -qq $$t)) >/dev/null 2>&1 || echo "warning: could not install $$t"; \
	  else echo "warning: $$t missing (apt-get install $$t): the cluster fault tests that need it skip"; fi; }; done

# node's mysql2, pinned by package-lock.json.
$(NODE_CLIENTS)/node_modules/.installed: $(NODE_CLIENTS)/package.json $(NODE_CLIENTS)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then (cd $(NODE_CLIENTS) && npm ci --no-audit --no-fund --silent) && touch $@ || echo "warning: npm ci failed: the node mysql2 tests skip"; \
	else echo "warning: npm missing: the node mysql2 tests skip"; fi

# doris-mcp-server 1.0.0 needs Python >= 3.12: its own venv, from the first such Python that runs
# (pyenv's shims answer for versions that are not selected, so each candidate is tried).
$(MCP_VENV)/.installed: Makefile
	@py=; for c in python3.12 python3.13 $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null); do \
	  if $$c -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1; then py=$$c; break; fi; done; \
	if [ -n "$$py" ]; then ($$py -m venv $(MCP_VENV) && $(MCP_VENV)/bin/pip install -q doris-mcp-server==1.0.0 2>&1 | grep -v '^WARNING: Location'; test -x $(MCP_VENV)/bin/doris-mcp-server) && touch $@ || echo "warning: could not install doris-mcp-server: its test skips"; \
	else echo "warning: no Python >= 3.12 for doris-mcp-server: its test skips"; fi

# The Spark driver's class archive (galene/engine/class_archive.py): built once per PySpark and
# java, it halves every Spark start. Quick when it exists.
jvm-archive: check-java $(STAMP)
	@$(PY) -m galene.engine.class_archive_build 2>&1 | grep -v -e '^WARN' -e 'log4j' -e 'setLogLevel' -e 'incubator' -e '^Setting default log level' || true

run: check-java $(STAMP) jvm-archive
	$(VENV)/bin/galene start $(ARGS)

# Two pytest-xdist workers: most of a test's time is spent waiting on the processes it starts, so
# two of them overlap well on a 2-core box. Each module runs whole on one worker (conftest.py).
TEST_WORKERS ?= 2
test: check-java $(STAMP) jvm-archive tools
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check galene tests

bench: $(STAMP)
	$(PY) bench/streamload_big.py
	$(PY) bench/query_overhead.py

clean:
	rm -rf galene-data .pytest_cache

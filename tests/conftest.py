"""Shared fixtures: one standalone Galene per test process for the integration and e2e suites."""

from __future__ import annotations

import os
import sys
import uuid

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tests.galene_proc import GaleneProcess


def pytest_addoption(parser):
    parser.addoption(
        "--galene-engine",
        choices=("spark", "sail"),
        default=None,
        help="query engine of the Galene processes the tests start (default: GALENE_ENGINE or spark)",
    )


# Modules that use machine-wide resources run in one pytest-xdist worker, one after another:
# SeaweedFS always binds its admin ports 23646/33646, and the namespace tests add routes, qdiscs
# and iptables rules that must not meet another module's.
_EXCLUSIVE_MODULES = {
    "tests.integration.test_streaming_jobs",
    "tests.integration.test_streaming_jobs_faults",
    "tests.integration.test_cluster_faults",
    "tests.unit.test_net",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under `-n N --dist loadgroup` every module is one group (its module-scoped nodes start
    once), and the machine-wide ones share one group."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = item.module.__name__ if item.module is not None else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group("exclusive" if module in _EXCLUSIVE_MODULES else module))


def pytest_configure(config):
    # The harness (tests/galene_proc.py) reads GALENE_ENGINE, so processes started outside
    # fixtures follow the option too.
    engine = config.getoption("--galene-engine")
    if engine:
        os.environ["GALENE_ENGINE"] = engine


@pytest.fixture(scope="session")
def galene(tmp_path_factory):
    """A standalone Galene (FE + BE + Spark) shared by the tests of this process."""
    # No background compaction: tests compare the storage directory before and after a statement.
    proc = GaleneProcess(
        tmp_path_factory.mktemp("galene-shared"),
        conf={"gc_grace_seconds": "3600", "disable_auto_compaction": "true"},
    )
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def db(galene):
    """A fresh database for one test."""
    name = "t_" + uuid.uuid4().hex[:10]
    galene.query(f"CREATE DATABASE {name}")
    yield name
    galene.query(f"DROP DATABASE IF EXISTS {name}")

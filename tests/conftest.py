"""Shared fixtures: one standalone Galene per test process for the integration and e2e suites."""

from __future__ import annotations

import os
import sys
import uuid

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tests.galene_proc import GaleneProcess, default_engine


def pytest_addoption(parser):
    parser.addoption(
        "--galene-engine",
        choices=("spark", "sail"),
        default=None,
        help="query engine of the Galene processes the tests start (default: GALENE_ENGINE or spark)",
    )


# Files that use machine-wide resources run in one pytest-xdist worker, one after another:
# SeaweedFS always binds its admin ports 23646/33646, and the namespace tests add routes, qdiscs
# and iptables rules that must not meet another module's.
_EXCLUSIVE_FILES = {
    "tests/integration/test_streaming_jobs.py",
    "tests/integration/test_streaming_jobs_faults.py",
    "tests/integration/test_cluster_faults.py",
    "tests/unit/test_net.py",
}


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `make test`'s `-n N`, each test file runs whole on one worker (its module-scoped
    nodes start once, its tests keep their order), and the machine-wide files share one
    worker. (xdist's own `loadgroup` marks cannot do this under pytest 9.2, whose node ids no
    longer come from the attribute xdist rewrites.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "machine-wide" if path in _EXCLUSIVE_FILES else path

    return FileScheduling(config, log)


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


@pytest.fixture(scope="module")
def galene_on_sail(tmp_path_factory, request):
    """The shared Galene's settings on Sail, for a module that reruns a Spark module's tests
    there (it overrides `galene` with this); skipped when the whole run is on Sail already."""
    if default_engine() == "sail":
        pytest.skip(f"the whole run is on Sail already: {request.module.__name__} only reruns Spark tests on Sail")
    proc = GaleneProcess(
        tmp_path_factory.mktemp("galene-sail"),
        conf={"gc_grace_seconds": "3600", "disable_auto_compaction": "true"},
        engine="sail",
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

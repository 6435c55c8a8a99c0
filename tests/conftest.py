"""Shared fixtures: one standalone Galene per test process for the integration and e2e suites,
and the module's SeaweedFS for the tests that read S3. The harness itself is tests/support/."""

from __future__ import annotations

import os
import sys
import uuid

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tests.support import schedule
from tests.support.node import GaleneProcess, default_engine
from tests.support.seaweed import SeaweedS3


def pytest_addoption(parser):
    parser.addoption(
        "--galene-engine",
        choices=("spark", "sail"),
        default=None,
        help="query engine of the Galene processes the tests start (default: GALENE_ENGINE or spark)",
    )
    parser.addoption(
        "--module-times",
        action="store_true",
        help="print each test file's wall time, worker and span, and when each worker finished",
    )
    parser.addoption("--module-times-file", default=None, help="also write them to this JSON file")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `make test`'s `-n N`: each test file whole on one worker, the longest first
    (tests/support/schedule.py)."""
    return schedule.make_scheduler(config, log)


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.pluginmanager.register(schedule.ModuleTimes(config), "galene-module-times")
    # The harness (tests/support/node.py) reads GALENE_ENGINE, so processes started outside
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


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """A SeaweedFS S3 server of the module's own (tests/support/seaweed.py)."""
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs")).start()
    try:
        yield server
    finally:
        server.stop()

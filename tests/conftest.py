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

"""The Spark driver's class-data archive (galene/engine/class_archive.py): `make` builds it,
every Spark driver Galene launches maps it, and a missing or foreign one changes nothing."""

from __future__ import annotations

from pathlib import Path

from galene.engine import class_archive
from galene.engine.session import SparkEngine
from tests.support.node import TEST_DRIVER_JAVA_OPTIONS
from tests.support.procs import children_of


def test_driver_conf_adds_the_archive_after_the_deployments_own_options(monkeypatch, tmp_path):
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x")
    monkeypatch.setattr(class_archive, "archive_path", lambda: archive)
    monkeypatch.delenv("GALENE_JVM_CLASS_ARCHIVE", raising=False)
    out = class_archive.driver_conf({"spark.driver.extraJavaOptions": "-Dgalene.x=1", "a": "b"})
    options = out["spark.driver.extraJavaOptions"]
    assert options.startswith("-Dgalene.x=1 ") and f"-XX:SharedArchiveFile={archive}" in options
    assert out["a"] == "b"


def test_driver_conf_leaves_conf_alone_when_off_missing_or_chosen(monkeypatch, tmp_path):
    archive = tmp_path / "spark.jsa"
    monkeypatch.setattr(class_archive, "archive_path", lambda: archive)
    conf = {"spark.driver.memory": "1g"}
    assert class_archive.driver_conf(conf) == conf  # not built
    archive.write_bytes(b"x")
    monkeypatch.setenv("GALENE_JVM_CLASS_ARCHIVE", "off")
    assert class_archive.driver_conf(conf) == conf
    monkeypatch.delenv("GALENE_JVM_CLASS_ARCHIVE")
    own = {"spark.driver.extraJavaOptions": "-XX:SharedArchiveFile=/elsewhere.jsa"}
    assert class_archive.driver_conf(own) == own


def _jvm_command_line(engine: SparkEngine) -> str:
    pid = engine.jvm_pid()
    assert pid is not None
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_the_built_archive_is_mapped_by_a_started_spark_and_a_foreign_one_is_ignored(monkeypatch, tmp_path):
    path = class_archive.archive_path()
    assert path is not None and path.is_file(), f"`make` builds {path} (python -m galene.engine.class_archive_build)"
    monkeypatch.delenv("GALENE_JVM_CLASS_ARCHIVE", raising=False)
    engine = SparkEngine("local[1]", conf={"spark.driver.memory": "512m"})
    try:
        engine.start()
        assert f"-XX:SharedArchiveFile={path}" in _jvm_command_line(engine)
        maps = Path(f"/proc/{engine.jvm_pid()}/maps").read_text()
        assert str(path) in maps  # the JVM accepted it: its pages are mapped
        assert engine.spark().sql("SELECT 40 + 2 AS x").toArrow().to_pylist() == [{"x": 42}]
    finally:
        engine.stop()
    # An archive the JVM refuses (another build, damaged): the start goes on without it.
    foreign = tmp_path / "foreign.jsa"
    foreign.write_bytes(b"not an archive" * 100)
    monkeypatch.setattr(class_archive, "archive_path", lambda: foreign)
    engine = SparkEngine("local[1]", conf={"spark.driver.memory": "512m"})
    try:
        engine.start()
        assert str(foreign) not in Path(f"/proc/{engine.jvm_pid()}/maps").read_text()
        assert engine.spark().sql("SELECT 1 AS x").toArrow().to_pylist() == [{"x": 1}]
    finally:
        engine.stop()


def test_no_java_means_no_archive(monkeypatch):
    monkeypatch.setenv("JAVA_HOME", "/nonexistent-java-home")
    assert class_archive.archive_path() is None
    assert class_archive.driver_conf({"k": "v"}) == {"k": "v"}


def test_a_started_galene_launches_its_spark_driver_with_the_archive_and_its_java_options(galene):
    """Through fe.conf (`spark_driver_java_options`, set by the harness) and `make`'s archive:
    the FE's driver JVM is started with both."""
    galene.query("SELECT 1")  # the engine is up
    fe = galene.role_pid("fe")
    drivers = []
    for pid in children_of(fe):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "SparkSubmit" in argv:
            drivers.append(argv)
    assert len(drivers) == 1, drivers
    assert TEST_DRIVER_JAVA_OPTIONS in drivers[0]
    assert f"-XX:SharedArchiveFile={class_archive.archive_path()}" in drivers[0]

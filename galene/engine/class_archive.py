"""The Spark driver JVM's class-data archive: the classes a Spark start loads, parsed once.

A Spark driver JVM loads and verifies some ten thousand classes before its first query; that is
most of a start's CPU (about 21 CPU-seconds on a busy 2-core box, for `SELECT 1`). A dynamic
class-data-sharing archive (JDK 13+: `-XX:ArchiveClassesAtExit` once, `-XX:SharedArchiveFile`
afterwards) maps those classes already parsed and verified: the same start then takes about
11 CPU-seconds and half the wall time, and the pages are shared by every Galene JVM on the host.

The archive is built once per installation (`python -m galene.engine.class_archive_build`,
run by `make`), next to the PySpark it was made from, keyed by the PySpark version and the `java`
binary. The JVM checks the rest itself (its own build, the class path): an archive that does
not match is ignored and the JVM loads its classes as usual, so a stale archive costs only the
speed-up. `GALENE_JVM_CLASS_ARCHIVE=off` starts without it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import sys
from pathlib import Path

log = logging.getLogger(__name__)

ARCHIVE_DIR = "galene-jvm"
# The JVM says nothing about the archive (a mismatch only means classes load as usual).
QUIET_OPTIONS = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"


def _java_binary() -> str | None:
    """The `java` PySpark launches: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def archive_path() -> Path | None:
    """Where this installation's archive is (whether or not it exists); None without Java."""
    import pyspark

    java = _java_binary()
    if java is None:
        return None
    key = hashlib.sha256(java.encode()).hexdigest()[:10]
    # Resolved: the JVM maps (and /proc lists) the real path, whatever links lead to it.
    return Path(sys.prefix).resolve() / ARCHIVE_DIR / f"spark-{pyspark.__version__}-{key}.jsa"


def driver_conf(conf: dict[str, str]) -> dict[str, str]:
    """`conf` with the driver JVM told to map the archive, when there is one (appended to any
    driver options `conf` already has)."""
    if os.environ.get("GALENE_JVM_CLASS_ARCHIVE", "").lower() in ("off", "0", "false"):
        return conf
    path = archive_path()
    if path is None or not path.is_file():
        return conf
    options = f"-XX:SharedArchiveFile={path} {QUIET_OPTIONS}"
    current = conf.get(DRIVER_OPTIONS, "").strip()
    if "SharedArchiveFile" in current or "ArchiveClassesAtExit" in current:
        return conf  # the deployment chose its own archive
    return {**conf, DRIVER_OPTIONS: f"{current} {options}".strip()}

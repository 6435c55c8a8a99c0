"""Builds the Spark driver's class-data archive (galene/engine/class_archive.py says what it is
and how drivers use it): `python -m galene.engine.class_archive_build [--force]`, run by `make`."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

from galene.engine import class_archive
from galene.engine.class_archive import DRIVER_OPTIONS, QUIET_OPTIONS
from galene.engine.session import SparkEngine


def _exercise(spark, work: Path) -> None:
    """What a Galene driver does, so that its classes are in the archive: Parquet written and
    read back, temporary views, joins, aggregates, windows, sorts, Arrow results, Python UDFs
    over Arrow (mapInArrow)."""
    path = str(work / "t.parquet")
    spark.range(20000).selectExpr(
        "id AS k", "CAST(id % 97 AS INT) AS g", "CAST(id AS DECIMAL(20, 2)) AS price",
        "CAST(id AS STRING) AS s", "TIMESTAMP '2024-01-01 00:00:00' AS ts", "DATE '2024-01-01' AS d",
    ).write.mode("overwrite").parquet(path)  # fmt: skip
    spark.read.parquet(path).createOrReplaceTempView("a")
    spark.sql(
        "SELECT a.g, COUNT(*) AS n, SUM(a.price) AS p, MAX(b.s) AS s, "
        "ROW_NUMBER() OVER (ORDER BY a.g) AS r FROM a JOIN a b ON a.k = b.k "
        "WHERE a.s LIKE '1%' GROUP BY a.g ORDER BY a.g"
    ).toArrow()
    spark.sql("SELECT DISTINCT g FROM a UNION ALL SELECT 1").collect()
    spark.read.parquet(path).mapInArrow(lambda batches: batches, "k long, g int, price decimal(20,2), "
                                        "s string, ts timestamp, d date").count()  # fmt: skip
    spark.catalog.dropTempView("a")


def build(path: Path | None = None) -> Path | None:
    """Write the archive (a Spark driver started with `-XX:ArchiveClassesAtExit`, run through
    a representative workload, stopped cleanly: the JVM writes the archive as it exits).
    Returns the path, or None when there is no Java. Written aside and renamed into place."""
    path = path or class_archive.archive_path()
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    with tempfile.TemporaryDirectory(prefix="galene-cds-") as work:
        engine = SparkEngine(
            "local[2]",
            conf={"spark.driver.memory": "1g", DRIVER_OPTIONS: f"-XX:ArchiveClassesAtExit={partial} {QUIET_OPTIONS}"},
            work_dir=work,
        )
        spark = engine.spark()
        _exercise(spark, Path(work))
        engine.stop(exit_wait_s=600)  # the JVM writes the archive as it exits: let it finish
    if not partial.is_file():
        raise RuntimeError(f"the Spark JVM exited without writing its class archive {partial}")
    os.replace(partial, path)
    for old in path.parent.glob("spark-*.jsa"):  # another PySpark's or java's: never mapped again
        if old != path:
            old.unlink(missing_ok=True)
    return path


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    path = class_archive.archive_path()
    if path is None:
        print("no java: the Spark class archive is not built")
        return 0
    if path.is_file() and "--force" not in sys.argv:
        return 0
    try:
        print(f"built the Spark class archive {build(path)}")
    except Exception as e:  # noqa: BLE001 - an installation without it only starts slower
        print(f"warning: the Spark class archive could not be built ({e}); Spark starts without it")
    return 0


if __name__ == "__main__":
    sys.exit(main())

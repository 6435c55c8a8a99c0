"""MariaDB Connector/J (what Metabase and many BI tools use), unchanged and with its default
options, against a real Galene: connect, DatabaseMetaData, prepared statements (client-side, the
default, and server-side), a 200k-row fetch. The client program is tests/clients/java/JdbcFlow.java,
compiled here with javac (once per source version) and run with `java -cp`."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

CONNECTOR_J = Path("/usr/share/java/mariadb-java-client.jar")
SOURCE = Path(__file__).resolve().parents[1] / "clients" / "java" / "JdbcFlow.java"
BIG_ROWS = 200_000


def _compiled() -> Path:
    """The class directory for JdbcFlow.java, compiled once per source hash."""
    if not CONNECTOR_J.exists():
        pytest.skip(f"MariaDB Connector/J not installed ({CONNECTOR_J}: Debian libmariadb-java)")
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"galene-jdbcflow-{digest}"
    if not (out / "JdbcFlow.class").exists():
        build = Path(tempfile.mkdtemp(prefix="jdbcflow-build-"))
        subprocess.run(
            ["javac", "-cp", str(CONNECTOR_J), "-d", str(build), str(SOURCE)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        try:
            build.rename(out)
        except OSError:  # another test process compiled it first
            shutil.rmtree(build, ignore_errors=True)
    return out


def run_flow(galene, db: str, options: str = "") -> tuple[dict[str, list], dict[str, list[list[str]]]]:
    """Run JdbcFlow; ({step: ["OK"] | ["FAIL", errno, message]}, {step: rows})."""
    classes = _compiled()
    url = f"jdbc:mariadb://127.0.0.1:{galene.query_port}/{db}?user=root&password="
    if options:
        url += "&" + options
    proc = subprocess.run(
        ["java", "-cp", f"{CONNECTOR_J}:{classes}", "JdbcFlow", url, db],
        check=False, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    steps: dict[str, list] = {}
    rows: dict[str, list[list[str]]] = {}
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "STEP":
            steps[parts[1]] = parts[2:]
        elif parts[0] == "ROW":
            rows.setdefault(parts[1], []).append([None if v == "\\N" else v for v in parts[2:]])
    assert "connect" in steps, f"JdbcFlow did not run:\n{proc.stdout}\n{proc.stderr}"
    return steps, rows


@pytest.fixture
def bi_db(galene, db):
    galene.query(
        "CREATE TABLE prices (k INT NOT NULL, name VARCHAR(64), price DECIMAL(10, 2)) "
        "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    galene.query(
        "INSERT INTO prices VALUES (1, 'one', 1.50), (2, 'nobody''s', NULL), (3, 'tr\u00e8s cher', 99999.99)", db
    )
    galene.query("CREATE TABLE big (id BIGINT, label VARCHAR(16)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 4", db)
    ids = pa.array(range(BIG_ROWS), pa.int64())
    labels = pa.compute.binary_join_element_wise("row-", pa.compute.cast(ids, pa.string()), "")
    body = pa.BufferOutputStream()
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    pacsv.write_csv(pa.table({"id": ids, "label": labels}), body, options)
    galene.stream_load(db, "big", body.getvalue().to_pybytes(), {"column_separator": ","})
    return db


def _assert_flow(steps, rows) -> None:
    failed = {k: v for k, v in steps.items() if v[0] != "OK"}
    assert not failed, failed
    assert rows["product"] == [["MySQL", "5.7.99", "5", "7"]]  # the handshake's server version
    assert "information_schema" in [r[0] for r in rows["catalogs"]]
    assert "schemas" in steps  # MySQL has no schemas: an empty result, but no error
    assert ["prices", "TABLE"] in rows["tables"] and ["big", "TABLE"] in rows["tables"]
    # COLUMN_NAME, TYPE_NAME, DATA_TYPE (java.sql.Types), COLUMN_SIZE, DECIMAL_DIGITS, NULLABLE,
    # ORDINAL_POSITION. NULLABLE is Connector/J's `IF(IS_NULLABLE = 'yes', 1, 0)`: Doris compares
    # strings case-sensitively, so 0 for every column, as on Doris.
    assert rows["columns"] == [
        ["k", "INT", "4", "10", "0", "0", "1"],
        ["name", "VARCHAR", "12", "64", None, "0", "2"],
        ["price", "DECIMAL", "3", "10", "2", "0", "3"],
    ]
    # Doris lists key columns as COLUMN_KEY 'UNI'/'DUP'/'AGG' and no STATISTICS rows: no primary key.
    assert "primary_keys" not in rows and "index_info" not in rows
    assert rows["prepared_select"] == [["2", "nobody's", None], ["3", "tr\u00e8s cher", "99999.99"]]
    assert rows["prepared_select_again"] == [["3", "tr\u00e8s cher", "99999.99"]]
    assert rows["prepared_select_quote"] == [["2"]]
    assert rows["prepared_insert"] == [["10", 'ten\'s "quoted" \u00e9t\u00e9', "10.05"], ["11", None, None]]
    count, total, chars = (int(v) for v in rows["big_fetch"][0])
    assert (count, total) == (BIG_ROWS, BIG_ROWS * (BIG_ROWS - 1) // 2)
    assert chars == sum(len(f"row-{i}") for i in range(BIG_ROWS))


def test_connector_j_default_options(galene, bi_db):
    """Connector/J 2.7 connects with `set autocommit=1, sql_mode = concat(@@sql_mode,
    ',STRICT_TRANS_TABLES')`; DatabaseMetaData reads information_schema with DUAL and CAST(… AS
    UNSIGNED); client-side prepared statements (useServerPrepStmts=false, the default)."""
    steps, rows = run_flow(galene, bi_db)
    _assert_flow(steps, rows)


def test_connector_j_server_prepared_statements(galene, bi_db):
    steps, rows = run_flow(galene, bi_db, "useServerPrepStmts=true")
    _assert_flow(steps, rows)

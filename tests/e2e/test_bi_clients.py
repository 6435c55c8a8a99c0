"""Client libraries that read errors, labels and versions, unchanged, against a real Galene:
SQLAlchemy's MySQL dialect (has_table, create_all) under pandas `to_sql`/`read_sql` and polars
`write_database`/`read_database`, connectorx, DorisClient's `DorisMeta`, and the version
strings tools parse. (MariaDB Connector/J: test_jdbc.py; doris-mcp-server: test_doris_mcp.py.)"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from decimal import Decimal

import httpx
import pymysql
import pytest
import sqlalchemy as sa

from tests.support.client import auth_header

MESSY = [
    # id, name, price (DECIMAL(10, 2)), ratio (DOUBLE), seen
    (1, "plain", Decimal("19.99"), 0.1, datetime(2024, 1, 2, 3, 4, 5)),
    (2, None, None, None, None),
    (3, "caf\u00e9 \u2615 \U0001f600", Decimal("0.01"), -2.5, datetime(1999, 12, 31, 23, 59, 59)),
    (4, "it's \"quoted\", with\ttab", Decimal("-12345678.90"), 1e-9, datetime(2024, 2, 29, 0, 0, 0)),
    (5, "", Decimal("0.00"), 0.0, datetime(2024, 6, 30, 12, 0, 0)),
]


def _url(galene, db: str) -> str:
    return f"mysql+pymysql://root:@127.0.0.1:{galene.query_port}/{db}?charset=utf8mb4"


@pytest.fixture
def engine(galene, db):
    eng = sa.create_engine(_url(galene, db))
    yield eng
    eng.dispose()


# --- errors: a missing table -----------------------------------------------------------------
def test_show_statements_on_a_missing_table_answer_errno_1051(galene, db):
    """Doris' getTableOr{Analysis,Ddl}Exception: ERR_BAD_TABLE_ERROR (1051) "Unknown table 'x'",
    still with `detailMessage = Unknown table` for the Doris dialects; a query's missing table
    stays 1105, an unknown database 1049."""
    bad = (1051, "errCode = 2, detailMessage = Unknown table 'missing'")
    with galene.mysql(db) as conn, conn.cursor() as cur:
        for sql in (
            f"DESCRIBE {db}.missing", "DESC missing", "SHOW COLUMNS FROM missing", f"SHOW FULL COLUMNS FROM missing FROM {db}",
            "SHOW CREATE TABLE missing", "SHOW CREATE VIEW missing", "SHOW PARTITIONS FROM missing",
            "SHOW INDEX FROM missing", "SHOW TABLETS FROM missing", "SHOW DATA FROM missing",
            "DESCRIBE information_schema.missing",
        ):  # fmt: skip
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute(sql)
            assert e.value.args == bad, sql
        with pytest.raises(pymysql.MySQLError) as e:
            cur.execute("SELECT * FROM missing")
        assert e.value.args[0] == 1105 and "detailMessage = Unknown table" in e.value.args[1]
        with pytest.raises(pymysql.MySQLError) as e:
            cur.execute("DESCRIBE no_such_db.missing")
        assert e.value.args[0] == 1049
        cur.execute("SELECT 1")  # the connection is still usable
        assert cur.fetchone() == (1,)


def test_sqlalchemy_has_table_and_create_all(galene, db, engine):
    """SQLAlchemy's MySQL dialect reads errno 1051 from `DESCRIBE` as "no such table"; its CREATE
    TABLE (no key model, no DISTRIBUTED BY) is accepted as Doris accepts it."""
    meta = sa.MetaData()
    items = sa.Table(
        "items", meta,
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(64)),
        sa.Column("price", sa.Numeric(10, 2)),
        sa.Column("ratio", sa.Float),
        sa.Column("seen", sa.DateTime),
    )  # fmt: skip
    inspector = sa.inspect(engine)
    assert inspector.has_table("items") is False
    meta.create_all(engine)  # checks first, then CREATE TABLE
    meta.create_all(engine)  # exists now: nothing to do
    assert sa.inspect(engine).has_table("items") is True
    with engine.begin() as conn:
        conn.execute(items.insert(), [dict(zip(("id", "name", "price", "ratio", "seen"), r)) for r in MESSY])
    with engine.connect() as conn:
        rows = conn.execute(sa.select(items).order_by(items.c.id)).all()
    assert [tuple(r) for r in rows] == MESSY
    create = galene.query("SHOW CREATE TABLE items", db)[0][1]
    assert "DUPLICATE KEY(`id`" in create and "DISTRIBUTED BY RANDOM BUCKETS AUTO" in create
    meta.drop_all(engine)
    assert sa.inspect(engine).has_table("items") is False


def test_pandas_to_sql_and_read_sql(galene, db, engine):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(MESSY, columns=["id", "name", "price", "ratio", "seen"])
    dtype = {"price": sa.Numeric(10, 2), "name": sa.String(64)}
    assert frame.to_sql("prices", engine, index=False, dtype=dtype) == len(MESSY)  # has_table, CREATE, INSERT
    frame.iloc[:2].assign(id=[6, 7]).to_sql("prices", engine, index=False, if_exists="append", dtype=dtype)
    back = pd.read_sql("SELECT id, name, price, ratio, seen FROM prices ORDER BY id", engine, coerce_float=False)
    assert back["id"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert back["name"].tolist()[:5] == [r[1] for r in MESSY]
    assert back["price"].tolist()[:5] == [r[2] for r in MESSY]
    assert back["ratio"].isna().tolist() == [False, True, False, False, False, False, True]
    assert back["seen"].iloc[0] == pd.Timestamp("2024-01-02 03:04:05") and pd.isna(back["seen"].iloc[1])
    frame.to_sql("prices", engine, index=False, if_exists="replace", dtype=dtype)  # DROP + CREATE
    assert galene.query("SELECT count(*) FROM prices", db) == [(len(MESSY),)]
    with pytest.raises(ValueError, match="already exists"):
        frame.to_sql("prices", engine, index=False)  # if_exists="fail" sees the table


def test_polars_write_and_read_database(galene, db, engine):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(
        {
            "id": [r[0] for r in MESSY],
            "name": [r[1] for r in MESSY],
            "ratio": [r[3] for r in MESSY],
            "seen": [r[4] for r in MESSY],
        }
    )
    url = _url(galene, db)
    assert frame.write_database("events", url) == len(MESSY)
    frame.head(2).with_columns(pl.col("id") + 10).write_database("events", url, if_table_exists="append")
    with engine.connect() as conn:
        back = pl.read_database("SELECT id, name, ratio, seen FROM events ORDER BY id", conn)
    assert back["id"].to_list() == [1, 2, 3, 4, 5, 11, 12]
    assert back["name"].to_list()[:5] == [r[1] for r in MESSY]
    assert back["ratio"].to_list()[:5] == [r[3] for r in MESSY]
    assert back["seen"].to_list()[:5] == [r[4] for r in MESSY]
    frame.write_database("events", url, if_table_exists="replace")
    assert galene.query("SELECT count(*) FROM events", db) == [(len(MESSY),)]


# --- connectorx ------------------------------------------------------------------------------
def test_connectorx_connects_and_reads(galene, db):
    """connectorx's MySQL source (the Rust `mysql` crate) reads @@max_allowed_packet and, on a
    loopback address, @@socket when it connects."""
    cx = pytest.importorskip("connectorx")
    galene.query(
        "CREATE TABLE t (id INT, name VARCHAR(64), price DECIMAL(10, 2), seen DATETIME) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
        db,
    )
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", [(r[0], r[1], r[2], r[4]) for r in MESSY])
    uri = f"mysql://root@127.0.0.1:{galene.query_port}/{db}"
    one = cx.read_sql(uri, "select 1", return_type="arrow")
    assert one.to_pylist() == [{"1": 1}]
    table = cx.read_sql(uri, "SELECT id, name, price, seen FROM t ORDER BY id", return_type="arrow")
    assert table.column("id").to_pylist() == [r[0] for r in MESSY]
    assert table.column("name").to_pylist() == [r[1] for r in MESSY]
    assert table.column("price").to_pylist() == [r[2] for r in MESSY]
    assert table.column("seen").to_pylist() == [r[4] for r in MESSY]


# --- result labels ---------------------------------------------------------------------------
def test_information_schema_columns_are_labelled_as_written(galene, db):
    """Doris (and MySQL 5.7) label a selected column as the query spells it; `*` gives the
    schema's names."""
    galene.query("CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    with galene.mysql(db, cursorclass=pymysql.cursors.DictCursor) as conn, conn.cursor() as cur:
        cur.execute(f"select table_schema, Table_Name from information_schema.tables where table_schema = '{db}'")
        assert list(cur.fetchall()) == [{"table_schema": db, "Table_Name": "t"}]
        cur.execute(f"SELECT TABLE_NAME, column_name FROM information_schema.COLUMNS WHERE table_schema = '{db}'")
        assert list(cur.fetchall()) == [{"TABLE_NAME": "t", "column_name": "k"}]
        cur.execute(f"select * from information_schema.schemata where schema_name = '{db}'")
        assert "SCHEMA_NAME" in cur.fetchone()
        cur.execute(  # read on the engine (mixed with a user table): the same labels
            f"select s.schema_name, t.k from information_schema.schemata s, t where s.schema_name = '{db}'"
        )
        assert [d[0] for d in cur.description] == ["schema_name", "k"]


# --- DorisClient ------------------------------------------------------------------------------
def test_dorisclient_meta_collects_metadata(galene, db):
    """DorisClient 1.2.22's DorisMeta: its meta tables, then SHOW CREATE TABLE / PARTITIONS /
    TABLETS / DATA per table and counts read by `row['table_schema']` from information_schema."""
    dorisclient = pytest.importorskip("DorisClient")
    user, password = f"meta_{uuid.uuid4().hex[:8]}", "Meta-pw1"
    galene.query(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
    galene.query(f"GRANT ADMIN_PRIV ON *.*.* TO '{user}'@'%'")
    shop = f"{db}_shop"
    galene.query(f"CREATE DATABASE {shop}")
    try:
        galene.query(
            "CREATE TABLE orders (id INT, name VARCHAR(20), amount DECIMAL(10, 2)) "
            "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
            shop,
        )
        galene.query("INSERT INTO orders VALUES (1, 'a', 1.50), (2, 'b', 2.50), (3, NULL, NULL)", shop)
        meta = dorisclient.DorisMeta(
            fe_servers=[f"127.0.0.1:{galene.http_port}"], database=db, user=user, passwd=password,
            mysql_port=galene.query_port,
        )  # fmt: skip
        meta.create_tables()
        meta.collect_table(database_name=shop)
        meta.collect_partition(database_name=shop)
        meta.collect_tablet(database_name=shop)
        meta.collect_size(database_name=shop)
        meta.collect_table_count(database_name=shop)
        meta.collect_materialized_view(database_name=shop)
        table = galene.query("SELECT database_name, table_name, model, bucket_num FROM meta_table", db)
        assert table == [(shop, "orders", "UNIQUE", 2)]
        assert galene.query("SELECT table_name, PartitionName FROM meta_partition", db) == [("orders", "orders")]
        assert galene.query("SELECT count(*) FROM meta_tablet", db) == [(2,)]
        assert galene.query("SELECT table_name FROM meta_size", db) == [("orders",)]
        counts = galene.query("SELECT database_name, table_name, real_table_rows FROM meta_table_count", db)
        assert counts == [(shop, "orders", 3)]
    finally:
        galene.query(f"DROP DATABASE IF EXISTS {shop}")
        galene.query(f"DROP USER IF EXISTS '{user}'@'%'")


# --- versions --------------------------------------------------------------------------------
DORIS_NODE_VERSION = re.compile(r"doris-\d+\.\d+\.\d+-[0-9a-f]{10}")


def test_version_strings_have_doris_shapes(galene):
    """What clients parse: the MySQL version 5.7.99 (handshake, @@version, VERSION()), and
    Doris' build version `doris-X.Y.Z-<hash>` in @@version_comment ("Doris version …") and in
    SHOW FRONTENDS / SHOW BACKENDS; Galene's own version only in free text
    (/api/fe_version_info's dorisBuildInfo)."""
    import galene as galene_package

    with galene.mysql() as conn, conn.cursor() as cur:
        assert conn.get_server_info() == "5.7.99"
        cur.execute("SELECT @@version, VERSION(), @@version_comment")
        version, function, comment = cur.fetchone()
        assert (version, function) == ("5.7.99", "5.7.99")
        assert comment.startswith("Doris version ") and DORIS_NODE_VERSION.fullmatch(comment[len("Doris version ") :])
        cur.execute("SHOW FRONTENDS")
        names = [d[0] for d in cur.description]
        assert DORIS_NODE_VERSION.fullmatch(dict(zip(names, cur.fetchone()))["Version"])
        cur.execute("SHOW BACKENDS")
        names = [d[0] for d in cur.description]
        backend = dict(zip(names, cur.fetchone()))
        assert backend["Version"] == comment[len("Doris version ") :]
    info = httpx.get(f"http://127.0.0.1:{galene.http_port}/api/fe_version_info", headers=auth_header()).json()
    fe = info["data"]["feVersionInfo"]
    assert f"{fe['dorisBuildVersion']}-{fe['dorisBuildShortHash']}" == backend["Version"]
    assert fe["dorisBuildInfo"] == f"Galene {galene_package.__version__}"
    assert httpx.get(f"http://127.0.0.1:{galene.http_port}/api/fe_version_info").status_code == 401

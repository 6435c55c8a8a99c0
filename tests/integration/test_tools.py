"""Real Doris tools, unchanged, against one real Galene (FE + BE + engine):

* SQLAlchemy 2 with the Doris dialect of `pydoris` (`doris://`, on mysqlclient): reflection of a
  table of every key model, a view and an index; CREATE TABLE from dialect options; Core and ORM
  inserts, selects, updates and deletes.
* pandas `DataFrame.to_sql` (index and all, as a user calls it) and `read_sql` / `read_sql_table`.
* pydoris' `DorisClient` with a user and password: stream load of CSV and JSON (its write path),
  the rows read back as that user through the dialect.
* dbt with `dbt-doris`: a project of seeds, a view, a table and an incremental UNIQUE KEY model
  (tests/dbt_project) — `dbt debug`, `dbt seed`, `dbt run` twice (the second merges), `dbt test`,
  run as the venv's `dbt` entry point with usage statistics off; the tables checked via pymysql.

The mariadb CLI's `\\s` and `-e "a; b; c"` are in test_metadata_tools.py.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pymysql
import pytest
import sqlalchemy as sa
from pydoris.doris_client import DorisClient
from sqlalchemy import orm

from tests.support.node import ROOT, GaleneProcess

DB = "tools"
DBT_PROJECT = ROOT / "tests" / "dbt_project"
DBT = Path(sys.executable).with_name("dbt")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    proc = GaleneProcess(tmp_path_factory.mktemp("tools"), conf={"disable_auto_compaction": "true"})
    proc.start()
    proc.query(f"CREATE DATABASE {DB}")
    yield proc
    proc.stop()


def run(node: GaleneProcess, sql: str, database: str | None = DB) -> list[tuple]:
    return node.query(sql, database)


def engine(node: GaleneProcess, user: str = "root", password: str = "", database: str = DB) -> sa.Engine:
    """The Doris dialect of pydoris (mysqlclient driver)."""
    auth = f"{user}:{password}" if password else user
    return sa.create_engine(f"doris://{auth}@127.0.0.1:{node.query_port}/{database}")


# --- SQLAlchemy: reflection -----------------------------------------------------------------------
def test_sqlalchemy_reflects_every_key_model_views_and_indexes(node):
    run(node, "CREATE TABLE dup (k INT NOT NULL COMMENT 'the key', s VARCHAR(10), d DATE, dt DATETIME(3), "
              "f DOUBLE, b BOOLEAN, big LARGEINT, INDEX idx_s (s) USING INVERTED COMMENT 'by s') "
              "DUPLICATE KEY(k) COMMENT 'duplicates' DISTRIBUTED BY HASH(k) BUCKETS 1")  # fmt: skip
    run(node, "CREATE TABLE uniq (id BIGINT NOT NULL, name STRING, amount DECIMAL(12, 3)) UNIQUE KEY(id) "
              "DISTRIBUTED BY HASH(id) BUCKETS 2")  # fmt: skip
    run(node, "CREATE TABLE agg (k1 INT, k2 VARCHAR(5), v1 BIGINT SUM DEFAULT '0', v2 INT MAX, v3 INT REPLACE) "
              "AGGREGATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 1")  # fmt: skip
    run(node, "CREATE VIEW dup_names AS SELECT k, s FROM dup")
    eng = engine(node)
    try:
        insp = sa.inspect(eng)
        assert DB in insp.get_schema_names()
        assert {"dup", "uniq", "agg"} <= set(insp.get_table_names())
        assert "dup_names" not in insp.get_table_names() and insp.get_view_names() == ["dup_names"]
        assert insp.has_table("uniq") and not insp.has_table("missing")

        def shape(table: str) -> list[tuple]:
            return [
                (c["name"], type(c["type"]).__name__, c["nullable"], c["default"])
                for c in insp.get_columns(table)
            ]

        assert shape("dup") == [
            ("k", "INTEGER", False, None), ("s", "VARCHAR", True, None), ("d", "DATE", True, None),
            ("dt", "DATETIME", True, None), ("f", "DOUBLE", True, None), ("b", "BOOLEAN", True, None),
            ("big", "LARGEINT", True, None),
        ]  # fmt: skip
        assert shape("uniq") == [("id", "BIGINT", False, None), ("name", "TEXT", True, None),
                                 ("amount", "DECIMAL", True, None)]  # fmt: skip
        amount = insp.get_columns("uniq")[2]["type"]
        assert (amount.precision, amount.scale) == (12, 3)
        assert shape("agg") == [("k1", "INTEGER", True, None), ("k2", "VARCHAR", True, None),
                                ("v1", "BIGINT", True, "0"), ("v2", "INTEGER", True, None),
                                ("v3", "INTEGER", True, None)]  # fmt: skip
        assert shape("dup_names") == [("k", "INTEGER", True, None), ("s", "VARCHAR", True, None)]
        for table in ("dup", "uniq", "agg"):
            assert insp.get_pk_constraint(table)["constrained_columns"] == []
        assert insp.get_indexes("dup") == [
            {"name": "idx_s", "column_names": ["s"], "unique": False, "type": "INVERTED"}
        ]
        assert insp.get_indexes("uniq") == []
        assert insp.get_table_comment("dup") == {"text": "duplicates"}
        assert "SELECT k, s FROM" in insp.get_view_definition("dup_names")
        # A Table reflected whole, then queried through it.
        dup = sa.Table("dup", sa.MetaData(), autoload_with=eng)
        assert [c.name for c in dup.columns] == ["k", "s", "d", "dt", "f", "b", "big"]
        assert [i.name for i in dup.indexes] == ["idx_s"]
        with eng.connect() as c:
            assert c.execute(sa.select(sa.func.count()).select_from(dup)).scalar() == 0
    finally:
        eng.dispose()


# --- SQLAlchemy: create, insert, select (Core and ORM) ------------------------------------------
class Base(orm.DeclarativeBase):
    pass


class Person(Base):
    __tablename__ = "people"
    __table_args__: ClassVar[dict] = {
        "pydoris_key_type": "UNIQUE",
        "pydoris_distributed_by": "HASH(`id`)",
        "pydoris_buckets": 2,
    }
    id: orm.Mapped[int] = orm.mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(20))
    score: orm.Mapped[float | None] = orm.mapped_column(sa.Float)


def test_sqlalchemy_create_insert_select_core_and_orm(node):
    md = sa.MetaData()
    items = sa.Table(
        "items", md,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("price", sa.Numeric(10, 2)),
        sa.Column("created", sa.DateTime),
        sa.Column("active", sa.Boolean),
        comment="catalog items",
        pydoris_key_type="UNIQUE", pydoris_distributed_by="HASH(`id`)", pydoris_buckets=2,
        pydoris_properties={"replication_num": "1"},
    )  # fmt: skip
    eng = engine(node)
    try:
        md.create_all(eng)
        md.create_all(eng)  # checkfirst: has_table sees it
        (create,) = run(node, "SHOW CREATE TABLE items")
        assert (
            "\nUNIQUE KEY(`id`)\nCOMMENT 'catalog items'\nDISTRIBUTED BY HASH(`id`) BUCKETS 2\n" in create[1]
        )
        assert "`price` decimal(10,2) NULL" in create[1] and "`active` boolean NULL" in create[1]
        rows = [
            {"id": 1, "name": "a", "price": Decimal("1.50"), "created": datetime.datetime(2024, 1, 1, 12), "active": True},
            {"id": 2, "name": "b", "price": Decimal("2.25"), "created": datetime.datetime(2024, 1, 2), "active": False},
            {"id": 3, "name": "c", "price": None, "created": None, "active": True},
        ]  # fmt: skip
        with eng.begin() as c:
            c.execute(items.insert(), rows)
            c.execute(
                items.insert().values(id=2, name="b2", price=Decimal("9.99"), active=True)
            )  # UNIQUE: replaces
        with eng.connect() as c:
            got = c.execute(sa.select(items).order_by(items.c.id)).all()
            assert [tuple(r) for r in got] == [
                (1, "a", Decimal("1.50"), datetime.datetime(2024, 1, 1, 12), 1),
                (2, "b2", Decimal("9.99"), None, 1),
                (3, "c", None, None, 1),
            ]
            q = sa.select(sa.func.count(), sa.func.sum(items.c.price)).where(items.c.active == sa.true())
            assert tuple(c.execute(q).one()) == (3, Decimal("11.49"))
            q = sa.select(items.c.name).where(items.c.id.in_([1, 3]), items.c.name.like("%a%"))
            assert c.execute(q).scalars().all() == ["a"]

        Base.metadata.create_all(eng)
        with orm.Session(eng) as s:
            s.add_all([Person(id=1, name="ada", score=1.5), Person(id=2, name="grace", score=None)])
            s.commit()
        with orm.Session(eng) as s:
            assert s.scalars(sa.select(Person.name).order_by(Person.id)).all() == ["ada", "grace"]
            grace = s.get(Person, 2)
            grace.score = 9.0  # an UPDATE of a UNIQUE KEY table; the ORM checks the matched row count
            s.commit()
            s.delete(s.get(Person, 1))
            s.commit()
        with orm.Session(eng) as s:
            assert [(p.id, p.name, p.score) for p in s.scalars(sa.select(Person))] == [(2, "grace", 9.0)]
    finally:
        eng.dispose()


# --- pandas ------------------------------------------------------------------------------------
def test_pandas_to_sql_and_read_sql_round_trip(node):
    frame = pd.DataFrame({
        "id": [1, 2, 3],
        "name": ["a", "b", None],
        "score": [1.5, 2.5, None],
        "ts": pd.to_datetime(["2024-01-01 00:00:00", "2024-01-02 03:04:05", None]),
        "flag": [True, False, True],
    })  # fmt: skip
    eng = engine(node)
    try:
        # As users call it: the index becomes a column with an index (CREATE INDEX) of its own.
        assert frame.to_sql("frame", eng, if_exists="replace") == 3
        assert frame.to_sql("frame", eng, if_exists="append") == 3
        assert run(node, "SHOW INDEX FROM frame")[0][2:5] == ("ix_frame_index", "", "index")
        back = pd.read_sql(
            sa.text("SELECT id, name, score, ts, flag FROM frame WHERE `index` = :i ORDER BY id"), eng,
            params={"i": 1},
        )  # fmt: skip
        assert back["id"].tolist() == [2, 2] and back["name"].tolist() == ["b", "b"]
        assert back["ts"].tolist() == [pd.Timestamp("2024-01-02 03:04:05")] * 2
        assert str(back["ts"].dtype) == "datetime64[ns]" and str(back["score"].dtype) == "float64"
        # read_sql_table reflects the table (the dialect's types: BOOLEAN reads back as bool).
        table = pd.read_sql_table("frame", eng)
        assert list(table.columns) == ["index", "id", "name", "score", "ts", "flag"] and len(table) == 6
        first = table.sort_values(["id", "index"]).drop_duplicates("id")
        assert first["name"].tolist() == ["a", "b", None] and first["flag"].tolist() == [True, False, True]
        assert first["score"].fillna(-1).tolist() == [1.5, 2.5, -1]
        # Replacing drops and recreates; index=False leaves the frame's columns alone.
        frame.to_sql("frame", eng, if_exists="replace", index=False)
        assert [r[0] for r in run(node, "SHOW COLUMNS FROM frame")] == ["id", "name", "score", "ts", "flag"]
        assert pd.read_sql("SELECT COUNT(*) AS n FROM frame", eng)["n"].tolist() == [3]
    finally:
        eng.dispose()


# --- DorisClient -------------------------------------------------------------------------------
def test_doris_client_loads_with_a_user_and_password(node, capsys):
    run(node, "CREATE TABLE scores (id INT NOT NULL, name VARCHAR(20), v DOUBLE) UNIQUE KEY(id) "
              "DISTRIBUTED BY HASH(id) BUCKETS 1")  # fmt: skip
    run(node, "CREATE USER 'loader'@'%' IDENTIFIED BY 'L0ad-er!'")
    run(node, f"GRANT LOAD_PRIV, SELECT_PRIV ON {DB}.scores TO 'loader'@'%'")
    client = DorisClient("127.0.0.1", str(node.http_port), "loader", "L0ad-er!")
    assert client.write(DB, "scores", "1,a,1.5\n2,b,2.5\n") is True  # CSV (its default options)
    client.options.set_json_format().set_auto_uuid_label()
    assert (
        client.write(DB, "scores", '{"id": 3, "name": "c", "v": 3.5}\n{"id": 1, "name": "A", "v": 9}\n')
        is True
    )
    client.options.set_csv_format("|").set_label("scores_3")
    assert client.write(DB, "scores", "4|d|4.5\n") is True
    assert client.write(DB, "scores", "4|d|4.5\n") is False  # the label is taken: Label Already Exists
    assert '"Label": "scores_3"' in capsys.readouterr().out  # DorisClient prints the reply of a load
    # The same user reads the rows back through the dialect, with its password.
    eng = engine(node, "loader", "L0ad-er!")
    try:
        with eng.connect() as c:
            rows = c.execute(sa.text("SELECT id, name, v FROM scores ORDER BY id")).all()
    finally:
        eng.dispose()
    assert [tuple(r) for r in rows] == [(1, "A", 9.0), (2, "b", 2.5), (3, "c", 3.5), (4, "d", 4.5)]


# --- dbt ---------------------------------------------------------------------------------------
def _dbt(args: list[str], profiles: Path, work: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DBT_TARGET_PATH": str(work / "target"),
        "DBT_LOG_PATH": str(work / "logs"),
        "NO_COLOR": "1",
    }
    cmd = [str(DBT), *args, "--profiles-dir", str(profiles), "--project-dir", str(DBT_PROJECT)]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_dbt_doris_project(node, tmp_path):
    run(node, "CREATE DATABASE dbt_shop", None)
    run(node, "CREATE USER 'dbt'@'%' IDENTIFIED BY 'Dbt-Pa55'", None)
    run(
        node,
        "GRANT SELECT_PRIV, LOAD_PRIV, ALTER_PRIV, CREATE_PRIV, DROP_PRIV ON dbt_shop.* TO 'dbt'@'%'",
        None,
    )
    (tmp_path / "profiles.yml").write_text(
        "galene:\n  target: dev\n  outputs:\n    dev:\n      type: doris\n      host: 127.0.0.1\n"
        f"      port: {node.query_port}\n      username: dbt\n      password: Dbt-Pa55\n"
        "      schema: dbt_shop\n      threads: 2\n"
    )
    for args in (["debug"], ["seed"], ["run"], ["run"], ["test"]):
        res = _dbt(args, tmp_path, tmp_path)
        assert res.returncode == 0, f"dbt {args[0]}:\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}"
        if args == ["debug"]:
            assert "All checks passed!" in res.stdout
        if args == ["test"]:
            assert "PASS=12 WARN=0 ERROR=0" in res.stdout, res.stdout[-2000:]
    # Every invocation ran with usage statistics off (nothing leaves the machine).
    runs = [
        line
        for line in (tmp_path / "logs" / "dbt.log").read_text().splitlines()
        if "running dbt with" in line
    ]
    assert len(runs) == 5 and all("'send_anonymous_usage_stats': 'False'" in line for line in runs)

    with pymysql.connect(host="127.0.0.1", port=node.query_port, user="dbt", password="Dbt-Pa55",
                         database="dbt_shop") as conn, conn.cursor() as cur:  # fmt: skip

        def rows(sql: str) -> list[tuple]:
            cur.execute(sql)
            return list(cur.fetchall())

        assert rows("SHOW FULL TABLES") == [
            ("customer_revenue", "BASE TABLE"), ("customers", "BASE TABLE"), ("order_updates", "BASE TABLE"),
            ("orders", "BASE TABLE"), ("orders_current", "BASE TABLE"), ("stg_customers", "VIEW"),
        ]  # fmt: skip
        # The seeds, with the column types dbt_project.yml gives them.
        assert rows("SELECT * FROM customers ORDER BY customer_id")[0] == (1, "Ada", "UK")
        assert rows("SELECT COUNT(*) FROM orders") == [(5,)]
        # The incremental model: the first run built the UNIQUE KEY table from `orders`, the second
        # merged `order_updates` into it (100 and 102 changed, 105 new).
        (create,) = rows("SHOW CREATE TABLE orders_current")
        assert "\nUNIQUE KEY(`order_id`)\n" in create[1]
        assert rows(
            "SELECT order_id, customer_id, status, amount, ordered_at FROM orders_current ORDER BY 1"
        ) == [
            (100, 1, "shipped", Decimal("10.50"), datetime.datetime(2024, 1, 1, 9, 0)),
            (101, 1, "shipped", Decimal("20.00"), datetime.datetime(2024, 1, 2, 10, 30)),
            (102, 2, "cancelled", Decimal("0.00"), datetime.datetime(2024, 1, 3, 11, 0)),
            (103, 3, "returned", Decimal("7.75"), datetime.datetime(2024, 1, 4, 12, 15)),
            (104, 4, "shipped", Decimal("100.00"), datetime.datetime(2024, 1, 5, 8, 45)),
            (105, 2, "placed", Decimal("42.00"), datetime.datetime(2024, 1, 6, 14, 0)),
        ]
        # The table model (rebuilt by the second run and swapped in) and the view under it.
        assert rows("SELECT * FROM customer_revenue ORDER BY customer_id") == [
            (1, "Ada", 2, Decimal("30.50")), (2, "Grace", 1, Decimal("5.25")),
            (3, "Linus", 1, Decimal("0.00")), (4, "Margaret", 1, Decimal("100.00")),
        ]  # fmt: skip
        assert rows("SELECT table_comment FROM information_schema.tables WHERE table_schema = 'dbt_shop' "
                    "AND table_name = 'customer_revenue'") == [("Orders and revenue per customer",)]  # fmt: skip
        assert rows("SELECT country, COUNT(*) FROM stg_customers GROUP BY country ORDER BY country") == [
            ("FI", 1), ("UK", 1), ("US", 2)]  # fmt: skip
        # No temporary or backup relation is left behind.
        assert not [t for (t,) in rows("SHOW TABLES") if "__dbt" in t]

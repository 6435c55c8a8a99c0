"""Schema objects on a real Galene through real clients: views in every statement kind, ALTER TABLE
schema changes on every key model (results against a model; no file rewritten), compaction after
them, table/column comments, RENAME and REPLACE WITH TABLE, async materialized views (build,
manual and scheduled refresh, mv_infos), and all of it after a checkpoint and a restart.

One node for the module; the restart test runs last and restarts it on the same data."""

from __future__ import annotations

import time

import pymysql
import pytest

from tests.support.node import GaleneProcess

DB = "so"
OTHER = "so2"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    # A small journal roll: images are written (and loaded at the restart) along the way.
    g = GaleneProcess(
        tmp_path_factory.mktemp("schema-objects"),
        conf={"gc_grace_seconds": "3600", "disable_auto_compaction": "true", "edit_log_roll_num": "40"},
    )
    g.start()
    g.query(f"CREATE DATABASE {DB}")
    g.query(f"CREATE DATABASE {OTHER}")
    yield g
    g.stop()


def q(node, sql: str, db: str = DB) -> list[tuple]:
    return node.query(sql, db)


def error(node, sql: str, db: str = DB) -> str:
    with pytest.raises(pymysql.MySQLError) as e:
        node.query(sql, db)
    return str(e.value.args[1])


def load(node, table: str, rows: list[tuple], columns: str | None = None) -> None:
    body = "".join(",".join("\\N" if v is None else str(v) for v in r) + "\n" for r in rows).encode()
    headers = {"column_separator": ","}
    if columns:
        headers["columns"] = columns
    reply = node.stream_load(DB, table, body, headers)
    assert reply["Status"] == "Success", reply


def wait_for(what: str, fn, timeout: float = 120):
    """Poll `fn` until it returns something true (a condition, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"not reached within {timeout}s: {what}")


# --- views ----------------------------------------------------------------------------------------
def test_views_in_every_statement_kind(node):
    q(node, "CREATE TABLE vt (k INT, g VARCHAR(5), n INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")
    q(node, "INSERT INTO vt VALUES (1,'x',10),(2,'x',20),(3,'y',30),(4,'z',NULL)")
    q(node, "CREATE VIEW v_agg AS SELECT g, count(*), sum(n) AS s FROM vt GROUP BY g")
    # A view over a view, with a column list and comments.
    q(
        node,
        "CREATE VIEW v_top (grp COMMENT 'the group', total) COMMENT 'top groups' AS SELECT g, s FROM v_agg WHERE s > 15",
    )
    assert q(node, "SELECT * FROM v_agg ORDER BY g") == [("x", 2, 30), ("y", 1, 30), ("z", 1, None)]
    assert q(node, "SELECT * FROM v_top ORDER BY grp") == [("x", 30), ("y", 30)]
    # Joins, aliases, subqueries and CTEs around views.
    assert q(
        node, "SELECT t.k, v.total FROM vt t JOIN v_top v ON t.g = v.grp WHERE t.k < 3 ORDER BY t.k"
    ) == [
        (1, 30),
        (2, 30),
    ]
    assert q(
        node,
        "WITH c AS (SELECT grp FROM v_top) SELECT count(*) FROM c, (SELECT * FROM v_agg) a WHERE a.g = c.grp",
    ) == [(2,)]
    # Views are listed, described and shown as Doris does.
    assert q(node, "SHOW TABLES") == [("v_agg",), ("v_top",), ("vt",)]  # (sorted, as Doris)
    assert ("v_top", "VIEW") in q(node, "SHOW FULL TABLES")
    assert q(node, "DESC v_top") == [
        ("grp", "VARCHAR(5)", "Yes", "false", None, ""),  # vt.g read unchanged: its type, as Doris
        ("total", "BIGINT", "Yes", "false", None, ""),
    ]
    [(name, text, charset, collation)] = q(node, "SHOW CREATE VIEW v_top")
    assert (name, charset, collation) == ("v_top", "utf8mb4", "utf8mb4_0900_bin")
    assert text == (
        "CREATE VIEW `v_top`\n(`grp` COMMENT 'the group',`total`)\n COMMENT 'top groups' AS "
        f"SELECT g, s FROM `internal`.`{DB}`.`v_agg` WHERE s > 15;"
    )
    assert q(node, "SHOW CREATE TABLE v_top")[0][1] == text
    # INSERT … SELECT, CTAS and UPDATE … FROM read views.
    q(node, "CREATE TABLE vt_copy AS SELECT * FROM v_top")
    q(node, "INSERT INTO vt_copy SELECT grp, total * 10 FROM v_top WHERE grp = 'x'")
    assert q(node, "SELECT * FROM vt_copy ORDER BY grp, total") == [("x", 30), ("x", 300), ("y", 30)]
    q(node, "CREATE TABLE vu (k INT, n INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    q(node, "INSERT INTO vu VALUES (1, 0), (2, 0), (3, 0)")
    q(node, "CREATE VIEW v_k AS SELECT k, n * 2 AS n2 FROM vt")
    q(node, "UPDATE vu SET n = v_k.n2 FROM v_k WHERE vu.k = v_k.k AND v_k.k > 1")
    assert q(node, "SELECT * FROM vu ORDER BY k") == [(1, 0), (2, 40), (3, 60)]
    # OR REPLACE / ALTER change what every reader sees; IF NOT EXISTS keeps the old one.
    q(node, "CREATE VIEW IF NOT EXISTS v_agg AS SELECT 1")
    q(node, "CREATE OR REPLACE VIEW v_agg AS SELECT g, count(*), sum(n) * 2 AS s FROM vt GROUP BY g")
    assert q(node, "SELECT * FROM v_top ORDER BY grp") == [("x", 60), ("y", 60)]
    q(node, "ALTER VIEW v_top AS SELECT g, s FROM v_agg WHERE g = 'y'")
    assert q(node, "SELECT * FROM v_top") == [("y", 60)]
    assert q(node, "SHOW CREATE VIEW v_top")[0][1].startswith(
        "CREATE VIEW `v_top`\n(`g`,`s`)\n COMMENT 'top groups' AS"
    )
    # A view's names resolve in its own database, whatever the session's.
    q(node, "CREATE TABLE vt (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", OTHER)
    assert q(node, f"SELECT * FROM {DB}.v_top", OTHER) == [("y", 60)]
    q(node, f"CREATE VIEW {OTHER}.v_other AS SELECT count(*) AS c FROM vt")  # session db: DB
    assert q(node, "SELECT * FROM v_other", OTHER) == [(4,)]
    # Doris' errors.
    assert "[OR REPLACE] and [IF NOT EXISTS] cannot used at the same time" in error(
        node, "CREATE OR REPLACE VIEW IF NOT EXISTS v_agg AS SELECT 1"
    )
    assert f"'{DB}.v_agg' is not TABLE. Use 'DROP VIEW {DB}.v_agg'." in error(node, "DROP TABLE v_agg")
    assert f"'{DB}.vt' is not VIEW. Use 'DROP TABLE {DB}.vt'." in error(node, "DROP VIEW vt")
    assert "Table 'vt' already exists" in error(node, "CREATE VIEW vt AS SELECT 1")
    assert "Unknown table" in error(node, "CREATE VIEW v_bad AS SELECT * FROM nowhere")
    assert "refers to itself" in error(node, "ALTER VIEW v_agg AS SELECT * FROM v_top")
    assert "View's SELECT and view's field list have different column counts" in error(
        node, "CREATE VIEW v_bad (a, b, c) AS SELECT 1, 2"
    )
    assert "Unknown table" in error(node, "INSERT INTO v_top VALUES ('a', 1)")
    # Renamed like a table; dropped.
    q(node, "ALTER TABLE v_top RENAME v_top2")
    assert q(node, "SELECT * FROM v_top2") == [("y", 60)]
    q(node, "DROP VIEW v_top2")
    q(node, "DROP VIEW IF EXISTS v_top2")
    assert "Unknown table" in error(node, "DROP VIEW v_top2")


# --- schema change ----------------------------------------------------------------------------
class Model:
    """What a table of one key model holds, as Doris defines it: rows by key for UNIQUE (last
    load wins) and AGGREGATE (n SUM, w REPLACE, c MAX), every row for DUPLICATE."""

    def __init__(self, keys_type: str):
        self.keys_type = keys_type
        self.columns = ["k", "v", "n"]
        self.rows: list[dict] = []

    def load(self, rows: list[dict]) -> None:
        for r in rows:
            row = {c: r.get(c) for c in self.columns}
            same = [old for old in self.rows if old["k"] == row["k"]]
            if self.keys_type == "DUP" or not same:
                self.rows.append(row)
            elif self.keys_type == "UNIQUE":
                same[0].update(row)
            else:
                old = same[0]
                for c in self.columns[1:]:
                    if c == "n":
                        old[c] = (old[c] or 0) + (row[c] or 0) if (old[c], row[c]) != (None, None) else None
                    elif c == "c":
                        old[c] = (
                            max(x for x in (old[c], row[c]) if x is not None)
                            if (old[c], row[c]) != (None, None)
                            else None
                        )
                    else:
                        old[c] = row[c]

    def add(self, name: str, default) -> None:
        self.columns.append(name)
        for r in self.rows:
            r[name] = default

    def rename(self, old: str, new: str) -> None:
        self.columns[self.columns.index(old)] = new
        for r in self.rows:
            r[new] = r.pop(old)

    def drop(self, name: str) -> None:
        self.columns.remove(name)
        for r in self.rows:
            del r[name]

    def expected(self) -> list[tuple]:
        return sorted(tuple(r[c] for c in self.columns) for r in self.rows)


@pytest.mark.parametrize("keys_type", ["DUP", "UNIQUE", "AGG"])
def test_schema_change_reads_old_rowsets_without_rewriting_them(node, keys_type):
    t = f"sc_{keys_type.lower()}"
    model = Model(keys_type)
    decl = {
        "DUP": "(k INT, v VARCHAR(8), n INT) DUPLICATE KEY(k)",
        "UNIQUE": "(k INT, v VARCHAR(8), n INT) UNIQUE KEY(k)",
        "AGG": "(k INT, v VARCHAR(8) REPLACE, n INT SUM) AGGREGATE KEY(k)",
    }[keys_type]
    agg = keys_type == "AGG"
    q(node, f"CREATE TABLE {t} {decl} DISTRIBUTED BY HASH(k) BUCKETS 2")

    def check() -> None:
        assert sorted(q(node, f"SELECT * FROM {t}")) == model.expected()

    def alter(clause: str, change=None) -> None:
        files = node.data_files()
        q(node, f"ALTER TABLE {t} {clause}")
        assert node.data_files() == files  # no file rewritten (nor written)
        if change is not None:
            change()
        check()

    load(node, t, [(1, "a", 10), (2, "b", 20)])  # the BE's load path
    model.load([{"k": 1, "v": "a", "n": 10}, {"k": 2, "v": "b", "n": 20}])
    q(node, f"INSERT INTO {t} VALUES (3, 'c', 30)")  # the engine's write path
    model.load([{"k": 3, "v": "c", "n": 30}])
    check()
    alter(
        "ADD COLUMN c INT " + ("MAX " if agg else "") + "DEFAULT '5' COMMENT 'added'",
        lambda: model.add("c", 5),
    )
    q(node, f"INSERT INTO {t} VALUES (2, 'B', 1, 7), (4, 'd', 40, 8)")
    model.load([{"k": 2, "v": "B", "n": 1, "c": 7}, {"k": 4, "v": "d", "n": 40, "c": 8}])
    alter("RENAME COLUMN v w", lambda: model.rename("v", "w"))
    load(node, t, [(9, 1, "E", 5)], columns="c,k,w,n")  # loads name today's columns
    model.load([{"k": 1, "w": "E", "n": 5, "c": 9}])
    check()
    alter("MODIFY COLUMN n BIGINT" + (" SUM" if agg else ""))
    alter("MODIFY COLUMN w VARCHAR(16)" + (" REPLACE" if agg else ""))
    q(node, f"INSERT INTO {t} (k, w, n, c) VALUES (5, 'a long value', 5000000000, 1)")
    model.load([{"k": 5, "w": "a long value", "n": 5000000000, "c": 1}])
    check()
    alter("DROP COLUMN c", lambda: model.drop("c"))
    # A new column named as a dropped one: old rows read its default, not the old values.
    alter(
        "ADD COLUMN c VARCHAR(4) " + ("REPLACE " if agg else "") + "DEFAULT 'new'",
        lambda: model.add("c", "new"),
    )
    # Compaction merges rowsets of several schema versions into today's schema.
    q(node, f"ADMIN COMPACT TABLE {t} PARTITION {t} WHERE TYPE = 'BASE'")
    check()
    assert [r[0] for r in q(node, f"DESC {t}")] == ["k", "w", "n", "c"]
    assert "`n` bigint" in q(node, f"SHOW CREATE TABLE {t}")[0][1]


def test_schema_change_errors_and_comments(node):
    q(node, "CREATE TABLE se (k INT, d DATE, v VARCHAR(10), s INT) UNIQUE KEY(k, d) "
            "PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ('2030-01-01')) DISTRIBUTED BY HASH(k) BUCKETS 1 "
            "PROPERTIES ('function_column.sequence_col' = 's')")  # fmt: skip
    cases = {
        "DROP COLUMN k": "Can not drop key column in Unique data model table",
        "DROP COLUMN s": "Can not drop sequence mapping column[s] in Unique data model table[se]",
        "DROP COLUMN nope": "Column does not exists: nope",
        "MODIFY COLUMN v VARCHAR(5)": "Cannot shorten string length",
        "MODIFY COLUMN s BIGINT": "Can not alter sequence column[s]",
        "MODIFY COLUMN k BIGINT": "Can not modify distribution column[k]. index[se]",
        "MODIFY COLUMN d DATETIME": "Can not modify partition column[d]. index[se]",
        "MODIFY COLUMN v INT": "Can not change VARCHAR to INT",
        "MODIFY COLUMN v VARCHAR(10) NOT NULL": "Can not change from nullable to non-nullable",
        "ADD COLUMN v INT": "Can not add column which already exists in base table: v",
        "ADD COLUMN x INT SUM": "Can not assign aggregation method on column in Unique data model table: x",
        "RENAME COLUMN v s": "Column name[s] is already used",
        "RENAME COLUMN aaa bbb": "Column[aaa] does not exists",
        "RENAME COLUMN v v": "Same column name",
    }
    for clause, text in cases.items():
        assert text in error(node, f"ALTER TABLE se {clause}"), clause
    q(node, "ALTER TABLE se MODIFY COMMENT 'the table', MODIFY COLUMN v COMMENT 'the v'")
    text = q(node, "SHOW CREATE TABLE se")[0][1]
    assert "\nCOMMENT 'the table'" in text and '`v` varchar(10) NULL COMMENT "the v"' in text
    assert ("v", "varchar(10)", "", "YES", "NO", None, "", "", "the v") in q(
        node, "SHOW FULL COLUMNS FROM se"
    )


def test_rename_and_replace_with_table(node):
    q(node, "CREATE TABLE ra (k INT, v INT) UNIQUE KEY(k) COMMENT 'a' DISTRIBUTED BY HASH(k) BUCKETS 1")
    q(node, "CREATE TABLE rb (k INT, v INT, w INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    q(node, "INSERT INTO ra VALUES (1, 1)")
    q(node, "INSERT INTO rb VALUES (2, 2, 2)")
    q(node, "ALTER TABLE ra REPLACE WITH TABLE rb PROPERTIES('swap' = 'true')")
    assert q(node, "SELECT * FROM ra") == [(2, 2, 2)] and q(node, "SELECT * FROM rb") == [(1, 1)]
    assert "COMMENT 'a'" in q(node, "SHOW CREATE TABLE rb")[0][1]
    # dbt-doris' table materialization: build aside, swap in without keeping the old one.
    q(node, "CREATE TABLE ra__dbt_tmp AS SELECT k, v * 10 AS v FROM rb")
    q(node, "ALTER TABLE ra REPLACE WITH TABLE ra__dbt_tmp PROPERTIES('swap' = 'False')")
    assert q(node, "SELECT * FROM ra") == [(1, 10)]
    assert "Unknown table" in error(node, "SELECT * FROM ra__dbt_tmp")
    assert ("ra__dbt_tmp",) not in q(node, "SHOW TABLES")
    # RENAME: ALTER TABLE … RENAME and MySQL's RENAME TABLE; Doris' errors.
    q(node, "ALTER TABLE ra RENAME rc")
    q(node, "RENAME TABLE rc TO rd")
    assert q(node, "SELECT * FROM rd") == [(1, 10)]
    assert "Table 'rb' already exists" in error(node, "ALTER TABLE rd RENAME rb")
    assert "Same table name" in error(node, "ALTER TABLE rd RENAME rd")
    assert "Unknown table" in error(node, "ALTER TABLE nowhere REPLACE WITH TABLE rd")


# --- materialized views ---------------------------------------------------------------------------
def mv_info(node, name: str) -> dict:
    rows = q(node, f'SELECT * FROM mv_infos("database"="{DB}") WHERE Name = \'{name}\'')
    cols = ["Id", "Name", "JobName", "State", "SchemaChangeDetail", "RefreshState", "RefreshInfo", "QuerySql",
            "EnvInfo", "MvProperties", "MvPartitionInfo", "SyncWithBaseTables", "LastRefreshStartTime",
            "LastRefreshFinishTime", "LastRefreshErrorMsg", "RefreshCount"]  # fmt: skip
    return dict(zip(cols, rows[0], strict=True)) if rows else {}


def refreshed(node, name: str, count: int) -> dict:
    def done():
        info = mv_info(node, name)
        assert info.get("RefreshState") != "FAIL", info
        return info if info.get("RefreshCount", 0) >= count and info["RefreshState"] == "SUCCESS" else None

    return wait_for(f"{name} refreshed {count} times", done)


def test_materialized_views_build_refresh_and_schedule(node):
    q(node, "CREATE TABLE mb (k INT, g VARCHAR(5), n INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")
    q(node, "INSERT INTO mb VALUES (1,'x',10),(2,'x',20),(3,'y',30)")
    q(node, "CREATE VIEW mb_view AS SELECT g, n FROM mb WHERE n > 0")
    q(node, "CREATE MATERIALIZED VIEW mv1 (g, total COMMENT 'sum of n') BUILD IMMEDIATE REFRESH COMPLETE ON MANUAL "
            "DISTRIBUTED BY HASH(g) BUCKETS 2 PROPERTIES ('replication_num' = '1') "
            "AS SELECT g, sum(n) FROM mb_view GROUP BY g")  # fmt: skip
    info = refreshed(node, "mv1", 1)
    assert info["State"] == "NORMAL" and info["SyncWithBaseTables"] == 1
    assert info["RefreshInfo"] == "BUILD IMMEDIATE REFRESH COMPLETE ON MANUAL"
    assert q(node, "SELECT * FROM mv1 ORDER BY g") == [("x", 30), ("y", 30)]
    # Queryable as a table: joins, views over it.
    assert q(node, "SELECT m.g, count(*) FROM mv1 m JOIN mb ON m.g = mb.g GROUP BY m.g ORDER BY m.g") == [
        ("x", 2),
        ("y", 1),
    ]
    q(node, "INSERT INTO mb VALUES (4,'z',40)")
    assert mv_info(node, "mv1")["SyncWithBaseTables"] == 0
    assert q(node, "SELECT count(*) FROM mv1") == [(2,)]  # until refreshed
    q(node, "REFRESH MATERIALIZED VIEW mv1 COMPLETE")
    refreshed(node, "mv1", 2)
    assert q(node, "SELECT * FROM mv1 ORDER BY g") == [("x", 30), ("y", 30), ("z", 40)]
    text = q(node, "SHOW CREATE MATERIALIZED VIEW mv1")[0][1]
    assert text.startswith(
        "CREATE MATERIALIZED VIEW `mv1` (`g`, `total` COMMENT 'sum of n')\nBUILD IMMEDIATE REFRESH COMPLETE ON MANUAL\n"
    )
    assert (
        "DISTRIBUTED BY HASH(`g`) BUCKETS 2" in text
        and f"FROM `internal`.`{DB}`.`mb_view` GROUP BY g;" in text
    )
    # DEFERRED: empty until its first refresh; ON SCHEDULE: refreshed again and again.
    q(node, "CREATE MATERIALIZED VIEW mv2 BUILD DEFERRED REFRESH AUTO ON SCHEDULE EVERY 1 SECOND "
            "AS SELECT count(*) AS c FROM mb")  # fmt: skip
    first = refreshed(node, "mv2", 1)
    q(node, "INSERT INTO mb VALUES (5,'z',50)")
    wait_for("mv2 sees the new row", lambda: q(node, "SELECT c FROM mv2") == [(5,)])
    assert mv_info(node, "mv2")["RefreshCount"] > first["RefreshCount"]
    assert mv_info(node, "mv2")["RefreshInfo"] == "BUILD DEFERRED REFRESH AUTO ON SCHEDULE EVERY 1 SECOND"
    # Doris' errors; DROP MATERIALIZED VIEW.
    assert f"'{DB}.mv1' is not TABLE. Use 'DROP MATERIALIZED VIEW {DB}.mv1'." in error(node, "DROP TABLE mv1")
    assert f"'{DB}.mb' is not MATERIALIZED VIEW" in error(node, "DROP MATERIALIZED VIEW mb")
    assert "interval must be greater than 0" in error(
        node, "CREATE MATERIALIZED VIEW bad REFRESH COMPLETE ON SCHEDULE EVERY 0 MINUTE AS SELECT 1 AS a"
    )
    q(node, "DROP MATERIALIZED VIEW mv2")
    q(node, "DROP MATERIALIZED VIEW IF EXISTS mv2")
    assert mv_info(node, "mv2") == {}


# --- persistence (runs last: restarts the module's node) -------------------------------------------
def test_views_schema_versions_and_mvs_survive_checkpoint_and_a_crash(node):
    before = {
        "views": q(node, "SHOW FULL TABLES"),
        "view_text": q(node, "SHOW CREATE VIEW v_agg"),
        "rows": {
            t: sorted(q(node, f"SELECT * FROM {t}"))
            for t in ("sc_dup", "sc_unique", "sc_agg", "mv1", "rd", "rb")
        },
        "desc": q(node, "DESC sc_unique"),
        "mv": {k: v for k, v in mv_info(node, "mv1").items() if k != "SyncWithBaseTables"},
        "create_table": q(node, "SHOW CREATE TABLE se"),
    }
    assert before["rows"]["sc_dup"] and before["mv"]["RefreshCount"] == 2
    node.kill()  # no clean shutdown: the newest image plus the journal's tail are all there is
    node.start()
    after = {
        "views": q(node, "SHOW FULL TABLES"),
        "view_text": q(node, "SHOW CREATE VIEW v_agg"),
        "rows": {t: sorted(q(node, f"SELECT * FROM {t}")) for t in before["rows"]},
        "desc": q(node, "DESC sc_unique"),
        "mv": {k: v for k, v in mv_info(node, "mv1").items() if k != "SyncWithBaseTables"},
        "create_table": q(node, "SHOW CREATE TABLE se"),
    }
    assert after == before
    # Old rowsets still read through their schema versions after the restart: one more change.
    q(node, "ALTER TABLE sc_unique ADD COLUMN z INT DEFAULT '3'")
    assert {r[-1] for r in q(node, "SELECT * FROM sc_unique")} == {3}

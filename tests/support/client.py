"""How tests talk to a Galene node: stream loads (through the FE's 307 or straight to a BE), MySQL
connections and statements, rows as a CSV body, Prometheus samples, waiting on a condition.

Only network clients here (httpx, pymysql): the tests see Galene through its interfaces.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import httpx
import pymysql

T = TypeVar("T")


def auth_header(user: str = "root", password: str = "") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


# --- stream load ------------------------------------------------------------------------------
def csv_body(rows: Iterable[Iterable[object]], null: str = "\\N", sep: str = ",") -> bytes:
    """Rows as a CSV stream-load body: `sep` between values, a newline after each row, None as
    `null` (Doris' `\\N` by default; "" where a test loads empty fields)."""
    return "".join(sep.join(null if v is None else str(v) for v in r) + "\n" for r in rows).encode()


def stream_load(
    host: str,
    port: int,
    db: str,
    table: str,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    via_fe: bool = True,
    user: str = "root",
    password: str = "",
    timeout: float = 300,
    expect_continue: bool = True,
    must_redirect: bool = False,
) -> httpx.Response:
    """PUT a stream load the way curl --location-trusted sends it and return the last answer.

    `via_fe`: an empty-body PUT to the FE at `port`; its 307 is followed to the BE it names with
    the body (any other answer, a refusal, is returned as is — or fails the test with
    `must_redirect`). Otherwise the body goes straight to `port` (a BE). `headers` come last, so
    an Authorization there overrides `user`/`password`.
    """
    h = {**auth_header(user, password), **({"Expect": "100-continue"} if expect_continue else {}), **(headers or {})}
    url = f"http://{host}:{port}/api/{db}/{table}/_stream_load"
    with httpx.Client(timeout=timeout) as c:
        r = c.put(url, content=b"" if via_fe else body, headers=h)
        if via_fe:
            if must_redirect:
                assert r.status_code == 307, (r.status_code, r.text)
            if r.status_code == 307:
                r = c.put(r.headers["location"], content=body, headers=h)
        return r


def be_load(be, db: str, table: str, body, headers: dict[str, str] | None = None, timeout: float = 60) -> dict:
    """A stream load PUT straight to a BE process (`be.be_http_port`), as a client that knows its
    BE sends it (no Expect); the BE's JSON reply."""
    r = stream_load(
        "127.0.0.1", be.be_http_port, db, table, body, headers, via_fe=False, timeout=timeout, expect_continue=False
    )
    r.raise_for_status()
    return r.json()


# --- MySQL ------------------------------------------------------------------------------------
def mysql_connect(
    host: str, port: int, database: str | None = None, user: str = "root", password: str = "", **kw
) -> pymysql.Connection:
    """A pymysql connection in autocommit, with a read deadline (a wedged server fails the test)."""
    return pymysql.connect(
        **{"host": host, "port": port, "user": user, "password": password, "database": database,
           "autocommit": True, "read_timeout": 300, **kw}
    )  # fmt: skip


def fetch(conn, sql: str, args=None) -> tuple[list[str], list[tuple]]:
    """(column names, rows) of one statement on `conn`."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        names = [d[0] for d in cur.description] if cur.description else []
        return names, list(cur.fetchall())


def ok_info(conn, sql: str) -> tuple[int, str]:
    """(affected rows, the OK packet's info text as the mysql CLI prints it) of one statement."""
    with conn.cursor() as cur:
        affected = cur.execute(sql)
    info = conn._result.message if conn._result else None
    return affected, info.decode() if isinstance(info, bytes) else (info or "")


def error_of(target, sql: str, database: str | None = None) -> tuple[int, str]:
    """(MySQL errno, message) of a statement that must fail, on a connection or a node (a
    fresh connection of the node's `query`)."""
    import pytest

    with pytest.raises(pymysql.MySQLError) as e:
        if hasattr(target, "query") and hasattr(target, "query_port"):
            target.query(sql, database)
        else:
            with target.cursor() as cur:
                cur.execute(sql)
    return e.value.args[0], e.value.args[1]


# --- observing --------------------------------------------------------------------------------
def metric_value(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text (labels given must all match), or None."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        if all(f'{k}="{v}"' in rest for k, v in labels.items()):
            return float(value)
    return None


def wait_for(what: str, fn: Callable[[], T], timeout: float = 120, poll: float = 0.2) -> T:
    """Poll `fn` until it returns something true, and return that (a condition, not a timing
    assertion: the timeout only bounds a test that would otherwise hang)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not reached within {timeout}s: {what}")
        time.sleep(poll)

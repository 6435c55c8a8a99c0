"""doris-mcp-server 1.0.0, unchanged, as an MCP server over stdio against a real Galene: it parses
Doris' version from `@@version_comment` and SHOW FRONTENDS and disables every Doris tool whose
version it cannot parse. Its main tools: list databases and tables, a table's schema, execute a
query. Driven by tests/clients/mcp/doris_mcp_flow.py in the server's own Python 3.12 venv
(`.venv-mcp`, installed by `make tools`)."""

from __future__ import annotations

import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MCP_PYTHON = ROOT / ".venv-mcp" / "bin" / "python"
MCP_SERVER = ROOT / ".venv-mcp" / "bin" / "doris-mcp-server"
DRIVER = ROOT / "tests" / "clients" / "mcp" / "doris_mcp_flow.py"

MAIN_TOOLS = {
    "doris_catalog": ("list_databases", "list_tables", "get_table_context"),
    "doris_query": ("execute_query",),
}


def run_mcp(galene, calls: list, cwd: Path) -> dict:
    if not MCP_SERVER.exists():
        pytest.skip(f"doris-mcp-server not installed ({MCP_SERVER}; `make tools`)")
    proc = subprocess.run(
        [str(MCP_PYTHON), str(DRIVER), str(MCP_SERVER), str(galene.query_port), json.dumps(calls)],
        cwd=cwd, check=False, capture_output=True, text=True, timeout=600,
    )  # fmt: skip  # the server writes its logs/ under cwd
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def _data(result: dict) -> dict:
    assert result["is_error"] is False, result
    body = result["body"]
    assert body["data"]["status"] == "success", body
    return body["data"]["data"]


def test_main_tools_are_enabled_and_answer(galene, db, tmp_path):
    galene.query(
        "CREATE TABLE orders (id INT NOT NULL COMMENT 'order id', name VARCHAR(20), amount DECIMAL(10, 2)) "
        "UNIQUE KEY(id) COMMENT 'the orders' DISTRIBUTED BY HASH(id) BUCKETS 2",
        db,
    )
    galene.query("INSERT INTO orders VALUES (1, 'caf\u00e9', 1.50), (2, NULL, NULL), (3, 'x', 99.99)", db)
    query = f"SELECT id, name, amount FROM {db}.orders ORDER BY id"
    calls = [
        ["doris_catalog", {"child_tool": "list_databases", "arguments": {}}],
        ["doris_catalog", {"child_tool": "list_tables", "arguments": {"database": db}}],
        ["doris_catalog", {"child_tool": "get_table_context", "arguments": {"database": db, "table": "orders"}}],
        ["doris_query", {"child_tool": "execute_query", "arguments": {"sql": query}}],
    ]
    out = run_mcp(galene, calls, tmp_path)
    for domain, children in MAIN_TOOLS.items():
        for child in children:
            availability = out["manifests"][domain][child]
            # Before: "Doris version doris-4.1.0-galene-0.1.0 (Galene)" did not parse, every tool
            # was "unknown" / DORIS_VERSION_UNKNOWN and not callable.
            assert availability["detected_versions"]["master_fe"] == ["4.1.0"], availability
            assert (availability["status"], availability["callable"]) == ("available", True), (child, availability)
    databases, tables, context, query = (_data(r) for r in out["results"])
    assert {"catalog": "internal", "name": db} in databases["items"]
    assert [(t["name"], t["type"]) for t in tables["items"]] == [("orders", "table")]
    schema = context["schema"]["data"]
    assert [(c["column_name"], c["data_type"]) for c in schema["columns"]] == [
        ("id", "int"), ("name", "varchar(20)"), ("amount", "decimal(10,2)")]  # fmt: skip
    assert context["comments"]["data"]["table"]["comment"] == "the orders"
    assert context["comments"]["data"]["columns"]["id"] == "order id"
    assert context["basic"]["data"]["row_count"] == 3
    assert [(r["id"], r["name"], r["amount"] and Decimal(r["amount"])) for r in query["rows"]] == [
        (1, "caf\u00e9", Decimal("1.50")), (2, None, None), (3, "x", Decimal("99.99"))]  # fmt: skip

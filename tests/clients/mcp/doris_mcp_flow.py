"""Drive doris-mcp-server (unchanged, its own Python 3.12 venv) as an MCP client over stdio.

Usage: <.venv-mcp>/bin/python doris_mcp_flow.py <server executable> <mysql port> <calls.json>

Starts the server with its DB host/port/user options, asks each domain tool named in the calls
for its manifest (the availability of every child tool: doris-mcp-server disables a tool whose
Doris version it cannot parse), then makes each call; prints one JSON document:
{"manifests": {domain: {child: availability}}, "results": [{"tool", "args", "is_error", "body"}]}.
Run by tests/e2e/test_doris_mcp.py.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    server, port, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(
        command=server,
        args=["--transport", "stdio", "--doris-host", "127.0.0.1", "--doris-port", port,
              "--doris-user", "root", "--doris-password", "", "--log-level", "WARNING"],
    )
    out = {"manifests": {}, "results": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for domain in sorted({tool for tool, _ in calls}):
            manifest = json.loads((await session.call_tool(domain, {})).content[0].text)
            out["manifests"][domain] = {c["name"]: c["availability"] for c in manifest.get("children", [])}
        for tool, args in calls:
            result = await session.call_tool(tool, args)
            text = result.content[0].text if result.content else ""
            try:
                body = json.loads(text)
            except ValueError:
                body = text
            out["results"].append({"tool": tool, "args": args, "is_error": result.is_error, "body": body})
    print(json.dumps(out))


asyncio.run(main())

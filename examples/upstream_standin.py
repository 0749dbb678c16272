"""A stand-in for a recorded MCP server: the same tools, canned replies, no network, no node.

Serves exactly the tools of a ``tools/list`` recorded into ``examples/fixtures/`` (names,
descriptions and input schemas verbatim; by default ``@modelcontextprotocol/server-github``),
so the proxy examples and tests run against a real upstream subprocess without the real
server's runtime or its API. Each call checks the schema's required arguments, as the real
server does, and answers with a canned JSON text naming the tool, the arguments and the
``--label`` of this instance (to tell several upstreams apart).

Example:
    ```bash
    python examples/upstream_standin.py                      # stdio
    python examples/upstream_standin.py --http --port 9000   # streamable HTTP at /mcp
    ```
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import Tool, ToolResult

DEFAULT_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "server-github.tools.json"


class RecordedTool(Tool):
    """A recorded tool definition that answers every valid call with a canned reply."""

    label: str = "standin"

    def to_mcp_tool(self, **overrides: Any) -> mt.Tool:
        # FastMCP derives a title from the name; the recorded server sends none.
        return super().to_mcp_tool(**{"title": self.title, **overrides})

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        missing = [k for k in self.parameters.get("required", []) if k not in arguments]
        if missing:
            raise ToolError(f"Invalid arguments for {self.name}: missing {', '.join(missing)}")
        reply = {"upstream": self.label, "tool": self.name, "arguments": arguments}
        return ToolResult(content=[mt.TextContent(type="text", text=json.dumps(reply))])


def load_tools(fixture: Path, *, label: str) -> list[RecordedTool]:
    """The recorded tools of ``fixture`` as FastMCP tools."""
    recorded = json.loads(fixture.read_text(encoding="utf-8"))
    return [
        RecordedTool(
            name=tool["name"],
            title=tool.get("title"),
            description=tool.get("description"),
            parameters=tool["inputSchema"],
            annotations=tool.get("annotations"),
            label=label,
        )
        for tool in recorded["tools/list"]["tools"]
    ]


def build_server(
    fixture: Path = DEFAULT_FIXTURE, *, label: str = "standin", instructions: str | None = None
) -> FastMCP:
    """A FastMCP server serving the recorded tools of ``fixture``, with ``instructions``."""
    recorded = json.loads(fixture.read_text(encoding="utf-8"))
    info = recorded.get("initialize", {}).get("serverInfo", {})
    mcp = FastMCP(
        f"{info.get('name', 'recorded')} (stand-in)",
        version=info.get("version"),
        instructions=instructions,
    )
    for tool in load_tools(fixture, label=label):
        mcp.add_tool(tool)
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    parser.add_argument("--label", default="standin", help="named in every reply")
    parser.add_argument("--instructions", help="the server's instructions to clients")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    mcp = build_server(args.fixture, label=args.label, instructions=args.instructions)
    if args.http:
        mcp.run(transport="http", host=args.host, port=args.port, show_banner=False)
    else:
        mcp.run(show_banner=False)


if __name__ == "__main__":
    main()

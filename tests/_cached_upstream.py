"""An upstream MCP server that lets every cache keep its answers for five minutes (SEP-2549).

Behind the gateway, its public hints must not reach clients on answers the policy shapes: run over
stdio by ``test_cache_hints``.
"""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("cached-upstream", cache_ttl=300, cache_scope="public")


@mcp.tool
def read_report(name: str) -> str:
    """Read a report."""
    return f"report {name}"


@mcp.tool
def delete_report(name: str) -> str:
    """Delete a report."""
    return f"deleted {name}"


@mcp.resource("reports://latest")
def latest() -> str:
    """The latest report."""
    return "latest"


if __name__ == "__main__":
    mcp.run(show_banner=False)

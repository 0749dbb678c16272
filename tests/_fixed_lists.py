"""A server with every layer that could change a list, and what the invariant compares.

2026-07-28 (``server/tools.mdx``): the set a list returns "MUST NOT vary per-connection or
as a side effect of other requests on the connection". ``fixed_server`` has groups (one of
them access-checked), tags, search, concerns, progressive disclosure and a ``cache_ttl``;
``LISTS`` are the list requests whose answers must not move, ``OTHERS`` the requests that
must not move them. Run as a script, it serves the same server over stdio.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.server.auth import require_scopes

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastmcp_filtering import Concern, Group, add_filtering, concerns, in_group
from fastmcp_filtering.client import call_method, concerns_meta

FIXED_SERVER = Path(__file__).resolve()

RISK = Concern("risk", values=["safe", "destructive"])
GROUPS = [
    Group("issues", description="Issues"),
    Group("repos", description="Repositories"),
    Group("branches", parent="repos", description="Branches"),
    Group("admin", description="Administration", access=require_scopes("github:admin")),
]

LISTS: list[tuple[str, dict[str, Any]]] = [
    ("tools/list", {}),
    ("tools/list", {"filter": {"groups": ["repos"]}}),
    ("tools/list", {"query": "repository"}),
    ("tools/list", {"_meta": concerns_meta({"risk": "safe"})}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("groups/list", {}),
    ("tags/list", {}),
]
"""Every list a client may send, with its own parameters."""

OTHERS: list[tuple[str, str, dict[str, Any]]] = [
    ("enable_tools", "tools/call", {"name": "enable_tools", "arguments": {"groups": ["repos"]}}),
    (
        "enable_tools child",
        "tools/call",
        {"name": "enable_tools", "arguments": {"groups": ["repos", "branches"]}},
    ),
    ("disable_tools", "tools/call", {"name": "disable_tools", "arguments": {"groups": ["issues"]}}),
    ("concerns/update", "concerns/update", {"concerns": {"risk": "safe"}}),
    ("search_tools", "tools/call", {"name": "search_tools", "arguments": {"query": "branch"}}),
    (
        "call_tool",
        "tools/call",
        {"name": "call_tool", "arguments": {"name": "create_repo", "arguments": {"name": "x"}}},
    ),
    ("a tool call", "tools/call", {"name": "delete_branch", "arguments": {"name": "main"}}),
]
"""Requests that must change no list: (label, method, params)."""


def fixed_server(**progressive: Any) -> FastMCP:
    """The server: ``progressive`` overrides the progressive options."""
    mcp = FastMCP("fixed", cache_ttl=300)

    @in_group("issues")
    @mcp.tool(tags={"read"})
    def list_issues() -> list[str]:
        """List the open issues."""
        return ["#1"]

    @in_group("repos")
    @concerns(risk="safe")
    @mcp.tool(tags={"write"})
    def create_repo(name: str) -> str:
        """Create a repository."""
        return f"created {name}"

    @in_group("repos")
    @concerns(risk="destructive")
    @mcp.tool(tags={"write"})
    def delete_repo(name: str) -> str:
        """Delete a repository."""
        return f"deleted {name}"

    @in_group("branches")
    @concerns(risk="destructive")
    @mcp.tool(tags={"write"})
    def delete_branch(name: str) -> str:
        """Delete a branch of a repository."""
        return f"deleted branch {name}"

    @in_group("admin")
    @mcp.tool
    def drop_table() -> str:
        """Drop every table."""
        return "dropped"

    @in_group("repos")
    @mcp.prompt
    def review(repo: str) -> str:
        """Review a repository."""
        return f"review {repo}"

    @in_group("issues")
    @mcp.resource("data://issues/summary")
    def summary() -> str:
        return "1 open"

    @in_group("repos")
    @mcp.resource("data://repos/{name}")
    def repo(name: str) -> str:
        return name

    options = {"initial_groups": ["issues"], "max_tools": 3, **progressive}
    add_filtering(mcp, groups=GROUPS, concerns=[RISK], progressive=options)
    return mcp


async def lists(client: Client[Any]) -> dict[str, str]:
    """Each of ``LISTS`` as the client gets it, in canonical JSON bytes."""
    found: dict[str, str] = {}
    for method, params in LISTS:
        result = await call_method(client, method, params)
        found[f"{method} {json.dumps(params, sort_keys=True)}"] = json.dumps(result, sort_keys=True)
    return found


async def moved_lists(client: Client[Any]) -> list[tuple[str, str]]:
    """Each list (of ``LISTS``) that one of ``OTHERS`` changed: (the request, the list)."""
    moved: list[tuple[str, str]] = []
    for label, method, params in OTHERS:
        before = await lists(client)
        await call_method(client, method, params)
        after = await lists(client)
        moved += [(label, key) for key in before if before[key] != after[key]]
    return moved


if __name__ == "__main__":
    fixed_server().run(show_banner=False)

"""A file and git server whose search offers tools of groups not enabled yet."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from fastmcp_filtering import Group, ProgressiveDisclosureMiddleware, in_group
from fastmcp_filtering.search.middleware import SearchMiddleware

from ..conftest import use
from .layers import HideSecret
from .search import Stub


def tool(name: str, description: str, *groups: str, **kw: Any) -> Stub:
    stub = Stub(
        name=name,
        description=description,
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        **kw,
    )
    return in_group(*groups)(stub) if groups else stub


GROUPS = [
    Group("files", title="Files", description="Read and write files"),
    Group("read", parent="files", description="Read files and folders"),
    Group("write", parent="files", description="Create and change files"),
    Group("git", description="Version control"),
]


def make_server(
    *,
    max_tools: int | None = None,
    initial: tuple[str, ...] = ("read",),
    rocket: bool = True,
    max_results: int = 10,
) -> FastMCP:
    mcp = FastMCP("discovery")
    for stub in [
        tool("read_text_file", "Read the text of a file", "read"),
        tool("directory_tree", "Show the tree of a directory", "read"),
        tool("write_file", "Save text to a new file, or overwrite a file", "write"),
        tool("edit_file", "Change lines of a text file", "write"),
        tool("git_commit", "Record changes to the repository", "git"),
        tool("git_log", "Show the commit history", "git"),
        tool("launch_rocket", "Save the world by launching a rocket", "write", tags={"secret"}),
        tool("shred_file", "Destroy a file for good"),  # in no group: concealed
    ]:
        if rocket or stub.name != "launch_rocket":
            mcp.add_tool(stub)
    use(
        mcp,
        HideSecret(),
        ProgressiveDisclosureMiddleware(
            groups=GROUPS,
            initial_groups=["files", *initial],
            max_tools=max_tools,
            hide_ungrouped=True,
        ),
        SearchMiddleware(groups=GROUPS, max_results=max_results),
    )
    return mcp


async def search(client: Any, query: str) -> list[dict[str, Any]]:
    result = await client.call_tool("search_tools", {"query": query})
    return list(result.structured_content["tools"])


def brief(found: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(t["name"], t.get("available_after", "callable")) for t in found]

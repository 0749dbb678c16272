"""Stub tools, a small catalog in two groups behind search, and paging through its matches."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult

from fastmcp_filtering import Group, in_group
from fastmcp_filtering.client import list_tools
from fastmcp_filtering.search.middleware import SearchMiddleware

from ..conftest import use


class Stub(Tool):
    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content=self.name)


def stub(
    name: str, description: str = "", *, params: dict[str, str] | None = None, **kw: Any
) -> Stub:
    properties = {p: {"type": "string", "description": d} for p, d in (params or {}).items()}
    return Stub(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties},
        **kw,
    )


CATALOG = [
    stub("create_pull_request", "Open a pull request to merge a branch"),
    stub("list_issues", "List the issues of a repository"),
    stub("create_issue", "Open a new issue"),
    stub("getRepository", "Get a repository by owner and name"),
    stub("send-email", "Send an email message to a recipient"),
    stub("calendar.create_event", "Put an event in the calendar"),
    stub("delete_branch", "Delete a branch", tags={"destructive"}),
    stub("translate_text", "将文本翻译成另一种语言"),
    stub("launch_rocket", "Launch the rocket", tags={"secret"}),
]


GROUPS = [
    Group("code", title="Source code", description="Repositories, branches, pull requests"),
    Group("mail", title="Mail", description="Email and calendar"),
]


def make_server(
    *extra: Middleware, search: SearchMiddleware | None = None, page_size: int | None = None
) -> FastMCP:
    mcp = FastMCP("search", list_page_size=page_size)
    code = ("create_pull_request", "list_issues", "create_issue", "getRepository", "delete_branch")
    for tool in CATALOG:
        copy = tool.model_copy()
        if tool.name in code:
            in_group("code")(copy)
        elif tool.name in ("send-email", "calendar.create_event"):
            in_group("mail")(copy)
        mcp.add_tool(copy)
    use(mcp, search or SearchMiddleware(groups=GROUPS, max_results=3))
    for middleware in extra:
        use(mcp, middleware)
    return mcp


async def every_page(client: Any, query: str) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await list_tools(client, query=query, cursor=cursor)
        pages.append([t.name for t in page.tools])
        cursor = page.next_cursor
        if cursor is None:
            return pages
        assert len(pages) < 50, "the cursor never ends"

"""A GitHub-like server behind progressive disclosure, and the calls its tests make."""

from __future__ import annotations

from typing import Any

from fastmcp import Client, FastMCP

from fastmcp_filtering import Group, in_group
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware

from ..conftest import use

GROUPS = [
    Group("issues", title="Issues", description="Create and triage issues"),
    Group("code", description="Code management"),
    Group("repos", description="Repositories", parent="code"),
    Group("branches", description="Branches", parent="repos"),
    Group("admin", description="Destructive administration", tools=["delete_*"]),
]


def make_server(
    *, store: Any = None, **options: Any
) -> tuple[FastMCP, ProgressiveDisclosureMiddleware]:
    mcp = FastMCP("github", session_state_store=store)

    @in_group("issues")
    @mcp.tool
    def create_issue(title: str) -> str:
        return f"created {title}"

    @in_group("issues")
    @mcp.tool
    def list_issues() -> str:
        return "[]"

    @in_group("repos")
    @mcp.tool
    def create_repo(name: str) -> str:
        return f"repo {name}"

    @in_group("repos")
    @mcp.tool
    def fork_repo(name: str) -> str:
        return name

    @in_group("branches")
    @mcp.tool
    def create_branch(name: str) -> str:
        return name

    @mcp.tool
    def delete_repo(name: str) -> str:
        return f"deleted {name}"

    @mcp.tool
    def delete_branch(name: str) -> str:
        return name

    @in_group("issues", "repos")
    @mcp.tool
    def link_issue(number: int) -> str:
        return str(number)

    @mcp.tool
    def ping() -> str:
        return "pong"

    @in_group("issuez")
    @mcp.tool
    def typo() -> str:
        return "hidden"

    @in_group("issues")
    @mcp.prompt
    def triage(issue: int) -> str:
        return f"Triage issue {issue}"

    @mcp.prompt
    def hello() -> str:
        return "hi"

    @in_group("repos")
    @mcp.resource("repo://readme")
    def readme() -> str:
        return "# readme"

    @in_group("repos")
    @mcp.resource("repo://{name}/license")
    def license_of(name: str) -> str:
        return f"MIT {name}"

    options.setdefault("initial_groups", ["issues"])
    middleware = ProgressiveDisclosureMiddleware(groups=GROUPS, **options)
    use(mcp, middleware)
    return mcp, middleware


async def names(client: Client[Any]) -> list[str]:
    return sorted(t.name for t in await client.list_tools())


async def call(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return dict(result.structured_content)

"""Show an agent only the MCP tools it needs: FastMCP middlewares for groups, tags and more.

Example:
    ```python
    from fastmcp import FastMCP
    from fastmcp_filtering import FilterMiddleware, Group, in_group, install

    mcp = FastMCP("github")

    @in_group("issues")
    @mcp.tool
    def create_issue(title: str) -> str: ...

    install(mcp, FilterMiddleware(groups=[Group("issues")]))
    ```
"""

from __future__ import annotations

from fastmcp_filtering._catalog import Catalog, Membership
from fastmcp_filtering._declarations import GROUPS_META_KEY, Group, Tag, in_group
from fastmcp_filtering._policy import unrestricted
from fastmcp_filtering.access import AccessPolicy, GroupAccessMiddleware
from fastmcp_filtering.concerns import Concern, ConcernMiddleware, concerns
from fastmcp_filtering.filter import FilterMiddleware
from fastmcp_filtering.progressive import (
    DisableToolsResult,
    EnableToolsResult,
    ProgressiveDisclosureMiddleware,
)
from fastmcp_filtering.search import SearchMiddleware, SearchToolsResult, rate_limit_key
from fastmcp_filtering.stack import (
    FilteringStack,
    StackOptions,
    add_filtering,
    filtering_stack,
    install,
)
from fastmcp_filtering.suggest import SuggestedConfig, suggest_config

__all__ = [
    "GROUPS_META_KEY",
    "AccessPolicy",
    "Catalog",
    "Concern",
    "ConcernMiddleware",
    "DisableToolsResult",
    "EnableToolsResult",
    "FilterMiddleware",
    "FilteringStack",
    "Group",
    "GroupAccessMiddleware",
    "Membership",
    "ProgressiveDisclosureMiddleware",
    "SearchMiddleware",
    "SearchToolsResult",
    "StackOptions",
    "SuggestedConfig",
    "Tag",
    "add_filtering",
    "concerns",
    "filtering_stack",
    "in_group",
    "install",
    "rate_limit_key",
    "suggest_config",
    "unrestricted",
]

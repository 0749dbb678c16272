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

from fastmcp_filtering.core.catalog import Catalog, Membership
from fastmcp_filtering.core.concerns import Concern, ConcernsFromToken
from fastmcp_filtering.core.declarations import GROUPS_META_KEY, Group, Tag, in_group
from fastmcp_filtering.core.errors import (
    FilteringError,
    OptionError,
    OptionTypeError,
    StateUnavailable,
    UpstreamError,
)
from fastmcp_filtering.core.options import ProgressiveOptions, SearchOptions
from fastmcp_filtering.core.request import unrestricted
from fastmcp_filtering.gateway.grouping.suggest import suggest_config
from fastmcp_filtering.gateway.grouping.suggestion import SuggestedConfig
from fastmcp_filtering.middleware.access import AccessPolicy, GroupAccessMiddleware
from fastmcp_filtering.middleware.concerns import ConcernMiddleware, concerns
from fastmcp_filtering.middleware.filter import FilterMiddleware
from fastmcp_filtering.middleware.layers import LayerMiddleware
from fastmcp_filtering.middleware.progressive import ProgressiveDisclosureMiddleware
from fastmcp_filtering.middleware.progressive_tools import DisableToolsResult, EnableToolsResult
from fastmcp_filtering.middleware.rate_limit import rate_limit_key
from fastmcp_filtering.middleware.search import SearchMiddleware
from fastmcp_filtering.middleware.search_tool import SearchToolsResult
from fastmcp_filtering.middleware.stack import (
    SEARCH_FIRST,
    FilteringStack,
    StackOptions,
    add_filtering,
    filtering_stack,
    install,
)
from fastmcp_filtering.policy.decision import (
    ClientRequest,
    Hidden,
    LayerView,
    PolicyLayer,
)

__all__ = [
    "GROUPS_META_KEY",
    "SEARCH_FIRST",
    "AccessPolicy",
    "Catalog",
    "ClientRequest",
    "Concern",
    "ConcernMiddleware",
    "ConcernsFromToken",
    "DisableToolsResult",
    "EnableToolsResult",
    "FilterMiddleware",
    "FilteringError",
    "FilteringStack",
    "Group",
    "GroupAccessMiddleware",
    "Hidden",
    "LayerMiddleware",
    "LayerView",
    "Membership",
    "OptionError",
    "OptionTypeError",
    "PolicyLayer",
    "ProgressiveDisclosureMiddleware",
    "ProgressiveOptions",
    "SearchMiddleware",
    "SearchOptions",
    "SearchToolsResult",
    "StackOptions",
    "StateUnavailable",
    "SuggestedConfig",
    "Tag",
    "UpstreamError",
    "add_filtering",
    "concerns",
    "filtering_stack",
    "in_group",
    "install",
    "rate_limit_key",
    "suggest_config",
    "unrestricted",
]

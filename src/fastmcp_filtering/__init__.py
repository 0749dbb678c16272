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

from fastmcp_filtering.access.middleware import AccessPolicy, GroupAccessMiddleware
from fastmcp_filtering.concern.middleware import ConcernMiddleware, concerns
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
from fastmcp_filtering.core.options import ConcernOptions, ProgressiveOptions, SearchOptions
from fastmcp_filtering.core.request import unrestricted
from fastmcp_filtering.gateway.grouping.suggest import suggest_config
from fastmcp_filtering.gateway.grouping.suggestion import SuggestedConfig
from fastmcp_filtering.group.middleware import FilterMiddleware
from fastmcp_filtering.policy.decision import (
    ClientRequest,
    Hidden,
    LayerView,
    PolicyLayer,
)
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware
from fastmcp_filtering.progressive.tools import DisableToolsResult, EnableToolsResult
from fastmcp_filtering.search.middleware import SearchMiddleware
from fastmcp_filtering.search.rate_limit import rate_limit_key
from fastmcp_filtering.search.tool import SearchToolsResult
from fastmcp_filtering.server.layers import LayerMiddleware
from fastmcp_filtering.stack import (
    SEARCH_FIRST,
    FilteringStack,
    StackOptions,
    add_filtering,
    filtering_stack,
    install,
)

__all__ = [
    "GROUPS_META_KEY",
    "SEARCH_FIRST",
    "AccessPolicy",
    "Catalog",
    "ClientRequest",
    "Concern",
    "ConcernMiddleware",
    "ConcernOptions",
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

"""What a client lists, before and after its own state changes, and the list_changed it is owed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mcp_types as mt

from fastmcp_filtering.policy.decision import invalidate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

__all__ = ["Listing", "listing", "notify_changes"]

logger = logging.getLogger("fastmcp_filtering")

_NOTIFICATIONS: dict[str, Callable[[], mt.ServerNotification]] = {
    "tools": mt.ToolListChangedNotification,
    "prompts": mt.PromptListChangedNotification,
    "resources": mt.ResourceListChangedNotification,
}


@dataclass(frozen=True, slots=True)
class Listing:
    """What one client lists at one moment: its tools, and every list's component keys."""

    tools: Sequence[Tool]
    keys: Mapping[str, frozenset[str]]
    """Component keys by the notification that announces a change to them."""


def _keys(components: Iterable[FastMCPComponent]) -> frozenset[str]:
    return frozenset(c.key for c in components)


async def listing(server: FastMCP) -> Listing:
    """What this client lists now, through the whole middleware chain and its current policy."""
    invalidate()
    tools = await server.list_tools()
    return Listing(
        tools,
        {
            "tools": _keys(tools),
            "prompts": _keys(await server.list_prompts()),
            "resources": _keys(await server.list_resources())
            | _keys(await server.list_resource_templates()),
        },
    )


async def notify_changes(
    ctx: Context, before: Listing, after: Listing, *, always: Iterable[str] = ()
) -> None:
    """Tell this client (only it) which of its lists changed; nothing when none did.

    ``always`` names lists announced whatever changed (``"tools"`` when the
    enabled groups changed: what the meta-tools offer changed with them).
    """
    forced = set(always)
    for kind, make in _NOTIFICATIONS.items():
        if kind in forced or before.keys.get(kind) != after.keys.get(kind):
            try:
                await ctx.send_notification(make())
            except Exception:
                logger.debug("could not send %s list_changed", kind, exc_info=True)

"""Client helpers for the methods and parameters the package adds, over a FastMCP ``Client``.

Typed MCP clients drop what the protocol does not define yet: the ``filter`` of
``tools/list``, the ``groups/list`` method, the group notifications. These helpers
send them as raw requests through the client's session, in either protocol era.

Example:
    ```python
    async with Client(mcp) as client:
        groups = await list_groups(client)
        page = await list_tools(client, groups=["issues"], tags=["stable"])
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import mcp_types as mt
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

from fastmcp_filtering.core.declarations import (
    BETTER_BY_NAME_META_KEY,
    BETTER_MATCHES_META_KEY,
    CONCERNS_META_KEY,
    GROUPS_META_KEY,
    WARNINGS_META_KEY,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

    from fastmcp import Client

__all__ = [
    "BETTER_BY_NAME_META_KEY",
    "BETTER_MATCHES_META_KEY",
    "CONCERNS_META_KEY",
    "WARNINGS_META_KEY",
    "ConcernInfo",
    "ConcernsUpdate",
    "DisclosedTools",
    "FilteringNotifications",
    "GroupInfo",
    "TagInfo",
    "better_by_name",
    "better_matches",
    "call_method",
    "concerns_meta",
    "groups_of",
    "iter_tools",
    "list_concerns",
    "list_groups",
    "list_tags",
    "list_tools",
    "update_concerns",
]


class _RawRequest(BaseModel):
    """A request whose params are sent as given (typed requests drop unknown keys)."""

    method: str
    params: dict[str, Any] | None = None
    name_param: ClassVar[str | None] = None


class _AnyResult(BaseModel):
    model_config = ConfigDict(extra="allow")


class GroupInfo(BaseModel):
    """A group as ``groups/list`` returns it."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    name: str
    title: str | None = None
    description: str | None = None
    icons: list[mt.Icon] | None = None
    annotations: mt.Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    @property
    def parents(self) -> list[str]:
        """The groups that contain this group."""
        return list((self.meta or {}).get(GROUPS_META_KEY) or [])


class TagInfo(BaseModel):
    """A tag as ``tags/list`` returns it."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str | None = None


async def call_method(
    client: Client[Any], method: str, params: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Send any request through ``client`` and return the raw result object."""
    request = _RawRequest(method=method, params=dict(params) if params is not None else None)
    result = await client.session.send_request(request, _AnyResult)  # type: ignore[arg-type]
    return result.model_dump(by_alias=True)


async def list_groups(client: Client[Any]) -> list[GroupInfo]:
    """``groups/list``: the server's groups with their parents."""
    result = await call_method(client, "groups/list")
    return [GroupInfo.model_validate(g) for g in result.get("groups", [])]


async def list_tags(client: Client[Any]) -> list[TagInfo]:
    """``tags/list``: declared tags and the tags found on components."""
    result = await call_method(client, "tags/list")
    return [TagInfo.model_validate(t) for t in result.get("tags", [])]


async def list_tools(
    client: Client[Any],
    *,
    groups: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    query: str | None = None,
    cursor: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> mt.ListToolsResult:
    """``tools/list`` with SEP-1300's ``filter`` (ANY of ``groups``, ALL of ``tags``).

    ``query`` is sent as-is for servers that rank tools by it; ``meta`` is merged
    into the request's ``_meta``. Returns one page; pass ``next_cursor`` back with
    the same filter for the next, or use ``iter_tools`` for every page.
    """
    params: dict[str, Any] = {}
    list_filter: dict[str, list[str]] = {}
    if groups is not None:
        list_filter["groups"] = list(groups)
    if tags is not None:
        list_filter["tags"] = list(tags)
    if list_filter:
        params["filter"] = list_filter
    if query is not None:
        params["query"] = query
    if cursor is not None:
        params["cursor"] = cursor
    if meta:
        params["_meta"] = dict(meta)
    request = _RawRequest(method="tools/list", params=params or None)
    return await client.session.send_request(request, mt.ListToolsResult)  # type: ignore[arg-type]


async def iter_tools(
    client: Client[Any],
    *,
    groups: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    query: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> AsyncIterator[mt.Tool]:
    """Every tool of a filtered (or ranked) ``tools/list``, page after page.

    Follows ``nextCursor`` with the same parameters until the last page; use it
    rather than a loop over ``list_tools``, where ``cursor=None`` means the
    first page again.

    Example:
        ```python
        async for tool in iter_tools(client, groups=["issues"]):
            print(tool.name)
        ```
    """
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        page = await list_tools(
            client, groups=groups, tags=tags, query=query, cursor=cursor, meta=meta
        )
        for tool in page.tools:
            yield tool
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            # A server that repeats a cursor would page forever.
            return
        seen.add(cursor)


class DisclosedTools:
    """Host-side progressive disclosure: follow ``enable_tools`` replies, list natively.

    On 2026-07-28 ``enable_tools`` changes no list: its reply names the enabled
    groups. This helper calls the meta-tools, keeps the reply's ``enabled_groups``
    and lists the server's tools plus those groups' tools (``tools/list`` with
    ``filter: {groups}``: a request parameter, so a cache keyed by it stays
    right), so a host keeps native tool definitions with no server state. It
    works on 2025-11-25 too, where the plain list already follows.

    Example:
        ```python
        disclosed = DisclosedTools(client)
        await disclosed.enable(["repos"])
        tools = await disclosed.list_tools()   # the listed tools plus the repos tools
        ```
    """

    def __init__(
        self,
        client: Client[Any],
        *,
        enable_tool: str = "enable_tools",
        disable_tool: str = "disable_tools",
    ) -> None:
        self.client = client
        self.enable_tool = enable_tool
        self.disable_tool = disable_tool
        self.enabled_groups: list[str] = []
        """The ``enabled_groups`` of the last reply."""

    async def enable(self, groups: Sequence[str]) -> dict[str, Any]:
        """Call ``enable_tools`` and follow its reply; returns the reply's structured content."""
        return await self._call(self.enable_tool, groups)

    async def disable(self, groups: Sequence[str]) -> dict[str, Any]:
        """Call ``disable_tools`` and follow its reply; returns the reply's structured content."""
        return await self._call(self.disable_tool, groups)

    async def _call(self, tool: str, groups: Sequence[str]) -> dict[str, Any]:
        result = await self.client.call_tool_mcp(tool, {"groups": list(groups)})
        reply = dict(result.structured_content or {})
        enabled = reply.get("enabled_groups")
        if not result.is_error and isinstance(enabled, list):
            self.enabled_groups = [g for g in enabled if isinstance(g, str)]
        return reply

    async def list_tools(self) -> list[mt.Tool]:
        """The server's list, then the tools of the enabled groups it does not hold, by name.

        Needs the server's ``FilterMiddleware`` (the ``filter`` parameter and the groups
        in each tool's ``_meta``).
        """
        tools = [tool async for tool in iter_tools(self.client)]
        if self.enabled_groups:
            names = {t.name for t in tools}
            enabled = set(self.enabled_groups)
            async for tool in iter_tools(self.client, groups=self.enabled_groups):
                # A filter also matches the groups below those named; a tool is shown when
                # one of its own groups is enabled, as the server's list would show it.
                if tool.name not in names and not enabled.isdisjoint(groups_of(tool)):
                    names.add(tool.name)
                    tools.append(tool)
        return tools


def better_matches(result: mt.ListToolsResult) -> list[str]:
    """Groups holding better matches for a ``query`` list than the tools it returned.

    Tools of groups the client has not enabled are never in a ``tools/list``
    answer; the server names their groups in the result ``_meta`` instead.
    ``search_tools`` says more: each such tool with the calls that make it usable.

    Example:
        ```python
        page = await list_tools(client, query="save text to a new file")
        better_matches(page)  # ["write"]: search_tools says how to enable it
        ```
    """
    groups = (result.meta or {}).get(BETTER_MATCHES_META_KEY)
    return [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []


def better_by_name(result: mt.ListToolsResult) -> list[str]:
    """The tools a ``query`` list names as better matches it leaves out: call them by name.

    Where lists hold only some tools (a search-first server, or a 2026-07-28 list fixed
    to its initial groups), a tool the client may call by its exact name is left out of
    the page; the server names the best of those in the result ``_meta`` instead.

    Example:
        ```python
        page = await list_tools(client, query="refund money")
        better_by_name(page)  # ["refund_payment"]: call it, or search_tools for its schema
        ```
    """
    names = (result.meta or {}).get(BETTER_BY_NAME_META_KEY)
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def groups_of(component: mt.Tool | mt.Prompt | mt.Resource | mt.ResourceTemplate) -> list[str]:
    """The groups a listed tool, prompt or resource belongs to (its ``_meta`` key)."""
    return list((component.meta or {}).get(GROUPS_META_KEY) or [])


class _NoParams(BaseModel):
    model_config = ConfigDict(extra="allow")


class FilteringNotifications(ClientExtension):
    """Receive ``notifications/groups/list_changed`` and ``notifications/tags/list_changed``.

    The MCP client drops notifications it does not know; pass this to
    ``Client(..., extensions=[...])`` to have them delivered to your callbacks.

    Example:
        ```python
        async def refresh() -> None: ...
        client = Client(url, extensions=[FilteringNotifications(on_groups_changed=refresh)])
        ```
    """

    identifier = "io.github.fastmcp-filtering/notifications"

    def __init__(
        self,
        *,
        on_groups_changed: Callable[[], Awaitable[None]] | None = None,
        on_tags_changed: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._bindings: list[NotificationBinding[Any]] = []
        for method, callback in (
            ("notifications/groups/list_changed", on_groups_changed),
            ("notifications/tags/list_changed", on_tags_changed),
        ):
            if callback is not None:
                self._bindings.append(
                    NotificationBinding(
                        method=method, params_type=_NoParams, handler=_ignoring_params(callback)
                    )
                )

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return self._bindings


def _ignoring_params(callback: Callable[[], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    async def handler(_params: Any) -> None:
        await callback()

    return handler


# -- concerns -----------------------------------------------------------------------------


class ConcernInfo(BaseModel):
    """A concern as ``concerns/list`` and ``capabilities.concerns`` declare it."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str | None = None
    values: list[str]
    default: str | None = None
    ordered: bool = False


class ConcernsUpdate(BaseModel):
    """The reply to ``concerns/update``: the effective configuration and what was ignored."""

    model_config = ConfigDict(extra="allow")

    concerns: dict[str, str]
    """Every concern that now filters this client: its values plus the server's defaults."""
    warnings: list[str] = Field(default_factory=list)
    """Entries the server ignored, such as concern names it does not declare."""
    stored: bool = True
    """False on protocol 2026-07-28, where an update changes no list: send ``request_meta``."""
    request_meta: dict[str, Any] | None = Field(default=None, alias="requestMeta")
    """The ``_meta`` that applies this configuration to one request (2026-07-28)."""


async def list_concerns(client: Client[Any]) -> list[ConcernInfo]:
    """``concerns/list``: the concerns the server declares, with values and defaults.

    A server that declares none (it does not know the method) gives ``[]``.
    """
    try:
        result = await call_method(client, "concerns/list")
    except MCPError as error:
        if error.error.code == mt.METHOD_NOT_FOUND:
            return []
        raise
    return [ConcernInfo.model_validate(c) for c in result.get("concerns", [])]


async def update_concerns(client: Client[Any], concerns: Mapping[str, str]) -> ConcernsUpdate:
    """``concerns/update``: replace this client's whole concern configuration.

    Concerns left out fall back to the server's defaults; ``{}`` clears the
    configuration. Raises ``MCPError`` (-32602) for a value the concern does not
    allow. On 2025-11-25 the server stores it for the session (or refuses, -32600,
    when it cannot keep state for this client: then send ``meta=concerns_meta(...)``
    with each request). On 2026-07-28 nothing is stored, since no list may change
    as a side effect of another request: the reply has ``stored=False`` and the
    ``request_meta`` to send with each request.

    Example:
        ```python
        update = await update_concerns(client, {"security": "high"})
        ```
    """
    result = await call_method(client, "concerns/update", {"concerns": dict(concerns)})
    return ConcernsUpdate.model_validate(result)


def concerns_meta(concerns: Mapping[str, str]) -> dict[str, Any]:
    """The request ``_meta`` that applies ``concerns`` to one request, whatever is stored.

    Pass it as ``meta=`` to ``list_tools`` here or to ``Client.call_tool``; it
    replaces the stored configuration for that request and needs no server state.

    Example:
        ```python
        page = await list_tools(client, meta=concerns_meta({"security": "high"}))
        ```
    """
    return {CONCERNS_META_KEY: dict(concerns)}

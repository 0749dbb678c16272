"""Filtering by groups and tags: ``groups/list``, ``tags/list`` and ``filter`` on list requests."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_types import InitializeResult
from typing_extensions import override

from fastmcp_filtering._fastmcp import list_page_size
from fastmcp_filtering.access.middleware import enforce_access
from fastmcp_filtering.core.catalog import Catalog
from fastmcp_filtering.core.declarations import GROUPS_META_KEY, Group, Tag
from fastmcp_filtering.core.filters import filter_warnings, narrow
from fastmcp_filtering.core.request import (
    add_capabilities,
    current_scope,
    custom_result,
    has_filter,
    invalid_params,
    request_info,
)
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.server.hooks import (
    ListHooks,
    Marks,
    as_listed,
    install_task_guard,
    shaped_ahead,
)
from fastmcp_filtering.server.layers import check_completion
from fastmcp_filtering.server.transform import AccessTransform
from fastmcp_filtering.server.wire import report

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import GroupTree
    from fastmcp_filtering.server.hooks import ListRequest

GROUPING_EXTENSION = "io.modelcontextprotocol/grouping"
"""The grouping interest group's extension id (SEP-2133): ``groups/list`` and group
membership under ``_meta["io.modelcontextprotocol/groups"]``."""

_C = TypeVar("_C", bound="FastMCPComponent")
_R = TypeVar("_R")


class FilterMiddleware(ListHooks):
    """Groups and tags for a FastMCP server: SEP-1300 filtering plus the Group primitive.

    Serves ``groups/list`` and ``tags/list``, narrows ``tools/list``,
    ``prompts/list``, ``resources/list`` and ``resources/templates/list`` by a
    ``filter: {groups, tags}`` parameter (ANY of the groups or their descendants,
    ALL of the tags), and marks every listed component with
    ``_meta["io.modelcontextprotocol/groups"]``, as well as a tool's background
    tasks (the task results of ``tools/call`` and ``tasks/get``). Declares the
    ``filtering`` and ``groups`` capabilities. A filter is a view, not access
    control: a tool a filter leaves out stays callable.

    Example:
        ```python
        install(mcp, FilterMiddleware(
            groups=[Group("issues", description="Create and triage issues")],
            tags=[Tag("stable", "Production-ready")],
        ))
        ```
    """

    answers = frozenset({"groups/list", "tags/list", "completion/complete"})
    catalog: Catalog

    def __init__(
        self,
        *,
        groups: Iterable[Group] = (),
        tags: Iterable[Tag] = (),
        catalog: Catalog | None = None,
    ) -> None:
        self.catalog = Catalog.shared(catalog, groups, tags)
        # Marked copies per original, so repeated listings hand out the same objects.
        self._marks = Marks()

    def __repr__(self) -> str:
        return f"FilterMiddleware(catalog={self.catalog!r})"

    async def add_group(self, group: Group) -> None:
        """Declare a group at runtime; connected clients are notified."""
        await self.catalog.add_group(group)

    async def remove_group(self, name: str) -> Group:
        """Remove a group at runtime; connected clients are notified."""
        return await self.catalog.remove_group(name)

    @override
    def setup(self, server: FastMCP) -> None:
        super().setup(server)
        enforce_access(server, self.catalog)
        # A task carries its tool's groups in _meta, as the tool does in tools/list.
        install_task_guard(server).mark_with(self.catalog)

    # -- capabilities -------------------------------------------------------------------

    @override
    def announce(self, result: _R) -> _R:
        sessions = isinstance(result, InitializeResult)
        # The grouping extension (SEP-2133) in capabilities.extensions, added to the
        # handshake's answer rather than registered with mcp.add_extension: FastMCP refuses
        # an extension once serving started, which is when mcp.add_middleware sets this up.
        return add_capabilities(
            result,
            self._capabilities(sessions=sessions),
            extensions={GROUPING_EXTENSION: {"listChanged": True} if sessions else {}},
        )

    def _capabilities(self, *, sessions: bool) -> dict[str, dict[str, Any]]:
        # list_changed needs a session to reach (2025-11-25); a stateless 2026-07-28 client
        # is never sent one, so server/discover does not promise it.
        changes = {"listChanged": True} if sessions else {}
        return {
            "filtering": {"groups": dict(changes), "tags": dict(changes)},
            "groups": dict(changes),
            # Where the grouping extension's TypeScript add-on reads it, until SDKs carry
            # capabilities.extensions (FastMCP advertises it there to 2026-07-28 clients).
            GROUPING_EXTENSION: dict(changes),
        }

    # -- groups/list and tags/list ------------------------------------------------------

    @override
    async def answer(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.method == "groups/list":
            tree = await access_of(self.catalog).tree()
            return custom_result(request_info(context), self._groups_page(context, tree))
        if context.method == "tags/list":
            return custom_result(request_info(context), {"tags": await self._tags(context)})
        server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
        if server is not None and AccessTransform.of(server) is None:
            # No layer checks completions here; a component's own auth still hides it.
            answered = await check_completion(context)
            if answered is not None:
                return answered
        return await call_next(context)

    def _groups_page(self, context: MiddlewareContext[Any], tree: GroupTree) -> dict[str, Any]:
        """One page of ``groups/list``: the server's ``list_page_size`` groups from the cursor.

        Only the groups this client's principal may use (``tree``). The cursor
        holds the offset and a digest of the groups it was issued over; one from
        another list, or from before those groups changed, is -32602. A change to
        a group the principal may not use leaves its cursors as they were.
        """
        groups = [g.to_wire() for g in tree.groups]
        view = _digest(groups)
        info = request_info(context)
        raw = info.params.get("cursor") if info is not None else None
        size = list_page_size(context.fastmcp_context.fastmcp) if context.fastmcp_context else None
        offset = 0 if raw is None else _group_offset(raw, view)
        if size is None and raw is None:
            return {"groups": groups}
        end = len(groups) if size is None else offset + size
        page: dict[str, Any] = {"groups": groups[offset:end]}
        if end < len(groups):
            state = json.dumps({"groups": end, "view": view})
            page["nextCursor"] = base64.urlsafe_b64encode(state.encode()).decode()
        return page

    async def _tags(self, context: MiddlewareContext[Any]) -> list[dict[str, Any]]:
        """Declared tags, then tags found on the components this client can see."""
        declared = {tag.name: tag.to_wire() for tag in self.catalog.tags}
        found: set[str] = set()
        if context.fastmcp_context is not None:
            server = context.fastmcp_context.fastmcp
            for components in await _visible_components(server):
                for component in components:
                    found |= component.tags
        extra = [{"name": name} for name in sorted(found - declared.keys())]
        return [*declared.values(), *extra]

    # -- filtered lists -----------------------------------------------------------------

    @override
    async def on_list(self, request: ListRequest[_C]) -> Sequence[_C]:
        components = await request.rest()
        tree = await access_of(self.catalog).tree()
        context = request.context
        info = request_info(context)
        narrowed = components
        server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
        if has_filter(info) and not current_scope().as_listed:
            # Tag names are checked against what the client lists: a middleware ahead of
            # this one may drop components whose tags must then be unknown.
            listed = None
            if server is not None and shaped_ahead(server, self):
                listed = await as_listed(server, request.kind)
            narrowed = narrow(tree, info, request.kind, components, listed=listed)
            if server is not None:
                report(server, warnings=filter_warnings(tree, info, request.kind))
        marked = await self.marked(narrowed)
        if server is not None:
            await self.catalog.refresh(server)
        return marked

    @override
    async def marked(self, components: Sequence[_C]) -> Sequence[_C]:
        # Each component's groups this client may know: the tree of its principal.
        tree = await access_of(self.catalog).tree()
        return self._marks.apply(components, tree.key, lambda c: _group_marks(tree, c))


def _group_marks(tree: GroupTree, component: FastMCPComponent) -> dict[str, Any]:
    """The groups ``_meta`` entry of ``component``: its direct groups this client may know."""
    return {GROUPS_META_KEY: list(tree.membership(component).direct)}


def _digest(groups: list[dict[str, Any]]) -> str:
    """A short digest of the groups one client lists: what its cursors are bound to."""
    text = json.dumps(groups, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _group_offset(raw: object, view: str) -> int:
    """The offset a ``groups/list`` cursor holds; -32602 for anything else."""
    try:
        state = json.loads(base64.urlsafe_b64decode(str(raw).encode()).decode())
        offset = state["groups"]
        issued = state["view"]
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise invalid_params(
            "cursor is not a groups/list cursor; send the nextCursor of the previous page",
            field="cursor",
        ) from None
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise invalid_params("cursor is not a groups/list cursor", field="cursor")
    if issued != view:
        raise invalid_params(
            "the groups changed since this cursor was issued; list them from the start",
            field="cursor",
        )
    return offset


async def _visible_components(server: FastMCP) -> list[Sequence[FastMCPComponent]]:
    """Every component kind as this client sees it (through the whole middleware chain)."""
    return [
        await server.list_tools(),
        await server.list_prompts(),
        await server.list_resources(),
        await server.list_resource_templates(),
    ]

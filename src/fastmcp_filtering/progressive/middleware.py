"""Progressive disclosure: the agent enables and disables groups of tools as it needs them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from fastmcp.server.context import Context  # noqa: TC002 - meta-tool signatures resolve it
from fastmcp.tools.base import ToolResult  # noqa: TC002 - meta-tool signatures resolve it
from typing_extensions import override

from fastmcp_filtering.access.middleware import enforce_access
from fastmcp_filtering.core.catalog import Catalog, MetaTool, mark_meta_tool
from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.core.options import ProgressiveOptions, option_names, resolve_options
from fastmcp_filtering.core.request import client_key, current_info
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.progressive.rules import EnabledStore, ProgressiveLayer, closed, path_to
from fastmcp_filtering.progressive.tools import (
    DisableToolsResult,
    EnableToolsResult,
    EnableToolsWithSchemasResult,
    MetaToolBodies,
)
from fastmcp_filtering.server.layers import LayerMiddleware

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.middleware import MiddlewareContext
    from fastmcp.tools.base import Tool

    from fastmcp_filtering.core.declarations import Group

_R = TypeVar("_R")

_GLOB = re.compile(r"[*?\[]")

FIXED_CALL_TOOL = "call_tool"
"""The proxy's name where lists are fixed (2026-07-28) and ``call_tool_name`` names none."""

_GROUPS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "groups": {
            "type": "array",
            "items": {"type": "string"},
            "description": 'Group names, e.g. ["issues"].',
        }
    },
    "required": ["groups"],
}


# A plain object, not anyOf[object, null]: some clients (the Inspector CLI) send the latter as a
# string. A string that holds a JSON object is still accepted (MetaToolBodies.proxy).
_CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool to call."},
        "arguments": {
            "type": "object",
            "description": "The tool's arguments.",
            "default": {},
            "additionalProperties": True,
        },
    },
    "required": ["name"],
}


class ProgressiveDisclosureMiddleware(LayerMiddleware):
    """Show an agent the meta-tools and the tools of the groups it enabled, per client.

    Adds ``enable_tools(groups=[...])`` and ``disable_tools(groups=[...])`` (and,
    with ``call_tool_name``, a ``call_tool`` proxy) to the server. A component is
    visible when one of its direct groups is enabled; enabling a parent offers
    its children, disabling it disables them. Components in no group stay
    visible unless ``hide_ungrouped``. ``max_tools`` caps the grouped tools
    visible at once. Hidden tools, prompts and resources are refused with a hint
    naming the ``enable_tools`` call that unlocks them. Replies name, in
    ``available_groups``, the child groups enabling opened up (``"all"``: the
    roots not enabled too); the ``enable_tools`` description lists the roots.
    Enabled groups live in FastMCP's session state store, per session
    (2025-11-25) or per authenticated principal (2026-07-28; per process on
    stdio and in-memory); a client with no identity, or a store that fails,
    gets the initial groups listed and cannot enable more. A client with no identity
    (unauthenticated stateless HTTP) is not offered ``enable_tools`` and
    ``disable_tools`` at all, on any path (calling one is "Unknown tool", with
    how to get state); it still reaches every tool it could have enabled by its
    exact name (``search_tools`` offers them with their definitions, a call by
    name or through ``call_tool`` runs them), and the server instructions it
    receives say so. ``call_unlisted=True`` gives every client that reach:
    enabling groups then shapes only what is listed; with ``offer_enable=False``
    no ``enable_tools``/``disable_tools`` are offered at all (search first: the
    list holds the meta-tools, ``search_tools`` finds the rest). The options may
    come as one ``ProgressiveOptions`` (``options=``) instead of the keywords,
    never both; ``side_effect_lists`` (an era setting the stack shares with
    concerns) stays a keyword either way.

    Example:
        ```python
        install(mcp, ProgressiveDisclosureMiddleware(
            groups=[Group("issues"), Group("code"), Group("repos", parent="code")],
            initial_groups=["issues"],
            max_tools=10,
        ))
        ```
    """

    catalog: Catalog

    def __init__(
        self,
        *,
        groups: Iterable[Group] = (),
        catalog: Catalog | None = None,
        initial_groups: Iterable[str] = (),
        max_tools: int | None = None,
        hide_ungrouped: bool = False,
        enable_tool_name: str = "enable_tools",
        disable_tool_name: str = "disable_tools",
        call_tool_name: str | None = None,
        include_schemas: bool = False,
        available_groups: Literal["children", "all"] = "children",
        state_namespace: str = "progressive",
        call_unlisted: bool = False,
        offer_enable: bool = True,
        side_effect_lists: bool = False,
        options: ProgressiveOptions | None = None,
    ) -> None:
        self.catalog = Catalog.shared(catalog, groups)
        # Each option is the keyword of its name: the object checks them all, once.
        given = locals()
        opts = resolve_options(
            ProgressiveOptions,
            options,
            {name: given[name] for name in option_names(ProgressiveOptions)},
            owner="ProgressiveDisclosureMiddleware",
        )
        if not isinstance(side_effect_lists, bool):
            raise OptionError(
                f"side_effect_lists must be True or False, got {side_effect_lists!r}: True lets "
                "enable_tools change later 2026-07-28 lists, which the specification forbids"
            )
        self.side_effect_lists = side_effect_lists
        _check_initial(self.catalog, opts.initial_groups, opts.max_tools)
        self.options = opts
        self._meta_names = opts.meta_tool_names
        # Without offer_enable they are not offered to anyone: no client is told why not.
        state_tools = (opts.enable_tool_name, opts.disable_tool_name)
        self._state_tools = frozenset(state_tools if opts.offer_enable else ())
        store = EnabledStore(self.catalog, opts.initial_groups, opts.state_namespace)
        self.policy_layer = self._layer = ProgressiveLayer(
            store, opts, side_effect_lists=side_effect_lists
        )
        self._bodies = MetaToolBodies(self._layer)

    def __repr__(self) -> str:
        o = self.options
        return (
            f"ProgressiveDisclosureMiddleware(catalog={self.catalog!r}, "
            f"initial_groups={list(o.initial_groups)!r}, max_tools={o.max_tools!r}, "
            f"hide_ungrouped={o.hide_ungrouped!r}, call_unlisted={o.call_unlisted!r}, "
            f"offer_enable={o.offer_enable!r}, side_effect_lists={self.side_effect_lists!r}, "
            f"meta_tools={sorted(self._meta_names)!r})"
        )

    @override
    def setup(self, server: FastMCP) -> None:
        super().setup(server)
        enforce_access(server, self.catalog)

    async def check(self, server: FastMCP) -> None:
        """Raise ``ValueError`` if ``initial_groups`` show more than ``max_tools`` tools.

        The constructor counts only tools named literally in ``Group(tools=...)``;
        members declared with ``@in_group`` are known once the server has them.

        Example:
            ```python
            await middleware.check(mcp)  # at startup, after registering tools
            ```
        """
        if self.options.max_tools is None:
            return
        initial, most = self.options.initial_groups, self.options.max_tools
        members = await self._bodies.members(server)
        visible = {t for g in initial for t in members.get(g, frozenset())}
        if len(visible) > most:
            raise OptionError(
                f"initial_groups {list(initial)} hold {len(visible)} tools, over "
                f"max_tools={most}; raise max_tools or enable fewer groups"
            )

    # -- meta-tools ----------------------------------------------------------------------

    @override
    def meta_tools(self) -> dict[str, Tool]:
        """The meta-tools; their descriptions name the groups, so they follow the catalog."""
        bodies = self._bodies

        async def enable_tools(ctx: Context, groups: Any = None) -> EnableToolsResult:
            # A ToolResult on a fixed list (2026-07-28), which FastMCP passes on as it is:
            # the annotation keeps one outputSchema for both eras.
            return cast("EnableToolsResult", await bodies.enable(ctx, groups))

        async def disable_tools(ctx: Context, groups: Any = None) -> DisableToolsResult:
            return await bodies.disable(ctx, groups)

        if self.options.include_schemas:
            enable_tools.__annotations__["return"] = EnableToolsWithSchemasResult
        tools = [
            MetaTool.from_function(
                enable_tools,
                name=self.options.enable_tool_name,
                description=bodies.enable_description(),
            ),
            MetaTool.from_function(
                disable_tools,
                name=self.options.disable_tool_name,
                description=bodies.disable_description(),
            ),
        ]
        # FastMCP checks a component's own auth wherever it lists or looks one up (the
        # list, a call by name, a background task): the one place that hides them all.
        tools = [
            t.model_copy(
                update={"parameters": _GROUPS_SCHEMA, "auth": self._layer.offers_state_tools}
            )
            for t in tools
            if self.options.offer_enable
        ]
        if self.options.call_tool_name is not None or self.options.offer_enable:

            async def call_tool(name: str, ctx: Context, arguments: Any = None) -> ToolResult:
                return await bodies.proxy(ctx, name, arguments)

            proxy = MetaTool.from_function(
                call_tool,
                name=self.options.call_tool_name or FIXED_CALL_TOOL,
                description=bodies.call_description(),
                output_schema=None,
            )
            update: dict[str, Any] = {"parameters": _CALL_SCHEMA}
            if self.options.call_tool_name is None:
                # Only where lists are fixed: a host that calls listed names alone reaches
                # what enable_tools hands out through it (2025-11-25 lists grow instead).
                update["auth"] = self._layer.lists_fixed
            tools.append(proxy.model_copy(update=update))
        return {t.name: mark_meta_tool(t) for t in tools}

    @override
    async def unknown_tool_hint(self, context: MiddlewareContext[Any], name: str) -> str | None:
        ctx = context.fastmcp_context
        if (
            name in self._state_tools
            and ctx is not None
            and client_key(ctx) is None
            and not self._layer.fixed(current_info())
        ):
            # Hidden from this client, which may know the name from the docs: say why.
            tree = await access_of(self.catalog).tree()
            return f"Unknown tool: {name!r}; {self._bodies.no_state(tree)}"
        return None

    @override
    def announce_to(self, context: MiddlewareContext[Any], result: _R) -> _R:
        """For a client that cannot hold state, the instructions say how to get it."""
        ctx = context.fastmcp_context
        if ctx is None or client_key(ctx) is not None or not hasattr(result, "instructions"):
            return result
        if self._layer.fixed(current_info()):
            return result  # a fixed list needs no state: enable_tools works for everyone
        if not self.options.offer_enable:
            return result  # no group is enabled by anyone: nothing is missing without state
        paragraph = self._bodies.no_state_instructions()
        current = result.instructions
        text = f"{current}\n\n{paragraph}" if current else paragraph
        return result.model_copy(update={"instructions": text})  # type: ignore[attr-defined,no-any-return]


def _check_initial(catalog: Catalog, initial: Sequence[str], max_tools: int | None) -> None:
    """Check ``initial`` against the catalog: declared, parents first, within ``max_tools``
    (what ``ProgressiveOptions`` cannot know alone)."""
    declared = [g.name for g in catalog.groups]
    for name in initial:
        if catalog.group(name) is None:
            raise OptionError(
                f"initial_groups names unknown group {name!r}; declare Group({name!r}) "
                f"or fix the name (declared: {declared})"
            )
    reachable = closed(catalog, initial)
    missing = [n for n in initial if n not in reachable]
    if missing:
        name = missing[0]
        path = path_to(catalog, name, reachable)
        raise OptionError(
            f"initial group {name!r} is a child whose parent is not initially enabled; "
            f"use initial_groups={[*(n for n in path if n not in initial), *initial]}"
        )
    if max_tools is not None:
        # Literal names in Group(tools=[...]) are members we can count before any server.
        literal = {
            pattern
            for name in initial
            for pattern in catalog.group(name).tools  # type: ignore[union-attr]
            if not _GLOB.search(pattern)
        }
        if len(literal) > max_tools:
            raise OptionError(
                f"initial_groups {list(initial)} hold at least {len(literal)} tools, over "
                f"max_tools={max_tools}; raise max_tools or enable fewer groups"
            )

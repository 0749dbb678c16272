"""Progressive disclosure: the agent enables and disables groups of tools as it needs them."""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from fastmcp.exceptions import ToolError
from fastmcp.server.context import Context  # noqa: TC002 - meta-tool signatures resolve it
from fastmcp.server.middleware import CallNext, MiddlewareContext
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.tools.base import Tool, ToolResult
from pydantic import BaseModel
from typing_extensions import override

from fastmcp_filtering._catalog import Catalog, ComponentKind, Membership, kind_of
from fastmcp_filtering._declarations import META_TOOL_KEY
from fastmcp_filtering._layers import AccessLayer, ClientView, refusal_for
from fastmcp_filtering._progressive import (
    as_names,
    call_hint,
    closed,
    disable,
    enable,
    offered,
    path_to,
    shown,
)
from fastmcp_filtering._protocol import brief, request_info
from fastmcp_filtering._state import StateUnavailable, client_key, load_state, save_state

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from fastmcp import FastMCP
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering._declarations import Group

__all__ = ["DisableToolsResult", "EnableToolsResult", "ProgressiveDisclosureMiddleware"]

logger = logging.getLogger("fastmcp_filtering")

# MCP tool names (SEP-986): what every client accepts.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_GLOB = re.compile(r"[*?\[]")
_KIND_WORD: dict[ComponentKind, str] = {
    "tool": "tool",
    "prompt": "prompt",
    "resource": "resource",
    "template": "resource template",
}


class EnableToolsResult(BaseModel):
    """The reply of ``enable_tools``: what changed and what the agent can use now."""

    enabled: list[str]
    """Groups this call enabled, parents before children."""
    enabled_groups: list[str]
    """Every enabled group, in declaration order."""
    available_tools: list[str]
    """Tools of the enabled groups the agent can call now, sorted."""
    available_groups: list[str]
    """Groups that can be enabled next: roots and children of enabled groups."""
    errors: list[str]
    """One entry per group that was not enabled, saying why and what to do."""


class EnableToolsWithSchemasResult(EnableToolsResult):
    """``EnableToolsResult`` plus the definitions of the tools this call made available."""

    tools: list[dict[str, Any]]
    """``tools/list`` entries of the newly available tools, for clients that ignore list_changed."""


class DisableToolsResult(BaseModel):
    """The reply of ``disable_tools``: what changed and what the agent can still use."""

    disabled: list[str]
    """Groups this call disabled, each followed by the descendants it took with it."""
    enabled_groups: list[str]
    """Every group still enabled, in declaration order."""
    available_tools: list[str]
    """Tools of the enabled groups the agent can still call, sorted."""
    errors: list[str]
    """One entry per group that was not disabled, saying why."""


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


@dataclass(frozen=True, slots=True)
class _Enabled:
    """One client's enabled groups for one request, and why they may be the initial set."""

    groups: frozenset[str]
    problem: str | None = None
    """None, ``"anonymous"`` (nothing identifies the client) or ``"store"`` (the store failed)."""


class _ShowAll:
    def refusal(self, component: FastMCPComponent) -> str | None:
        return None


_SHOW_ALL = _ShowAll()
# Set while this layer lists components on a client's behalf, letting every other one decide.
_STANDING_ASIDE: ContextVar[ProgressiveDisclosureMiddleware | None] = ContextVar(
    "fastmcp_filtering_progressive_aside", default=None
)


class _View:
    """``ClientView`` of progressive disclosure: visible iff a direct group is enabled."""

    def __init__(self, layer: ProgressiveDisclosureMiddleware, enabled: _Enabled) -> None:
        self._layer = layer
        self._enabled = enabled

    def refusal(self, component: FastMCPComponent) -> str | None:
        layer = self._layer
        if isinstance(component, Tool) and (
            component.name in layer._meta_names or (component.meta or {}).get(META_TOOL_KEY)
        ):
            return None
        membership = layer.catalog.membership(component)
        if shown(membership, self._enabled.groups, hide_ungrouped=layer.hide_ungrouped):
            return None
        return layer._hint(component, membership, self._enabled)


@dataclass(frozen=True, slots=True)
class _Components:
    """The server's components as one client may see them, save for this layer."""

    tools: list[Tool]
    others: dict[ComponentKind, list[FastMCPComponent]]


class ProgressiveDisclosureMiddleware(AccessLayer, ToolInjectionMiddleware):
    """Show an agent the meta-tools and the tools of the groups it enabled, per client.

    Adds ``enable_tools(groups=[...])`` and ``disable_tools(groups=[...])`` (and,
    with ``call_tool_name``, a ``call_tool`` proxy) to the server. A component is
    visible when one of its direct groups is enabled; enabling a parent offers
    its children, disabling it disables them. Components in no group stay
    visible unless ``hide_ungrouped``. ``max_tools`` caps the grouped tools
    visible at once. Hidden tools, prompts and resources are refused with a hint
    naming the ``enable_tools`` call that unlocks them. Enabled groups live in
    FastMCP's session state store, per session (2025-11-25) or per authenticated
    principal (2026-07-28; per process on stdio and in-memory); a client with no
    identity, or a store that fails, gets the initial groups and cannot enable more.

    Example:
        ```python
        mcp.add_middleware(ProgressiveDisclosureMiddleware(
            groups=[Group("issues"), Group("code"), Group("repos", parent="code")],
            initial_groups=["issues"],
            max_tools=10,
        ))
        ```
    """

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
        state_namespace: str = "progressive",
    ) -> None:
        if catalog is not None:
            if not isinstance(catalog, Catalog):
                raise ValueError(f"catalog must be a Catalog, got {type(catalog).__name__}")
            if any(True for _ in groups):
                raise ValueError(
                    "pass either catalog= or groups=, not both: declare them once in "
                    "Catalog(groups=...)"
                )
        self.catalog = catalog if catalog is not None else Catalog(groups=groups)
        if max_tools is not None and (
            isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1
        ):
            raise ValueError(f"max_tools must be a positive int or None, got {max_tools!r}")
        self.max_tools = max_tools
        self.hide_ungrouped = bool(hide_ungrouped)
        self.include_schemas = bool(include_schemas)
        names = {"enable_tool_name": enable_tool_name, "disable_tool_name": disable_tool_name}
        if call_tool_name is not None:
            names["call_tool_name"] = call_tool_name
        for option, value in names.items():
            if not isinstance(value, str) or not _TOOL_NAME.fullmatch(value):
                raise ValueError(
                    f"{option}={value!r} is not a valid tool name: use 1 to 128 letters, "
                    "digits, '_', '-' or '.'"
                )
        if len(set(names.values())) != len(names):
            raise ValueError(f"meta-tool names must differ, got {names}")
        self.enable_tool_name = enable_tool_name
        self.disable_tool_name = disable_tool_name
        self.call_tool_name = call_tool_name
        self._meta_names = frozenset(names.values())
        if not isinstance(state_namespace, str) or not state_namespace:
            raise ValueError(f"state_namespace must be a non-empty string, got {state_namespace!r}")
        self.state_namespace = state_namespace
        self.initial_groups = self._validate_initial(initial_groups)
        self._built: tuple[int, dict[str, Tool]] | None = None
        # Serializes one client's read-modify-write on this replica; the state stays in the store.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        ToolInjectionMiddleware.__init__(self, [])

    def _validate_initial(self, initial_groups: Iterable[str]) -> tuple[str, ...]:
        if isinstance(initial_groups, str):
            raise ValueError(
                f"initial_groups={initial_groups!r} is a string; pass a list: "
                f"initial_groups=[{initial_groups!r}]"
            )
        initial = tuple(dict.fromkeys(initial_groups))
        declared = [g.name for g in self.catalog.groups]
        for name in initial:
            if self.catalog.group(name) is None:
                raise ValueError(
                    f"initial_groups names unknown group {name!r}; declare Group({name!r}) "
                    f"or fix the name (declared: {declared})"
                )
        reachable = closed(self.catalog, initial)
        missing = [n for n in initial if n not in reachable]
        if missing:
            name = missing[0]
            path = path_to(self.catalog, name, reachable)
            raise ValueError(
                f"initial group {name!r} is a child whose parent is not initially enabled; "
                f"use initial_groups={[*(n for n in path if n not in initial), *initial]}"
            )
        if self.max_tools is not None:
            # Literal names in Group(tools=[...]) are members we can count before any server.
            literal = {
                pattern
                for name in initial
                for pattern in self.catalog.group(name).tools  # type: ignore[union-attr]
                if not _GLOB.search(pattern)
            }
            if len(literal) > self.max_tools:
                raise ValueError(
                    f"initial_groups {list(initial)} hold at least {len(literal)} tools, over "
                    f"max_tools={self.max_tools}; raise max_tools or enable fewer groups"
                )
        return initial

    def __repr__(self) -> str:
        return (
            f"ProgressiveDisclosureMiddleware(catalog={self.catalog!r}, "
            f"initial_groups={list(self.initial_groups)!r}, max_tools={self.max_tools!r}, "
            f"hide_ungrouped={self.hide_ungrouped!r}, meta_tools={sorted(self._meta_names)!r})"
        )

    async def check(self, server: FastMCP) -> None:
        """Raise ``ValueError`` if ``initial_groups`` show more than ``max_tools`` tools.

        The constructor counts only tools named literally in ``Group(tools=...)``;
        members declared with ``@in_group`` are known once the server has them.

        Example:
            ```python
            await middleware.check(mcp)  # at startup, after registering tools
            ```
        """
        if self.max_tools is None:
            return
        listed = await server.list_tools(run_middleware=False)
        tools = [t for t in listed if t.name not in self._meta_names]
        members = self._members(tools)
        visible = {t for g in self.initial_groups for t in members.get(g, frozenset())}
        if len(visible) > self.max_tools:
            raise ValueError(
                f"initial_groups {list(self.initial_groups)} hold {len(visible)} tools, over "
                f"max_tools={self.max_tools}; raise max_tools or enable fewer groups"
            )

    # -- meta-tools ----------------------------------------------------------------------

    @property
    @override
    def injected_tools(self) -> Sequence[Tool]:
        return list(self._meta_tools().values())

    @override
    def get_injected_tool(self, name: str) -> Tool | None:
        return self._meta_tools().get(name)

    def _meta_tools(self) -> dict[str, Tool]:
        """The meta-tools, rebuilt only when the group declarations change (stable bytes)."""
        if self._built is not None and self._built[0] == self.catalog.version:
            return self._built[1]
        layer = self

        async def enable_tools(ctx: Context, groups: Any = None) -> EnableToolsResult:
            return await layer._enable(ctx, groups)

        async def disable_tools(ctx: Context, groups: Any = None) -> DisableToolsResult:
            return await layer._disable(ctx, groups)

        if self.include_schemas:
            enable_tools.__annotations__["return"] = EnableToolsWithSchemasResult
        tools = [
            Tool.from_function(
                enable_tools,
                name=self.enable_tool_name,
                description=self._enable_description(),
                meta={META_TOOL_KEY: True},
            ),
            Tool.from_function(
                disable_tools,
                name=self.disable_tool_name,
                description=self._disable_description(),
                meta={META_TOOL_KEY: True},
            ),
        ]
        tools = [t.model_copy(update={"parameters": _GROUPS_SCHEMA}) for t in tools]
        if self.call_tool_name is not None:

            async def call_tool(
                name: str, ctx: Context, arguments: dict[str, Any] | None = None
            ) -> ToolResult:
                return await layer._proxy(ctx, name, arguments)

            tools.append(
                Tool.from_function(
                    call_tool,
                    name=self.call_tool_name,
                    description=self._call_description(),
                    output_schema=None,
                    meta={META_TOOL_KEY: True},
                )
            )
        built: dict[str, Tool] = {t.name: t for t in tools}
        self._built = (self.catalog.version, built)
        return built

    def _enable_description(self) -> str:
        lines = [
            "Enable groups of tools to make their tools available to you.",
            f"Call {call_hint(self.enable_tool_name, ['<group>'])}; the reply lists the tools "
            "now available.",
            "A child group can be enabled once its parent is; name both to enable them together.",
        ]
        if self.max_tools is not None:
            lines.append(
                f"At most {self.max_tools} grouped tools can be enabled at once; disable groups "
                f"with {self.disable_tool_name} to make room."
            )
        lines.append("Groups:")
        lines.extend(self._tree())
        return "\n".join(lines)

    def _tree(self) -> list[str]:
        lines: list[str] = []

        def visit(name: str, depth: int, path: tuple[str, ...]) -> None:
            group = self.catalog.group(name)
            if group is None or name in path:
                return
            about = group.description or group.title
            lines.append(f"{'  ' * depth}- {name}" + (f": {about}" if about else ""))
            for child in self.catalog.children(name):
                visit(child, depth + 1, (*path, name))

        for root in self.catalog.roots():
            visit(root, 0, ())
        return lines

    def _disable_description(self) -> str:
        return (
            "Disable groups of tools you no longer need, to keep your tool list short; "
            "disabling a group also disables the groups below it. "
            f"Call {call_hint(self.disable_tool_name, ['<group>'])}."
        )

    def _call_description(self) -> str:
        return (
            "Call a tool of an enabled group by name, for when your tool list has not "
            "refreshed after enabling a group: "
            f'{self.call_tool_name}(name="<tool>", arguments={{...}}). '
            f"Enable the tool's group with {self.enable_tool_name} first."
        )

    # -- state -----------------------------------------------------------------------------

    async def _load(self, ctx: Context | None) -> _Enabled:
        """This client's enabled groups; the initial set when they cannot be known (fail closed)."""
        initial = frozenset(self.initial_groups)
        if ctx is None:
            return _Enabled(initial)
        try:
            stored = await load_state(ctx, self.state_namespace)
        except StateUnavailable as exc:
            if client_key(ctx) is None:
                return _Enabled(initial, "anonymous")
            logger.warning("progressive disclosure: %s; serving the initial groups", exc)
            return _Enabled(initial, "store")
        if stored is None:
            return _Enabled(initial)
        names = stored.get("enabled") if isinstance(stored, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            logger.warning("progressive disclosure: unreadable state %r; initial groups", stored)
            return _Enabled(initial, "store")
        return _Enabled(closed(self.catalog, names))

    async def _load_for_change(self, ctx: Context) -> frozenset[str]:
        enabled = await self._load(ctx)
        if enabled.problem == "anonymous":
            raise ToolError(
                "groups cannot be enabled or disabled on this connection: this server keeps "
                "enabled groups per session (protocol 2025-11-25) or per authenticated user, "
                "and this stateless HTTP request has neither. Authenticate or connect with a "
                "session; until then the initial groups apply: "
                f"{as_names(self._ordered(enabled.groups))}"
            )
        if enabled.problem == "store":
            raise ToolError(
                "groups cannot be changed right now: the server could not read its session "
                "state store, so only the initial groups apply "
                f"({as_names(self._ordered(enabled.groups))}); try again later"
            )
        return enabled.groups

    async def _save(self, ctx: Context, enabled: frozenset[str]) -> None:
        try:
            await save_state(ctx, self.state_namespace, {"enabled": self._ordered(enabled)})
        except StateUnavailable as exc:
            logger.warning("progressive disclosure: %s", exc)
            raise ToolError(
                "groups were not changed: the server could not write its session state "
                "store; try again later"
            ) from exc

    def _ordered(self, names: Iterable[str]) -> list[str]:
        wanted = set(names)
        return [g.name for g in self.catalog.groups if g.name in wanted]

    # -- the view --------------------------------------------------------------------------

    @override
    async def client_view(self, context: MiddlewareContext[Any]) -> ClientView:
        if _STANDING_ASIDE.get() is self:
            return _SHOW_ALL
        return _View(self, await self._load(context.fastmcp_context))

    def _hint(self, component: FastMCPComponent, membership: Membership, enabled: _Enabled) -> str:
        kind = kind_of(component)
        what = f"{_KIND_WORD[kind].capitalize()} {component.name!r}"
        if not membership.direct:
            if membership.undeclared:
                return (
                    f"{what} is not available: it claims group(s) "
                    f"{as_names(membership.undeclared)}, which this server does not declare"
                )
            return f"{what} is not available: this server hides {_KIND_WORD[kind]}s in no group"
        groups = membership.direct
        where = (
            f"group {groups[0]!r}, which is not"
            if len(groups) == 1
            else "groups " + ", ".join(repr(g) for g in groups) + ", none of which is"
        )
        now = as_names(self._ordered(enabled.groups))
        if enabled.problem == "anonymous":
            return (
                f"{what} is in {where} enabled, and this connection cannot enable groups: "
                "this server keeps enabled groups per session (protocol 2025-11-25) or per "
                "authenticated user, and this stateless HTTP request has neither. "
                f"Authenticate or connect with a session. Enabled now: {now}."
            )
        if enabled.problem == "store":
            return (
                f"{what} is in {where} enabled; the server cannot read its session state "
                f"store right now, so only the initial groups apply. Enabled now: {now}."
            )
        options = " or ".join(
            call_hint(self.enable_tool_name, path_to(self.catalog, g, enabled.groups))
            for g in groups
        )
        return f"{what} is in {where} enabled. Call {options} first. Enabled now: {now}."

    # -- session bookkeeping ---------------------------------------------------------------

    @override
    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        # Runtime group changes (Catalog.add_group) rewrite the meta-tool descriptions;
        # the catalog announces them to the session-era clients it remembers.
        info = request_info(context)
        if info is not None and not info.modern and info.connection is not None:
            self.catalog.remember(info.connection)
        return await super().on_message(context, call_next)

    # -- meta-tool bodies --------------------------------------------------------------------

    def _members(self, tools: Sequence[Tool]) -> dict[str, frozenset[str]]:
        """Each group's tools: the grouped tools enabling that group shows."""
        members: dict[str, set[str]] = {}
        for tool in tools:
            for group in self.catalog.membership(tool).direct:
                members.setdefault(group, set()).add(tool.name)
        return {g: frozenset(names) for g, names in members.items()}

    async def _components(self, ctx: Context) -> _Components:
        """Components as this client sees them through every other middleware, not this one."""
        server = ctx.fastmcp
        # The whole middleware chain (another layer, a filter of the server's own, ...)
        # decides, with this layer standing aside, so a reply never names what the client
        # could not list once the groups are enabled.
        token = _STANDING_ASIDE.set(self)
        try:
            listed = await server.list_tools()
            others: dict[ComponentKind, list[FastMCPComponent]] = {
                "prompt": list(await server.list_prompts()),
                "resource": list(await server.list_resources()),
                "template": list(await server.list_resource_templates()),
            }
        finally:
            _STANDING_ASIDE.reset(token)
        tools = [t for t in listed if t.name not in self._meta_names]
        return _Components(tools, others)

    def _shown(self, components: Iterable[FastMCPComponent], enabled: frozenset[str]) -> set[str]:
        return {
            f"{c.name}@{getattr(c, 'uri', '')}{getattr(c, 'uri_template', '')}"
            for c in components
            if shown(self.catalog.membership(c), enabled, hide_ungrouped=self.hide_ungrouped)
        }

    def _available(self, tools: Sequence[Tool], enabled: frozenset[str]) -> list[str]:
        return sorted(
            t.name for t in tools if not enabled.isdisjoint(self.catalog.membership(t).direct)
        )

    async def _announce(
        self, ctx: Context, seen: _Components, before: frozenset[str], after: frozenset[str]
    ) -> None:
        """Tell this client (and only it) which lists changed; nothing when none did."""
        notifications: list[mt.ServerNotification] = []
        if self._shown(seen.tools, before) != self._shown(seen.tools, after):
            notifications.append(mt.ToolListChangedNotification())
        if self._shown(seen.others["prompt"], before) != self._shown(seen.others["prompt"], after):
            notifications.append(mt.PromptListChangedNotification())
        resources = [*seen.others["resource"], *seen.others["template"]]
        if self._shown(resources, before) != self._shown(resources, after):
            notifications.append(mt.ResourceListChangedNotification())
        for notification in notifications:
            try:
                await ctx.send_notification(notification)
            except Exception:
                logger.debug("could not send %s", notification.method, exc_info=True)

    def _lock(self, ctx: Context) -> asyncio.Lock:
        key = client_key(ctx) or ""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def _enable(self, ctx: Context, groups: object) -> EnableToolsResult:
        async with self._lock(ctx):
            return await self._enable_locked(ctx, groups)

    async def _disable(self, ctx: Context, groups: object) -> DisableToolsResult:
        async with self._lock(ctx):
            return await self._disable_locked(ctx, groups)

    async def _enable_locked(self, ctx: Context, groups: object) -> EnableToolsResult:
        before = await self._load_for_change(ctx)
        seen = await self._components(ctx)
        change = enable(
            self.catalog,
            before,
            groups,
            tool=self.enable_tool_name,
            disable_tool=self.disable_tool_name,
            members=self._members(seen.tools),
            max_tools=self.max_tools,
        )
        if change.changed:
            await self._save(ctx, change.enabled)
            await self._announce(ctx, seen, before, change.enabled)
        fields: dict[str, Any] = {
            "enabled": change.changed,
            "enabled_groups": self._ordered(change.enabled),
            "available_tools": self._available(seen.tools, change.enabled),
            "available_groups": offered(self.catalog, change.enabled),
            "errors": change.errors,
        }
        if not self.include_schemas:
            return EnableToolsResult(**fields)
        new = set(fields["available_tools"]) - set(self._available(seen.tools, before))
        fields["tools"] = [
            t.to_mcp_tool().model_dump(by_alias=True, mode="json", exclude_none=True)
            for t in sorted(seen.tools, key=lambda t: t.name)
            if t.name in new
        ]
        return EnableToolsWithSchemasResult(**fields)

    async def _disable_locked(self, ctx: Context, groups: object) -> DisableToolsResult:
        before = await self._load_for_change(ctx)
        change = disable(self.catalog, before, groups, tool=self.disable_tool_name)
        seen = await self._components(ctx)
        if change.changed:
            await self._save(ctx, change.enabled)
            await self._announce(ctx, seen, before, change.enabled)
        return DisableToolsResult(
            disabled=change.changed,
            enabled_groups=self._ordered(change.enabled),
            available_tools=self._available(seen.tools, change.enabled),
            errors=change.errors,
        )

    async def _proxy(self, ctx: Context, name: str, arguments: dict[str, Any] | None) -> ToolResult:
        if name == self.call_tool_name:
            raise ToolError(f"{name} cannot call itself; pass the name of the tool to call")
        server = ctx.fastmcp
        tool = await server.get_tool(name)
        if tool is None:
            raise ToolError(
                f"unknown tool {brief(name)}; enable a group with {self.enable_tool_name} and "
                "use a tool from the available_tools of its reply"
            )
        context = MiddlewareContext[Any](message=None, fastmcp_context=ctx)
        if (message := await refusal_for(server, context, tool)) is not None:
            raise ToolError(message)
        # The whole middleware chain runs again for the proxied call, every layer included.
        return await server.call_tool(name, arguments or {})

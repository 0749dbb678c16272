"""The bodies of ``enable_tools``, ``disable_tools`` and ``call_tool``, and their replies."""

from __future__ import annotations

import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any, cast

from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.tools.base import ToolResult
from pydantic import BaseModel

from fastmcp_filtering.core.catalog import is_meta_tool
from fastmcp_filtering.core.errors import StateUnavailable
from fastmcp_filtering.core.request import REPLY_CONFIG, brief, client_key, current_info
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.policy.decision import call_hint
from fastmcp_filtering.progressive.rules import (
    MAX_GROUP_NAMES,
    as_names,
    disable,
    enable,
    offered,
)
from fastmcp_filtering.server.layers import Reach, notify_changes
from fastmcp_filtering.server.transform import ServerListing, current_policy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.tools.base import Tool

    from fastmcp_filtering.core.catalog import GroupTree
    from fastmcp_filtering.progressive.rules import Holding, ProgressiveLayer

logger = logging.getLogger("fastmcp_filtering")

_UNLISTABLE = (
    "groups were not changed: the server could not list your tools right now, and this "
    "call's reply needs them; try again later"
)


class EnableToolsResult(BaseModel):
    """The reply of ``enable_tools``: what changed and what the agent can use now."""

    model_config = REPLY_CONFIG

    enabled: list[str]
    """Groups this call enabled, parents before children."""
    enabled_groups: list[str]
    """Every enabled group, in declaration order."""
    available_tools: list[str]
    """Tools of the enabled groups the agent can call now, sorted."""
    available_groups: list[str]
    """Child groups that can be enabled now, their parent being enabled (with
    ``available_groups="all"``, the roots not enabled too)."""
    errors: list[str]
    """One entry per group that was not enabled, saying why and what to do."""


class EnableToolsWithSchemasResult(EnableToolsResult):
    """``EnableToolsResult`` plus the definitions of the tools this call made available."""

    tools: list[dict[str, Any]]
    """``tools/list`` entries of the newly available tools, for clients that ignore list_changed."""


class DisableToolsResult(BaseModel):
    """The reply of ``disable_tools``: what changed and what the agent can still use."""

    model_config = REPLY_CONFIG

    disabled: list[str]
    """Groups this call disabled, each followed by the descendants it took with it."""
    enabled_groups: list[str]
    """Every group still enabled, in declaration order."""
    available_tools: list[str]
    """Tools of the enabled groups the agent can still call, sorted."""
    available_groups: list[str]
    """Child groups that can be enabled now, as in ``EnableToolsResult``."""
    errors: list[str]
    """One entry per group that was not disabled, saying why."""


class MetaToolBodies:
    """What the meta-tools do, for one ``ProgressiveLayer`` and its options."""

    def __init__(self, layer: ProgressiveLayer) -> None:
        self.layer = layer
        self.options = layer.options
        self.store = layer.store
        self.catalog = layer.catalog
        # A root's children are offered once it is enabled; with "all", every group at once.
        self.offer_roots = layer.options.available_groups == "all"
        self._fixed = FixedListReplies(self)

    def enable_description(self) -> str:
        # The same bytes for every client and every enabled set, so clients can cache it: the
        # roots here, each child in available_groups once its parent is enabled (wags' design).
        o = self.options
        lines = [
            f"Make a group's tools available: {call_hint(o.enable_tool_name, ['<group>'])}. The "
            "reply lists them, and in available_groups the groups to enable next.",
        ]
        if o.max_tools is not None:
            lines.append(
                f"At most {o.max_tools} grouped tools at once: {o.disable_tool_name} makes room."
            )
        # Only groups open to everyone: a group under an access check is learned from
        # groups/list and available_groups, by the principals that may use it.
        access = access_of(self.catalog)
        ruled = access.rules().ruled
        roots = [r for r in self.catalog.roots() if r not in ruled]
        children = {r: [c for c in self.catalog.children(r) if c not in ruled] for r in roots}
        if any(children.values()):
            lines.append(
                "(+): holds more groups, offered once it is enabled (or name parent and child "
                "together)."
            )
        lines.append("Groups:")
        for root in roots:
            group = self.catalog.group(root)
            if group is None:
                continue
            about = group.description or group.display_title
            more = " (+)" if children[root] else ""
            lines.append(f"- {root}{more}" + (f": {about}" if about else ""))
        if access.active:
            lines.append("Your authorization may let you use more groups: see groups/list.")
        return "\n".join(lines)

    def disable_description(self) -> str:
        return (
            "Give back groups you no longer need (and the groups below them) to keep your "
            f"tool list short: {call_hint(self.options.disable_tool_name, ['<group>'])}."
        )

    def call_description(self) -> str:
        if self.options.call_unlisted:
            return (
                "Call a tool by its exact name, listed or not (search_tools finds them): "
                f'{self.options.call_tool_name}(name="<tool>", arguments={{...}}).'
            )
        return (
            "Call a tool of an enabled group by name, for when your tool list has not "
            "refreshed after enabling a group: "
            f'{self.options.call_tool_name}(name="<tool>", arguments={{...}}). '
            f"Enable the tool's group with {self.options.enable_tool_name} first."
        )

    async def members(self, server: FastMCP) -> dict[str, frozenset[str]]:
        return await self.layer.members(ServerListing(server))

    def no_state(self, tree: GroupTree) -> str:
        """Why a client with no identity cannot enable groups, and how it gets one; of the
        initial groups, those it may know (``tree``): a denied one is named nowhere."""
        known = {group.name for group in tree.groups}
        now = as_names(self.store.ordered(g for g in self.store.initial if g in known))
        return (
            "groups cannot be enabled or disabled on this connection: this server keeps "
            "enabled groups per session (protocol 2025-11-25) or per authenticated user, "
            "and this stateless HTTP request has neither. Authenticate or connect with a "
            f"session. Until then the initial groups are listed ({now}), and a tool of "
            "any other group runs when called by its exact name (search_tools finds them)"
        )

    def no_state_instructions(self) -> str:
        """The instructions paragraph for a client that cannot enable groups."""
        enable, disable = self.options.enable_tool_name, self.options.disable_tool_name
        return (
            "Tool groups: this server offers more tools in groups that a client enables with "
            f"{enable}, but it keeps enabled groups per session (protocol "
            "2025-11-25) or per authenticated user, and this stateless HTTP connection has "
            f"neither: {enable} and {disable} are not offered here, and "
            "only the tools of the initial groups are listed. A tool of any other group "
            "still runs when called by its exact name: search_tools, where offered, finds "
            "them with their arguments. To have them listed, authenticate (send a bearer "
            "token) or connect with a 2025-11-25 session."
        )

    async def current(self, ctx: Context, tree: GroupTree) -> frozenset[str]:
        enabled = await self.store.load(ctx, client_key(ctx), tree)
        now = as_names(self.store.ordered(enabled.groups))
        if enabled.problem == "anonymous":
            raise ToolError(self.no_state(tree))
        if enabled.problem == "store":
            raise ToolError(
                "groups cannot be changed right now: the server could not read its session "
                f"state store, so only the initial groups apply ({now}); try again later"
            )
        return enabled.groups

    async def save(self, ctx: Context, enabled: frozenset[str]) -> None:
        try:
            await self.store.save(ctx, enabled)
        except StateUnavailable as exc:
            # The store logged it (once per outage); the agent is told what to do.
            raise ToolError(
                "groups were not changed: the server could not write its session state "
                "store; try again later"
            ) from exc

    def available(
        self, tools: Sequence[Tool], enabled: frozenset[str], tree: GroupTree
    ) -> list[str]:
        return sorted(
            {
                t.name
                for t in tools
                if not is_meta_tool(t) and not enabled.isdisjoint(tree.membership(t).direct)
            }
        )

    async def enable(self, ctx: Context, groups: object) -> EnableToolsResult | ToolResult:
        # The groups this principal may use: any other is unknown, as one never declared.
        tree = await access_of(self.catalog).tree()
        if self.layer.fixed(current_info()):
            return await self._fixed.enable(ctx, groups, tree)
        async with self.store.lock(client_key(ctx)):
            before = await self.current(ctx, tree)
            named = groups[:MAX_GROUP_NAMES] if isinstance(groups, list) else []
            # What a group to enable holds is listed through the middleware chain: none
            # to enable (each named is enabled already, or none is a name), no listing.
            wanted = [g for g in named if isinstance(g, str) and g not in before]
            held = await self.layer.holding(ServerListing(ctx.fastmcp), wanted)
            # Before anything is saved: a reply that cannot list refuses the call unchanged.
            listing = await _reply_listing(self.layer, ctx, self.options.enable_tool_name, held)
            # Counted after that listing, never before: a tool added meanwhile is counted
            # under max_tools, or its group is not enabled; never enabled uncounted.
            members = await self.members(ctx.fastmcp)
            reach = await Reach.of(ctx.fastmcp)
            seen = await reach.seen()
            change = enable(
                tree,
                before,
                groups,
                tool=self.options.enable_tool_name,
                disable_tool=self.options.disable_tool_name,
                members=members,
                max_tools=self.options.max_tools,
                holding=held.groups,
            )
            if change.changed:
                await self.save(ctx, change.enabled)
                await notify_changes(ctx, seen, await reach.seen(), always=("tools",))
        listed = await _listed_now(ctx, listing)
        fields: dict[str, Any] = {
            "enabled": change.changed,
            "enabled_groups": self.store.ordered(change.enabled),
            "available_tools": self.available(listed, change.enabled, tree),
            "available_groups": held.usable(offered(tree, change.enabled, roots=self.offer_roots)),
            "errors": change.errors,
        }
        if not self.options.include_schemas:
            return EnableToolsResult(**fields)
        new = set(fields["available_tools"]) - set(self.available(seen.tools, before, tree))
        fields["tools"] = _definitions(listed, new)
        return EnableToolsWithSchemasResult(**fields)

    async def disable(self, ctx: Context, groups: object) -> DisableToolsResult:
        tree = await access_of(self.catalog).tree()
        if self.layer.fixed(current_info()):
            return await self._fixed.disable(ctx, groups, tree)
        async with self.store.lock(client_key(ctx)):
            before = await self.current(ctx, tree)
            change = disable(tree, before, groups, tool=self.options.disable_tool_name)
            # Listed before saving, so a refused listing changes nothing; the groups the
            # change disables drop out of available_tools below, as they do from the list.
            listed = await _reply_listing(self.layer, ctx, self.options.disable_tool_name)
            if change.changed:
                reach = await Reach.of(ctx.fastmcp)
                seen = await reach.seen()
                await self.save(ctx, change.enabled)
                await notify_changes(ctx, seen, await reach.seen(), always=("tools",))
        return DisableToolsResult(
            disabled=change.changed,
            enabled_groups=self.store.ordered(change.enabled),
            available_tools=self.available(listed, change.enabled, tree),
            available_groups=offered(tree, change.enabled, roots=self.offer_roots),
            errors=change.errors,
        )

    async def proxy(self, ctx: Context, name: str, arguments: object) -> ToolResult:
        if isinstance(arguments, str):
            # Clients that flatten objects to strings: a JSON object is still an object.
            with contextlib.suppress(ValueError, RecursionError):
                arguments = json.loads(arguments) if arguments.strip() else {}
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolError(
                f"arguments must be an object of the tool's arguments, like "
                f'{{"path": "README.md"}}, got {type(arguments).__name__}'
            )
        if name == self.options.call_tool_name:
            raise ToolError(f"{name} cannot call itself; pass the name of the tool to call")
        try:
            # The whole middleware chain and the policy judge the proxied call as any other.
            return await ctx.fastmcp.call_tool(name, arguments)
        except NotFoundError:
            if not self.options.offer_enable:
                raise ToolError(
                    f"unknown tool {brief(name)}; search_tools finds the tools by what they do"
                ) from None
            raise ToolError(
                f"unknown tool {brief(name)}; enable a group with "
                f"{self.options.enable_tool_name} and use a tool from the available_tools of "
                "its reply"
            ) from None


class FixedListReplies:
    """``enable_tools`` / ``disable_tools`` where lists are fixed (2026-07-28).

    A list there "MUST NOT vary ... as a side effect of other requests": the replies
    hand out the definitions of what a group makes available, its tools run by name
    (or through ``call_tool``) on the next call, and no list changes. An identified
    client's enabled groups are still kept, for its replies and ``max_tools``.
    """

    def __init__(self, bodies: MetaToolBodies) -> None:
        self.bodies = bodies
        self.layer = bodies.layer
        self.store = bodies.store

    async def _fixed_before(self, ctx: Context, key: str | None, tree: GroupTree) -> frozenset[str]:
        """The groups enabled before this call: the initial ones for a client with no state.

        Nothing here needs state: an identified client's enabled groups are kept only
        for its replies and ``max_tools``, never for a list.
        """
        if key is None:
            return self.store.initial_in(tree)
        return await self.bodies.current(ctx, tree)

    async def _reach_listing(
        self, ctx: Context, call: str, held: Holding | None = None
    ) -> Sequence[Tool]:
        """The tools this client can call, as its list would show them with every group on.

        Through the server's middleware chain (``widened``), so nothing another layer,
        access control or a middleware hides is handed out; a refused listing refuses
        the call before anything is saved.
        """
        if held is not None and held.tools is not None:
            return held.tools
        if held is None or not held.refused:
            listed = await self.layer.listed(ServerListing(ctx.fastmcp), "tool", call=call)
            if listed is not None:
                return cast("Sequence[Tool]", listed)
        raise ToolError(_UNLISTABLE)

    async def enable(self, ctx: Context, groups: object, tree: GroupTree) -> ToolResult:
        key = client_key(ctx)
        async with self._lock(key):
            before = await self._fixed_before(ctx, key, tree)
            named = groups[:MAX_GROUP_NAMES] if isinstance(groups, list) else []
            wanted = [g for g in named if isinstance(g, str) and g not in before]
            held = await self.layer.holding(ServerListing(ctx.fastmcp), wanted)
            listing = await self._reach_listing(ctx, self.bodies.options.enable_tool_name, held)
            change = enable(
                tree,
                before,
                groups,
                tool=self.bodies.options.enable_tool_name,
                disable_tool=self.bodies.options.disable_tool_name,
                members=await self.bodies.members(ctx.fastmcp),
                max_tools=self.bodies.options.max_tools,
                holding=held.groups,
            )
            if change.changed and key is not None:
                await self.bodies.save(ctx, change.enabled)
        available = self.bodies.available(listing, change.enabled, tree)
        new = set(available) - set(self.bodies.available(listing, before, tree))
        reply = EnableToolsWithSchemasResult(
            enabled=change.changed,
            enabled_groups=self.store.ordered(change.enabled),
            available_tools=available,
            available_groups=held.usable(
                offered(tree, change.enabled, roots=self.bodies.offer_roots)
            ),
            errors=change.errors,
            tools=_definitions(listing, new),
        )
        # As it is: the declared outputSchema (the same in both eras) allows the extra field.
        return ToolResult(structured_content=reply)

    async def disable(self, ctx: Context, groups: object, tree: GroupTree) -> DisableToolsResult:
        key = client_key(ctx)
        async with self._lock(key):
            before = await self._fixed_before(ctx, key, tree)
            change = disable(tree, before, groups, tool=self.bodies.options.disable_tool_name)
            listing = await self._reach_listing(ctx, self.bodies.options.disable_tool_name)
            if change.changed and key is not None:
                await self.bodies.save(ctx, change.enabled)
        return DisableToolsResult(
            disabled=change.changed,
            enabled_groups=self.store.ordered(change.enabled),
            available_tools=self.bodies.available(listing, change.enabled, tree),
            available_groups=offered(tree, change.enabled, roots=self.bodies.offer_roots),
            errors=change.errors,
        )

    def _lock(self, key: str | None) -> contextlib.AbstractAsyncContextManager[object]:
        """One client's read-modify-write at a time; a client with no state saves nothing."""
        return self.store.lock(key) if key is not None else contextlib.nullcontext()


def _definitions(tools: Sequence[Tool], names: set[str]) -> list[dict[str, Any]]:
    """The ``tools/list`` entries of ``names``, by name: what a client needs to call them."""
    return [
        t.to_mcp_tool().model_dump(by_alias=True, mode="json", exclude_none=True)
        for t in sorted(tools, key=lambda t: t.name)
        if t.name in names
    ]


async def _reply_listing(
    layer: ProgressiveLayer, ctx: Context, call: str, held: Holding | None = None
) -> Sequence[Tool]:
    """The tools a meta-tool's reply lists, got before any change is saved, or a refusal.

    ``held.tools`` when ``holding`` listed them (one ``tools/list`` per call for rate
    limiters and audit middleware); else the client's own list, unless ``holding`` was
    refused it already. A refused listing is logged with its words, and the client told
    only that nothing changed and to try again: the call fails before it saves anything,
    never after.

    Example:
        ```python
        listing = await _reply_listing(layer, ctx, "enable_tools", held)
        ```
    """
    if held is not None and held.tools is not None:
        return held.tools
    if held is None or not held.refused:
        try:
            return await ctx.fastmcp.list_tools()
        except Exception as exc:
            layer.log_refused(call, "tool", exc)
    raise ToolError(_UNLISTABLE)


async def _listed_now(ctx: Context, listing: Sequence[Tool]) -> Sequence[Tool]:
    """What the client lists now: its own middlewares may hide what the policy shows.

    ``listing`` is the one ``_reply_listing`` got before the change, through the
    middleware chain: the policy as it is now narrows it to the client's list, so rate
    limiters and audit middleware see one ``tools/list`` per call, not two.

    Example:
        ```python
        listed = await _listed_now(ctx, listing)
        ```
    """
    # Read after the change (reach.seen() reloaded it): the enabled groups of the reply.
    policy = await current_policy(ctx.fastmcp)
    return [t for t in listing if policy.judge(t) is None]

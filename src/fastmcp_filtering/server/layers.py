"""``LayerMiddleware``: a middleware that owns a layer of the access policy.

Also what a client lists before and after its own call changes a layer's state
(``enable_tools``, ``concerns/update``): read once (``Reach``) and judged by the
policy before and after, and the ``list_changed`` it is owed.

The decision itself lives in ``policy.decision`` and is applied inside FastMCP's
lookup by ``policy.transform.AccessTransform``. What only a middleware can do stays
here: registering the layer when the server is set up, turning FastMCP's
"Unknown tool" into the agent-facing hint when the policy says the tool exists
for this client but is hidden (and the client may learn of it), and refusing
``completion/complete`` for a prompt or template the client cannot see.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import mcp_types as mt
from fastmcp.exceptions import (
    AuthorizationError,
    NotFoundError,
    ToolError,
)
from typing_extensions import override

from fastmcp_filtering.core.request import brief, invalid_params, request_info, requested_version
from fastmcp_filtering.policy.decision import call_hint, invalidate, set_aside, widened
from fastmcp_filtering.policy.renderers import VisibleRenderers, is_renderer
from fastmcp_filtering.server.hooks import ListHooks
from fastmcp_filtering.server.transform import AccessTransform, current_policy, remedy

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Sequence

    from fastmcp import FastMCP
    from fastmcp.prompts.base import PromptResult
    from fastmcp.resources.base import ResourceResult
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.tools.base import Tool, ToolResult
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.policy.decision import Hidden, PolicyLayer

_C = TypeVar("_C", bound="FastMCPComponent")
_R = TypeVar("_R")


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


@dataclass(frozen=True, slots=True)
class Reach:
    """What a client's own change could show or hide: read once, judged before and after.

    Every component FastMCP's lookup finds for this client with the server's own
    policy set aside (``set_aside``): a mounted server's policy, FastMCP's own
    checks and the session's visibility rules still apply. A change to a
    layer's state (enabling groups, concerns) changes only the policy, so what
    changed for the client is this, judged by each policy: no listing through
    the middleware chain. (A server's own middleware that hides a component from
    lists alone, beside FastMCP's lookup, does not narrow it.)

    Example:
        ```python
        reach = await Reach.of(ctx.fastmcp)
        before = await reach.seen()
        await save(...)
        await notify_changes(ctx, before, await reach.seen())
        ```
    """

    server: FastMCP
    tools: Sequence[Tool]
    prompts: Sequence[FastMCPComponent]
    resources: Sequence[FastMCPComponent]

    @classmethod
    async def of(cls, server: FastMCP) -> Reach:
        """Read what ``server`` could show this request's client."""
        transform = AccessTransform.of(server)
        with set_aside(transform):
            tools = await server.list_tools(run_middleware=False)
            prompts = await server.list_prompts(run_middleware=False)
            resources = [
                *await server.list_resources(run_middleware=False),
                *await server.list_resource_templates(run_middleware=False),
            ]
        return cls(server, tools, prompts, resources)

    async def seen(self) -> Listing:
        """What the client lists under its policy as it is now (read again after a change)."""
        invalidate()
        policy = await current_policy(self.server)
        tools = [t for t in self.tools if policy.judge(t) is None]
        renderers = VisibleRenderers.of_tools(tools)
        resources = [
            c
            for c in self.resources
            if (renderers.allows(uri) if is_renderer(uri := str(getattr(c, "uri", ""))) else True)
            and policy.judge(c) is None
        ]
        return Listing(
            tools,
            {
                "tools": _keys(tools),
                "prompts": _keys(p for p in self.prompts if policy.judge(p) is None),
                "resources": _keys(resources),
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


class LayerMiddleware(ListHooks):
    """A middleware whose ``policy_layer`` narrows what a client may use.

    Subclasses set ``policy_layer``. Lists and lookups are narrowed by the
    server's ``AccessTransform``; this base only words refusals.
    """

    policy_layer: PolicyLayer
    answers = frozenset({"completion/complete"})
    judges_renderers = True

    @override
    def setup(self, server: FastMCP) -> None:
        super().setup(server)
        AccessTransform.ensure(server).add_layer(self.policy_layer)

    @override
    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        return cast("ToolResult", await self.pass_call(context, call_next))

    @override
    async def pass_call(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        """The call, with an unknown tool's refusal worded as the policy's hint."""
        name = context.message.name
        return await _hinted(
            context, call_next, "tool", name, ToolError, unknown=self.unknown_tool_hint
        )

    async def unknown_tool_hint(self, context: MiddlewareContext[Any], name: str) -> str | None:
        """What to say of a tool FastMCP does not know and no layer hides; None: nothing."""
        return None

    @override
    async def on_get_prompt(
        self,
        context: MiddlewareContext[mt.GetPromptRequestParams],
        call_next: CallNext[mt.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        return await _hinted(context, call_next, "prompt", context.message.name, _invalid("name"))

    @override
    async def on_read_resource(
        self,
        context: MiddlewareContext[mt.ReadResourceRequestParams],
        call_next: CallNext[mt.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        uri = str(context.message.uri)
        if is_renderer(uri) and not (await _visible_renderers(context)).allows(uri):
            # A renderer FastMCP synthesizes for a tool this client cannot see: no such resource.
            raise NotFoundError(f"Unknown resource: {uri!r}")
        # Not check_resource_access: the read's own lookup is judged by the policy.
        return await _hinted(context, call_next, "resource", uri, _invalid("uri"))

    @override
    async def check_resource_access(
        self, context: MiddlewareContext[mt.ReadResourceRequestParams]
    ) -> None:
        """Deny a resource this client cannot see, for FastMCP's checks that read no content."""
        server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
        if server is None:
            raise AuthorizationError("no request context: nothing is visible")
        uri = str(context.message.uri)
        if (
            await server.get_resource(uri) is None
            and await server.get_resource_template(uri) is None
        ):
            raise AuthorizationError(f"Unknown resource: {brief(uri)}")

    @override
    async def answer(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.method == "completion/complete":
            answered = await check_completion(context)
            if answered is not None:
                return answered
        return await call_next(context)


async def _hinted(
    context: MiddlewareContext[Any],
    call_next: CallNext[Any, _R],
    kind: str,
    key: str,
    refuse: Callable[[str], Exception],
    *,
    unknown: Callable[[MiddlewareContext[Any], str], Awaitable[str | None]] | None = None,
) -> _R:
    """``call_next``, with FastMCP's "Unknown ..." worded as the policy's hint, if any
    (else as ``unknown``'s words)."""
    try:
        return await call_next(context)
    except NotFoundError:
        message = await _hint(context, kind, key)
        if message is None and unknown is not None:
            message = await unknown(context, key)
        if message is None:
            raise
        raise refuse(message) from None


def _invalid(field: str) -> Callable[[str], Exception]:
    # -32602 like FastMCP's own "Unknown prompt / resource": the request names what it cannot get.
    return lambda message: invalid_params(message, field=field)


def _renderer(component: FastMCPComponent) -> bool:
    return is_renderer(str(getattr(component, "uri", "")))


async def _visible_renderers(context: MiddlewareContext[Any]) -> VisibleRenderers:
    server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
    return (
        VisibleRenderers([])
        if server is None
        else VisibleRenderers.of_tools(await server.list_tools())
    )


def access_of(server: FastMCP) -> AccessTransform | None:
    """The server's ``AccessTransform``, if any layer is set up on it."""
    return AccessTransform.of(server)


async def judge_hidden(server: FastMCP, component: FastMCPComponent) -> Hidden | None:
    """This request's policy's answer for ``component`` (None: visible)."""
    transform = AccessTransform.of(server)
    if transform is None:
        return None
    return (await transform.policy()).judge(component)


async def _hint(context: MiddlewareContext[Any], kind: str, key: str) -> str | None:
    """What to tell the agent about ``key`` FastMCP did not find; None: it is unknown."""
    server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
    if server is None:
        return None
    version = requested_version(context)
    try:
        # The component as FastMCP's lookup finds it for this client with this server's own
        # policy set aside, only to ask that policy why it is hidden: what anything else
        # hides (a mounted server's own policy, FastMCP's checks) stays unknown.
        with set_aside(AccessTransform.of(server)):
            component: FastMCPComponent | None
            if kind == "tool":
                component = await server.get_tool(key, version)
            elif kind == "prompt":
                component = await server.get_prompt(key, version)
            else:
                component = await server.get_resource(key, version)
                if component is None:
                    component = await server.get_resource_template(key, version)
    except Exception:
        return None
    if component is None:
        return None
    hidden = await judge_hidden(server, component)
    if hidden is None or hidden.message is None:
        return None
    if not hidden.enable or context.fastmcp_context is None:
        return hidden.message
    # The hint's enable call, checked against max_tools as the enable reply would.
    calls = await remedy(context.fastmcp_context, hidden.enable)
    if calls is None:
        return f"{hidden.message} No group can be enabled to show it within max_tools."
    if len(calls) == 1 and [a["groups"] for a in calls.values()] == [list(hidden.enable)]:
        return hidden.message
    steps = " then ".join(call_hint(tool, args["groups"]) for tool, args in calls.items())
    return f"{hidden.message} max_tools leaves no room for that: call {steps} instead."


async def check_completion(context: MiddlewareContext[Any]) -> mt.CompleteResult | None:
    """Refuse completing a prompt or template this client cannot see, as if it did not exist.

    None lets the server's completion handler answer. A template identifier that
    no visible template has, or a URI something hidden claims, gets FastMCP's
    answer for a reference the caller cannot see (an empty completion) when a
    visible template matches it as text, else "unknown": hidden and made-up
    references answer alike, and the handler never runs for either.
    """
    server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
    info = request_info(context)
    ref = info.params.get("ref") if info is not None else None
    if server is None or not isinstance(ref, Mapping):
        return None
    name = ref.get("name")
    uri = ref.get("uri")
    if ref.get("type") == "ref/prompt" and isinstance(name, str):
        if await server.get_prompt(name) is None:
            message = await _hint(context, "prompt", name)
            raise invalid_params(message or f"unknown prompt {brief(name)}", field="ref.name")
        return None
    if ref.get("type") == "ref/resource" and isinstance(uri, str):
        visible = await _reachable_templates(server)
        if any(t.uri_template == uri for t in visible):
            return None
        # A URI a visible template matches, which resources/read would serve; not a template
        # identifier of its own ("{...}"): FastMCP would resolve one no visible template has
        # to any template matching it as text, and the handler, which switches on the
        # reference, would complete the hidden or made-up template it names.
        if "{" not in uri and await server.get_resource_template(uri) is not None:
            return None
        message = await _hint(context, "resource", uri)
        if message is None and any(t.matches(uri) is not None for t in visible):
            return _EMPTY_COMPLETION
        raise invalid_params(message or f"unknown resource template {brief(uri)}", field="ref.uri")
    return None


_EMPTY_COMPLETION = mt.CompleteResult(completion=mt.Completion(values=[]))


async def _reachable_templates(server: FastMCP) -> list[Any]:
    """The templates a read by URI may reach for this client: listed, or left out of lists only
    (``Hidden.unlisted``), as a lookup judges them."""
    transform = AccessTransform.of(server)
    if transform is None:
        return list(await server.list_resource_templates())
    policy = await transform.policy()
    with widened(transform):
        every = await server.list_resource_templates()
    return [t for t in every if policy.lookup(t) is None]

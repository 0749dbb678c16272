"""The one visibility decision: layers that hide components from a client also refuse them.

Every middleware of the package that narrows what a client may use (concerns,
progressive disclosure) is an ``AccessLayer``. A layer answers one question per
request, through the ``ClientView`` it returns: may this client see and use
this component, and if not, what should the agent do? Listing hides what a view
refuses; calling, reading and rendering refuse it with the view's message. Code
that must decide for all layers at once (search, meta-tools, proxies) calls
``admitted``, which asks every layer on the server, so the answer never depends
on the order the middlewares were added in.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fastmcp.exceptions import PromptError, ResourceError, ToolError
from fastmcp.server.dependencies import extract_version_spec
from fastmcp.utilities.versions import VersionSpec
from typing_extensions import override

from fastmcp_filtering._hooks import ListHooks
from fastmcp_filtering._protocol import invalid_params, request_info

if TYPE_CHECKING:
    from collections.abc import Sequence

    import mcp_types as mt
    from fastmcp import FastMCP
    from fastmcp.prompts.base import PromptResult
    from fastmcp.resources.base import ResourceResult
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.tools.base import Tool, ToolResult
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering._catalog import ComponentKind

__all__ = ["AccessLayer", "ClientView", "admitted", "refusal_for"]

_C = TypeVar("_C", bound="FastMCPComponent")


class ClientView(Protocol):
    """One layer's decision for one client, loaded once per request."""

    def refusal(self, component: FastMCPComponent) -> str | None:
        """None if the client may see and use ``component``; else what the agent should do."""


class AccessLayer(ListHooks):
    """A middleware that hides components from a client and refuses calls to them.

    Subclasses implement ``client_view``; this base applies the view to every
    list, to ``tools/call``, ``resources/read`` and ``prompts/get``, so the
    layer that hides a component is the layer that refuses it.
    """

    async def client_view(self, context: MiddlewareContext[Any]) -> ClientView:
        """This request's client as this layer sees it."""
        raise NotImplementedError

    async def _keep(self, context: MiddlewareContext[Any], components: Sequence[_C]) -> list[_C]:
        view = await self.client_view(context)
        return [c for c in components if view.refusal(c) is None]

    @override
    async def on_list(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Sequence[_C]],
        kind: ComponentKind,
    ) -> Sequence[_C]:
        return await self._keep(context, await call_next(context))

    @override
    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method == "completion/complete":
            component = await _completed_component(context)
            if component is not None and (
                message := (await self.client_view(context)).refusal(component)
            ):
                # Completions describe a prompt or template: hidden means hidden here too.
                raise invalid_params(message, field="ref")
        return await call_next(context)

    @override
    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        tool = await _called_tool(context)
        if tool is not None and (message := (await self.client_view(context)).refusal(tool)):
            raise ToolError(message)
        return await call_next(context)

    @override
    async def on_read_resource(
        self,
        context: MiddlewareContext[mt.ReadResourceRequestParams],
        call_next: CallNext[mt.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        server = _server(context)
        if server is not None:
            uri = str(context.message.uri)
            version = _requested_version(context)
            component: FastMCPComponent | None = await server.get_resource(uri, version)
            if component is None:
                component = await server.get_resource_template(uri, version)
            if component is not None and (
                message := (await self.client_view(context)).refusal(component)
            ):
                raise ResourceError(message)
        return await super().on_read_resource(context, call_next)

    @override
    async def on_get_prompt(
        self,
        context: MiddlewareContext[mt.GetPromptRequestParams],
        call_next: CallNext[mt.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        server = _server(context)
        version = _requested_version(context)
        prompt = await server.get_prompt(context.message.name, version) if server else None
        if prompt is not None and (message := (await self.client_view(context)).refusal(prompt)):
            raise PromptError(message)
        return await call_next(context)


# The tool a tools/call names, looked up once per call and shared by every layer: FastMCP's
# lookup scans the whole catalog, so one lookup per layer is one scan per layer.
_CALLED: ContextVar[tuple[object, Tool | None] | None] = ContextVar(
    "fastmcp_filtering_called_tool", default=None
)


async def _called_tool(context: MiddlewareContext[mt.CallToolRequestParams]) -> Tool | None:
    cached = _CALLED.get()
    if cached is not None and cached[0] is context.message:
        return cached[1]
    server = _server(context)
    version = _requested_version(context)
    tool = await server.get_tool(context.message.name, version) if server else None
    _CALLED.set((context.message, tool))
    return tool


def _requested_version(context: MiddlewareContext[Any]) -> VersionSpec | None:
    """The component version the request asks for (FastMCP's ``_meta.fastmcp.version``).

    The layers must judge the version that will run, not the highest one.
    """
    info = request_info(context)
    version = extract_version_spec(dict(info.meta)) if info is not None else None
    return VersionSpec(eq=version) if version else None


async def _completed_component(context: MiddlewareContext[Any]) -> FastMCPComponent | None:
    """The prompt or resource template a ``completion/complete`` request refers to."""
    server = _server(context)
    info = request_info(context)
    ref = info.params.get("ref") if info is not None else None
    if server is None or not isinstance(ref, Mapping):
        return None
    if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
        return await server.get_prompt(ref["name"])
    uri = ref.get("uri")
    if ref.get("type") == "ref/resource" and isinstance(uri, str):
        for template in await server.list_resource_templates(run_middleware=False):
            if template.uri_template == uri:
                return template
        return await server.get_resource(uri)
    return None


def _server(context: MiddlewareContext[Any]) -> FastMCP | None:
    return context.fastmcp_context.fastmcp if context.fastmcp_context else None


async def admitted(
    server: FastMCP, context: MiddlewareContext[Any], components: Sequence[_C]
) -> list[_C]:
    """``components`` that every ``AccessLayer`` on ``server`` lets this client see."""
    kept = list(components)
    for middleware in server.middleware:
        if isinstance(middleware, AccessLayer) and kept:
            kept = await middleware._keep(context, kept)
    return kept


async def refusal_for(
    server: FastMCP, context: MiddlewareContext[Any], component: FastMCPComponent
) -> str | None:
    """The first refusal any ``AccessLayer`` on ``server`` gives ``component``, or None."""
    for middleware in server.middleware:
        if isinstance(middleware, AccessLayer):
            message = (await middleware.client_view(context)).refusal(component)
            if message is not None:
                return message
    return None

"""What an upstream may cost the proxy: time per request, depth per schema, names per listing.

An upstream is someone else's server, so nothing it does may hang or break a
client's request: ``Timeouts`` bounds connecting, listing and calling;
``BoundedProxyTool`` is FastMCP's ``ProxyTool`` that gives up after the call
timeout and answers an error naming the upstream (for a timeout, a lost
connection, or a result that is not a valid ``CallToolResult``, which would
otherwise reach the client as its own invalid parameters), and
``BoundedProxyPrompt``, ``BoundedProxyResource`` and ``BoundedProxyTemplate``
give up on a prompt's get or a resource's read after the same timeout, or when
the connection is lost mid-read, in the same words; ``unusable``
says why a listed tool must not be served (a name MCP forbids, a schema nested
past what a client's JSON parser reads).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from fastmcp.exceptions import FastMCPError, PromptError, ResourceError, ToolError
from fastmcp.server.providers.proxy import ProxyPrompt, ProxyResource, ProxyTemplate, ProxyTool
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering.core.errors import UpstreamError
from fastmcp_filtering.gateway.upstreams.failures import sdk_reason
from fastmcp_filtering.gateway.upstreams.namespacing import served_name

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from fastmcp.prompts.base import PromptResult
    from fastmcp.resources.base import ResourceResult
    from fastmcp.server.context import Context
    from fastmcp.server.providers.proxy import ClientFactoryT, ProxyIdentity
    from fastmcp.tools.base import Tool, ToolResult
    from fastmcp.utilities.components import FastMCPComponent

MAX_SCHEMA_DEPTH = 64
"""JSON nesting levels a tool's schemas may reach: real schemas stay far below; parsers
(the MCP SDK's, serde_json's 128) give up somewhere above, dropping the whole message."""

logger = logging.getLogger("fastmcp_filtering")

_T = TypeVar("_T")
_C = TypeVar("_C", bound="FastMCPComponent")

# FastMCP 4.2 gives proxied components the identity their results carry; 4.1 has none.
_TAKES_IDENTITY = "identity" in inspect.signature(ProxyTool.__init__).parameters
# SEP-986: what MCP allows as a tool name.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


class Timeouts(NamedTuple):
    """How long the proxy waits for an upstream, in seconds, by phase.

    ``connect``: starting it and its handshake; ``list``: one listing (on top of
    connecting); ``call``: one tool call, prompt get or resource read (a
    template's too), from connecting to its result.

    Example:
        ```python
        provider = UpstreamProvider(factory, label="gh", health=health,
                                    timeouts=Timeouts(connect=30, list=30, call=300))
        ```
    """

    connect: float
    list: float
    call: float


class UpstreamTimeout(UpstreamError):
    """An upstream did not answer within its configured time; the message says which setting.

    Example:
        ```python
        raise UpstreamTimeout("tools/list", 30.0, "list_timeout")
        ```
    """

    def __init__(self, what: str, seconds: float, setting: str) -> None:
        super().__init__(f"did not answer {what} within {seconds:g} s ({setting})")


def schema_too_deep(schema: object, limit: int = MAX_SCHEMA_DEPTH) -> bool:
    """Whether ``schema`` nests objects and arrays deeper than ``limit`` levels.

    Iterative, so a schema nested past Python's recursion limit is measured too.

    Example:
        ```python
        assert not schema_too_deep({"type": "object", "properties": {}})
        ```
    """
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def unusable(tool: Tool, prefix: str) -> str | None:
    """Why the proxy must not serve ``tool`` (listed by an upstream), or None.

    ``prefix`` is what the upstream's namespace puts before the name (``gh_``):
    the served name must follow MCP's naming rules (SEP-986: 1 to 128 of
    ``A-Za-z0-9_-.``), and its schemas must nest at most ``MAX_SCHEMA_DEPTH``.

    Example:
        ```python
        assert unusable(Tool(name="has space", parameters={}), "") is not None
        ```
    """
    if not _TOOL_NAME.fullmatch(served_name(prefix, tool.name)):
        return "its name breaks MCP's naming rules (1 to 128 of A-Za-z0-9_-.)"
    if schema_too_deep(tool.parameters) or schema_too_deep(tool.output_schema):
        return f"its schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
    return None


class Bound(NamedTuple):
    """How long upstream ``label`` may take over one request it serves, and who hears its name.

    ``seconds`` is its ``call_timeout``; ``shown`` says whether this request's
    client may see the upstream (``UpstreamProvider.shown``; None: every client
    may): only such a client is told the name of an upstream that did not answer.
    ``answered`` hears of every request the upstream answered (a result, or an
    error of its own), for the upstream's health (``Probe.answered``).
    ``unreachable`` hears of every other failure: it returns the reason, for
    anyone to read, when the failure says the upstream could not be reached (a
    refused connection; recorded in its health, which logs it once), else None.

    Example:
        ```python
        prompt = bounded(proxy_prompt, factory, Bound("gh", 300.0, provider.shown))
        ```
    """

    label: str
    seconds: float
    shown: Callable[[], Awaitable[bool | None]] | None = None
    answered: Callable[[], None] | None = None
    unreachable: Callable[[BaseException], str | None] | None = None

    def unavailable(self, error: BaseException) -> str | None:
        """``is unavailable (REASON)`` when ``error`` says the upstream could not be reached."""
        reason = None if self.unreachable is None else self.unreachable(error)
        return None if reason is None else f"is unavailable ({reason})"


# What a bounded component holds until ``bounded`` gives it its upstream's bound.
_UNBOUND = Bound("", 0.0)


async def _answered(pending: Awaitable[_T], bound: Bound) -> _T:
    """``pending``'s result; ``TimeoutError`` after ``bound.seconds`` or on the SDK's own
    timeout. ``bound.answered`` hears of a result and of an error the upstream sent."""
    try:
        async with asyncio.timeout(bound.seconds):
            result = await pending
    except MCPError as error:
        if sdk_reason(error) == "timed out":
            raise TimeoutError from None
        # Anything but the SDK's own "closed" is the upstream's answer, whatever its code
        # (FastMCP's rate limit sends -32000, its "Not found" -32001).
        if sdk_reason(error) != "closed" and bound.answered is not None:
            bound.answered()
        raise
    if bound.answered is not None:
        bound.answered()
    return result


class BoundedProxyTool(ProxyTool):
    """FastMCP's ``ProxyTool`` whose call fails after ``call_timeout``, naming the upstream.

    A call the upstream does not answer in time (or answers under another id),
    a connection lost mid-call, and a result that is not a valid
    ``CallToolResult`` all end in an internal error that names the upstream as
    configured (a ``ToolError``: the client gets an ``isError`` result, the log
    one warning line, no traceback); an error the upstream answered itself (an
    MCP error) passes through unchanged.

    Example:
        ```python
        tool = bounded(proxy_tool, factory, Bound("gh", 300.0))
        ```
    """

    _bound: Bound = _UNBOUND

    @override
    async def run(self, arguments: dict[str, Any], context: Context | None = None) -> ToolResult:
        label, seconds = self._bound.label, self._bound.seconds
        try:
            return await _answered(super().run(arguments, context), self._bound)
        except TimeoutError:
            problem = str(UpstreamTimeout("tools/call", seconds, "call_timeout"))
        except MCPError as error:
            if sdk_reason(error) != "closed":
                raise  # the upstream's own answer, whatever its code
            # The SDK's word for an upstream that exited or dropped the connection mid-call.
            problem = "failed the call (its connection closed before a result)"
        except Exception as error:
            unavailable = self._bound.unavailable(error)
            if unavailable is not None:
                # Its health logged the outage once; one line per call would say it again.
                raise ToolError(
                    f"upstream {label!r} {unavailable}", log_level=logging.DEBUG
                ) from None
            # The upstream's own bytes may say anything: name the failure, not its text.
            problem = "failed the call (its answer was not a valid result)"
        message = f"upstream {label!r} {problem}"
        # One line says it all; FastMCP's own line (with a traceback for anything but a
        # ToolError) only at debug.
        logger.warning("%s (tool %r); the client got that error", message, self.name)
        raise ToolError(message, log_level=logging.DEBUG) from None


async def _read_within(
    bound: Bound, what: str, subject: str, pending: Awaitable[_T], failure: type[FastMCPError]
) -> _T:
    """``pending`` (the upstream's answer to ``what`` on ``subject``); ``failure`` after ``bound``.

    ``failure`` too when the upstream's connection closes before the answer (its
    process exited mid-read). The error is JSON-RPC's internal error; it names the
    upstream only to a client that may see it (hidden means hidden), and the log
    names it always.
    """
    logged = True
    try:
        return await _answered(pending, bound)
    except TimeoutError:
        problem = str(UpstreamTimeout(what, bound.seconds, "call_timeout"))
        unnamed = f"a server behind this gateway did not answer {what} in time"
    except MCPError as error:
        if sdk_reason(error) != "closed":
            raise  # the upstream's own answer, whatever its code: passed on as it is
        # The SDK's word for an upstream that exited or dropped the connection mid-read.
        problem = f"failed {what} (its connection closed before an answer)"
        unnamed = f"a server behind this gateway failed {what}"
    except Exception as error:
        unavailable = bound.unavailable(error)
        if unavailable is None:
            raise
        # Its health logged the outage once: no line per request.
        problem, unnamed, logged = unavailable, "a server behind this gateway is unavailable", False
    if logged:
        logger.warning(
            "upstream %r %s (%s); the client got an error", bound.label, problem, subject
        )
    if bound.shown is None or await bound.shown():
        message = f"upstream {bound.label!r} {problem}"
    else:
        message = f"{unnamed}; try again later"
    # FastMCP's own line for the error (with a traceback) only at debug: the line above says it.
    raise failure(message, log_level=logging.DEBUG) from None


class BoundedProxyPrompt(ProxyPrompt):
    """FastMCP's ``ProxyPrompt`` whose ``prompts/get`` fails after ``call_timeout``.

    Example:
        ```python
        prompt = bounded(proxy_prompt, factory, Bound("gh", 300.0, provider.shown))
        ```
    """

    _bound: Bound = _UNBOUND

    # ProxyPrompt's own signature, narrower than Prompt's (FastMCP ignores that too).
    @override
    async def render(self, arguments: dict[str, Any]) -> PromptResult:  # type: ignore[override]
        rendered = super().render(arguments)
        subject = f"prompt {self.name!r}"
        return await _read_within(self._bound, "prompts/get", subject, rendered, PromptError)


class BoundedProxyResource(ProxyResource):
    """FastMCP's ``ProxyResource`` whose ``resources/read`` fails after ``call_timeout``.

    Example:
        ```python
        resource = bounded(proxy_resource, factory, Bound("gh", 300.0, provider.shown))
        ```
    """

    _bound: Bound = _UNBOUND

    @override
    async def read(self) -> ResourceResult:
        read, subject = super().read(), f"resource {str(self.uri)!r}"
        return await _read_within(self._bound, "resources/read", subject, read, ResourceError)


class BoundedProxyTemplate(ProxyTemplate):
    """FastMCP's ``ProxyTemplate`` whose ``resources/read`` fails after ``call_timeout``.

    Example:
        ```python
        template = bounded(proxy_template, factory, Bound("gh", 300.0, provider.shown))
        ```
    """

    _bound: Bound = _UNBOUND

    @override
    async def create_resource(
        self, uri: str, params: dict[str, Any], context: Context | None = None
    ) -> ProxyResource:
        # The template's read is this call: the resource it makes holds the upstream's answer.
        created = super().create_resource(uri, params, context)
        subject = f"resource {uri!r}"
        return await _read_within(self._bound, "resources/read", subject, created, ResourceError)


# Each proxy component that asks its upstream, and its bounded kind.
_BOUNDED: dict[type[FastMCPComponent], Callable[..., Any]] = {
    ProxyTool: BoundedProxyTool,
    ProxyPrompt: BoundedProxyPrompt,
    ProxyResource: BoundedProxyResource,
    ProxyTemplate: BoundedProxyTemplate,
}


def bounded(
    component: _C, factory: ClientFactoryT, bound: Bound, *, identity: ProxyIdentity = "proxy"
) -> _C:
    """``component`` (a proxy's tool, prompt, resource or template) bounded by ``bound``.

    Anything else, or a component already bounded, is returned as it is.

    Example:
        ```python
        tool = bounded(await provider.get_tool("echo"), factory, Bound("gh", 300.0))
        ```
    """
    kind = _BOUNDED.get(type(component))
    if kind is None:
        return component
    fields = {name: getattr(component, name) for name in type(component).model_fields}
    if _TAKES_IDENTITY:
        fields["identity"] = identity
    result = kind(factory, **fields)
    result._bound = bound
    return cast("_C", result)

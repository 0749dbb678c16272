"""What an upstream may cost the proxy: time per request, depth per schema, names per listing.

An upstream is someone else's server, so nothing it does may hang or break a
client's request: ``Timeouts`` bounds connecting, listing and calling;
``BoundedProxyTool`` is FastMCP's ``ProxyTool`` that gives up after the call
timeout and answers an error naming the upstream (for a timeout, a lost
connection, or a result that is not a valid ``CallToolResult``, which would
otherwise reach the client as its own invalid parameters); ``unusable``
says why a listed tool must not be served (a name MCP forbids, a schema nested
past what a client's JSON parser reads).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from typing import TYPE_CHECKING, Any, NamedTuple

import mcp_types as mt
from fastmcp.exceptions import ToolError
from fastmcp.server.providers.proxy import ProxyTool
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering.gateway.namespacing import served_name

if TYPE_CHECKING:
    from fastmcp.server.context import Context
    from fastmcp.server.providers.proxy import ClientFactoryT, ProxyIdentity
    from fastmcp.tools.base import Tool, ToolResult

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "BoundedProxyTool",
    "Timeouts",
    "UpstreamTimeout",
    "bounded",
    "schema_too_deep",
    "unusable",
]

MAX_SCHEMA_DEPTH = 64
"""JSON nesting levels a tool's schemas may reach: real schemas stay far below; parsers
(the MCP SDK's, serde_json's 128) give up somewhere above, dropping the whole message."""

logger = logging.getLogger("fastmcp_filtering")

# FastMCP 4.2 gives a proxied tool the identity its results carry; 4.1 has none.
_TAKES_IDENTITY = "identity" in inspect.signature(ProxyTool.__init__).parameters
# SEP-986: what MCP allows as a tool name.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


class Timeouts(NamedTuple):
    """How long the proxy waits for an upstream, in seconds, by phase.

    ``connect``: starting it and its handshake; ``list``: one listing (on top of
    connecting); ``call``: one tool call, from connecting to its result.

    Example:
        ```python
        provider = UpstreamProvider(factory, label="gh", health=health,
                                    timeouts=Timeouts(connect=30, list=30, call=300))
        ```
    """

    connect: float
    list: float
    call: float


class UpstreamTimeout(Exception):
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
        tool = bounded(proxy_tool, factory, label="gh", seconds=300.0)
        ```
    """

    _upstream_label: str = ""
    _call_timeout: float = 0.0

    @override
    async def run(self, arguments: dict[str, Any], context: Context | None = None) -> ToolResult:
        label, seconds = self._upstream_label, self._call_timeout
        try:
            async with asyncio.timeout(seconds):
                return await super().run(arguments, context)
        except MCPError as error:
            if error.error.code == mt.CONNECTION_CLOSED:
                # The SDK's word for an upstream that exited or dropped the connection mid-call.
                problem = "failed the call (its connection closed before a result)"
            elif error.error.code != mt.REQUEST_TIMEOUT:
                raise
            else:
                problem = str(UpstreamTimeout("tools/call", seconds, "call_timeout"))
        except TimeoutError:
            problem = str(UpstreamTimeout("tools/call", seconds, "call_timeout"))
        except Exception as error:
            # The upstream's own bytes may say anything: name the failure, not its text.
            problem = f"failed the call ({type(error).__name__}: no valid result)"
        message = f"upstream {label!r} {problem}"
        # One line says it all; FastMCP's own line (with a traceback for anything but a
        # ToolError) only at debug.
        logger.warning("%s (tool %r); the client got that error", message, self.name)
        raise ToolError(message, log_level=logging.DEBUG) from None


def bounded(
    tool: Tool,
    factory: ClientFactoryT,
    *,
    label: str,
    seconds: float,
    identity: ProxyIdentity = "proxy",
) -> Tool:
    """``tool`` (a ``ProxyTool``) as a ``BoundedProxyTool`` of upstream ``label``.

    Example:
        ```python
        tool = bounded(await provider.get_tool("echo"), factory, label="gh", seconds=300.0)
        ```
    """
    if not isinstance(tool, ProxyTool) or isinstance(tool, BoundedProxyTool):
        return tool
    fields = {name: getattr(tool, name) for name in type(tool).model_fields}
    if _TAKES_IDENTITY:
        fields["identity"] = identity
    # pydantic's mypy plugin knows Tool's fields, not ProxyTool's own __init__ argument.
    result = BoundedProxyTool(factory, **fields)  # type: ignore[call-arg, arg-type]
    result._upstream_label = label
    result._call_timeout = seconds
    return result

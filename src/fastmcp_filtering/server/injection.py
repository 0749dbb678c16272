"""A server's own ``ToolInjectionMiddleware``, its tools judged by each client's policy.

FastMCP lists and looks up injected tools ahead of its providers and past every
transform, so ``AccessTransform`` never sees them; their own ``auth`` check is
skipped over stdio. FastMCP asks each injection middleware for its tools inside
its lookup (``injected_tools``, ``get_injected_tool``), synchronously: the
wrapper answers there with what this request's policy allows, loaded first by
the wrapper's own place in the middleware chain, before the lookup runs. A
request whose policy is not known gets none of them, and so does code outside
any request (FastMCP registering background tasks at startup: an injected tool
is never run as a background task once the stack is set up) unless it reads
inside ``unrestricted()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from typing_extensions import override

from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.core.request import is_unrestricted
from fastmcp_filtering.policy.decision import loaded_policy
from fastmcp_filtering.server.transform import AccessTransform

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
    from fastmcp.tools import Tool


class JudgedInjection(ToolInjectionMiddleware):
    """``inner``'s tools, as each client's policy on ``owner`` allows them.

    Example:
        ```python
        judge_injections(mcp)  # wraps every ToolInjectionMiddleware of the server's own
        ```
    """

    def __init__(self, inner: ToolInjectionMiddleware, owner: AccessTransform) -> None:
        super().__init__([])
        self.inner = inner
        self.owner = owner

    def __repr__(self) -> str:
        return f"JudgedInjection({self.inner!r})"

    @property
    @override
    def injected_tools(self) -> Sequence[Tool]:
        return [t for t in self.inner.injected_tools if self._allows(t, lookup=False)]

    @override
    def get_injected_tool(self, name: str) -> Tool | None:
        tool = self.inner.get_injected_tool(name)
        return tool if tool is not None and self._allows(tool, lookup=True) else None

    def _allows(self, tool: Tool, *, lookup: bool) -> bool:
        if current_request() is None:
            # No client to judge for (the server's code, FastMCP registering background
            # tasks at startup): none, as for every other component once a layer is set up.
            # A task registered here would run under its name whatever a lookup judged.
            return is_unrestricted()
        policy = loaded_policy(self.owner)
        if policy is None:
            return False
        return (policy.lookup(tool) if lookup else policy.judge(tool)) is None

    @override
    async def __call__(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.fastmcp_context is not None and (context.method or "").startswith(
            ("tools/", "tasks/")
        ):
            # Loaded now, for the lookup further down the chain, which asks synchronously.
            await self.owner.policy()
        return await self.inner(context, call_next)


def injections_to_judge(
    server: FastMCP, *, own: Callable[[Middleware], bool]
) -> dict[int, JudgedInjection]:
    """Each ``ToolInjectionMiddleware`` of ``server`` to wrap, by position, as its
    ``JudgedInjection`` (the server's setup puts them in place).

    Those ``own`` names (the package's middlewares, whose meta-tools every client may
    call) and those already wrapped stay as they are.
    """
    owner = AccessTransform.of(server)
    if owner is None:
        return {}
    return {
        position: JudgedInjection(middleware, owner)
        for position, middleware in enumerate(server.middleware)
        if isinstance(middleware, ToolInjectionMiddleware)
        and not isinstance(middleware, JudgedInjection)
        and not own(middleware)
    }


def unjudged_tools(server: FastMCP) -> list[Tool]:
    """The tools middleware injects that no policy judges: the package's own meta-tools."""
    return [
        tool
        for middleware in server.middleware
        if isinstance(middleware, ToolInjectionMiddleware)
        and not isinstance(middleware, JudgedInjection)
        for tool in middleware.injected_tools
    ]

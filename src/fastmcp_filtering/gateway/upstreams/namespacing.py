"""An upstream's namespace, said once: ``git_status`` stays ``git_status``, not ``git_git_status``.

Many servers already begin their tool names with their own name (mcp-server-git's
``git_status``, a Slack server's ``slack_post_message``). ``OwnNamespace`` is
FastMCP's ``Namespace`` transform except for tools and prompts whose name
already begins with the namespace and ``_``: those are served under their own
name. Every other name is prefixed as usual, and resource URIs are namespaced
as FastMCP does. Should a prefixed name meet a name the upstream already has
(it lists both ``status`` and ``git_status``), the upstream's own name wins and
the other is left out, in listings and lookups alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from fastmcp.server.transforms import Namespace
from typing_extensions import override

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from fastmcp.prompts.base import Prompt
    from fastmcp.server.transforms import GetPromptNext, GetToolNext
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent
    from fastmcp.utilities.versions import VersionSpec

_C = TypeVar("_C", bound="FastMCPComponent")


def served_name(prefix: str, name: str) -> str:
    """The name an upstream's tool or prompt ``name`` is served under, for ``prefix`` (``git_``).

    Example:
        ```python
        assert served_name("git_", "git_status") == "git_status"
        assert served_name("git_", "status") == "git_status"
        ```
    """
    return name if prefix and name.startswith(prefix) else prefix + name


class OwnNamespace(Namespace):
    """FastMCP's ``Namespace``, leaving names that already begin with it as they are.

    Example:
        ```python
        server.add_provider(provider.wrap_transform(OwnNamespace("git")))
        ```
    """

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix)
        self.name_prefix = f"{prefix}_"

    def _served(self, components: Sequence[_C]) -> list[_C]:
        own = {c.name for c in components if c.name.startswith(self.name_prefix)}
        served = []
        for component in components:
            name = served_name(self.name_prefix, component.name)
            if name == component.name:
                served.append(component)
            elif name not in own:
                served.append(component.model_copy(update={"name": name}))
        return served

    async def _lookup(
        self, name: str, call_next: Callable[[str], Awaitable[_C | None]]
    ) -> _C | None:
        if not name.startswith(self.name_prefix):
            return None
        own = await call_next(name)
        if own is not None:
            return own
        original = name[len(self.name_prefix) :]
        if original.startswith(self.name_prefix):
            # Served under its own name (``git_status``), never under a doubled one.
            return None
        found = await call_next(original)
        return None if found is None else found.model_copy(update={"name": name})

    @override
    async def list_tools(self, tools: Sequence[Tool]) -> Sequence[Tool]:
        return self._served(tools)

    @override
    async def get_tool(
        self, name: str, call_next: GetToolNext, *, version: VersionSpec | None = None
    ) -> Tool | None:
        return await self._lookup(name, lambda n: call_next(n, version=version))

    @override
    async def list_prompts(self, prompts: Sequence[Prompt]) -> Sequence[Prompt]:
        return self._served(prompts)

    @override
    async def get_prompt(
        self, name: str, call_next: GetPromptNext, *, version: VersionSpec | None = None
    ) -> Prompt | None:
        return await self._lookup(name, lambda n: call_next(n, version=version))

"""``AccessTransform``: the policy applied where FastMCP resolves components.

A FastMCP server-level ``Transform`` sees every component FastMCP lists or looks
up, whoever asks. Hiding a component here makes it not exist for the client on
every path FastMCP has. The paths, each covered by ``tests/test_lookup_paths.py``:

- ``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``
  (``FastMCP.list_*``), and so ``tags/list``, search and the meta-tools' replies;
- ``tools/call`` by name (``FastMCP.get_tool``), with ``_meta.fastmcp.version``,
  and FastMCP's fallback to a lower version when the highest is disabled;
- ``tools/call`` by hashed name ``<hash>_<name>`` (``get_tool_by_hash`` looks the
  tool up again through ``get_tool``);
- nested ``ctx.fastmcp.call_tool`` / ``read_resource`` / ``render_prompt`` inside a
  tool, which judge the version they will run, not the outer request's;
- ``PromptsAsTools`` and ``ResourcesAsTools`` (their tools look up through the server);
- ``resources/read`` of a resource or a URI a template matches, ``prompts/get``;
- ``completion/complete`` (refused in ``_layers.LayerMiddleware`` after the same lookup);
- FastMCP's resource access check (``LayerMiddleware.check_resource_access``);
- mounted servers and proxies (their components reach the parent's lookup);
- task-eligible components: ``FastMCP.get_tasks`` applies server transforms, so
  within a request it lists only what the client may see.

For a versioned component whose highest version is hidden, lookups without a
version get the highest visible one, as the list shows it; a lookup naming a
hidden version finds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from fastmcp.exceptions import AuthorizationError
from fastmcp.server.transforms import Transform
from fastmcp.utilities.versions import VersionSpec
from typing_extensions import override

from fastmcp_filtering._policy import Memo, Policy, PolicyLayer, load_policy

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from fastmcp import FastMCP
    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.resources.template import ResourceTemplate
    from fastmcp.server.transforms import (
        GetPromptNext,
        GetResourceNext,
        GetResourceTemplateNext,
        GetToolNext,
    )
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

__all__ = ["AccessTransform"]

_C = TypeVar("_C", bound="FastMCPComponent")


class AccessTransform(Transform):
    """Hide from each client what its policy hides, in every list and lookup.

    Installed once per server by ``fastmcp_filtering.install`` (or
    ``add_filtering``), after the server's own transforms, so it judges
    components under the names clients use. The layers are the
    ``policy_layer`` of each of the package's middlewares on the server.

    Example:
        ```python
        install(mcp, ConcernMiddleware(concerns=[...]))
        assert any(isinstance(t, AccessTransform) for t in mcp.transforms)
        ```
    """

    def __init__(self) -> None:
        self._layers: list[PolicyLayer] = []
        self._memo = Memo()

    def __repr__(self) -> str:
        return f"AccessTransform(layers={self._layers!r})"

    @classmethod
    def of(cls, server: FastMCP) -> AccessTransform | None:
        """The ``AccessTransform`` installed on ``server``, if any."""
        for transform in server.transforms:
            if isinstance(transform, cls):
                return transform
        return None

    def add_layer(self, layer: PolicyLayer) -> None:
        """Judge with ``layer`` too, from the next request on."""
        if layer not in self._layers:
            self._layers.append(layer)
            self._memo.clear()

    @property
    def layers(self) -> tuple[PolicyLayer, ...]:
        return tuple(self._layers)

    async def policy(self) -> Policy:
        """The current request's policy (loaded once per request)."""
        return await load_policy(self, self._layers, self._memo)

    async def _kept(self, components: Sequence[_C]) -> Sequence[_C]:
        if not self._layers:
            return components
        policy = await self.policy()
        return [c for c in components if policy.judge(c) is None]

    async def _visible_version(
        self,
        key: str,
        call_next: Callable[..., Awaitable[_C | None]],
        version: VersionSpec | None,
    ) -> _C | None:
        """What ``call_next`` finds for ``key``, or the highest visible version below it."""
        found = await call_next(key, version=version)
        if found is None or not self._layers:
            return found
        policy = await self.policy()
        while found is not None and policy.judge(found) is not None:
            if found.version is None or (version is not None and version.eq is not None):
                return None
            # The highest version is hidden: ask for the next one down, as the list shows it.
            below = VersionSpec(gte=version.gte if version else None, lt=found.version)
            found = await call_next(key, version=below)
        return found

    @override
    async def list_tools(self, tools: Sequence[Tool]) -> Sequence[Tool]:
        return await self._kept(tools)

    @override
    async def get_tool(
        self, name: str, call_next: GetToolNext, *, version: VersionSpec | None = None
    ) -> Tool | None:
        return await self._visible_version(name, call_next, version)

    @override
    async def list_prompts(self, prompts: Sequence[Prompt]) -> Sequence[Prompt]:
        return await self._kept(prompts)

    @override
    async def get_prompt(
        self, name: str, call_next: GetPromptNext, *, version: VersionSpec | None = None
    ) -> Prompt | None:
        return await self._visible_version(name, call_next, version)

    @override
    async def list_resources(self, resources: Sequence[Resource]) -> Sequence[Resource]:
        return await self._kept(resources)

    @override
    async def get_resource(
        self, uri: str, call_next: GetResourceNext, *, version: VersionSpec | None = None
    ) -> Resource | None:
        if not self._layers:
            return await call_next(uri, version=version)
        resource = await self._visible_version(uri, call_next, version)
        if resource is None and await call_next(uri, version=version) is not None:
            # A hidden resource must not fall through to a template that matches its URI
            # (a proxy's template would fetch it from upstream): FastMCP answers "Unknown
            # resource" for a resource its lookup reports as not authorized.
            raise AuthorizationError(f"Unknown resource: {uri!r}")
        return resource

    @override
    async def list_resource_templates(
        self, templates: Sequence[ResourceTemplate]
    ) -> Sequence[ResourceTemplate]:
        return await self._kept(templates)

    @override
    async def get_resource_template(
        self, uri: str, call_next: GetResourceTemplateNext, *, version: VersionSpec | None = None
    ) -> ResourceTemplate | None:
        return await self._visible_version(uri, call_next, version)

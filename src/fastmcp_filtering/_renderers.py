"""FastMCP's Prefab renderer resources, and which of them a client may know of.

FastMCP synthesizes a renderer resource (``ui://prefab/tool/<hash>/renderer.html``)
for every Prefab app tool, from the providers' storage and past every transform,
so the policy never judges it: a renderer follows its tool. A tool names its
renderer in ``_meta.ui.resourceUri`` when it is listed. A mounted server's
renderers are listed under its namespace (``ui://<namespace>/prefab/tool/<hash>/
renderer.html``) while its tools, renamed ``<namespace>_<name>``, still name the
plain URI; the hash is of the tool's name inside the mounted server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from fastmcp.server.providers.addressing import hash_tool

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["VisibleRenderers", "is_renderer"]

_RENDERER = re.compile(
    r"ui://(?P<namespaces>(?:[^/]+/)*?)prefab/tool/(?P<hash>[0-9a-f]{12})/renderer\.html"
)


def _parse(uri: str) -> tuple[str, str] | None:
    """The namespace path (``"outer/inner"``, or ``""``) and hash of a renderer URI."""
    match = _RENDERER.fullmatch(uri)
    if match is None:
        return None
    return match["namespaces"].rstrip("/"), match["hash"]


def is_renderer(uri: str) -> bool:
    """Whether ``uri`` is a Prefab renderer's, plain or under a mounted server's namespace."""
    return _parse(uri) is not None


class VisibleRenderers:
    """The renderers of the tools one client can list: only these exist for it."""

    __slots__ = ("_names",)

    def __init__(self, tools: list[tuple[str, str]]) -> None:
        names: dict[str, list[str]] = {}
        for name, digest in tools:
            names.setdefault(digest, []).append(name)
        self._names = names
        """The listed tools' names, by their renderer's hash: one lookup per URI."""

    def __repr__(self) -> str:
        return f"VisibleRenderers({sorted(n for ns in self._names.values() for n in ns)!r})"

    @classmethod
    async def of(cls, server: FastMCP) -> VisibleRenderers:
        """The renderers of what ``server.list_tools()`` shows this request's client."""
        tools: list[tuple[str, str]] = []
        for tool in await server.list_tools():
            ui = (tool.meta or {}).get("ui")
            uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
            parsed = _parse(uri) if isinstance(uri, str) else None
            if parsed is not None:
                tools.append((tool.name, parsed[1]))
        return cls(tools)

    def allows(self, uri: str) -> bool:
        """Whether ``uri`` is the renderer of a listed tool (False for any other URI)."""
        parsed = _parse(uri)
        if parsed is None:
            return False
        namespaces, digest = parsed
        names = self._names.get(digest, ())
        if not namespaces:
            return bool(names)
        # Under a namespace: the listed tool is "<ns>_<name>" with the hash of <name>.
        prefix = namespaces.replace("/", "_") + "_"
        return any(
            name.startswith(prefix) and hash_tool("", name[len(prefix) :]) == digest
            for name in names
        )

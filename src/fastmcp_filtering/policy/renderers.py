"""FastMCP's Prefab renderer resources, and which of them a client may know of.

FastMCP synthesizes the renderer resources of Prefab app tools from the
providers' storage, where the policy does not judge them: a renderer follows
the tools that name it. A listed tool names its renderer in
``_meta.ui.resourceUri``. There are two forms:

- per tool, ``ui://prefab/tool/<hash>/renderer.html``: what FastMCP 4.1 lists;
  FastMCP 4.2 lists none but still reads them (an alias of a tool's renderer);
- shared, ``ui://prefab/renderer/<sha256>/renderer.html``: from FastMCP 4.2,
  one per renderer configuration, named by every tool that has it.

A mounted server's renderers are listed under its namespace
(``ui://<namespace>/prefab/...``) while its tools, renamed ``<namespace>_<name>``,
name the plain URI; a per-tool hash is of the tool's name inside the mounted server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from fastmcp.server.providers.addressing import hash_tool

from fastmcp_filtering._fastmcp import renderer_alias_hash

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fastmcp.tools import Tool

_RENDERER = re.compile(
    r"ui://(?P<namespaces>(?:[^/]+/)*?)prefab/"
    r"(?:tool/(?P<tool>[0-9a-f]{12})|renderer/(?P<shared>[0-9a-f]{64}))/renderer\.html"
)


def _parse(uri: str) -> tuple[str, str, bool] | None:
    """The namespace path (``"outer/inner"``, or ``""``), the digest of a renderer URI, and
    whether it is the per-tool form."""
    match = _RENDERER.fullmatch(uri)
    if match is None:
        return None
    namespaces = match["namespaces"].rstrip("/")
    if match["tool"] is not None:
        return namespaces, match["tool"], True
    return namespaces, match["shared"], False


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
        """The listed tools' names, by their renderers' digests: one lookup per URI."""

    def __repr__(self) -> str:
        return f"VisibleRenderers({sorted(n for ns in self._names.values() for n in ns)!r})"

    @classmethod
    def of_tools(cls, listed: Iterable[Tool]) -> VisibleRenderers:
        """The renderers of ``listed``, the tools a client sees."""
        tools: list[tuple[str, str]] = []
        for tool in listed:
            ui = (tool.meta or {}).get("ui")
            uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
            parsed = _parse(uri) if isinstance(uri, str) else None
            if parsed is None:
                continue
            tools.append((tool.name, parsed[1]))
            alias = None if parsed[2] else renderer_alias_hash(tool)
            if alias is not None:
                # The per-tool URI FastMCP 4.2 still reads for a tool naming a shared one.
                tools.append((tool.name, alias))
        return cls(tools)

    def allows(self, uri: str) -> bool:
        """Whether ``uri`` is the renderer of a listed tool (False for any other URI)."""
        parsed = _parse(uri)
        if parsed is None:
            return False
        namespaces, digest, per_tool = parsed
        names = self._names.get(digest, ())
        if not namespaces:
            return bool(names)
        # Under a namespace: a listed tool "<ns>_<name>" names it; a per-tool hash is of <name>.
        prefix = namespaces.replace("/", "_") + "_"
        return any(
            name.startswith(prefix)
            and (not per_tool or hash_tool("", name[len(prefix) :]) == digest)
            for name in names
        )

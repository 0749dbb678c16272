"""The full-stack example server as a subprocess, and what a client of it may see.

``Expected`` computes a client's visible tools from the server's declarations
(the example's tool table, group patterns and concern), never from a server
reply, so a test can tell a leak from a correct answer.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._servers import RunningServer, serve_http

ROOT = Path(__file__).resolve().parents[1]
FULL_STACK_SERVER = ROOT / "examples" / "full_stack_server.py"

sys.path.insert(0, str(ROOT / "examples"))


from full_stack_server import (  # noqa: E402
    INITIAL_GROUPS,
    RISK,
    RISK_MAPPING,
    build_full_stack_server,
)
from github_server import _TABLE, GROUPS  # noqa: E402

__all__ = [
    "CATALOG_TOOLS",
    "DESCRIPTIONS",
    "DIRECT_GROUPS",
    "FULL_STACK_SERVER",
    "GROUP_NAMES",
    "MAX_RESULTS",
    "PARENT",
    "Expected",
    "RunningServer",
    "arguments",
    "build_full_stack_server",
    "full_stack_http_server",
    "rss_kib",
]

META_TOOLS = frozenset({"enable_tools", "disable_tools", "call_tool", "search_tools"})
MAX_RESULTS = 10
"""``SearchMiddleware(max_results=...)`` of the example."""

GROUP_NAMES: tuple[str, ...] = tuple(g.name for g in GROUPS)
PARENT: dict[str, str | None] = {
    g.name: (g.parent if isinstance(g.parent, str) else None) for g in GROUPS
}


def _direct_groups() -> dict[str, frozenset[str]]:
    groups: dict[str, set[str]] = {"create_issue": {"issues"}, "list_issues": {"issues"}}
    for name, group, _tags, _description, _params in _TABLE:
        groups[name] = {group} if group else set()
    for declared in GROUPS:
        for pattern in declared.tools:
            for name in groups:
                if fnmatch.fnmatchcase(name, pattern):
                    groups[name].add(declared.name)
    return {name: frozenset(found) for name, found in groups.items()}


DIRECT_GROUPS = _direct_groups()
TAGS: dict[str, frozenset[str]] = {
    "create_issue": frozenset({"stable"}),
    "list_issues": frozenset({"stable", "read-only"}),
    **{name: frozenset(tags) for name, _group, tags, _description, _params in _TABLE},
}
CATALOG_TOOLS = frozenset(DIRECT_GROUPS)
DESCRIPTIONS: dict[str, str] = {
    "create_issue": "Open a new issue in a repository.",
    "list_issues": "List the issues of a repository by state.",
    **{name: description for name, _group, _tags, description, _params in _TABLE},
}
_PARAMETERS: dict[str, str] = {
    "create_issue": "owner:str, repo:str, title:str",
    "list_issues": "owner:str, repo:str",
    **{name: params for name, _group, _tags, _description, params in _TABLE},
}


def arguments(tool: str) -> dict[str, Any]:
    """Valid arguments for a catalog tool: its required parameters, from the declarations."""
    sample: dict[str, Any] = {"str": "x", "int": 1, "bool": True, "list": ["x"]}
    found: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in _PARAMETERS[tool].split(","))):
        name, kind = part.split(":")
        if not kind.endswith("?"):
            found[name] = sample[kind]
    return found


def ancestors(group: str) -> list[str]:
    """``group`` and the groups above it, nearest first."""
    chain = [group]
    while (parent := PARENT[chain[-1]]) is not None:
        chain.append(parent)
    return chain


def descendants(group: str) -> set[str]:
    """``group`` and every group below it."""
    return {g for g in GROUP_NAMES if group in ancestors(g)}


@dataclass
class Expected:
    """One client's state as the server should hold it, and the tools it may see."""

    enabled: set[str] = field(default_factory=lambda: set(INITIAL_GROUPS))
    risk: str | None = None

    def enabled_in_order(self) -> list[str]:
        return [g for g in GROUP_NAMES if g in self.enabled]

    def allows(self, tool: str) -> bool:
        """Progressive disclosure and concerns: may this client see ``tool`` at all."""
        return self.disclosed(tool) and self.suits(tool)

    def disclosed(self, tool: str) -> bool:
        """Progressive disclosure: a meta-tool, or one of the tool's groups is enabled."""
        return tool in META_TOOLS or bool(DIRECT_GROUPS[tool] & self.enabled)

    def suits(self, tool: str) -> bool:
        """Concerns: ordered, strictest first, so "safe" keeps only safe (and unmapped) tools."""
        value = RISK_MAPPING.get(tool, {}).get(RISK.name)
        return not (self.risk == "safe" and value == "destructive")

    def visible(self, *, groups: Sequence[str] | None = None, tags: Sequence[str] = ()) -> set[str]:
        """The tools ``tools/list`` must return, with an optional SEP-1300 ``filter``."""
        names = {t for t in CATALOG_TOOLS | META_TOOLS if self.allows(t)}
        if groups is not None:
            wanted = set(groups)
            names = {
                t
                for t in names
                if any(set(ancestors(g)) & wanted for g in DIRECT_GROUPS.get(t, ()))
            }
        return {t for t in names if set(tags) <= TAGS.get(t, frozenset())}

    def enable(self, groups: Iterable[str]) -> None:
        self.enabled |= set(groups)

    def disable(self, groups: Iterable[str]) -> None:
        for group in groups:
            self.enabled -= descendants(group)


def full_stack_http_server(*args: str) -> AbstractContextManager[RunningServer]:
    """Start the full-stack example over streamable HTTP on a free loopback port."""
    return serve_http(FULL_STACK_SERVER, *args)


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB, from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")

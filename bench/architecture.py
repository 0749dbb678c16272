"""How the package is put together, measured: the numbers issue 25's layout is judged by.

Static, from the source (``ast``, nothing imported):
- import cycles among the package's modules, counting imports inside functions and under
  ``TYPE_CHECKING`` (each cycle is a strongly connected set of modules);
- modules at the package's top level, and subpackages;
- the longest classes and functions (lines from ``def``/``class`` to the end of the body).

Dynamic, with the full stack from ``add_filtering`` on the demo's catalog, warm, in memory
(2026-07-28 era): for ``tools/list``, ``tools/call``, a ``query`` search and ``enable_tools``,
how many of the package's modules a request enters (any function of theirs runs), and how many
calls cross from one of its modules to another. ``fastmcp_filtering.client``, the helper that
sends the ``query`` list request, runs on the client's side and is not counted.

Run: ``python bench/architecture.py`` (``--static`` skips the requests).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import sys
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGE = "fastmcp_filtering"
# The agent's helpers send the request in this same process; they are not the server's path.
CLIENT_SIDE = frozenset({f"{PACKAGE}.client"})
ROOT = Path(__file__).resolve().parents[1] / "src" / PACKAGE


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str) -> set[str]:
    """The package's modules that ``name`` (at ``path``) imports, wherever the import is."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(PACKAGE)}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.startswith(PACKAGE):
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names}
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    return found


def longest(paths: dict[str, Path], kind: type[ast.AST], most: int = 3) -> list[tuple[int, str]]:
    sizes: list[tuple[int, str]] = []
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kind):
                end = getattr(node, "end_lineno", node.lineno)  # type: ignore[attr-defined]
                sizes.append((end - node.lineno + 1, f"{name}.{node.name}"))  # type: ignore[attr-defined]
    return sorted(sizes, reverse=True)[:most]


def static_report() -> None:
    paths = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    graph = {
        name: {m for m in imports_of(path, name) if m in paths and m != name}
        for name, path in paths.items()
    }
    found = cycles(graph)
    top = [p for p in ROOT.glob("*.py")]
    subpackages = [p for p in ROOT.iterdir() if (p / "__init__.py").exists()]
    print(f"modules: {len(paths)}; at the top level: {len(top)}; subpackages: {len(subpackages)}")
    print(f"import cycles (imports inside functions count): {len(found)}")
    for component in sorted(found, key=len, reverse=True):
        short = [c.removeprefix(PACKAGE + ".") for c in component]
        print(f"  {len(component)} modules: {', '.join(short)}")
    for label, kind in (
        ("classes", ast.ClassDef),
        ("functions", ast.FunctionDef),
        ("async functions", ast.AsyncFunctionDef),
    ):
        rows = ", ".join(f"{name} {lines}" for lines, name in longest(paths, kind))
        print(f"longest {label}: {rows}")


class Tracer:
    """Counts the package's modules whose functions run, and calls between its modules."""

    def __init__(self) -> None:
        self.entered: set[str] = set()
        self.crossings = 0

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(PACKAGE) or module in CLIENT_SIDE:
            return
        self.entered.add(module)
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if caller.startswith(PACKAGE) and caller != module:
            self.crossings += 1


TARGETS = {"tools/list": 12, "tools/call": 12, "query": 16, "enable_tools": 16}
"""The most modules each request may enter (issue 25)."""


async def entered() -> dict[str, tuple[list[str], int]]:
    """For each traced request: the package's modules it enters, and the calls across them."""
    from fastmcp import Client
    from full_stack_server import build_full_stack_server

    from fastmcp_filtering.client import list_tools

    found: dict[str, tuple[list[str], int]] = {}
    async with Client(build_full_stack_server()) as client:
        await client.call_tool("enable_tools", {"groups": ["pull_requests"]})
        await client.list_tools()  # warm: the first listing and search build what later reuse
        await list_tools(client, query="open a pull request")
        requests = {
            "tools/list": lambda: client.list_tools(),
            "tools/call": lambda: client.call_tool("list_issues", {"owner": "a", "repo": "b"}),
            "query": lambda: list_tools(client, query="open a pull request"),
            "enable_tools": lambda: client.call_tool("enable_tools", {"groups": ["releases"]}),
        }
        for label, send in requests.items():
            tracer = Tracer()
            sys.setprofile(tracer)
            try:
                await send()
            finally:
                sys.setprofile(None)
            modules = sorted(m.removeprefix(PACKAGE + ".") for m in tracer.entered)
            found[label] = (modules, tracer.crossings)
    return found


async def dynamic_report() -> None:
    for label, (modules, crossings) in (await entered()).items():
        print(
            f"{label:<13} enters {len(modules):>2} modules (target {TARGETS[label]}), "
            f"{crossings:>4} calls across them: {', '.join(modules)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", action="store_true", help="skip the traced requests")
    args = parser.parse_args()
    static_report()
    if not args.static:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
        asyncio.run(dynamic_report())


if __name__ == "__main__":
    main()

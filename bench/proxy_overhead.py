"""What proxy mode costs per call and per list: direct, FastMCP's bare proxy, ours, in one run.

The upstream is the recorded GitHub server's stand-in (``examples/upstream_standin.py``,
26 tools) over stdio, so the run is offline. Three clients, each an in-memory
FastMCP ``Client`` in the era under test, except ``direct``:

- ``direct``: a client of the upstream itself, over stdio (the floor: no proxy);
- ``bare proxy``: FastMCP's ``create_proxy`` of the upstream, nothing added;
- ``bare + 4 tools``: the same bare proxy with four plain FastMCP tools added, each a
  copy of one of ours' meta-tools (name, description, input and output schemas,
  ``_meta``): FastMCP's own cost of the very listing ours returns, so the ratio
  against it is what the stack adds for the same bytes on the wire;
- ``ours``: ``build_proxy`` of ``examples/server-github.toml`` (7 groups, 2 tags, a
  ``risk`` concern with a mapping, search, progressive disclosure with ``call_tool``),
  with every group enabled at start and no concern default, so it lists every
  upstream tool (plus its 4 meta-tools) and lets the call through.

Each backend starts its own stand-in; both proxies speak ``mode="auto"`` to it (the
configuration's default). ``tools/list`` and ``tools/call get_issue`` are timed in
interleaved rounds; the table shows medians and bests, and the ratio of bests against
the bare proxy (target: within 1.1x), against the bare proxy listing the same 30 tools
(``vs same``), and against direct.

Then a gateway of five upstreams (five stand-ins, each under its own namespace: 130
tools, search on) lists in the same rounds as each upstream listed directly, and the
ratio of its best to the largest upstream's best is printed (target: at most 2x; the
gateway keeps each upstream's listing until it says ``list_changed`` or ``list_ttl``
passes, so a listing asks no upstream).

``--layers`` adds the typical configuration built up one layer at a time (groups, then
tags, concerns, search; each on its own stand-in) to see what each costs.

Usage: ``python bench/proxy_overhead.py [--repeat 200] [--eras modern legacy] [--layers]
[--markdown PATH]`` (``--markdown`` writes the table as markdown too, for the docs)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _markdown import Table, write  # bench/ is the script's directory
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from list_overhead import _timed

from fastmcp_filtering.core.declarations import META_TOOL_KEY
from fastmcp_filtering.gateway import build_proxy, load_config
from fastmcp_filtering.gateway.config.models import FilteringConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "server-github.toml"
STANDIN = ROOT / "examples" / "upstream_standin.py"
ERAS: dict[str, dict[str, Any]] = {"modern": {}, "legacy": {"mode": "legacy"}}
CALL = ("get_issue", {"owner": "o", "repo": "r", "issue_number": 1})


def standin() -> StdioTransport:
    return StdioTransport(command=sys.executable, args=[str(STANDIN)])


class PlainTool(Tool):
    """A FastMCP tool with a given definition, standing in for a meta-tool in a listing."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content="ok")


async def same_listing(transport: StdioTransport, era: str) -> Any:
    """FastMCP's bare proxy plus plain copies of ours' meta-tools: ours' listing, FastMCP's cost."""
    async with Client(build_proxy(typical_config()), **ERAS[era]) as client:
        listed = (await client.session.list_tools()).tools
    proxy = create_proxy(transport, mode="auto")
    for tool in listed:
        if (tool.meta or {}).get(META_TOOL_KEY):
            proxy.add_tool(
                PlainTool(
                    name=tool.name,
                    title=tool.title,
                    description=tool.description,
                    parameters=tool.input_schema,
                    output_schema=tool.output_schema,
                    meta=tool.meta,
                )
            )
    return proxy


def typical_config() -> Any:
    """The example configuration, every group enabled at start and no concern default."""
    config = load_config(EXAMPLE)
    assert config.progressive is not None
    progressive = config.progressive.model_copy(
        update={"initial_groups": [g.name for g in config.groups]}
    )
    concerns = [c.model_copy(update={"default": None}) for c in config.concerns]
    return config.model_copy(update={"progressive": progressive, "concerns": concerns})


def layered_configs() -> dict[str, Any]:
    """The typical configuration built up one layer at a time (``--layers``)."""
    config = typical_config()
    off = config.search.model_copy(update={"enabled": False})
    groups = config.model_copy(
        update={
            "tags": [],
            "concerns": [],
            "concern_mapping": {},
            "search": off,
            "progressive": None,
        }
    )
    tags = groups.model_copy(update={"tags": config.tags})
    concerns = tags.model_copy(
        update={"concerns": config.concerns, "concern_mapping": config.concern_mapping}
    )
    search = concerns.model_copy(update={"search": config.search})
    return {"ours: groups": groups, "+ tags": tags, "+ concerns": concerns, "+ search": search}


ERA_NAMES = {"modern": "2026-07-28", "legacy": "2025-11-25"}
NOTE = (
    "ratios: best time against the bare proxy, against the bare proxy listing the same "
    "30 tools (ours' meta-tools as plain tools), and against the upstream reached directly; "
    "on a shared machine the best of many runs is the least noisy estimate (as timeit); "
    "variants run interleaved, round by round, in one process."
)


async def run(repeat: int, eras: list[str], *, layers: bool, markdown: Path | None = None) -> None:
    numbers = ["listed", "median ms", "best ms", "vs bare", "vs same", "vs direct"]
    table = Table("", ["era", "request", "variant", *numbers], right=set(numbers))
    header = (
        f"{'era':<7} {'request':<10} {'variant':<14} {'listed':>6} {'median ms':>10} "
        f"{'best ms':>8} {'vs bare':>8} {'vs same':>8} {'vs direct':>9}"
    )
    print(header)
    print("-" * len(header))
    for era in eras:
        async with contextlib.AsyncExitStack() as stack:
            transports = [standin(), standin(), standin()]
            clients = {
                "direct": Client(transports[0], **ERAS[era]),
                "bare proxy": Client(create_proxy(transports[1], mode="auto"), **ERAS[era]),
                "bare + 4 tools": Client(await same_listing(transports[2], era), **ERAS[era]),
                **{
                    label: Client(build_proxy(config), **ERAS[era])
                    for label, config in (layered_configs() if layers else {}).items()
                },
                "ours": Client(build_proxy(typical_config()), **ERAS[era]),
            }
            for client in clients.values():
                await stack.enter_async_context(client)
            for transport in transports:
                stack.push_async_callback(transport.close)
            requests: dict[tuple[str, str], Callable[[], Awaitable[Any]]] = {}
            for label, client in clients.items():

                async def listing(client: Client[Any] = client) -> Any:
                    return await client.session.list_tools()

                async def calling(client: Client[Any] = client) -> Any:
                    result = await client.session.call_tool(*CALL)
                    assert not result.is_error, result
                    return result

                requests[("tools/list", label)] = listing
                requests[("tools/call", label)] = calling
            listed = {
                label: len((await c.session.list_tools()).tools) for label, c in clients.items()
            }
            for request in requests.values():  # warm: upstream started, caches filled
                await request()
            times: dict[tuple[str, str], list[float]] = {key: [] for key in requests}
            # Interleaved rounds: the machine's drift falls on every variant alike.
            for _ in range(repeat):
                for key, request in requests.items():
                    times[key].append(await _timed(request))
        for kind in ("tools/list", "tools/call"):
            best = {label: min(times[(kind, label)]) for label in clients}
            for label in clients:
                median = statistics.median(times[(kind, label)])
                print(
                    f"{era:<7} {kind:<10} {label:<14} {listed[label]:>6} {median:>10.2f} "
                    f"{best[label]:>8.2f} {best[label] / best['bare proxy']:>7.2f}x "
                    f"{best[label] / best['bare + 4 tools']:>7.2f}x "
                    f"{best[label] / best['direct']:>8.2f}x"
                )
                table.add(
                    ERA_NAMES[era],
                    f"`{kind}`",
                    label,
                    listed[label] if kind == "tools/list" else "",
                    f"{median:.2f}",
                    f"{best[label]:.2f}",
                    f"{best[label] / best['bare proxy']:.2f}x",
                    f"{best[label] / best['bare + 4 tools']:.2f}x",
                    f"{best[label] / best['direct']:.2f}x",
                )
        print()
    print("ratios: best time against the bare proxy, against the bare proxy listing the same")
    print("30 tools (ours' meta-tools as plain tools), and against the upstream reached directly;")
    print("on a shared machine the best of many runs is the least noisy estimate (as timeit);")
    print("variants run interleaved, round by round, in one process.")
    if markdown:
        write(markdown, [table], [NOTE])


FIVE = ("issues", "pulls", "repos", "search", "files")


def five_upstreams() -> FilteringConfig:
    """A gateway of five stand-ins, each under its namespace, with the default layers."""
    upstreams = [
        {"name": n, "namespace": n, "command": sys.executable, "args": [str(STANDIN)]} for n in FIVE
    ]
    return FilteringConfig.model_validate({"upstreams": upstreams})


async def run_five(repeat: int, eras: list[str]) -> None:
    """``tools/list`` through a gateway of five upstreams against each upstream directly."""
    print(f"{'era':<7} {'tools/list of':<16} {'listed':>6} {'median ms':>10} {'best ms':>8}")
    for era in eras:
        async with contextlib.AsyncExitStack() as stack:
            transports = [standin() for _ in FIVE]
            clients = {
                **{
                    f"{n} direct": Client(t, **ERAS[era])
                    for n, t in zip(FIVE, transports, strict=True)
                },
                "gateway of 5": Client(build_proxy(five_upstreams()), **ERAS[era]),
            }
            for client in clients.values():
                await stack.enter_async_context(client)
            for transport in transports:
                stack.push_async_callback(transport.close)
            listed = {k: len((await c.session.list_tools()).tools) for k, c in clients.items()}
            times: dict[str, list[float]] = {label: [] for label in clients}
            for _ in range(repeat):  # interleaved, as above
                for label, client in clients.items():
                    times[label].append(await _timed(client.session.list_tools))
        for label in clients:
            median, best = statistics.median(times[label]), min(times[label])
            print(f"{era:<7} {label:<16} {listed[label]:>6} {median:>10.2f} {best:>8.2f}")
        largest = max(min(v) for k, v in times.items() if k.endswith("direct"))
        ratio = min(times["gateway of 5"]) / largest
        print(f"{era:<7} gateway of 5 vs the slowest upstream listed directly: {ratio:.2f}x\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--eras", nargs="+", choices=list(ERAS), default=list(ERAS))
    parser.add_argument(
        "--layers", action="store_true", help="also time the stack built up layer by layer"
    )
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the table here")
    args = parser.parse_args()
    asyncio.run(run(args.repeat, args.eras, layers=args.layers, markdown=args.markdown))
    asyncio.run(run_five(args.repeat, args.eras))


if __name__ == "__main__":
    main()

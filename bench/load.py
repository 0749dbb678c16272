"""Throughput and latency over streamable HTTP: the full stack against bare FastMCP, one run.

For each catalog size (synthetic tools in 10 groups) it starts two servers on
loopback, each in its own process:

- ``bare``: FastMCP with the catalog and no middleware;
- ``full``: the same catalog behind ``FilterMiddleware``, ``SearchMiddleware``,
  ``ConcernMiddleware`` and ``ProgressiveDisclosureMiddleware`` on one ``Catalog``,
  every group enabled from the start so that a plain ``tools/list`` returns the
  same tools as the bare server;

then sends a bounded number of requests from a few concurrent 2025-11-25 sessions
(plain JSON-RPC over httpx, so the client costs little next to the server) and
prints requests per second and p50/p99 latency for

- ``tools/list``: plain, on both servers;
- ``tools/list`` with ``filter.groups`` (one group of ten) and with ``query``, on
  the full stack, against the bare server's plain list (what a client without the
  stack has to fetch instead);
- ``tools/call`` of the same tool on both.

Ratios are full stack over bare (rps: higher is better, latency: lower is better).
Usage: ``python bench/load.py [--sizes 100 1000 10000] [--concurrency 4] [--requests 400]
[--markdown PATH]`` (``--markdown`` writes the table as markdown too, for the docs)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _markdown import Table, write  # bench/ is the script's directory
from fastmcp import FastMCP
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult

from fastmcp_filtering import (
    Catalog,
    Concern,
    ConcernMiddleware,
    FilterMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    install,
)

GROUPS = [f"g{i}" for i in range(10)]
VERBS = [
    "list",
    "get",
    "create",
    "update",
    "delete",
    "search",
    "archive",
    "export",
    "sync",
    "merge",
]
NOUNS = [
    "invoice", "customer", "order", "shipment", "ticket", "report", "account", "payment",
    "refund", "product", "warehouse", "supplier", "contract", "employee", "project", "budget",
    "campaign", "lead", "subscription", "license",
]  # fmt: skip
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class EchoTool(Tool):
    """A tool that returns its arguments: the call path without any work of its own."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content=json.dumps({"tool": self.name, "arguments": arguments}))


def build(size: int, *, stack: str) -> FastMCP:
    mcp = FastMCP(f"load-{stack}-{size}")
    mapping: dict[str, dict[str, str]] = {}
    for i in range(size):
        verb, noun, group = VERBS[i % 10], NOUNS[(i // 10) % 20], GROUPS[(i // 3) % 10]
        name = f"{verb}_{noun}_{i}"
        mcp.add_tool(
            EchoTool(
                name=name,
                description=f"{verb.capitalize()} a {noun} record in service {group}",
                parameters={
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["id"],
                },
                tags={"destructive" if verb == "delete" else "safe"},
                meta={"io.modelcontextprotocol/groups": [group]},
            )
        )
        mapping[name] = {"risk": "destructive" if verb == "delete" else "safe"}
    if stack == "full":
        catalog = Catalog(groups=[Group(g, description=f"Service {g}") for g in GROUPS])
        install(mcp, FilterMiddleware(catalog=catalog))
        install(mcp, SearchMiddleware(catalog=catalog))
        risk = Concern("risk", values=["safe", "destructive"], ordered=True)
        install(mcp, ConcernMiddleware(concerns=[risk], mapping=mapping))
        install(
            mcp,
            ProgressiveDisclosureMiddleware(
                catalog=catalog, initial_groups=GROUPS, call_tool_name="call_tool"
            ),
        )
    return mcp


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(size: int, stack: str) -> Iterator[str]:
    port = _free_port()
    command = [sys.executable, __file__, "--serve", stack, "--size", str(size), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{stack} server for {size} tools exited")
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise TimeoutError("server did not start") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC reply of a POST, whether sent as JSON or as an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message: dict[str, Any] = json.loads(line[5:])
                if "id" in message:
                    return message
        raise RuntimeError("no reply in the event stream")
    return dict(response.json())


class Session:
    """A 2025-11-25 session over plain httpx."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = dict(HEADERS)
        self.next_id = 0

    async def open(self) -> None:
        response = await self.http.post(
            self.url,
            headers=self.headers,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            },
        )
        _message(response)
        self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-11-25"
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, headers=self.headers, json=notification)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        message = _message(await self.http.post(self.url, headers=self.headers, json=body))
        if "error" in message:
            raise RuntimeError(f"{method} failed: {message['error']}")
        return dict(message["result"])


@dataclass(frozen=True)
class Result:
    rps: float
    p50: float
    p99: float
    size: int
    """Tools in the reply (0 for calls)."""
    latencies: list[float]
    elapsed: float


async def measure(
    url: str, method: str, params: dict[str, Any], *, requests: int, concurrency: int
) -> Result:
    latencies: list[float] = []
    sizes: list[int] = []
    limits = httpx.Limits(max_connections=concurrency * 2)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        sessions = [Session(http, url) for _ in range(concurrency)]
        for session in sessions:
            await session.open()
        await sessions[0].request(method, params)  # warm caches and indexes
        remaining = requests

        async def worker(session: Session) -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                start = time.perf_counter()
                result = await session.request(method, params)
                latencies.append((time.perf_counter() - start) * 1000)
                sizes.append(len(result.get("tools", [])))

        start = time.perf_counter()
        await asyncio.gather(*(worker(s) for s in sessions))
        elapsed = time.perf_counter() - start
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return Result(
        len(latencies) / elapsed, statistics.median(latencies), p99, sizes[0], latencies, elapsed
    )


def _merged(results: list[Result]) -> Result:
    """One row from several measurements of the same request: latencies pooled."""
    latencies = sorted(x for r in results for x in r.latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    rps = len(latencies) / sum(r.elapsed for r in results)
    return Result(rps, statistics.median(latencies), p99, results[0].size, latencies, 0.0)


async def run(
    sizes: list[int], concurrency: int, base_requests: int, markdown: Path | None = None
) -> None:
    numbers = ["listed", "bare rps", "full rps", "rps ratio", "bare p50 ms", "full p50 ms"]
    numbers += ["bare p99 ms", "full p99 ms", "p50 ratio"]
    table = Table("", ["tools", "request", *numbers], right={"tools", *numbers})
    header = (
        f"{'tools':>6} {'request':<26} {'listed':>6} {'bare rps':>9} {'full rps':>9} "
        f"{'rps ratio':>9} {'bare p50':>9} {'full p50':>9} {'bare p99':>9} {'full p99':>9} "
        f"{'p50 ratio':>9}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        # Bounded work per row: fewer requests for the lists that grow with the catalog.
        list_requests = max(24, base_requests * 100 // size)
        call: dict[str, Any] = {"name": f"get_{NOUNS[0]}_1", "arguments": {"id": "x"}}
        with serve(size, "bare") as bare_url, serve(size, "full") as full_url:
            rows: list[tuple[str, str, dict[str, Any], str, dict[str, Any], int]] = [
                ("tools/list", "tools/list", {}, "tools/list", {}, list_requests),
                (
                    "tools/list filter 1/10",
                    "tools/list",
                    {},
                    "tools/list",
                    {"filter": {"groups": ["g3"]}},
                    list_requests,
                ),
                (
                    "tools/list query",
                    "tools/list",
                    {},
                    "tools/list",
                    {"query": "export the invoice records"},
                    list_requests,
                ),
                ("tools/call", "tools/call", call, "tools/call", call, base_requests),
            ]
            # The full stack indexes its catalog for search in a worker thread when the
            # first client arrives: let that finish before timing anything.
            await measure(full_url, "tools/list", {"query": "warm up"}, requests=1, concurrency=1)
            for label, bare_method, bare_params, full_method, full_params, count in rows:
                # Alternating halves, so drift on a shared machine falls on both alike.
                halves: dict[str, list[Result]] = {"bare": [], "full": []}
                for _ in range(2):
                    halves["bare"].append(
                        await measure(
                            bare_url,
                            bare_method,
                            bare_params,
                            requests=count // 2,
                            concurrency=concurrency,
                        )
                    )
                    halves["full"].append(
                        await measure(
                            full_url,
                            full_method,
                            full_params,
                            requests=count // 2,
                            concurrency=concurrency,
                        )
                    )
                bare, full = _merged(halves["bare"]), _merged(halves["full"])
                listed = f"{full.size}" if label.startswith("tools/list") else "-"
                print(
                    f"{size:>6} {label:<26} {listed:>6} {bare.rps:>9.1f} {full.rps:>9.1f} "
                    f"{full.rps / bare.rps:>8.2f}x {bare.p50:>9.1f} {full.p50:>9.1f} "
                    f"{bare.p99:>9.1f} {full.p99:>9.1f} {full.p50 / bare.p50:>8.2f}x",
                    flush=True,
                )
                table.add(
                    f"{size:,}",
                    label,
                    listed,
                    f"{bare.rps:.1f}",
                    f"{full.rps:.1f}",
                    f"{full.rps / bare.rps:.2f}x",
                    f"{bare.p50:.1f}",
                    f"{full.p50:.1f}",
                    f"{bare.p99:.1f}",
                    f"{full.p99:.1f}",
                    f"{full.p50 / bare.p50:.2f}x",
                )
        print()
    note = (
        "ms latencies; bare lists the whole catalog in every row (a bare server has no filter "
        f"or query); {concurrency} concurrent sessions per measurement."
    )
    print(note)
    if markdown:
        write(markdown, [table], [note])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requests", type=int, default=400, help="calls, and lists at 100 tools")
    parser.add_argument("--serve", choices=["bare", "full"], help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=100, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the table here")
    args = parser.parse_args()
    if args.serve:
        server = build(args.size, stack=args.serve)
        server.run(
            transport="http",
            host="127.0.0.1",
            port=args.port,
            show_banner=False,
            log_level="WARNING",
        )
        return
    asyncio.run(run(args.sizes, args.concurrency, args.requests, args.markdown))


if __name__ == "__main__":
    main()

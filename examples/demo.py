"""What fastmcp-filtering does for an agent, step by step, against a real server process.

Starts ``examples/full_stack_server.py --search-first`` (62 GitHub-like tools in 9 groups
behind all four middlewares; only ``search_tools`` and ``call_tool`` listed) over stdio,
walks through what an agent would do, and prints how many tools and how many tokens each
step puts in the model's context, beside the full catalog and FastMCP's own
``BM25SearchTransform`` on the same tools.

Usage: ``python examples/demo.py [--legacy] [--json] [--update-readme]`` (``--update-readme``
writes the table into the README, where ``tests/stack/test_demo.py`` checks it)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.transforms.search import BM25SearchTransform

sys.path.insert(0, str(Path(__file__).parent))

from github_server import build_catalog

from fastmcp_filtering.client import list_groups, update_concerns

SERVER = Path(__file__).parent / "full_stack_server.py"
QUERY = "open a pull request"


def tokens(payload: Any) -> tuple[int, int]:
    """JSON bytes of ``payload`` and the usual estimate of its tokens (bytes / 4)."""
    size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
    return size, size // 4


def dump(tools: Any) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]


class Walkthrough:
    """Runs the steps, printing progress, and keeps the figures for the table."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.rows: list[dict[str, Any]] = []

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, flush=True)

    best: dict[str, Any] | None = None
    """The first search's best match and what it said to call first."""

    def row(self, step: str, listed: int | None, payload: Any) -> None:
        size, estimate = tokens(payload)
        self.rows.append({"step": step, "tools": listed, "bytes": size, "tokens": estimate})


async def full_catalog() -> list[dict[str, Any]]:
    """The tools the same server lists without fastmcp-filtering."""
    async with Client(build_catalog()) as client:
        return dump(await client.list_tools())


async def fastmcp_search() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What FastMCP's own ``BM25SearchTransform`` lists, and its search for ``QUERY``."""
    mcp = build_catalog()
    mcp.add_transform(BM25SearchTransform(max_results=5))
    async with Client(mcp) as client:
        listed = dump(await client.list_tools())
        found = await client.call_tool("search_tools", {"query": QUERY})
    return listed, list((found.structured_content or {}).get("result", []))


async def run(legacy: bool, quiet: bool) -> dict[str, Any]:
    walk = Walkthrough(quiet)
    everything = await full_catalog()
    walk.row("without fastmcp-filtering: every tool", len(everything), everything)
    listed, hits = await fastmcp_search()
    walk.row("FastMCP BM25SearchTransform: tools/list", len(listed), listed)
    walk.row(f"FastMCP BM25SearchTransform: search '{QUERY}'", len(hits), hits)
    walk.say(f"The plain server lists {len(everything)} tools.\n")

    # The server's own start-up log would interleave with the walkthrough.
    transport = StdioTransport(
        command=sys.executable,
        args=[str(SERVER), "--search-first"],
        env={**os.environ, "FASTMCP_LOG_LEVEL": "WARNING"},
    )
    async with Client(transport, **({"mode": "legacy"} if legacy else {})) as client:
        walk.say(f"Connected to {SERVER.name} over stdio (protocol {client.protocol_version}).")
        await walk_through(walk, client)
        protocol = client.protocol_version
    return {"protocol_version": protocol, "search": walk.best, "steps": walk.rows}


async def walk_through(walk: Walkthrough, client: Client[Any]) -> None:
    """Search first: list, search, run the hit by name, then what concerns and groups add."""
    first = await client.list_tools()
    walk.row("1. tools/list (search first)", len(first), dump(first))
    walk.say(f"1. tools/list shows {len(first)} tools: {', '.join(t.name for t in first)}")

    found = await client.call_tool("search_tools", {"query": QUERY})
    result = found.structured_content or {}
    hits = result.get("tools", [])
    walk.row(f"2. search_tools '{QUERY}'", len(hits), result)
    best = hits[0] if hits else {}
    walk.best = {"name": best.get("name"), "required": best.get("inputSchema", {}).get("required")}
    walk.say(
        f"2. search_tools '{QUERY}': {', '.join(h['name'] for h in hits)}; each with its "
        f"inputSchema, and: {result.get('next')}"
    )

    # The agent calls the hit by its name on its very next call: no group to enable first.
    opened = await client.call_tool(
        str(best.get("name")),
        {"owner": "acme", "repo": "api", "title": "Fix login", "head": "fix", "base": "main"},
    )
    walk.say(f"3. {best.get('name')} -> {json.dumps(opened.structured_content)[:80]}...")
    after = await client.list_tools()
    walk.row("4. tools/list after the call", len(after), dump(after))
    walk.say(f"4. the list did not grow: {len(after)} tools")

    # 2025-11-25 stores the concerns for the session; 2026-07-28 changes no list as a side
    # effect of another request, so the update answers the _meta to send with each request.
    update = await update_concerns(client, {"risk": "safe"})
    meta = update.request_meta
    try:
        await client.call_tool("delete_repo", {"owner": "acme", "repo": "api"}, meta=meta)
        walk.say("5. delete_repo ran (unexpected)")
    except ToolError as refused:
        walk.say(f"5. with concerns risk=safe, delete_repo is refused:\n   {refused}")
    found = await client.call_tool("search_tools", {"query": "delete a repository"}, meta=meta)
    names = [h["name"] for h in (found.structured_content or {}).get("tools", [])]
    walk.say(f"   and search_tools 'delete a repository' finds: {', '.join(names)}")

    groups = await list_groups(client)
    walk.row("6. groups/list", None, [g.model_dump(exclude_none=True) for g in groups])
    walk.say(f"6. groups/list: {', '.join(g.name for g in groups)}")


def table(report: dict[str, Any]) -> str:
    full = report["steps"][0]
    lines = [f"{'step':<58} {'tools':>5} {'bytes':>7} {'~tokens':>8} {'of full':>8}"]
    for row in report["steps"]:
        share = row["bytes"] / full["bytes"]
        listed = "" if row["tools"] is None else row["tools"]
        lines.append(
            f"{row['step']:<58} {listed:>5} {row['bytes']:>7} {row['tokens']:>8} {share:>8.1%}"
        )
    lines.append("\n(tokens estimated as JSON bytes / 4)")
    return "\n".join(lines)


README = Path(__file__).parents[1] / "README.md"
START, END = "<!-- demo-output:start -->", "<!-- demo-output:end -->"


def readme_block(report: dict[str, Any]) -> str:
    """The README's copy of the table, headed by the FastMCP version it was made with."""
    import fastmcp

    return f"```text\n# FastMCP {fastmcp.__version__}\n{table(report)}\n```"


def update_readme(block: str) -> None:
    """Put ``block`` between the README's demo-output markers."""
    text = README.read_text(encoding="utf-8")
    start, end = text.index(START) + len(START), text.index(END)
    README.write_text(f"{text[:start]}\n{block}\n{text[end:]}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--legacy", action="store_true", help="use the 2025-11-25 session era")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--update-readme", action="store_true", help="write the table into README.md"
    )
    args = parser.parse_args()
    # The client warns when it calls a tool it was not listed: search first does, by design.
    logging.getLogger("client").setLevel(logging.ERROR)
    report = asyncio.run(run(args.legacy, quiet=args.json or args.update_readme))
    if args.update_readme:
        update_readme(readme_block(report))
    print(json.dumps(report, indent=2) if args.json else f"\n{table(report)}")


if __name__ == "__main__":
    main()

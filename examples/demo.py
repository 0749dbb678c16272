"""What fastmcp-filtering does for an agent, step by step, against a real server process.

Starts ``examples/full_stack_server.py`` (62 GitHub-like tools in 9 groups behind all four
middlewares) over stdio, walks through what an agent would do, and prints how many tools
and how many tokens each step puts in the model's context, against the full catalog.

Usage: ``python examples/demo.py [--legacy] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

sys.path.insert(0, str(Path(__file__).parent))

from github_server import build_catalog

from fastmcp_filtering.client import call_method, list_groups, list_tools

SERVER = Path(__file__).parent / "full_stack_server.py"


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


async def run(legacy: bool, quiet: bool) -> dict[str, Any]:
    walk = Walkthrough(quiet)
    everything = await full_catalog()
    walk.row("without fastmcp-filtering: every tool", len(everything), everything)
    walk.say(f"The plain server lists {len(everything)} tools.\n")

    # The server's own start-up log would interleave with the walkthrough.
    transport = StdioTransport(
        command=sys.executable,
        args=[str(SERVER)],
        env={**os.environ, "FASTMCP_LOG_LEVEL": "WARNING"},
    )
    async with Client(transport, **({"mode": "legacy"} if legacy else {})) as client:
        walk.say(f"Connected to {SERVER.name} over stdio (protocol {client.protocol_version}).")

        first = await client.list_tools()
        walk.row("1. first tools/list (issues + meta-tools)", len(first), dump(first))
        walk.say(f"1. tools/list shows {len(first)} tools: {', '.join(t.name for t in first)}")

        groups = await list_groups(client)
        walk.row("2. groups/list", None, [g.model_dump(exclude_none=True) for g in groups])
        walk.say(f"2. groups/list: {', '.join(g.name for g in groups)}")

        found = await client.call_tool("search_tools", {"query": "open a pull request"})
        hits = (found.structured_content or {}).get("tools", [])
        walk.row("3. search_tools 'open a pull request'", len(hits), hits)
        best = hits[0] if hits else {}
        advice = best.get("available_after", {})
        walk.say(
            f"3. search_tools 'open a pull request': best match {best.get('name')}, "
            f"available after {json.dumps(advice)}"
        )
        walk.best = {"name": best.get("name"), "available_after": advice}

        # The agent does what the search said.
        groups = advice.get("enable_tools", {}).get("groups", ["code", "pull_requests"])
        reply = await client.call_tool("enable_tools", {"groups": groups})
        enabled = reply.structured_content or {}
        walk.say(f"4. enable_tools({groups}) as search advised -> enabled {enabled.get('enabled')}")
        after = await client.list_tools()
        walk.row("4. tools/list after enable_tools", len(after), dump(after))
        found = await list_tools(client, query="open a pull request")
        walk.row("5. the same search again", len(found.tools), dump(found.tools))
        walk.say(f"5. search again: {', '.join(t.name for t in found.tools[:3])}, ...")

        opened = await client.call_tool(
            "create_pull_request",
            {"owner": "acme", "repo": "api", "title": "Fix login", "head": "fix", "base": "main"},
        )
        walk.say(f"6. create_pull_request -> {json.dumps(opened.structured_content)[:80]}...")

        try:
            await client.call_tool("delete_repo", {"owner": "acme", "repo": "api"})
            walk.say("7. delete_repo ran (unexpected)")
        except ToolError as refused:
            walk.say(f"7. delete_repo is refused with a hint:\n   {refused}")

        await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
        await client.call_tool("enable_tools", {"groups": ["admin"]})
        safe = await client.list_tools()
        walk.row("8. admin enabled, concerns risk=safe", len(safe), dump(safe))
        walk.say(
            "8. with admin enabled but risk=safe, the destructive tools stay hidden: "
            f"{sorted(t.name for t in safe if t.name.startswith(('delete', 'transfer')))}"
        )
        protocol = client.protocol_version
    return {"protocol_version": protocol, "search": walk.best, "steps": walk.rows}


def table(report: dict[str, Any]) -> str:
    full = report["steps"][0]
    lines = [f"\n{'step':<46} {'tools':>5} {'bytes':>7} {'~tokens':>8} {'of full':>8}"]
    for row in report["steps"]:
        share = row["bytes"] / full["bytes"]
        listed = "" if row["tools"] is None else row["tools"]
        lines.append(
            f"{row['step']:<46} {listed:>5} {row['bytes']:>7} {row['tokens']:>8} {share:>8.0%}"
        )
    lines.append("\n(tokens estimated as JSON bytes / 4)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--legacy", action="store_true", help="use the 2025-11-25 session era")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    report = asyncio.run(run(args.legacy, quiet=args.json))
    print(json.dumps(report, indent=2) if args.json else table(report))


if __name__ == "__main__":
    main()

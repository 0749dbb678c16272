"""Show what filtering saves: the example server's groups, then filtered tool lists.

Usage: ``python examples/demo.py [--legacy] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client

sys.path.insert(0, str(Path(__file__).parent))

from github_server import build_server

from fastmcp_filtering.client import list_groups, list_tools

STEPS: list[tuple[str, dict[str, Any]]] = [
    ("full catalog (no filter)", {}),
    ("filter groups=[issues]", {"groups": ["issues"]}),
    ("filter groups=[code] (with subgroups)", {"groups": ["code"]}),
    (
        "filter groups=[pull_requests] tags=[read-only]",
        {"groups": ["pull_requests"], "tags": ["read-only"]},
    ),
    ("filter tags=[destructive]", {"tags": ["destructive"]}),
]


async def run(legacy: bool) -> dict[str, Any]:
    server = build_server()
    async with Client(server, **({"mode": "legacy"} if legacy else {})) as client:
        groups = await list_groups(client)
        rows = []
        for label, params in STEPS:
            result = await list_tools(client, **params)
            wire = json.dumps(
                [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]
            )
            rows.append(
                {
                    "step": label,
                    "tools": len(result.tools),
                    "bytes": len(wire),
                    "tokens_estimate": len(wire) // 4,
                }
            )
        return {
            "protocol_version": client.protocol_version,
            "groups": [{"name": g.name, "parents": g.parents, "title": g.title} for g in groups],
            "steps": rows,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--legacy", action="store_true", help="use the 2025-11-25 session era")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    report = asyncio.run(run(args.legacy))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"fastmcp-filtering demo (protocol {report['protocol_version']})\n")
    print("groups/list:")
    for group in report["groups"]:
        parent = f"  (in {', '.join(group['parents'])})" if group["parents"] else ""
        print(f"  - {group['name']:<14} {group['title'] or ''}{parent}")
    full = report["steps"][0]
    print(f"\n{'tools/list request':<50} {'tools':>5} {'bytes':>7} {'~tokens':>8} {'saved':>6}")
    for row in report["steps"]:
        saved = 1 - row["bytes"] / full["bytes"]
        print(
            f"{row['step']:<50} {row['tools']:>5} {row['bytes']:>7} "
            f"{row['tokens_estimate']:>8} {saved:>6.0%}"
        )
    print("\n(tokens estimated as JSON bytes / 4)")


if __name__ == "__main__":
    main()

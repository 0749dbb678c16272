"""Rebuild tools.jsonl and queries.jsonl: the GitHub MCP server's tool snapshots and our requests.

Usage: ``python convert.py PATH/TO/github-mcp-server`` (a checkout of github/github-mcp-server
at the commit README.md names); standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def tools(repo: Path) -> list[dict[str, object]]:
    """Every tool of ``pkg/github/__toolsnaps__``, by name: the server's own tool definitions."""
    out = []
    for snap in sorted((repo / "pkg" / "github" / "__toolsnaps__").glob("*.snap")):
        tool = json.loads(snap.read_text())
        out.append(
            {
                "id": f"github/{tool['name']}",
                "name": tool["name"],
                "description": tool.get("description") or "",
                "inputSchema": tool.get("inputSchema") or {"type": "object", "properties": {}},
                "server": "github",
                "title": (tool.get("annotations") or {}).get("title") or "",
            }
        )
    return out


def queries(names: set[str]) -> list[dict[str, object]]:
    """``requests.txt``: a request, a tab, the tools any of which answers it."""
    out = []
    for i, line in enumerate((HERE / "requests.txt").read_text().splitlines(), 1):
        query, gold = line.split("\t")
        missing = set(gold.split()) - names
        if missing:
            raise SystemExit(f"line {i}: no such tool {sorted(missing)}")
        out.append({"qid": f"gh{i:03d}", "query": query, "gold": gold.split(), "gold_match": "any"})
    return out


def main() -> None:
    found = tools(Path(sys.argv[1]))
    lines = [json.dumps(t, ensure_ascii=False) for t in found]
    (HERE / "tools.jsonl").write_text("\n".join(lines) + "\n")
    asked = queries({str(t["name"]) for t in found})
    (HERE / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in asked) + "\n")
    print(f"{len(found)} tools, {len(asked)} requests")


if __name__ == "__main__":
    main()

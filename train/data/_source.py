"""What every converter shares (standard library only): reading a pinned commit, writing jsonl.

A converter reads its source's files at one commit with ``git show COMMIT:PATH`` from a
clone (bare or not) given as ``--repo``, so the data it writes depends on that commit only.
It writes ``tools.jsonl`` and ``queries.jsonl`` in the bench format (``bench/datasets/README.md``)
and a ``manifest.json`` with each file's line count and sha256, which is what the repository
keeps when the jsonl files are too large to commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any


def arguments(description: str, commit: str, flags: tuple[str, ...] = ()) -> argparse.Namespace:
    """The converter's options: ``--repo``, ``--commit``, ``--out`` and its own ``flags``."""
    parser = argparse.ArgumentParser(description=description)
    for flag in flags:
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--repo", type=Path, required=True, help="a clone (bare or not)")
    parser.add_argument("--commit", default=commit, help=f"the pinned commit ({commit[:12]})")
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: next to convert.py)"
    )
    return parser.parse_args()


def git_show(repo: Path, commit: str, path: str) -> bytes:
    """The bytes of ``path`` at ``commit``; fails if the file is absent from the clone."""
    flag = "--git-dir" if (repo / "HEAD").is_file() and not (repo / ".git").exists() else "-C"
    return subprocess.run(
        ["git", flag, str(repo), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout


def tool_row(
    server: str,
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str] | None = None,
) -> dict[str, Any]:
    """A tool in the bench format, id ``server::name``; of each parameter, its description.

    ``properties`` maps a parameter's name to its spec (a dict; anything else is left out);
    ``required`` is written only when given.
    """
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            str(n): {"description": str(spec.get("description") or "")}
            for n, spec in properties.items()
            if isinstance(spec, dict)
        },
    }
    if required is not None:
        schema["required"] = required
    return {
        "id": f"{server}::{name}",
        "name": name,
        "description": description,
        "inputSchema": schema,
        "server": server,
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Write ``rows`` one JSON object a line; returns the file's manifest entry."""
    text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    data = text.encode("utf-8")
    path.write_bytes(data)
    return {"lines": len(rows), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_all(
    out: Path,
    source: dict[str, Any],
    tools: list[dict[str, Any]],
    queries: list[dict[str, Any]],
) -> None:
    """``tools.jsonl``, ``queries.jsonl`` and ``manifest.json`` (the source and the hashes)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "source": source,
        "files": {
            "tools.jsonl": write_jsonl(out / "tools.jsonl", tools),
            "queries.jsonl": write_jsonl(out / "queries.jsonl", queries),
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"{out}: {len(tools)} tools, {len(queries)} queries")

"""API-Bank (AlibabaResearch/DAMO-ConvAI, ``api-bank/``, Apache-2.0) as request -> tool pairs.

Tools: the API classes of ``api-bank/apis/*.py``, read with ``ast`` (never imported): the
class name, its ``description`` and ``input_parameters``. Requests: the dialogues of
``api-bank/lv1-lv2-samples/`` (``level-1-given-desc`` and ``level-2-toolsearcher``); a
request is the user's first turn, its gold the first API the dialogue calls past the plumbing
(``GetUserToken``, ``ToolSearcher``: the assistant's steps, not what the user asked for; later
calls answer later turns).
Dialogues with the same first turn are one request. Standard library only.

Usage: ``python train/data/apibank/convert.py --repo PATH_TO_DAMO-ConvAI_CLONE``
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, write_all  # train/data/ is the parent folder

REPO = "AlibabaResearch/DAMO-ConvAI"
COMMIT = "483554eae102996f5ec1f4feab4e78ef29c2a394"
BASE = "api-bank/"
DIALOGUES = ["lv1-lv2-samples/level-1-given-desc/", "lv1-lv2-samples/level-2-toolsearcher/"]
PLUMBING = {"GetUserToken", "ToolSearcher"}


def listing(repo: Path, commit: str, folder: str) -> list[str]:
    flag = "--git-dir" if (repo / "HEAD").is_file() and not (repo / ".git").exists() else "-C"
    out = subprocess.run(
        ["git", flag, str(repo), "ls-tree", "--name-only", f"{commit}:{folder}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [folder + name for name in out.split()]


def api_classes(source: str) -> list[dict[str, Any]]:
    """Each class with a literal ``description``: name, description, parameters."""
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, Any] = {}
        for item in node.body:
            if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                try:
                    fields[item.targets[0].id] = ast.literal_eval(item.value)
                except ValueError:
                    continue
        if isinstance(fields.get("description"), str):
            found.append({"name": node.name, **fields})
    return found


def tool_row(api: dict[str, Any]) -> dict[str, Any]:
    params = api.get("input_parameters") or {}
    properties = {
        str(n): {"description": str(s.get("description") or "")} if isinstance(s, dict) else {}
        for n, s in params.items()
    }
    return {
        "id": api["name"],
        "name": api["name"],
        "description": api["description"],
        "inputSchema": {"type": "object", "properties": properties},
        "server": "api-bank",
    }


def request(lines: list[str], names: set[str]) -> tuple[str, list[str]] | None:
    turns = [json.loads(line) for line in lines if line.strip()]
    said = [t["text"] for t in turns if t.get("role") == "User" and t.get("text")]
    called = [t.get("api_name") for t in turns if t.get("role") == "API"]
    # The first API past the plumbing answers the first turn; later ones answer later turns.
    gold = [c for c in called if c in names and c not in PLUMBING][:1]
    return (said[0].strip(), gold) if said and gold else None


def main() -> None:
    args = arguments(__doc__ or "", COMMIT)
    tools: list[dict[str, Any]] = []
    for path in listing(args.repo, args.commit, BASE + "apis/"):
        if path.endswith(".py"):
            code = git_show(args.repo, args.commit, path).decode()
            tools.extend(tool_row(api) for api in api_classes(code) if api["name"] != "API")
    names = {t["name"] for t in tools}
    by_text: dict[str, list[str]] = {}
    for folder in DIALOGUES:
        for path in listing(args.repo, args.commit, BASE + folder):
            found = request(git_show(args.repo, args.commit, path).decode().splitlines(), names)
            if found:
                gold = by_text.setdefault(found[0], [])
                gold.extend(g for g in found[1] if g not in gold)
    queries = [
        {"qid": f"apibank_{i}", "query": text, "gold": gold}
        for i, (text, gold) in enumerate(by_text.items())
    ]
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0 (api-bank/LICENSE)"}
    write_all(args.out or Path(__file__).resolve().parent, source, tools, queries)


if __name__ == "__main__":
    main()

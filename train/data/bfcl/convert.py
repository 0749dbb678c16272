"""The Berkeley Function-Calling Leaderboard's data (ShishirPatil/gorilla, Apache-2.0) as
request -> tool pairs in the bench format.

Each BFCL entry is a request (chat turns), the functions offered with it and, in
``possible_answer/``, the call(s) that answer it. Taken: the categories whose answer names
the functions to call (``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple``
and their ``live_`` versions, the live ones contributed by the leaderboard's users); left out:
Java and JavaScript (code requests), irrelevance and relevance (no gold), multi-turn, memory
and web search (state, not retrieval). The request is its user turns joined; its gold is the
functions named in the answer. One function name can stand for different functions in
different entries, so a tool's ``id`` is its name and a hash of its description and
parameters, and a request carries ``gold_ids`` too. Every function is one catalog
(``server`` "bfcl"). Standard library only.

Usage: ``python train/data/bfcl/convert.py --repo PATH_TO_CLONE``
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, write_all  # train/data/ is the parent folder

REPO = "ShishirPatil/gorilla"
COMMIT = "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8"
DATA = "berkeley-function-call-leaderboard/bfcl_eval/data/"
CATEGORIES = [
    *("simple_python", "multiple", "parallel", "parallel_multiple"),
    *("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"),
]


def schema_of(parameters: Any) -> dict[str, Any]:
    """The function's parameters as a JSON Schema object (BFCL writes ``"type": "dict"``)."""
    if not isinstance(parameters, dict):
        return {"type": "object", "properties": {}}
    properties = parameters.get("properties") or {}
    return {
        "type": "object",
        "properties": {
            str(n): {"description": str(s.get("description") or "")} if isinstance(s, dict) else {}
            for n, s in properties.items()
        },
        "required": list(parameters.get("required") or []),
    }


def tool_of(function: dict[str, Any]) -> dict[str, Any]:
    schema = schema_of(function.get("parameters"))
    description = str(function.get("description") or "")
    digest = hashlib.sha1(
        json.dumps([description, schema], sort_keys=True).encode("utf-8")
    ).hexdigest()[:10]
    return {
        "id": f"{function['name']}#{digest}",
        "name": str(function["name"]),
        "description": description,
        "inputSchema": schema,
        "server": "bfcl",
    }


def request_text(question: Any) -> str:
    turns = question if isinstance(question, list) else []
    said = [
        str(m.get("content") or "")
        for turn in turns
        for m in (turn if isinstance(turn, list) else [turn])
        if isinstance(m, dict) and m.get("role") == "user"
    ]
    return " ".join(s.strip() for s in said if s.strip())


def category(
    repo: Path, commit: str, name: str, tools: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The requests of one category; adds the functions they offer to ``tools``."""
    questions = git_show(repo, commit, f"{DATA}BFCL_v4_{name}.json").decode().splitlines()
    answers = git_show(repo, commit, f"{DATA}possible_answer/BFCL_v4_{name}.json").decode()
    gold_of = {}
    for line in answers.splitlines():
        if line.strip():
            item = json.loads(line)
            gold_of[item["id"]] = [k for call in item["ground_truth"] for k in call]
    rows = []
    for line in questions:
        if not line.strip():
            continue
        item = json.loads(line)
        offered: dict[str, str] = {}
        for function in item.get("function") or []:
            tool = tool_of(function)
            tools.setdefault(tool["id"], tool)
            offered.setdefault(tool["name"], tool["id"])
        gold = list(dict.fromkeys(gold_of.get(item["id"], [])))
        text = request_text(item.get("question"))
        if text and gold and all(g in offered for g in gold):
            ids = [offered[g] for g in gold]
            rows.append({"qid": item["id"], "query": text, "gold": gold, "gold_ids": ids})
    return rows


def main() -> None:
    args = arguments(__doc__ or "", COMMIT)
    tools: dict[str, dict[str, Any]] = {}
    queries: list[dict[str, Any]] = []
    for name in CATEGORIES:
        queries.extend(category(args.repo, args.commit, name, tools))
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0"}
    write_all(args.out or Path(__file__).resolve().parent, source, list(tools.values()), queries)


if __name__ == "__main__":
    main()

"""ToolAlpaca's evaluation sets (tangqiaoyu/ToolAlpaca, Apache-2.0) as request -> tool pairs.

``data/eval_real.json`` (11 real public APIs) and ``data/eval_simulated.json`` (10 more): each
API has functions (``Function_Description``: a description, a ``Parameters:`` line of JSON,
an ``Output:`` part) and requests (``Instructions``) with the calls that answer them
(``Golden_Answers``). An API is a server, a function a tool; a request's gold is the
functions its answer calls (``Action``). ``data/train_data.json`` is not read (the mirror
this was built from lacks it). Standard library only.

Usage: ``python train/data/toolalpaca/convert.py --repo PATH_TO_CLONE``
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, write_all  # train/data/ is the parent folder

REPO = "tangqiaoyu/ToolAlpaca"
COMMIT = "189069998d64a7baf1b4a1c3c4b2e75eb9d05532"
FILES = ["data/eval_real.json", "data/eval_simulated.json"]


def tool_row(api: str, name: str, text: str) -> dict[str, Any]:
    """A function: the description before ``Parameters:``, the parameters' names from its JSON."""
    description = re.split(r"\n\s*Parameters:", text, maxsplit=1)[0].strip()
    properties: dict[str, Any] = {}
    found = re.search(r"Parameters:\s*(\{.*?\})\s*\n\s*Output:", text, flags=re.DOTALL)
    if found:
        try:
            params = json.loads(found.group(1))
        except json.JSONDecodeError:
            params = {}
        properties = {str(k): {"description": str(v)} for k, v in params.items()}
    return {
        "id": f"{api}::{name}",
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
        "server": api,
    }


def convert(
    entries: list[dict[str, Any]], prefix: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    tools: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for entry in entries:
        api = str(entry["Name"])
        functions = entry.get("Function_Description") or {}
        tools.extend(tool_row(api, n, str(t)) for n, t in functions.items())
        answers = entry.get("Golden_Answers") or []
        for i, (text, answer) in enumerate(
            zip(entry.get("Instructions") or [], answers, strict=False)
        ):
            called = [step.get("Action") for step in answer or [] if isinstance(step, dict)]
            gold = list(dict.fromkeys(c for c in called if c in functions))
            if gold and str(text).strip():
                queries.append(
                    {
                        "qid": f"{prefix}_{api}_{i}",
                        "query": str(text).strip(),
                        "gold": gold,
                        "gold_ids": [f"{api}::{g}" for g in gold],
                    }
                )
    return tools, queries


def main() -> None:
    args = arguments(__doc__ or "", COMMIT)
    tools: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for file in FILES:
        entries = json.loads(git_show(args.repo, args.commit, file))
        more_tools, more_queries = convert(entries, Path(file).stem)
        tools.extend(more_tools)
        queries.extend(more_queries)
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0 (LICENSE)"}
    write_all(args.out or Path(__file__).resolve().parent, source, tools, queries)


if __name__ == "__main__":
    main()

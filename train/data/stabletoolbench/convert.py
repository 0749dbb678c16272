"""StableToolBench's solvable test requests (THUNLP-MT/StableToolBench, Apache-2.0) as
request -> tool pairs in the bench format.

``solvable_queries/test_instruction/*.json`` (ToolBench's six test groups, kept where a
request can be solved): each request comes with the RapidAPI endpoints offered to it
(``api_list``) and the ones that answer it (``relevant APIs``, pairs of API and endpoint). A
RapidAPI API is a server, an endpoint a tool (id ``server::name``); every endpoint offered to
any request is one catalog. An endpoint that appears with two descriptions keeps its first.
Standard library only.

Usage: ``python train/data/stabletoolbench/convert.py --repo PATH_TO_CLONE``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, tool_row, write_all  # train/data/ is the parent folder

REPO = "THUNLP-MT/StableToolBench"
COMMIT = "aa4ed9f4737ad98bd706663f01d63623c3427812"
GROUPS = [
    "G1_instruction",
    "G1_category",
    "G1_tool",
    "G2_instruction",
    "G2_category",
    "G3_instruction",
]


def tool_of(api: dict[str, Any]) -> dict[str, Any]:
    parameters = {
        str(p["name"]): p
        for key in ("required_parameters", "optional_parameters")
        for p in api.get(key) or []
        if isinstance(p, dict) and p.get("name")
    }
    required = [str(p["name"]) for p in api.get("required_parameters") or []]
    description = str(api.get("api_description") or "")
    return tool_row(str(api["tool_name"]), str(api["api_name"]), description, parameters, required)


def main() -> None:
    args = arguments(__doc__ or "", COMMIT)
    tools: dict[str, dict[str, Any]] = {}
    queries: list[dict[str, Any]] = []
    for group in GROUPS:
        path = f"solvable_queries/test_instruction/{group}.json"
        for item in json.loads(git_show(args.repo, args.commit, path)):
            offered = set()
            for api in item.get("api_list") or []:
                tool = tool_of(api)
                tools.setdefault(tool["id"], tool)
                offered.add(tool["id"])
            ids = list(dict.fromkeys(f"{a}::{e}" for a, e in item.get("relevant APIs") or []))
            text = str(item.get("query") or "").strip()
            if text and ids and all(i in offered for i in ids):
                gold = [tools[i]["name"] for i in ids]
                queries.append(
                    {
                        "qid": f"{group}:{item['query_id']}",
                        "query": text,
                        "gold": gold,
                        "gold_ids": ids,
                    }
                )
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0 (LICENSE)"}
    write_all(args.out or Path(__file__).resolve().parent, source, list(tools.values()), queries)


if __name__ == "__main__":
    main()

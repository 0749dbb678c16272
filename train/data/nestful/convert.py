"""NESTFUL's nested API-call sequences (IBM/NESTFUL, Apache-2.0) as request -> tool pairs in
the bench format.

``data/executable/`` (RapidAPI endpoints) and ``data/non-executable/`` (SGD's service
schemas and Glaive's functions, sequences hand-picked by annotators): each file pair is a
``*-spec.json`` of functions and a ``*-data.json`` of requests (``input``) with the calls that
answer them (``output``, in order; the last, ``var_result``, only gathers results). A request's
gold is the functions it calls, repeats once. Each file pair is one server; SGD's names
(``RentalCars.ReserveCar``) keep their service as it is. Standard library only.

Usage: ``python train/data/nestful/convert.py --repo PATH_TO_CLONE``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, tool_row, write_all  # train/data/ is the parent folder

REPO = "IBM/NESTFUL"
COMMIT = "053cbde0446dddd31e8293f179085e1b39ab79b5"
PARTS = {
    "rapidapi": "data/executable/executable",
    "glaive": "data/non-executable/non-executable-glaive",
    "sgd": "data/non-executable/non-executable-sgd",
}


def tool_of(server: str, function: dict[str, Any]) -> dict[str, Any]:
    parameters = function.get("query_parameters") or function.get("arguments") or {}
    description = str(function.get("description") or "")
    return tool_row(server, str(function["name"]), description, parameters)


def main() -> None:
    args = arguments(__doc__ or "", COMMIT)
    tools: dict[str, dict[str, Any]] = {}
    queries: list[dict[str, Any]] = []
    for server, stem in PARTS.items():
        for function in json.loads(git_show(args.repo, args.commit, f"{stem}-spec.json")):
            tool = tool_of(server, function)
            tools.setdefault(tool["id"], tool)
        for i, item in enumerate(json.loads(git_show(args.repo, args.commit, f"{stem}-data.json"))):
            names = [c.get("name") for c in item.get("output") or [] if isinstance(c, dict)]
            gold = list(dict.fromkeys(str(n) for n in names if n and n != "var_result"))
            ids = [f"{server}::{n}" for n in gold]
            text = str(item.get("input") or "").strip()
            if text and gold and all(t in tools for t in ids):
                queries.append(
                    {"qid": f"{server}:{i}", "query": text, "gold": gold, "gold_ids": ids}
                )
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0 (LICENSE)"}
    write_all(args.out or Path(__file__).resolve().parent, source, list(tools.values()), queries)


if __name__ == "__main__":
    main()

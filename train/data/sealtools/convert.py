"""Seal-Tools (fairyshine/Seal-Tools, Apache-2.0) as request -> tool pairs in the bench format.

Reads, at the pinned commit, ``Seal-Tools_Dataset/tool.jsonl`` (4,076 self-instructed APIs,
each with a field such as "Chemical Engineering/Forensic engineering") and the three query
files the clone holds: ``dev.jsonl``, ``test_in_domain.jsonl`` and ``test_out_domain.jsonl``
(``train.jsonl`` is too large for the mirror this was built from; pass ``--with-train`` if
your clone has it). A request's gold is every API its calls use. The field stands in for the
server. Standard library only.

Usage: ``python train/data/sealtools/convert.py --repo PATH_TO_CLONE``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, write_all  # train/data/ is the parent folder

REPO = "fairyshine/Seal-Tools"
COMMIT = "ce753ecd60ed08dd376984035de531ab8421f1c6"
QUERY_FILES = ["dev", "test_in_domain", "test_out_domain"]
TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array"}


def tool_row(api: dict[str, Any]) -> dict[str, Any]:
    properties = {}
    for name, spec in (api.get("parameters") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        kind = TYPES.get(str(spec.get("type", "str")).lower(), "string")
        properties[name] = {"type": kind, "description": str(spec.get("description") or "")}
    schema = {"type": "object", "properties": properties, "required": api.get("required") or []}
    return {
        "id": api["api_name"],
        "name": api["api_name"],
        "description": api.get("api_description") or "",
        "inputSchema": schema,
        "server": api.get("field") or "seal-tools",
    }


def query_rows(lines: list[str], names: set[str]) -> list[dict[str, Any]]:
    rows = []
    for line in lines:
        item = json.loads(line)
        gold = list(dict.fromkeys(c["api"] for c in item.get("calling") or []))
        if gold and all(g in names for g in gold) and item.get("query"):
            rows.append({"qid": item["id"], "query": item["query"].strip(), "gold": gold})
    return rows


def main() -> None:
    args = arguments(__doc__ or "", COMMIT, ("--with-train",))
    base = "Seal-Tools_Dataset/"
    apis = git_show(args.repo, args.commit, base + "tool.jsonl").decode().splitlines()
    tools = [tool_row(json.loads(line)) for line in apis if line.strip()]
    names = {t["name"] for t in tools}
    queries: list[dict[str, Any]] = []
    for file in QUERY_FILES + (["train"] if args.with_train else []):
        lines = git_show(args.repo, args.commit, f"{base}{file}.jsonl").decode().splitlines()
        queries.extend(query_rows([x for x in lines if x.strip()], names))
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0"}
    write_all(args.out or Path(__file__).resolve().parent, source, tools, queries)


if __name__ == "__main__":
    main()

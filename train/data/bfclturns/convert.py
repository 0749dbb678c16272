"""The Berkeley Function-Calling Leaderboard's multi-turn requests (ShishirPatil/gorilla,
Apache-2.0) as request -> tool pairs in the bench format, one request a user turn.

``BFCL_v4_multi_turn_base.json`` has 200 conversations over eight stateful APIs (a file
system, messaging, posting, tickets, trading, travel booking, vehicle control, maths): MCP-like
servers, each one catalog of tools in ``multi_turn_func_doc/``. Each user turn is a request;
its gold is the functions the turn's answer (``possible_answer/``) calls, repeats once. Turns
that lean on earlier ones ("sort it as well") are kept: the tool they need is still named by
what they ask. The other multi-turn files (missing functions or parameters, long context)
repeat the base requests, so they are not read. A server is an API class, its tool id
``server::name``. Standard library only.

Usage: ``python train/data/bfclturns/convert.py --repo PATH_TO_CLONE``
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _source import arguments, git_show, tool_row, write_all  # train/data/ is the parent folder

REPO = "ShishirPatil/gorilla"
COMMIT = "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8"
DATA = "berkeley-function-call-leaderboard/bfcl_eval/data/"
# The API classes a conversation names (``involved_classes``) and their function documents,
# as the leaderboard's own loader pairs them.
CLASSES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}


def tool_of(server: str, function: dict[str, Any]) -> dict[str, Any]:
    parameters = function.get("parameters") or {}
    description = str(function.get("description") or "")
    # Every function repeats its API's blurb first; the tool's own words follow this marker.
    own = description.split("Tool description:", 1)[-1].strip()
    required = list(parameters.get("required") or [])
    return tool_row(
        server, str(function["name"]), own, parameters.get("properties") or {}, required
    )


def called(call: str) -> str:
    """The function a ground-truth call names: ``mv(source='a', ...)`` -> ``mv``."""
    found = re.match(r"\s*([A-Za-z_][\w.]*)\s*\(", call)
    return found.group(1).split(".")[-1] if found else ""


def main() -> None:
    args = arguments(__doc__ or "", COMMIT)
    tools: dict[str, dict[str, Any]] = {}
    by_server: dict[str, dict[str, str]] = {}
    for server, stem in CLASSES.items():
        text = git_show(args.repo, args.commit, f"{DATA}multi_turn_func_doc/{stem}.json").decode()
        for line in text.splitlines():
            if line.strip():
                tool = tool_of(server, json.loads(line))
                tools[tool["id"]] = tool
                by_server.setdefault(server, {})[tool["name"]] = tool["id"]
    name = "BFCL_v4_multi_turn_base.json"
    questions = git_show(args.repo, args.commit, f"{DATA}{name}").decode().splitlines()
    answers = git_show(args.repo, args.commit, f"{DATA}possible_answer/{name}").decode()
    truth = {
        item["id"]: item["ground_truth"]
        for item in (json.loads(line) for line in answers.splitlines() if line.strip())
    }
    queries = []
    for line in questions:
        if not line.strip():
            continue
        item = json.loads(line)
        offered: dict[str, str] = {}
        for server in item.get("involved_classes") or []:
            offered.update(by_server.get(server, {}))
        for turn, (said, calls) in enumerate(
            zip(item["question"], truth[item["id"]], strict=False)
        ):
            text = " ".join(
                str(m.get("content") or "").strip() for m in said if m.get("role") == "user"
            ).strip()
            gold = list(dict.fromkeys(called(c) for c in calls))
            if text and gold and all(g in offered for g in gold):
                queries.append(
                    {
                        "qid": f"{item['id']}:{turn}",
                        "query": text,
                        "gold": gold,
                        "gold_ids": [offered[g] for g in gold],
                    }
                )
    source = {"repo": REPO, "commit": args.commit, "licence": "Apache-2.0 (LICENSE)"}
    write_all(args.out or Path(__file__).resolve().parent, source, list(tools.values()), queries)


if __name__ == "__main__":
    main()

"""Rebuild the `etom` tool-retrieval set from a checkout of snooow1029/ETOM.

Usage: python convert.py SRC [OUT]
  SRC  root of the ETOM repository (needs data/mcp_registry.json and
       data/queries/level_{1,2,3,4}.json)
  OUT  output folder (default: the folder of this script)

Standard library only. Writes tools.jsonl, queries.jsonl (level 1),
equiv_queries.jsonl (level 2) and multi_queries.jsonl (level 3 and part of level 4).
"""

import json
import sys
from pathlib import Path

EMPTY_SCHEMA = {"type": "object", "properties": {}}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def build_tools(registry):
    tools = []
    seen = set()
    for server in registry["servers"]:
        sname = server["server_name"]
        for t in server["tools"]:
            tid = f"{sname}::{t['tool_name']}"
            if tid in seen:
                raise SystemExit(f"duplicate tool id {tid!r}")
            seen.add(tid)
            schema = t.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                schema = dict(EMPTY_SCHEMA)
            tools.append(
                {
                    "id": tid,
                    "label": t["tool_name"],
                    "server": sname,
                    "server_description": (server.get("server_description") or "").strip(),
                    "name": t["tool_name"],
                    "description": (t.get("tool_description") or "").strip(),
                    "inputSchema": schema,
                }
            )
    return tools


def resolve(ref, ids):
    """Map a ground-truth entry to a registry id, or None."""
    for cand in (
        ref.get("tool_id", ""),
        ref.get("tool_id", "").strip(),
        f"{ref.get('server_name', '').strip()}::{ref.get('tool_name', '').strip()}",
    ):
        if cand in ids:
            return cand
    return None


def dedup(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    src = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)

    registry = load(src / "data" / "mcp_registry.json")
    tools = build_tools(registry)
    name_of = {t["id"]: t["name"] for t in tools}
    ids = set(name_of)
    stats = {}

    # Level 1: one platform-specific request, one tool.
    rows, dropped = [], 0
    for q in load(src / "data" / "queries" / "level_1.json"):
        gids = [resolve(r, ids) for r in q["ground_truth_tools"]]
        if not q["query"].strip() or not gids or None in gids:
            dropped += 1
            continue
        rows.append(
            {
                "qid": f"etom_l1_{q['query_id']}",
                "query": q["query"].strip(),
                "gold": dedup(name_of[g] for g in gids),
                "gold_ids": dedup(gids),
                "level": 1,
            }
        )
    write_jsonl(out / "queries.jsonl", rows)
    stats["queries.jsonl (level 1)"] = (len(rows), dropped)

    # Level 2: any tool of an equivalent-function set answers the request.
    rows, dropped, refs_missing = [], 0, 0
    for q in load(src / "data" / "queries" / "level_2.json"):
        gids = []
        for alt in q["ground_truth_tools"]:
            for r in alt:
                g = resolve(r, ids)
                if g is None:
                    refs_missing += 1
                else:
                    gids.append(g)
        gids = dedup(gids)
        if not q["query"].strip() or not gids:
            dropped += 1
            continue
        rows.append(
            {
                "qid": f"etom_l2_{q['query_id']}",
                "query": q["query"].strip(),
                "gold": dedup(name_of[g] for g in gids),
                "gold_ids": gids,
                "gold_match": "any",
                "level": 2,
            }
        )
    write_jsonl(out / "equiv_queries.jsonl", rows)
    stats["equiv_queries.jsonl (level 2)"] = (len(rows), dropped)
    stats["level 2 gold entries not in the registry (skipped)"] = (refs_missing, 0)

    # Levels 3 and 4: several steps, every step needed. Level 3 steps are single
    # tools; a level 4 step may be a set of equivalent tools, and such queries are
    # left out because a flat `gold` list cannot say "one of these per step".
    rows, dropped, dropped_alt = [], 0, 0
    for level in (3, 4):
        for q in load(src / "data" / "queries" / f"level_{level}.json"):
            steps = q["ground_truth_tools"]
            if steps and isinstance(steps[0], dict):
                steps = [[s] for s in steps]
            resolved = [dedup(g for g in (resolve(r, ids) for r in st) if g) for st in steps]
            if not q["query"].strip() or not resolved or any(len(s) == 0 for s in resolved):
                dropped += 1
                continue
            if any(len(s) > 1 for s in resolved):
                dropped_alt += 1
                continue
            gids = dedup(s[0] for s in resolved)
            rows.append(
                {
                    "qid": f"etom_l{level}_{q['query_id']}",
                    "query": q["query"].strip(),
                    "gold": dedup(name_of[g] for g in gids),
                    "gold_ids": gids,
                    "level": level,
                }
            )
    write_jsonl(out / "multi_queries.jsonl", rows)
    stats["multi_queries.jsonl (levels 3+4)"] = (len(rows), dropped)
    stats["level 4 queries with alternative tools per step (left out)"] = (dropped_alt, 0)

    write_jsonl(out / "tools.jsonl", tools)
    print(f"tools.jsonl: {len(tools)} tools, {len(registry['servers'])} servers")
    for k, (n, d) in stats.items():
        print(f"{k}: {n}" + (f" (dropped {d}: gold missing or empty query)" if d else ""))


if __name__ == "__main__":
    main()

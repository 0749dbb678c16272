"""Drop every training request that repeats or nearly repeats an evaluation request.

Evaluation requests: every ``*queries.jsonl`` of ``../shared/datasets/tool-retrieval/*/``
and ``bench/datasets/*/``. A training request of a converted source (``train/data/*/``) is
dropped when, against any of them, it is

- the same text (``exact``);
- the same after normalising (lower case, letters and digits only, one space: ``normalised``);
- a near repeat: Jaccard similarity of its word sets at least ``NEAR`` (``near``).

The source's ``queries.jsonl`` is rewritten without them and its ``manifest.json`` records
how many each rule dropped. Run it after the converters (``train/build_data.sh`` does).
Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVAL_FOLDERS = [ROOT.parent / "shared" / "datasets" / "tool-retrieval", ROOT / "bench" / "datasets"]
TRAIN = Path(__file__).resolve().parent
NEAR = 0.8
# Words in more than this many evaluation requests do not propose candidates (they still count).
COMMON = 2000


def normalise(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def evaluation_requests() -> list[str]:
    texts: list[str] = []
    for folder in EVAL_FOLDERS:
        for file in sorted(folder.glob("*/*queries.jsonl")):
            texts.extend(json.loads(line)["query"] for line in file.read_text().splitlines())
    return texts


class Overlaps:
    """The evaluation requests, indexed for the three tests."""

    def __init__(self, texts: list[str]) -> None:
        self.exact = set(texts)
        self.normalised = {normalise(t) for t in texts}
        self.words = [frozenset(normalise(t).split()) for t in texts]
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, words in enumerate(self.words):
            for word in words:
                self.postings[word].append(i)

    def rule(self, text: str) -> str | None:
        """Which rule ``text`` breaks first, or None."""
        if text in self.exact:
            return "exact"
        if normalise(text) in self.normalised:
            return "normalised"
        words = frozenset(normalise(text).split())
        shared: dict[int, int] = defaultdict(int)
        for word in words:
            posting = self.postings.get(word, [])
            if len(posting) <= COMMON:
                for i in posting:
                    shared[i] += 1
        for i in shared:
            both = len(words & self.words[i])
            if both / max(1, len(words | self.words[i])) >= NEAR:
                return "near"
        return None


def clean(folder: Path, overlaps: Overlaps) -> dict[str, int]:
    path = folder / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    kept = []
    dropped = {"exact": 0, "normalised": 0, "near": 0}
    for row in rows:
        rule = overlaps.rule(row["query"])
        if rule is None:
            kept.append(row)
        else:
            dropped[rule] += 1
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in kept)
    path.write_text(text)
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest["files"]["queries.jsonl"]
    earlier = manifest.get("overlap", {})
    before = earlier.get("before", entry["lines"])
    for rule, count in earlier.get("dropped", {}).items():
        dropped[rule] += count  # a second run finds nothing new: keep the first run's counts
    data = text.encode("utf-8")
    entry.update(lines=len(kept), bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    manifest["overlap"] = {"before": before, "near_jaccard": NEAR, "dropped": dropped}
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return dropped


def catalogs() -> dict[str, list[dict[str, str]]]:
    """Each evaluation catalog's requests (every query file of its folder), by folder name."""
    found: dict[str, list[dict[str, str]]] = {}
    for folder in EVAL_FOLDERS:
        for file in sorted(folder.glob("*/*queries.jsonl")):
            rows = found.setdefault(file.parent.name, [])
            for line in file.read_text().splitlines():
                row = json.loads(line)
                rows.append({"key": f"{file.name}:{row['qid']}", "query": row["query"]})
    return found


def cross_evaluation() -> dict[str, dict[str, list[str]]]:
    """For each evaluation catalog, its requests that repeat another catalog's, by that one.

    A fold that holds catalog X out trains on no request of another catalog listed under X.
    """
    every = catalogs()
    out: dict[str, dict[str, list[str]]] = {}
    for held, rows in every.items():
        overlaps = Overlaps([r["query"] for r in rows])
        for other, other_rows in every.items():
            if other != held:
                keys = [r["key"] for r in other_rows if overlaps.rule(r["query"])]
                if keys:
                    out.setdefault(held, {})[other] = keys
    return out


def main() -> None:
    overlaps = Overlaps(evaluation_requests())
    for folder in sorted(p for p in TRAIN.iterdir() if (p / "queries.jsonl").is_file()):
        print(folder.name, clean(folder, overlaps))
    cross = cross_evaluation()
    (TRAIN / "eval_overlaps.json").write_text(json.dumps(cross, indent=1, sort_keys=True) + "\n")
    for held, others in sorted(cross.items()):
        print(f"held out {held}:", {o: len(k) for o, k in others.items()})


if __name__ == "__main__":
    main()

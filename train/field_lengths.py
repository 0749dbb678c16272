"""The field length averages of a typical tool catalog: the prior ``ranking`` ranks with when
none of a catalog's documents count in its statistics.

Indexes each training source's catalog (``train/data/<source>/tools.jsonl``, rebuilt by
``train/build_data.sh``; never an evaluation set) as ``bench/search_quality.py`` does, and
prints each one's average words per field (``ranking.FIELDS`` order) and their mean, which
``ranking._TYPICAL_AVERAGES`` holds (each at least 1, as every average is).

Run: ``.venv/bin/python train/field_lengths.py``
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import search_quality  # noqa: E402 - the bench's own indexing, imported not copied

from fastmcp_filtering.retrieval.ranking import FIELDS  # noqa: E402


def averages(folder: Path) -> list[float]:
    """Words per field, on average, over the catalog in ``folder``."""
    tools, _queries = search_quality.load_set(folder, "queries.jsonl")
    config = search_quality.configurations()[0]
    index, _names = search_quality.index_for(tools, config)
    lengths = [0] * len(FIELDS)
    for entry in index._store.entries.values():
        lengths = [total + n for total, n in zip(lengths, entry.length, strict=True)]
    count = len(index._store.entries)
    return [total / count for total in lengths]


def main() -> None:
    rows = []
    for folder in sorted((ROOT / "train" / "data").iterdir()):
        if (folder / "tools.jsonl").is_file():
            rows.append(averages(folder))
            print(f"{folder.name:16s}", " ".join(f"{a:6.2f}" for a in rows[-1]))
    mean = [max(sum(column) / len(column), 1.0) for column in zip(*rows, strict=True)]
    print(f"{'typical':16s}", " ".join(f"{a:6.2f}" for a in mean), f"({', '.join(FIELDS)})")


if __name__ == "__main__":
    main()

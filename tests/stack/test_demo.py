"""The README's first command: the demo runs end to end, its figures say what it shows, and the
README shows what it prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import fastmcp
import pytest

from .._servers import ROOT

# The demo runs as a subprocess.
pytestmark = pytest.mark.slow

DEMO = [sys.executable, str(ROOT / "examples" / "demo.py")]


def demo(*args: str) -> str:
    return subprocess.run(
        [*DEMO, *args], capture_output=True, text=True, timeout=120, check=True
    ).stdout


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_demo_json(era: str) -> None:
    report = json.loads(demo("--json", *(["--legacy"] if era == "legacy" else [])))
    steps = {row["step"]: row for row in report["steps"]}
    full = steps["without fastmcp-filtering: every tool"]
    bm25 = steps["FastMCP BM25SearchTransform: tools/list"]
    bm25_search = steps["FastMCP BM25SearchTransform: search 'open a pull request'"]
    turn = steps["1. tools/list (search first)"]
    found = steps["2. search_tools 'open a pull request'"]
    assert report["protocol_version"] == ("2025-11-25" if era == "legacy" else "2026-07-28")
    assert full["tools"] == 62
    # Issue 29's bars: a turn at most 2x FastMCP's two tools and at most 10% of the catalog, a
    # search no larger than FastMCP's for the same number of hits.
    assert turn["tools"] == 2
    assert turn["bytes"] <= 2 * bm25["bytes"]
    assert turn["bytes"] <= 0.1 * full["bytes"]
    assert found["tools"] == bm25_search["tools"] == 5
    assert found["bytes"] <= bm25_search["bytes"]
    # The hit ran by its name on the next call, and the list did not grow.
    assert report["search"]["name"] == "create_pull_request"
    assert steps["4. tools/list after the call"]["tools"] == 2


def test_demo_walkthrough_is_readable() -> None:
    out = demo()
    assert "1. tools/list shows 2 tools: search_tools, call_tool" in out
    assert "3. create_pull_request -> " in out
    assert "delete_repo is refused" in out
    assert "~tokens" in out
    assert "not listed by server" not in out


def _rows(block: str) -> list[tuple[str, ...]]:
    """The table's step and tools columns: what no FastMCP version changes."""
    rows = []
    for line in block.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 4 and cells[0] != "step":
            rows.append((cells[0], cells[1] if len(cells) == 5 else ""))
    return rows


def test_the_readme_shows_what_the_demo_prints() -> None:
    """Byte for byte on the FastMCP version the README names; elsewhere, the same steps."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = text.split("<!-- demo-output:start -->")[1].split("<!-- demo-output:end -->")[0]
    printed = demo()
    table = printed[printed.index("step ") :].rstrip()
    version = re.search(r"# FastMCP (\S+)", shown)
    assert version is not None, "the README's demo block names no FastMCP version"
    if version.group(1) == fastmcp.__version__:
        assert table in shown, "run: python examples/demo.py --update-readme"
    else:
        assert _rows(table) == _rows(shown)

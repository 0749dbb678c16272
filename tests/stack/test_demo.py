"""The README's first command: the demo runs end to end and its figures say what it shows."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .._servers import ROOT

# The demo runs as a subprocess.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_demo_json(era: str) -> None:
    args = [sys.executable, str(ROOT / "examples" / "demo.py"), "--json"]
    if era == "legacy":
        args.append("--legacy")
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout)
    steps = {row["step"].split(" ")[0]: row for row in report["steps"]}
    full = steps["without"]
    assert report["protocol_version"] == ("2025-11-25" if era == "legacy" else "2026-07-28")
    assert full["tools"] == 62
    # The first list, a search and the lists after enabling are all smaller than the catalog.
    for step in ("1.", "3.", "4.", "5.", "8."):
        assert steps[step]["tools"] < full["tools"], step
        assert steps[step]["tokens"] < full["tokens"], step
    # Search found the tool in groups not enabled yet, and said which to enable.
    assert report["search"] == {
        "name": "create_pull_request",
        "available_after": {"enable_tools": {"groups": ["code", "pull_requests"]}},
    }
    assert steps["4."]["tools"] > steps["1."]["tools"]  # enable_tools showed more tools
    assert steps["5."]["tools"] == 10  # max_results once the pull-request tools are enabled


def test_demo_walkthrough_is_readable() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = done.stdout
    assert "delete_repo is refused with a hint" in out
    assert 'enable_tools(groups=["admin"])' in out
    assert "~tokens" in out

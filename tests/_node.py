"""Node and the npm packages ``tests/interop`` pins, installed once per test session.

The TypeScript interop tests and the gateway's real-server tests run Node programs from
``tests/interop/node_modules``. ``.ci/run`` installs them with ``npm ci`` before the tests;
on a fresh clone the first test that needs them runs ``npm ci`` itself. Without Node the
tests skip with the reason, and fail under CI (``CI=true``), where Node is required.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

INTEROP = Path(__file__).resolve().parent / "interop"


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI needs Node 20+ and npm (.ci/run installs the packages)")
    pytest.skip(reason)


def _installed() -> bool:
    """Whether node_modules holds exactly the versions package.json pins."""
    pinned: dict[str, str] = json.loads((INTEROP / "package.json").read_text())["dependencies"]
    for name, version in pinned.items():
        manifest = INTEROP / "node_modules" / name / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text())["version"] != version:
            return False
    return True


@functools.cache
def _npm_ci(npm: str) -> str | None:
    """Run ``npm ci`` in tests/interop once; the failure's output, or None."""
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode == 0:
        return None
    return f"npm ci failed in tests/interop:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def node_with_packages() -> str:
    """``node``'s path, with tests/interop's pinned packages installed (``npm ci``, once)."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None:
        _missing("node is not installed")
    if npm is None:
        _missing("npm is not installed")
    if not _installed():
        failure = _npm_ci(npm)
        if failure is not None:
            _missing(failure)
    return node

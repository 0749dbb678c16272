"""Real MCP servers from PyPI, each pinned, in one virtualenv of their own, made once.

``mcp-server-git`` and ``mcp-server-time`` depend on their own MCP SDK versions, so they
do not go into the test environment: the first test that needs them makes
``tests/interop/.python-servers`` (``python -m venv``, then ``pip install`` of the pins)
and later runs reuse it. Without the package index the tests skip with the reason, and
fail under CI (``CI=true``), whose only network is the package registries.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

VENV = Path(__file__).resolve().parent / "interop" / ".python-servers"
PINS = {"mcp-server-git": "2026.10.19", "mcp-server-time": "2026.10.19"}
"""The servers, each at the version the tests were written against."""


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI installs them from the package index")
    pytest.skip(reason)


def _python() -> Path:
    return VENV / ("Scripts" if sys.platform == "win32" else "bin") / "python"


@functools.cache
def _install() -> str | None:
    """Make the virtualenv with the pins; the failure's output, or None."""
    marker = VENV / "pins.json"
    if marker.exists() and json.loads(marker.read_text()) == PINS:
        return None
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(VENV)],
        [str(_python()), "-m", "pip", "install", "-q", *(f"{n}=={v}" for n, v in PINS.items())],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            return f"{' '.join(step[:4])} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    marker.write_text(json.dumps(PINS))
    return None


def python_servers() -> Path:
    """The ``python`` of the virtualenv holding the pinned PyPI servers (made once)."""
    failure = _install()
    if failure is not None:
        _missing(failure)
    return _python()

"""Upstream scripts the gateway's tests run as subprocesses."""

from __future__ import annotations

from pathlib import Path

MISBEHAVING = Path(__file__).parents[1] / "gateway" / "misbehaving.py"
"""An upstream that misbehaves on demand (see its ``--help``)."""

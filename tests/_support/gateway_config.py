"""Gateway config files written for a test, and the error one of them raises on loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastmcp_filtering.gateway.config.models import ConfigError, load_config

UPSTREAM = '[[upstreams]]\ncommand = "python"\nargs = ["server.py"]\n'


def write(tmp_path: Path, text: str, name: str = "proxy.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value

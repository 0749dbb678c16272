"""The recorded GitHub server's catalog, and the config ``init`` proposes for it."""

from __future__ import annotations

import json
from pathlib import Path

from fastmcp_filtering import suggest_config

ROOT = Path(__file__).resolve().parents[2]


FIXTURE = ROOT / "examples" / "fixtures" / "server-github.tools.json"


GITHUB = json.loads(FIXTURE.read_text())["tools/list"]["tools"]


GITHUB_UPSTREAM = {
    "command": "npx",
    "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"},
}


def github_toml() -> str:
    """What ``init --env GITHUB_PERSONAL_ACCESS_TOKEN npx -y ...server-github@2025.4.8`` writes."""
    return suggest_config(GITHUB).to_toml(
        upstreams=[GITHUB_UPSTREAM],
        name="server-github (filtered)",
        source="npx -y @modelcontextprotocol/server-github@2025.4.8",
    )

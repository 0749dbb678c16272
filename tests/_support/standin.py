"""The recorded GitHub server's stand-in (examples/upstream_standin.py) and its example config."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastmcp import Client

from fastmcp_filtering.client import list_tools

from .._servers import free_port, stop, wait_for_http
from .github import FIXTURE, ROOT

EXAMPLE_CONFIG = ROOT / "examples" / "server-github.toml"


STANDIN = ROOT / "examples" / "upstream_standin.py"


RECORDED = [t["name"] for t in json.loads(FIXTURE.read_text())["tools/list"]["tools"]]


def reply(result: Any) -> dict[str, Any]:
    """The stand-in's canned reply: which upstream ran which tool with which arguments."""
    return dict(json.loads(result.content[0].text))


async def names(client: Client[Any], **kwargs: Any) -> list[str]:
    return sorted(t.name for t in (await list_tools(client, **kwargs)).tools)


@contextmanager
def standin_http(label: str = "standin", port: int | None = None) -> Iterator[str]:
    """The stand-in over streamable HTTP on ``port`` (a free loopback one); yields its URL."""
    port = port or free_port()
    command = [sys.executable, str(STANDIN), "--http", "--port", str(port), "--label", label]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_http(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)

"""The bundled model behind a real server process over stdio, in both protocol eras."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from fastmcp_filtering.client import list_tools
from fastmcp_filtering.retrieval.embedders import INSTALL_HINT

from ..conftest import ERAS, SEMANTIC_MODULES, need

pytestmark = pytest.mark.slow

SERVER = '''
from fastmcp import FastMCP

from fastmcp_filtering import SearchMiddleware, install

mcp = FastMCP("semantic-stdio")


@mcp.tool
def create_pull_request(head: str, base: str) -> str:
    """Open a pull request proposing the changes of one branch for another."""
    return "ok"


@mcp.tool
def list_commits(branch: str) -> str:
    """List the commits of a branch."""
    return "ok"


@mcp.tool
def send_email(to: str, body: str) -> str:
    """Send an email message."""
    return "ok"


@mcp.tool
def get_forecast(city: str) -> str:
    """Weather for a city over the next days."""
    return "ok"


install(mcp, SearchMiddleware(semantic=True, max_results=2, search_tool=None))
mcp.run(transport="stdio", show_banner=False)
'''


@pytest.mark.parametrize("era", list(ERAS))
async def test_a_request_sharing_no_word_with_the_tool(era: str, tmp_path: Path) -> None:
    need("the bundled model", *SEMANTIC_MODULES, hint=INSTALL_HINT)
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(SERVER))
    transport = StdioTransport(command=sys.executable, args=[str(script)])
    async with Client(transport, **ERAS[era]) as client:
        first = await list_tools(client, query="ask to merge my work into main")
        again = await list_tools(client, query="will it rain in Paris tomorrow")
    assert first.tools[0].name == "create_pull_request", [t.name for t in first.tools]
    assert again.tools[0].name == "get_forecast", [t.name for t in again.tools]

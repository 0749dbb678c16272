"""Bad input a client sends: filter tags that are no list of names, and a flood of group names."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import FastMCP
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Group, add_filtering
from fastmcp_filtering.client import call_method

from ..conftest import Connect


class TestBadInput:
    @pytest.mark.parametrize("tags", ["", 0, False, {}])
    async def test_falsy_filter_tags_are_invalid_params(self, connect: Connect, tags: Any) -> None:
        mcp = FastMCP("tags")
        mcp.tool(lambda: "x", name="ping")
        add_filtering(mcp, groups=[])
        async with connect(mcp) as client:
            with pytest.raises(MCPError) as error:
                await call_method(client, "tools/list", {"filter": {"tags": tags}})
        assert error.value.code == -32602
        assert error.value.data["field"] == "filter.tags"

    async def test_many_group_names_are_one_error(self, connect: Connect) -> None:
        mcp = FastMCP("many")
        add_filtering(mcp, groups=[Group("issues")], progressive=True)
        async with connect(mcp) as client:
            reply = await client.call_tool(
                "enable_tools", {"groups": [f"g{i}" for i in range(20_000)]}
            )
        assert len(reply.structured_content["errors"]) == 1
        assert "at most 100" in reply.structured_content["errors"][0]

"""A mounted server's ``@in_group`` declarations count in the parent, as its ``_meta`` ones do.

FastMCP serves a mounted server's components to the parent as its own provider components,
which keep ``_meta`` but carry no function: a group ``@in_group`` gave the function would not
exist for the parent, and the parent's access check on that group would not apply. The child
here has no stack of its own; the parent's ``admin`` group is access-checked. A reader's
answers are compared with those of the same tree without the admin components.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.auth import require_scopes
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Group, add_filtering, in_group
from fastmcp_filtering.client import call_method

from .._principals import PrincipalByClientName, as_principal
from ..conftest import ERAS

REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("tools/call", {"name": "c_drop_table", "arguments": {"table": "x"}}),
    ("prompts/get", {"name": "c_audit", "arguments": {"table": "x"}}),
    ("resources/read", {"uri": "data://c/admin/secret"}),
]


def tree(*, secret: bool, progressive: bool) -> FastMCP:
    child = FastMCP("child")
    child.tool(lambda: "pong", name="ping")
    if secret:

        @in_group("admin")
        @child.tool
        def drop_table(table: str) -> str:
            """Drop a database table."""
            return "dropped"

        @in_group("admin")
        @child.prompt
        def audit(table: str) -> str:
            """Audit a table."""
            return "audit"

        @in_group("admin")
        @child.resource("data://admin/secret")
        def secret_note() -> str:
            return "s3cret"

    parent = FastMCP("parent", middleware=[PrincipalByClientName()])
    parent.mount(child, namespace="c")
    groups = [Group("admin", access=require_scopes("github:admin"))]
    add_filtering(
        parent, groups=groups, progressive={"initial_groups": ["admin"]} if progressive else False
    )
    return parent


async def answers(era: str, who: str, server: FastMCP) -> list[str]:
    got = []
    async with Client(server, **ERAS[era], **as_principal(who)) as client:
        for method, params in REQUESTS:
            try:
                result = await call_method(client, method, params)
                result.pop("_meta", None)
                got.append(json.dumps(result, sort_keys=True))
            except MCPError as error:
                got.append(f"{error.error.code} {error.error.message}")
    return got


@pytest.mark.parametrize("progressive", [False, True], ids=["groups", "progressive"])
async def test_a_reader_gets_what_it_would_had_the_child_none(era: str, progressive: bool) -> None:
    hidden, absent = [
        await answers(era, "reader", tree(secret=secret, progressive=progressive))
        for secret in (True, False)
    ]
    assert hidden == absent
    assert not any("dropped" in answer or "s3cret" in answer for answer in hidden)


async def test_the_admin_uses_them_and_sees_their_group(era: str) -> None:
    async with Client(
        tree(secret=True, progressive=False), **ERAS[era], **as_principal("admin")
    ) as c:
        listed = {t.name: t for t in await c.list_tools()}
        assert (listed["c_drop_table"].meta or {})["io.modelcontextprotocol/groups"] == ["admin"]
        assert (await c.call_tool("c_drop_table", {"table": "x"})).data == "dropped"
        assert "s3cret" in str(await c.read_resource("data://c/admin/secret"))

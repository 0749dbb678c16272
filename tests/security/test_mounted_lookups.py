"""What a parent hides does not exist for its client in a mounted server either: not through
the mounted server's own meta-tools, nor through anything the mounted server looks up by
itself (a tool of its own, ``ResourcesAsTools``, FastMCP's search transform on it).

The parent declares ``Group("admin", tools=["c_drop_*"])`` (and the resource
``secret://c/doc`` in it), for ``github:admin`` tokens only; the child, mounted with
namespace ``c``, has ``drop_table`` and ``secret://doc``. A reader's answers are compared with
those of the same tree where the child never had them; an admin still reaches both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.server.transforms import ResourcesAsTools
from fastmcp.server.transforms.search import BM25SearchTransform

from fastmcp_filtering import Group, add_filtering

from .._principals import PrincipalByClientName, as_principal
from ..conftest import ERAS

ADMIN = {"io.modelcontextprotocol/groups": ["admin"]}


def child_server(stack: str, *, secret: bool) -> FastMCP:
    """``list_rows``, a tool that calls another by name, and with ``secret`` ``drop_table``
    and ``secret://doc`` (the latter in the parent's admin group by its own ``_meta``)."""
    child = FastMCP("child")
    child.tool(lambda: "rows", name="list_rows", description="List table rows")

    @child.tool
    async def run_named(name: str, ctx: Context) -> str:
        """Run another tool of this server by name."""
        result = await ctx.fastmcp.call_tool(name, {})
        return str(result.content[0].text)  # type: ignore[union-attr]

    child.resource("open://doc", name="open_doc")(lambda: "open")
    if secret:
        child.tool(lambda: "dropped", name="drop_table", description="Drop a table")
        child.resource("secret://doc", name="secret_doc", meta=ADMIN)(lambda: "the secret")
    if stack == "search_first":
        add_filtering(child, progressive="search_first")
    elif stack == "progressive":
        add_filtering(
            child, groups=[Group("db", tools=["*"])], progressive={"call_tool_name": "call_tool"}
        )
    elif stack == "bm25":
        child.add_transform(BM25SearchTransform(always_visible=["run_named", "read_resource"]))
    child.add_transform(ResourcesAsTools(child))
    return child


def tree(stack: str, *, secret: bool) -> FastMCP:
    """The parent with the child mounted as ``c``."""
    parent = FastMCP("parent")
    parent.add_middleware(PrincipalByClientName())
    parent.mount(child_server(stack, secret=secret), namespace="c")
    add_filtering(
        parent,
        groups=[Group("admin", tools=["c_drop_*"], access=require_scopes("github:admin"))],
    )
    return parent


Probe = Callable[[Client[Any]], Any]


async def _call(client: Client[Any], name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool_mcp(name, arguments)
    return result.model_dump_json(exclude={"meta"})


PROBES: dict[str, tuple[tuple[str, ...], Probe]] = {
    "the child's call_tool": (
        ("search_first", "progressive", "bm25"),
        lambda c: _call(c, "c_call_tool", {"name": "drop_table", "arguments": {}}),
    ),
    "the child's enable_tools": (
        ("progressive",),
        lambda c: _call(c, "c_enable_tools", {"groups": ["db"]}),
    ),
    "the child's search_tools": (
        ("search_first", "progressive", "bm25"),
        lambda c: _call(c, "c_search_tools", {"query": "drop table"}),
    ),
    "a child tool calling by name": (
        ("none", "search_first", "bm25"),
        lambda c: _call(c, "c_run_named", {"name": "drop_table"}),
    ),
    "ResourcesAsTools on the child": (
        ("none", "bm25"),
        lambda c: _call(c, "c_read_resource", {"uri": "secret://doc"}),
    ),
    "ResourcesAsTools listing on the child": (
        ("none",),
        lambda c: _call(c, "c_list_resources", {}),
    ),
}
CASES = [
    pytest.param(stack, probe, id=f"{probe}-{stack}")
    for probe, (stacks, _) in PROBES.items()
    for stack in stacks
]


async def answer(era: str, who: str, stack: str, probe: str, *, secret: bool) -> str:
    server = tree(stack, secret=secret)
    async with Client(server, **ERAS[era], **as_principal(who)) as client:
        listed = sorted(t.name for t in await client.list_tools())
        got = await PROBES[probe][1](client)
    return json.dumps([listed, got])


@pytest.mark.parametrize(("stack", "probe"), CASES)
async def test_the_reader_gets_what_it_would_had_the_child_none(
    era: str, stack: str, probe: str
) -> None:
    hidden = await answer(era, "reader", stack, probe, secret=True)
    absent = await answer(era, "reader", stack, probe, secret=False)
    assert hidden == absent
    assert "dropped" not in hidden
    assert "the secret" not in hidden


@pytest.mark.parametrize(
    ("stack", "probe"),
    [
        ("search_first", "the child's call_tool"),
        ("none", "a child tool calling by name"),
        ("none", "ResourcesAsTools on the child"),
        ("bm25", "the child's call_tool"),
    ],
)
async def test_the_admin_still_reaches_them(era: str, stack: str, probe: str) -> None:
    got = await answer(era, "admin", stack, probe, secret=True)
    assert "dropped" in got or "the secret" in got


LATE_PROBES = ["the child's call_tool", "a child tool calling by name", "the child's search_tools"]


@pytest.mark.parametrize("probe", LATE_PROBES)
@pytest.mark.parametrize("depth", ["into the parent", "into a mounted server"])
async def test_a_server_mounted_after_the_first_request_answers_to_it_too(
    era: str, probe: str, depth: str
) -> None:
    """The parent's stack has served a request before the child is mounted (into the parent
    as ``c``, or into an empty server the parent mounted as ``c`` before then)."""
    answers = []
    for secret in (True, False):
        parent = FastMCP("parent")
        parent.add_middleware(PrincipalByClientName())
        middle = FastMCP("middle")
        if depth == "into a mounted server":
            parent.mount(middle, namespace="c")
        add_filtering(
            parent,
            groups=[Group("admin", tools=["c_drop_*"], access=require_scopes("github:admin"))],
        )
        async with Client(parent, **ERAS[era], **as_principal("reader")) as client:
            await client.list_tools()
            child = child_server("search_first", secret=secret)
            if depth == "into a mounted server":
                middle.mount(child)
            else:
                parent.mount(child, namespace="c")
            answers.append(await PROBES[probe][1](client))
    assert answers[0] == answers[1]
    assert "dropped" not in answers[0]


@pytest.mark.side_effect_lists
async def test_lists_the_childs_enable_tools_changes_hide_alike(era: str) -> None:
    """With lists that change by the client's calls (2026-07-28's opt-in, as 2025-11-25):
    what the child's ``enable_tools`` answers, and the reader's list after it."""
    answers = []
    for secret in (True, False):
        async with Client(
            tree("progressive", secret=secret), **ERAS[era], **as_principal("reader")
        ) as client:
            got = await PROBES["the child's enable_tools"][1](client)
            listed = sorted(t.name for t in await client.list_tools())
        answers.append(json.dumps([got, listed]))
    assert answers[0] == answers[1]
    assert "c_list_rows" in answers[0]
    assert "drop_table" not in answers[0]

"""Every route to a component the client's state hides is refused, in both eras.

Three ways a tool can be hidden: its group is not enabled (progressive disclosure),
the client's concerns exclude it, or both. For each, the tests try the direct call,
the ``call_tool`` proxy, search, other spellings of the name, other primitives'
routes, and a server tool of the application's own that calls it by name. A control
test shows each route does work once the state allows the tool, so a refusal here
is the state's doing, not a broken route.
"""

from __future__ import annotations

import asyncio
import unicodedata
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client, Context
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import call_method

from .._faults_stack import (
    OWN_PROXIES,
    ClientState,
    add_own_proxy,
    allowed,
    make_stack,
    searchable,
    visible_tags,
)
from .._principals import as_principal
from ..conftest import Connect

BOUND = 15.0

HIDDEN = {
    # name: (arguments, what it returns when it runs, what hides it)
    "delete_branch": ({"name": "main"}, "deleted branch main", ("group 'admin'",)),
    "dump_plaintext": ({"data": "s3cret"}, "s3cret", ("concern 'security'",)),
    "delete_repo": ({"name": "x"}, "deleted x", ("group 'admin'", "concern 'security'")),
    "open_vault": ({}, "vault opened", ("Unknown tool",)),
}
"""delete_branch: group not enabled; dump_plaintext: excluded by concerns; delete_repo: both;
open_vault: its group's access check refuses the client (unauthenticated), so it does not exist."""

OPENS = {
    "delete_branch": (["admin"], {}),
    "dump_plaintext": ([], {"security": "low"}),
    "delete_repo": (["admin"], {"security": "low"}),
    "open_vault": (["vault"], {}),
}
"""What the client must do to be allowed each tool."""
OPENED_BY = {"open_vault": "keeper"}
"""Whose token a client needs besides, where access control hides the tool."""


async def request(client: Client[Any], method: str, params: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(BOUND):
        return await call_method(client, method, params)


async def call(client: Client[Any], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await request(client, "tools/call", {"name": name, "arguments": arguments})


def text_of(result: dict[str, Any]) -> str:
    return " ".join(str(c.get("text", "")) for c in result.get("content", []))


def assert_refused(result: dict[str, Any], output: str) -> None:
    assert result.get("isError"), f"ran: {text_of(result)[:200]}"
    assert output not in text_of(result)


def spellings(name: str) -> list[str]:
    """Other ways to write ``name``: case, whitespace, invisible and look-alike characters."""
    cyrillic = str.maketrans({"e": "\u0435", "a": "\u0430", "o": "\u043e", "p": "\u0440"})
    return [
        name.upper(),
        name.title(),
        name[0].upper() + name[1:],
        "".join(c.upper() if i % 2 else c for i, c in enumerate(name)),
        f" {name}",
        f"{name} ",
        f"{name}\n",
        f"\t{name}",
        name.replace("_", " "),
        name.replace("_", "-"),
        f"{name}\u200b",
        f"\u200d{name}",
        f"{name}\u00ad",
        name.translate(cyrillic),
        unicodedata.normalize("NFKC", name).translate(
            {c: c + 0xFEE0 for c in range(0x21, 0x7F)}
        ),  # fullwidth
        f"{name}\u0301",
    ]


async def open_for(client: Client[Any], name: str) -> None:
    groups, concerns = OPENS[name]
    if groups:
        assert not (await call(client, "enable_tools", {"groups": groups})).get("isError")
    if concerns:
        await request(client, "concerns/update", {"concerns": concerns})


FRESH = ClientState(configured={})
"""A new client: the server applies the concern defaults to every client (``"all"``)."""


def server() -> Any:
    # Defaults for every client, so a fresh client has a tool its concerns hide; a client
    # that never stated a concern is covered by the property suite's default server.
    mcp = make_stack(apply_defaults="all")
    add_own_proxy(mcp)
    return mcp


@pytest.mark.side_effect_lists
@pytest.mark.parametrize("name", sorted(HIDDEN))
class TestHiddenTool:
    async def test_listed_nowhere(self, connect: Connect, name: str) -> None:
        async with connect(server()) as client:
            listed = await request(client, "tools/list", {})
            assert name not in {t["name"] for t in listed["tools"]}
            assert name not in allowed("tool", FRESH)
            for query in (name, name.replace("_", " "), "delete dump branch repo plaintext"):
                ranked = await request(client, "tools/list", {"query": query})
                assert name not in {t["name"] for t in ranked["tools"]}
                found = await call(client, "search_tools", {"query": query})
                # Named at most as a tool of a group to enable, never callable.
                assert searchable(found["structuredContent"]["tools"], FRESH)
                assert name not in {
                    t["name"]
                    for t in found["structuredContent"]["tools"]
                    if "available_after" not in t
                }

    async def test_direct_call_is_refused_with_what_hides_it(
        self, connect: Connect, name: str
    ) -> None:
        arguments, output, hides = HIDDEN[name]
        async with connect(server()) as client:
            result = await call(client, name, arguments)
            assert_refused(result, output)
            # Hidden twice over, the first layer that refuses names its reason.
            assert any(reason in text_of(result) for reason in hides)

    async def test_proxies_are_refused(self, connect: Connect, name: str) -> None:
        arguments, output, _ = HIDDEN[name]
        async with connect(server()) as client:
            assert_refused(
                await call(client, "call_tool", {"name": name, "arguments": arguments}), output
            )
            assert_refused(
                await call(client, "run", {"name": name, "arguments": arguments}), output
            )
            # The proxy through the application's own proxy, and the other way round.
            inner = {"name": "run", "arguments": {"name": name, "arguments": arguments}}
            assert_refused(await call(client, "call_tool", inner), output)
            outer = {"name": "call_tool", "arguments": {"name": name, "arguments": arguments}}
            assert_refused(await call(client, "run", outer), output)

    async def test_other_spellings_never_run_it(self, connect: Connect, name: str) -> None:
        arguments, output, _ = HIDDEN[name]
        async with connect(server()) as client:
            for spelling in spellings(name):
                assert_refused(await call(client, spelling, arguments), output)
                proxied = {"name": spelling, "arguments": arguments}
                assert_refused(await call(client, "call_tool", proxied), output)
                assert_refused(await call(client, "run", proxied), output)

    async def test_other_primitives_routes_do_not_reach_it(
        self, connect: Connect, name: str
    ) -> None:
        async with connect(server()) as client:
            for method, params in (
                ("prompts/get", {"name": name}),
                ("resources/read", {"uri": name}),
                ("resources/read", {"uri": f"tool://{name}"}),
            ):
                with pytest.raises(MCPError) as refused:
                    await request(client, method, params)
                assert refused.value.error.code == mt.INVALID_PARAMS

    async def test_every_route_works_once_the_state_allows_it(
        self, connect: Connect, name: str
    ) -> None:
        """The control: the refusals above come from the client's state."""
        arguments, output, _ = HIDDEN[name]
        identity = as_principal(OPENED_BY[name]) if name in OPENED_BY else {}
        async with connect(server(), **identity) as client:
            await open_for(client, name)
            assert output in text_of(await call(client, name, arguments))
            proxied = {"name": name, "arguments": arguments}
            assert output in text_of(await call(client, "call_tool", proxied))
            assert output in text_of(await call(client, "run", proxied))
            found = await call(client, "search_tools", {"query": name.replace("_", " ")})
            assert name in {t["name"] for t in found["structuredContent"]["tools"]}


HIDDEN_READS = [
    # (method, params, what hides it, what opens it: groups, concerns)
    ("prompts/get", {"name": "review_prompt"}, "in group 'repos'", (["code", "repos"], {})),
    ("prompts/get", {"name": "leak_prompt"}, "concern 'security'", ([], {"security": "low"})),
    ("resources/read", {"uri": "repo://readme"}, "in group 'repos'", (["code", "repos"], {})),
    ("resources/read", {"uri": "repo://a/license"}, "in group 'repos'", (["code", "repos"], {})),
    ("resources/read", {"uri": "secret://dump"}, "concern 'security'", ([], {"security": "low"})),
    ("resources/read", {"uri": "secret://a/key"}, "concern 'security'", ([], {"security": "low"})),
]
CONTENT = {
    "review_prompt": "review the repo",
    "leak_prompt": "secret",
    "repo://readme": "# readme",
    "repo://a/license": "MIT a",
    "secret://dump": "plaintext",
    "secret://a/key": "key of a",
}


@pytest.mark.parametrize(
    ("method", "params", "hides", "opens"),
    HIDDEN_READS,
    ids=[f"{m}:{p.get('name') or p.get('uri')}" for m, p, _, _ in HIDDEN_READS],
)
@pytest.mark.side_effect_lists
class TestHiddenPromptsAndResources:
    async def test_refused_until_the_state_allows_it(
        self,
        connect: Connect,
        method: str,
        params: dict[str, Any],
        hides: str,
        opens: tuple[list[str], dict[str, str]],
    ) -> None:
        key = str(params.get("name") or params.get("uri"))
        own = ("render", {"name": key}) if method == "prompts/get" else ("read", {"uri": key})
        async with connect(server()) as client:
            with pytest.raises(MCPError) as refused:
                await request(client, method, params)
            assert hides in refused.value.error.message
            assert CONTENT[key] not in refused.value.error.message
            for spelling in (key.upper(), f" {key}", f"{key}\u200b"):
                with pytest.raises(MCPError):
                    await request(client, method, {next(iter(params)): spelling})
            through_own = await call(client, *own)
            assert through_own.get("isError")
            assert hides in text_of(through_own)

            groups, concerns = opens
            if groups:
                await call(client, "enable_tools", {"groups": groups})
            if concerns:
                await request(client, "concerns/update", {"concerns": concerns})
            assert CONTENT[key] in str(await request(client, method, params))
            assert CONTENT[key] in text_of(await call(client, *own))


class TestIsolation:
    async def test_concurrent_sessions_never_see_each_others_state(self) -> None:
        mcp = server()
        async with Client(mcp, mode="legacy") as opened, Client(mcp, mode="legacy") as closed:
            await open_for(opened, "delete_repo")
            wide = ClientState(frozenset({"issues", "admin"}), {"security": "low"})
            narrow = FRESH.copy()

            async def check(client: Client[Any], state: ClientState) -> None:
                listed = await request(client, "tools/list", {})
                # The application's own tools are outside the model's declarations.
                assert {t["name"] for t in listed["tools"]} == allowed("tool", state) | OWN_PROXIES
                result = await call(client, "delete_repo", {"name": "x"})
                assert bool(result.get("isError")) == ("delete_repo" not in allowed("tool", state))
                found = await call(client, "search_tools", {"query": "delete repo"})
                assert searchable(found["structuredContent"]["tools"], state)

            for _ in range(10):
                await asyncio.gather(
                    check(opened, wide),
                    check(closed, narrow),
                    check(opened, wide),
                    check(closed, narrow),
                )
            # A change by one, while the other works, stays the changer's.
            await asyncio.gather(
                call(closed, "enable_tools", {"groups": ["code", "repos"]}),
                check(opened, wide),
            )
            narrow.enable(["code", "repos"])
            await asyncio.gather(check(opened, wide), check(closed, narrow))


@pytest.mark.side_effect_lists
class TestCompletions:
    @pytest.mark.parametrize(
        "ref",
        [
            {"type": "ref/prompt", "name": "leak_prompt"},
            {"type": "ref/prompt", "name": "review_prompt"},
            {"type": "ref/resource", "uri": "secret://{name}/key"},
        ],
        ids=["concerns", "progressive", "template"],
    )
    async def test_hidden_references_get_no_completions(
        self, connect: Connect, ref: dict[str, str]
    ) -> None:
        mcp = server()

        def complete(reference: Any, argument: Any, context: Any) -> list[str]:
            return ["leaked-value"]

        mcp.add_completion_handler(complete)

        async with connect(mcp) as client:
            try:
                result = await request(
                    client,
                    "completion/complete",
                    {"ref": ref, "argument": {"name": "name", "value": ""}},
                )
            except MCPError:
                return
        assert "leaked-value" not in result["completion"]["values"]


@pytest.mark.side_effect_lists
class TestHiddenTags:
    """delete_branch alone carries the tag "danger", and its group is not enabled."""

    async def test_tags_list_names_only_tags_of_what_the_client_sees(
        self, connect: Connect
    ) -> None:
        async with connect(server()) as client:
            listed = await request(client, "tags/list", {})
            assert {t["name"] for t in listed["tags"]} == visible_tags(FRESH)
            assert "danger" not in visible_tags(FRESH)
            await call(client, "enable_tools", {"groups": ["admin"]})
            listed = await request(client, "tags/list", {})
            assert "danger" in {t["name"] for t in listed["tags"]}

    async def test_an_unknown_filter_tag_error_names_only_tags_the_client_sees(
        self, connect: Connect
    ) -> None:
        async with connect(server()) as client:
            # Any listing, by this client or another, lets the server take stock of its tags.
            await request(client, "tools/list", {})
            with pytest.raises(MCPError) as refused:
                await request(client, "tools/list", {"filter": {"tags": ["nope"]}})
        assert refused.value.error.code == mt.INVALID_PARAMS
        assert isinstance(refused.value.error.data, dict)
        assert set(refused.value.error.data["valid"]) <= visible_tags(FRESH)


class TestFastMCPSessionVisibility:
    async def test_a_tool_fastmcp_disabled_for_the_session_is_refused_on_every_route(
        self, connect: Connect
    ) -> None:
        mcp = server()

        async def hide(ctx: Context) -> str:
            await ctx.disable_components(names={"encrypt_data"})
            return "hidden"

        mcp.tool(hide)

        async with connect(mcp) as client:
            arguments = {"data": "abc"}
            assert "cba" in text_of(await call(client, "encrypt_data", arguments))
            await call(client, "hide", {})
            listed = await request(client, "tools/list", {})
            assert "encrypt_data" not in {t["name"] for t in listed["tools"]}
            proxied = {"name": "encrypt_data", "arguments": arguments}
            for result in (
                await call(client, "encrypt_data", arguments),
                await call(client, "call_tool", proxied),
                await call(client, "run", proxied),
            ):
                assert_refused(result, "cba")
            found = await call(client, "search_tools", {"query": "encrypt data"})
            assert "encrypt_data" not in {t["name"] for t in found["structuredContent"]["tools"]}
            ranked = await request(client, "tools/list", {"query": "encrypt data"})
            assert "encrypt_data" not in {t["name"] for t in ranked["tools"]}

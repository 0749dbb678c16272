"""Hidden means hidden: each path that ran or revealed a hidden component before the lookup rework.

One class per case of issue 10, each in both protocol eras where the case applies.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as mt
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.apps.app import FastMCPApp
from fastmcp.apps.config import AppConfig, ResourceCSP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.authorization import AuthMiddleware
from fastmcp.server.providers.addressing import hash_tool, hashed_backend_name
from fastmcp.server.providers.base import Provider
from fastmcp.server.transforms import PromptsAsTools
from fastmcp.tools.base import Tool
from fastmcp.utilities.tests import asgi_server
from fastmcp.utilities.versions import VersionSpec
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import (
    Concern,
    ConcernMiddleware,
    FilterMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    in_group,
    install,
    unrestricted,
)
from fastmcp_filtering.client import call_method, concerns_meta, list_tools
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from ..conftest import ERAS, Connect

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")

UPSTREAM = Path(__file__).parents[1] / "_marked_upstream.py"


def progressive(*groups: Group, **options: Any) -> ProgressiveDisclosureMiddleware:
    options.setdefault("initial_groups", ["public"])
    return ProgressiveDisclosureMiddleware(groups=[Group("public"), *groups], **options)


async def names(client: Client[Any], **kwargs: Any) -> list[str]:
    return sorted(t.name for t in (await list_tools(client, **kwargs)).tools)


@pytest.mark.side_effect_lists
class TestHashedNames:
    """1. A FastMCPApp tool called by its hashed name resolves through the policy too."""

    async def test_a_hidden_app_tool_cannot_be_called_by_its_hash(self, connect: Connect) -> None:
        mcp = FastMCP("apps")
        app = FastMCPApp("deploys")

        @app.tool(model=True)
        def delete_everything() -> str:
            return "deleted"

        mcp.add_provider(app)
        install(mcp, progressive(Group("admin", tools=["delete_*"])))
        # FastMCP's name for it: "<hash>_<name>" before 4.2, "__<hash>_<name>" since.
        hashed = hashed_backend_name("deploys", "delete_everything")
        digest = hash_tool("deploys", "delete_everything")
        every = {hashed, f"{digest}_delete_everything", f"__{digest}_delete_everything"}
        async with connect(mcp) as client:
            assert "delete_everything" not in await names(client)
            for name in (*sorted(every), "delete_everything"):
                with pytest.raises(ToolError) as refused:
                    await client.call_tool(name, {})
                assert "deleted" not in str(refused.value)
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            assert (await client.call_tool(hashed, {})).data == "deleted"


def versioned_server() -> FastMCP:
    mcp = FastMCP("versions")

    @in_group("public")
    @mcp.tool(name="deploy", version="1")
    def deploy_v1() -> str:
        return "v1"

    @in_group("admin")
    @mcp.tool(name="deploy", version="2")
    def deploy_v2() -> str:
        return "v2"

    @in_group("public")
    @mcp.tool
    async def wrapper(ctx: Context) -> str:
        result = await ctx.fastmcp.call_tool("deploy", {})
        return str((result.structured_content or {}).get("result"))

    @in_group("public")
    @mcp.prompt(name="brief", version="1")
    def brief_v1() -> str:
        return "brief v1"

    @in_group("admin")
    @mcp.prompt(name="brief", version="2")
    def brief_v2() -> str:
        return "brief v2"

    mcp.add_transform(PromptsAsTools(mcp))
    install(mcp, progressive(Group("admin")))
    return mcp


@pytest.mark.side_effect_lists
class TestVersions:
    """2. Nested calls run the highest version the client may see, not a hidden higher one."""

    async def test_nested_calls_and_prompts_as_tools_run_the_visible_version(
        self, connect: Connect
    ) -> None:
        async with connect(versioned_server()) as client:
            listed = {t.name: t for t in await client.list_tools()}
            assert listed["deploy"].meta["fastmcp"]["version"] == "1"  # type: ignore[index]
            assert (await client.call_tool("deploy", {})).data == "v1"
            # The outer request names version 1 of the wrapper's own call; the nested
            # call asks for no version and must get the highest visible one.
            nested = await client.call_tool_mcp("wrapper", {}, meta={"fastmcp": {"version": "1"}})
            assert nested.content[0].text == "v1"  # type: ignore[union-attr]
            assert (await client.call_tool("wrapper", {})).data == "v1"
            with pytest.raises(ToolError):
                await client.call_tool("deploy", {}, version="2")
            rendered = await client.call_tool("get_prompt", {"name": "brief"})
            assert "brief v1" in str(rendered.data)
            assert "brief v2" not in str(rendered.data)
            prompt = await client.get_prompt("brief")
            assert prompt.messages[0].content.text == "brief v1"  # type: ignore[union-attr]

    async def test_enabling_the_group_shows_the_higher_version(self, connect: Connect) -> None:
        async with connect(versioned_server()) as client:
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            assert (await client.call_tool("wrapper", {})).data == "v2"
            assert (await client.call_tool("deploy", {}, version="1")).data == "v1"


def capped_server() -> FastMCP:
    mcp = FastMCP("capped")
    groups = [Group(f"g{i}") for i in range(3)]
    for i in range(3):
        for j in range(3):
            tool = Tool.from_function(lambda: "ok", name=f"t{i}{j}")
            mcp.add_tool(in_group(f"g{i}")(tool))
    risk = Concern("risk", values=["safe", "risky"])
    mapping = {f"t{i}{j}": {"risk": "risky"} for i in range(3) for j in range(1, 3)}
    install(
        mcp,
        ConcernMiddleware(concerns=[risk], mapping=mapping),
        progressive(*groups, max_tools=3),
    )
    return mcp


@pytest.mark.side_effect_lists
class TestMaxTools:
    """3. max_tools counts a group's tools whatever another layer's per-request view hides."""

    async def test_a_concerns_override_cannot_enable_more(self, connect: Connect) -> None:
        async with connect(capped_server()) as client:
            safe_only = concerns_meta({"risk": "safe"})
            reply = await call_method(
                client,
                "tools/call",
                {
                    "name": "enable_tools",
                    "arguments": {"groups": ["g0", "g1", "g2"]},
                    "_meta": safe_only,
                },
            )
            structured = reply["structuredContent"]
            assert structured["enabled"] == ["g0"]
            assert len(structured["errors"]) == 2
            grouped = [n for n in await names(client) if n.startswith("t")]
            assert grouped == ["t00", "t01", "t02"]

    async def test_a_stored_configuration_cannot_either(self, connect: Connect) -> None:
        async with connect(capped_server()) as client:
            await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
            reply = await client.call_tool("enable_tools", {"groups": ["g0", "g1", "g2"]})
            assert reply.structured_content["enabled"] == ["g0"]  # type: ignore[index]
            await call_method(client, "concerns/update", {"concerns": {}})
            assert len([n for n in await names(client) if n.startswith("t")]) == 3


def marked_proxy(*, trust: bool = False) -> FastMCP:
    return build_proxy(
        FilteringConfig.model_validate(
            {
                "trust_upstream_groups": trust,
                "upstreams": [{"command": sys.executable, "args": [str(UPSTREAM)]}],
                "groups": [
                    {"name": "issues", "tools": ["*_issue"]},
                    {"name": "admin", "tools": ["delete_*"]},
                ],
                "progressive": {"initial_groups": ["issues"], "hide_ungrouped": True},
            }
        )
    )


META_TOOLS = {"enable_tools", "disable_tools", "call_tool", "search_tools"}


@pytest.mark.slow
class TestProxyTrust:
    """4. An upstream's ``_meta`` decides neither group membership nor meta-tool status."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_upstream_marks_are_ignored(self, era: str) -> None:
        async with Client(marked_proxy(), **ERAS[era]) as client:
            listed = await client.list_tools()
            assert sorted(t.name for t in listed if t.name not in META_TOOLS) == ["create_issue"]
            # On fixed 2026-07-28 lists a tool of a group not enabled runs when called by
            # name; an ungrouped one that hide_ungrouped hides never does.
            refused = ("sneaky",) if era == "modern" else ("delete_team", "sneaky")
            for name in refused:
                with pytest.raises(ToolError) as refused:
                    await client.call_tool(name, {"team": "x"} if name == "delete_team" else {})
                assert "deleted" not in str(refused.value)
                assert "sneaked" not in str(refused.value)
            issue = next(t for t in listed if t.name == "create_issue")
            assert (issue.meta or {}).get("io.modelcontextprotocol/groups") == ["issues"]

    async def test_trust_upstream_groups_keeps_their_claim(self) -> None:
        async with Client(marked_proxy(trust=True)) as client:
            assert "delete_team" in await names(client)
            assert (await client.call_tool("delete_team", {"team": "x"})).data == "deleted x"


class _Flaky(Provider):
    """A provider whose every other lookup raises."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.tool = in_group("admin")(Tool.from_function(lambda: "ran", name="delete_all"))

    async def _list_tools(self) -> Sequence[Tool]:
        return [self.tool]

    async def _get_tool(self, name: str, version: VersionSpec | None = None) -> Tool | None:
        self.calls += 1
        if self.calls % 2:
            raise ConnectionError("upstream flapped")
        return self.tool if name == self.tool.name else None


class TestFailedLookup:
    """5. A lookup that raises hides; one that succeeds is judged: never allowed by an error."""

    async def test_a_flapping_provider_never_opens_the_gate(self, connect: Connect) -> None:
        mcp = FastMCP("flaky")
        mcp.provider_error_strategy = "warn"
        mcp.add_provider(_Flaky())
        install(mcp, progressive(Group("admin")))
        async with connect(mcp) as client:
            for _ in range(6):
                result = await client.call_tool_mcp("delete_all", {})
                assert result.is_error
                assert "ran" not in str(result.content)


@pytest.mark.side_effect_lists
class TestMountedServersFirstRequest:
    """A mounted server's policy holds on the parent's first request, however each is set up."""

    @pytest.mark.parametrize("parent_filters", [True, False])
    async def test_a_call_by_name_answers_as_for_nothing(
        self, connect: Connect, parent_filters: bool
    ) -> None:
        child = FastMCP("child")
        child.add_tool(in_group("admin")(Tool.from_function(lambda: "wiped", name="wipe")))
        install(child, progressive(Group("admin")))
        parent = FastMCP("parent")
        if parent_filters:
            install(parent, FilterMiddleware(groups=[Group("ops")]))
        parent.mount(child, namespace="ops")
        async with connect(parent) as client:
            hidden = await client.call_tool_mcp("ops_wipe", {})
            missing = await client.call_tool_mcp("ops_nothing", {})
        assert hidden.is_error
        assert hidden.content[0].text == "Unknown tool: 'ops_wipe'"  # type: ignore[union-attr]
        assert missing.content[0].text == "Unknown tool: 'ops_nothing'"  # type: ignore[union-attr]


class _HideEverythingDangerous(Middleware):
    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        result = await call_next(context)
        if isinstance(result, list):
            return [c for c in result if getattr(c, "name", "") != "delete_everything"]
        return result


class TestSearchPastOwnMiddleware:
    """6. Search never bypasses a middleware of the server's own, wherever it is added."""

    @pytest.mark.parametrize("own_first", [True, False])
    async def test_query_and_search_tools_respect_it(
        self, connect: Connect, own_first: bool
    ) -> None:
        mcp = FastMCP("own")
        mcp.add_tool(Tool.from_function(lambda: "gone", name="delete_everything"))
        mcp.add_tool(Tool.from_function(lambda: "ok", name="delete_draft"))
        search = SearchMiddleware(max_results=5)
        if own_first:
            mcp.add_middleware(_HideEverythingDangerous())
            install(mcp, search)
        else:
            install(mcp, search)
            mcp.add_middleware(_HideEverythingDangerous())
        async with connect(mcp) as client:
            assert await names(client) == ["delete_draft", "search_tools"]
            assert "delete_everything" not in await names(client, query="delete everything")
            found = await client.call_tool("search_tools", {"query": "delete everything"})
            assert [t["name"] for t in found.structured_content["tools"]] == ["delete_draft"]  # type: ignore[index]


def paged_server() -> FastMCP:
    mcp = FastMCP("paged", list_page_size=2)
    for name in ("a", "b", "c", "d", "e"):
        mcp.add_tool(in_group("letters")(Tool.from_function(lambda: "ok", name=f"tool_{name}")))
    install(mcp, FilterMiddleware(groups=[Group("letters")]))
    return mcp


_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


class TestFirstFilteredPage:
    """7. The first filtered page a fresh stateless HTTP process serves has a usable cursor."""

    async def test_the_first_request_of_a_process_gets_a_usable_cursor(self) -> None:
        """A 2026-07-28 request needs no handshake: the very first one may be a filtered list."""
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/list",
        }
        pages: list[list[str]] = []
        async with asgi_server(paged_server(), stateless_http=True) as server:
            transport = httpx.ASGITransport(app=server.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                cursor = None
                for _ in range(3):
                    params: dict[str, Any] = {"filter": {"groups": ["letters"]}, "_meta": _ENVELOPE}
                    if cursor is not None:
                        params["cursor"] = cursor
                    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
                    reply = (await http.post("/mcp", json=body, headers=headers)).json()
                    assert "result" in reply, reply
                    pages.append([t["name"] for t in reply["result"]["tools"]])
                    cursor = reply["result"].get("nextCursor")
        assert pages == [["tool_a", "tool_b"], ["tool_c", "tool_d"], ["tool_e"]]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_the_first_cursor_works_for_a_client(self, era: str) -> None:
        async with (
            asgi_server(paged_server(), stateless_http=True) as server,
            server.client(**ERAS[era]) as client,
        ):
            first = await list_tools(client, groups=["letters"])
            assert first.next_cursor is not None
            second = await list_tools(client, groups=["letters"], cursor=first.next_cursor)
            assert [t.name for t in second.tools] == ["tool_c", "tool_d"]


class TestAMiddlewareAheadOfTheStack:
    """A middleware ahead of the package's that looks components up (FastMCP's AuthMiddleware)
    finds hidden ones as absent ones from the first message of a fresh process."""

    async def test_the_first_call_of_a_hidden_tool_answers_as_for_nothing(self) -> None:
        mcp = FastMCP("guarded", middleware=[AuthMiddleware(auth=require_scopes("api"))])
        mcp.add_tool(in_group("admin")(Tool.from_function(lambda: "gone", name="delete_all")))
        install(mcp, progressive(Group("admin", access=require_scopes("admin"))))
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
        }
        answers: list[str] = []
        async with asgi_server(mcp, stateless_http=True) as server:
            transport = httpx.ASGITransport(app=server.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                for name in ("delete_all", "never_was"):
                    params = {"name": name, "arguments": {}, "_meta": _ENVELOPE}
                    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
                    sent = {**headers, "mcp-name": name}
                    reply = (await http.post("/mcp", json=body, headers=sent)).json()
                    answers.append(json.dumps(reply).replace(name, "NAME"))
        assert answers[0] == answers[1], answers
        assert "not found or not authorized" in answers[0]


class TestClientChosenSessionIds:
    """8. On stateless HTTP, a ``Mcp-Session-Id`` the server did not issue is no identity."""

    async def test_a_borrowed_session_id_reads_nothing_and_stores_nothing(self) -> None:
        mcp = FastMCP("stateless")
        mcp.add_tool(in_group("admin")(Tool.from_function(lambda: "ok", name="delete_repo")))
        install(mcp, progressive(Group("admin")))
        headers = {"mcp-session-id": "victim"}
        async with asgi_server(mcp, stateless_http=True) as server:
            async with server.client(mode="legacy", headers=headers) as victim:
                reply = await victim.call_tool_mcp("enable_tools", {"groups": ["admin"]})
                assert reply.is_error
                assert "cannot be enabled or disabled on this connection" in str(reply.content)
            async with server.client(mode="legacy", headers=headers) as attacker:
                assert "delete_repo" not in await names(attacker)
            async with server.client(mode="legacy") as plain:
                # No header: no identity either, and it says so rather than lose the state.
                reply = await plain.call_tool_mcp("enable_tools", {"groups": ["admin"]})
                assert reply.is_error
                assert "delete_repo" not in await names(plain)


def template_server() -> FastMCP:
    mcp = FastMCP("templates")

    @in_group("admin")
    @mcp.resource("vault://{name}/key")
    def key(name: str) -> str:
        return name

    @mcp.completion
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return ["alpha", "beta"]

    install(mcp, progressive(Group("admin")))
    return mcp


@pytest.mark.side_effect_lists
class TestCompletions:
    """9. A hidden template's completion is refused for the template and any URI it matches."""

    async def test_concrete_uris_are_refused_too(self, connect: Connect) -> None:
        async with connect(template_server()) as client:
            for uri in ("vault://{name}/key", "vault://x/key"):
                ref = mt.ResourceTemplateReference(type="ref/resource", uri=uri)
                with pytest.raises(MCPError) as refused:
                    await client.complete(ref, {"name": "name", "value": "a"})
                assert refused.value.error.code == mt.INVALID_PARAMS
                assert "enable_tools" in refused.value.error.message
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            ref = mt.ResourceTemplateReference(type="ref/resource", uri="vault://x/key")
            completed = await client.complete(ref, {"name": "name", "value": "a"})
            assert completed.values == ["alpha", "beta"]


# -- Found by an attack on the rework ------------------------------------------------------


def concealing(*groups: Group, **options: Any) -> ProgressiveDisclosureMiddleware:
    """Progressive disclosure that conceals what is in no group."""
    return progressive(*groups, hide_ungrouped=True, **options)


class TestConcealmentWinsInAnyOrder:
    """A layer's refusal text never names what another layer conceals, whatever the order."""

    @pytest.mark.parametrize("concerns_first", [True, False])
    async def test_concealed_and_excluded(self, connect: Connect, concerns_first: bool) -> None:
        mcp = FastMCP("order")
        mcp.add_tool(Tool.from_function(lambda: "wiped", name="wipe_all"))
        concerns = ConcernMiddleware(
            concerns=[Concern("risk", values=["safe", "destructive"], default="safe")],
            mapping={"wipe_all": {"risk": "destructive"}},
        )
        layers = [concerns, concealing()] if concerns_first else [concealing(), concerns]
        install(mcp, *layers)
        async with connect(mcp) as client:
            for name in ("wipe_all", "never_existed"):
                with pytest.raises(ToolError) as refused:
                    await client.call_tool(name, {})
                assert str(refused.value) == f"Unknown tool: {name!r}"


@pytest.mark.side_effect_lists
class TestBestVisibleMatch:
    """When FastMCP's best match is hidden, a lookup gets the best match the client sees."""

    async def test_a_hidden_template_keeps_the_uris_it_matches_first(
        self, connect: Connect
    ) -> None:
        """Not read through the visible template that also matches (a proxy's upstream would
        answer with the hidden one's content): as an absent URI; other URIs read as ever."""
        mcp = FastMCP("templates")

        @mcp.resource("data://admin/{item}")
        def admin_item(item: str) -> str:
            return "SECRET"

        @in_group("public")
        @mcp.resource("data://{area}/{item}")
        def public_item(area: str, item: str) -> str:
            return f"public {area}/{item}"

        install(mcp, concealing())
        async with connect(mcp) as client:
            with pytest.raises(MCPError) as hidden:
                await client.read_resource("data://admin/x")
            with pytest.raises(MCPError) as absent:
                await client.read_resource("nothing://x")
            read = await client.read_resource("data://public/x")
        assert str(hidden.value) == str(absent.value).replace("nothing://x", "data://admin/x")
        assert read[0].text == "public public/x"  # type: ignore[union-attr]

    async def test_two_providers_of_one_name(self, connect: Connect) -> None:
        mcp = FastMCP("providers")

        @mcp.tool(name="report")
        def local_report() -> str:
            return "SECRET"

        child = FastMCP("child")

        @child.tool(meta={"io.modelcontextprotocol/groups": ["public"]})
        def report() -> str:
            return "public report"

        mcp.mount(child)
        install(mcp, concealing())
        async with connect(mcp) as client:
            assert "report" in await names(client)
            assert (await client.call_tool("report", {})).data == "public report"

    async def test_a_provider_that_ignores_versions_does_not_loop(self, connect: Connect) -> None:
        class Careless(Provider):
            def __init__(self) -> None:
                super().__init__()
                tool = Tool.from_function(lambda: "v2", name="report", version="2")
                self.tool = in_group("admin")(tool)

            async def _list_tools(self) -> Sequence[Tool]:
                return [self.tool]

            async def _get_tool(self, name: str, version: VersionSpec | None = None) -> Tool | None:
                return self.tool if name == "report" else None  # ignores ``version``

        mcp = FastMCP("careless")
        mcp.add_provider(Careless())
        install(mcp, progressive(Group("admin")))
        async with connect(mcp) as client:
            with anyio.fail_after(10):
                refused = await client.call_tool_mcp("report", {})
        assert refused.is_error


class TestSearchSeesOnlyWhatTheClientSees:
    """The words of hidden tools change no ranking: not which words exist, nor their weight."""

    @pytest.mark.parametrize("with_hidden", [True, False])
    async def test_a_hidden_tools_words_do_not_show(
        self, connect: Connect, with_hidden: bool
    ) -> None:
        mcp = FastMCP("vocabulary")
        mcp.add_tool(
            in_group("public")(
                Tool.from_function(lambda: "ok", name="rotate_wire", description="Rotate a wire")
            )
        )
        if with_hidden:
            mcp.add_tool(Tool.from_function(lambda: "x", name="wipe_production"))
        install(mcp, SearchMiddleware(max_results=5), concealing())
        async with connect(mcp) as client:
            listed = await names(client, query="wipe")
            found = await client.call_tool("search_tools", {"query": "wipe"})
        assert listed == ["rotate_wire"]
        assert [t["name"] for t in found.structured_content["tools"]] == ["rotate_wire"]  # type: ignore[index]


class TestFilterNamesInAnyOrder:
    @pytest.mark.parametrize("filter_first", [True, False])
    async def test_a_query_that_matches_nothing_keeps_valid_tags_valid(
        self, connect: Connect, filter_first: bool
    ) -> None:
        mcp = FastMCP("order")
        mcp.add_tool(Tool.from_function(lambda: "ok", name="read_file", tags={"stable"}))
        layers = [FilterMiddleware(), SearchMiddleware()]
        install(mcp, *(layers if filter_first else reversed(layers)))
        async with connect(mcp) as client:
            assert await names(client, tags=["stable"], query="zzzz qqqq") == []
            with pytest.raises(MCPError, match="unknown tag"):
                await names(client, tags=["nope"], query="read")


@pytest.mark.side_effect_lists
class TestHintCodes:
    async def test_prompt_and_resource_hints_are_invalid_params(self, connect: Connect) -> None:
        mcp = FastMCP("codes")

        @in_group("admin")
        @mcp.prompt
        def secret_prompt() -> str:
            return "SECRET"

        @in_group("admin")
        @mcp.resource("s://doc")
        def secret_doc() -> str:
            return "SECRET"

        install(mcp, progressive(Group("admin")))
        async with connect(mcp) as client:
            for method, params in (
                ("prompts/get", {"name": "secret_prompt"}),
                ("resources/read", {"uri": "s://doc"}),
            ):
                with pytest.raises(MCPError) as refused:
                    await call_method(client, method, params)
                assert refused.value.error.code == mt.INVALID_PARAMS
                assert "enable_tools" in refused.value.error.message


async def renderers(server: FastMCP) -> dict[str, str]:
    """Each Prefab tool's renderer URI, as FastMCP lists it to a client that sees the tool."""
    with unrestricted():
        tools = await server.list_tools(run_middleware=False)
    return {
        t.name: t.meta["ui"]["resourceUri"]
        for t in tools
        if t.meta and isinstance(t.meta.get("ui"), dict) and "resourceUri" in t.meta["ui"]
    }


def per_tool(name: str, namespace: str = "") -> str:
    """A tool's per-tool renderer URI: what FastMCP 4.1 lists, and 4.2 still reads."""
    prefix = f"{namespace}/" if namespace else ""
    return f"ui://{prefix}prefab/tool/{hash_tool('', name)}/renderer.html"


def under(namespace: str, uri: str) -> str:
    """``uri`` as a mounted server's renderer is listed by its parent."""
    return uri.replace("ui://", f"ui://{namespace}/", 1)


# A renderer configuration of its own: from FastMCP 4.2 tools sharing one share a renderer.
BANK = AppConfig(
    resource_uri="ui://prefab/renderer.html",
    csp=ResourceCSP(connect_domains=["https://bank.example"]),
)
NO_RENDERER = f"ui://prefab/renderer/{'0' * 64}/renderer.html"


async def refusals(client: Client[Any], uris: Sequence[str]) -> set[tuple[int, str]]:
    """How reading each of ``uris`` fails (each must), with the URI itself left out."""
    answers = set()
    for uri in uris:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        answers.add((refused.value.error.code, refused.value.error.message.replace(uri, "<uri>")))
    return answers


@pytest.mark.side_effect_lists
class TestPrefabRenderers:
    """FastMCP's synthesized renderer resources follow the visibility of their tools."""

    async def test_renderers_of_hidden_tools_do_not_exist(self, connect: Connect) -> None:
        mcp = FastMCP("prefab")

        @in_group("admin")
        @mcp.tool(app=True)
        def wire_funds_dashboard() -> str:
            return "SECRET"

        @mcp.tool(app=True)
        def payroll_export_ui() -> str:
            return "SECRET"

        install(mcp, concealing(Group("admin")))
        uris = await renderers(mcp)
        hidden = [uris["payroll_export_ui"], per_tool("payroll_export_ui")]
        nowhere = [per_tool("no_such_tool"), NO_RENDERER]
        async with connect(mcp) as client:
            assert [str(r.uri) for r in await client.list_resources()] == []
            # A hidden tool's renderer answers exactly as one that never existed.
            shown = [uris["wire_funds_dashboard"], per_tool("wire_funds_dashboard")]
            assert len(await refusals(client, [*hidden, *shown, *nowhere])) == 1
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            listed = [str(r.uri) for r in await client.list_resources()]
            for uri in shown:
                assert await client.read_resource(uri)
            assert len(await refusals(client, [per_tool("payroll_export_ui"), *nowhere])) == 1
        assert listed == [uris["wire_funds_dashboard"]]

    async def test_renderers_of_a_mounted_servers_hidden_tools_do_not_exist(
        self, connect: Connect
    ) -> None:
        # A mounted server's renderers are listed under its namespace too.
        parent, child = FastMCP("parent"), FastMCP("child")

        @child.tool(app=BANK)
        def wire_funds_dashboard() -> str:
            return "SECRET"

        @child.tool(app=True)
        def payroll_export_ui() -> str:
            return "open"

        parent.mount(child, namespace="kid")
        install(parent, progressive(Group("admin", tools=["kid_wire_*"])))
        uris = await renderers(parent)
        hidden, shown = uris["kid_wire_funds_dashboard"], uris["kid_payroll_export_ui"]
        assert hidden != shown
        async with connect(parent) as client:
            listed = {str(r.uri) for r in await client.list_resources()}
            assert {hidden, under("kid", hidden)}.isdisjoint(listed)
            assert {shown, under("kid", shown)} <= listed
            answers = await refusals(
                client,
                [
                    uri
                    for name in ("wire_funds_dashboard", "no_such_tool")
                    for uri in (per_tool(name), per_tool(name, "kid"))
                ]
                + [hidden, under("kid", hidden), NO_RENDERER, under("kid", NO_RENDERER)],
            )
            # A hidden tool's renderer answers exactly as one that never existed.
            assert len(answers) == 1
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            listed = {str(r.uri) for r in await client.list_resources()}
        assert {hidden, under("kid", hidden)} <= listed

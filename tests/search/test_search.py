from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import FilterMiddleware, install
from fastmcp_filtering.client import call_method, list_tools
from fastmcp_filtering.retrieval.embedders import INSTALL_HINT
from fastmcp_filtering.retrieval.ranking import Document, SearchIndex
from fastmcp_filtering.search.middleware import SearchMiddleware

from .._support.layers import HideSecret
from .._support.search import CATALOG, GROUPS, every_page, make_server, stub
from ..conftest import SEMANTIC_MODULES, Connect, need, use


async def ranked(client: Any, query: str, **kw: Any) -> list[str]:
    return [t.name for t in (await list_tools(client, query=query, **kw)).tools]


class TestRanking:
    @pytest.mark.parametrize(
        ("query", "first"),
        [
            ("open a pull request", "create_pull_request"),
            ("pul request", "create_pull_request"),
            ("creating issues", "create_issue"),
            ("get repository", "getRepository"),
            ("send email", "send-email"),
            ("create calendar event", "calendar.create_event"),
            ("repostory", "getRepository"),
            ("翻译文本", "translate_text"),
            ("email and calendar", "send-email"),
        ],
    )
    async def test_best_match_first(self, connect: Connect, query: str, first: str) -> None:
        async with connect(make_server()) as client:
            result = await ranked(client, query)
        assert result[0] == first

    async def test_at_most_max_results_best_first(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            result = await ranked(client, "create open")
        assert len(result) == 3
        assert result[0] in {"create_issue", "create_pull_request"}

    async def test_no_match_is_an_empty_list(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            assert await ranked(client, "zebra xylophone") == []

    async def test_shared_parameters_do_not_drown_the_signal(self) -> None:
        mcp = FastMCP("boilerplate")
        boilerplate = {
            "tenant_id": "The tenant to run the request for",
            "retry_policy": "How to retry a failed request: attempts, backoff, timeout",
        }
        for i in range(12):
            mcp.add_tool(stub(f"op_{i}", f"Operation number {i}", params=boilerplate))
        mcp.add_tool(stub("fetch_invoice", "Fetch an invoice", params={"invoice_id": "Invoice"}))
        install(mcp, SearchMiddleware(max_results=3))
        from fastmcp import Client

        async with Client(mcp) as client:
            result = await ranked(client, "retry request invoice")
        assert result[0] == "fetch_invoice"

    async def test_query_is_plain_text_not_syntax(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            for query in [".*", "(", "issue OR email", "' OR 1=1 --", "\\d+", "%s%n"]:
                await ranked(client, query)
            assert await ranked(client, "issue OR email") != []


class TestWithFilterAndPagination:
    async def test_search_within_the_filter(self, connect: Connect) -> None:
        server = make_server(FilterMiddleware(groups=GROUPS))
        async with connect(server) as client:
            result = await ranked(client, "create", groups=["mail"])
        assert result == ["calendar.create_event"]

    @pytest.mark.parametrize("order", ["search-first", "filter-first"])
    async def test_order_of_middlewares_does_not_change_the_answer(
        self, connect: Connect, order: str
    ) -> None:
        mcp = FastMCP("order")
        for tool in CATALOG:
            mcp.add_tool(tool.model_copy())
        search = SearchMiddleware(groups=GROUPS, max_results=3)
        layers: list[Middleware] = [search, FilterMiddleware(groups=GROUPS), HideSecret()]
        for middleware in layers if order == "search-first" else reversed(layers):
            use(mcp, middleware)
        async with connect(mcp) as client:
            result = await ranked(client, "launch rocket delete branch", tags=["destructive"])
            hidden = await ranked(client, "launch rocket")
        assert result == ["delete_branch"]
        assert hidden == []

    async def test_pages_and_a_cursor_bound_to_the_query(self, connect: Connect) -> None:
        async with connect(make_server(page_size=2)) as client:
            pages = await every_page(client, "create open")
            first = await list_tools(client, query="create open")
            assert first.next_cursor is not None
            with pytest.raises(MCPError) as error:
                await list_tools(client, query="email", cursor=first.next_cursor)
        wide = make_server(search=SearchMiddleware(groups=GROUPS, max_results=50))
        async with connect(wide) as client:
            whole = await ranked(client, "create open")
        # Pages of max_results=3, cut to the server's list_page_size=2.
        assert {len(p) for p in pages[:-1]} == {2}
        assert [name for page in pages for name in page] == whole
        assert error.value.code == -32602


NUMBERED = [stub(f"report_{i:02d}", f"Build report number {i}") for i in range(23)]


def numbered_server(*, max_results: int, page_size: int | None = None) -> FastMCP:
    mcp = FastMCP("reports", list_page_size=page_size)
    for tool in NUMBERED:
        mcp.add_tool(tool.model_copy())
    mcp.add_tool(stub("send_email", "Send an email message"))
    use(mcp, SearchMiddleware(max_results=max_results))
    return mcp


class TestPagingThroughMatches:
    """SEP-1821's matching subset, paged: ``max_results`` is the page size."""

    async def test_pages_hold_every_match_once_in_rank_order(self, connect: Connect) -> None:
        async with connect(numbered_server(max_results=10)) as client:
            pages = await every_page(client, "build report")
        async with connect(numbered_server(max_results=100)) as client:
            whole = await ranked(client, "build report")
        assert [len(p) for p in pages] == [10, 10, 3]
        assert [name for page in pages for name in page] == whole
        assert len(whole) == 23
        assert "send_email" not in whole

    async def test_the_servers_page_size_caps_a_page(self, connect: Connect) -> None:
        async with connect(numbered_server(max_results=10, page_size=4)) as client:
            pages = await every_page(client, "build report")
        assert [len(p) for p in pages] == [4, 4, 4, 4, 4, 3]

    async def test_the_last_page_has_no_cursor(self, connect: Connect) -> None:
        async with connect(numbered_server(max_results=30)) as client:
            page = await list_tools(client, query="build report")
        assert len(page.tools) == 23
        assert page.next_cursor is None

    async def test_a_cursor_is_bound_to_its_query_and_filter(self, connect: Connect) -> None:
        async with connect(numbered_server(max_results=10)) as client:
            first = await list_tools(client, query="build report")
            assert first.next_cursor is not None
            refused = []
            for kwargs in (
                {"query": "send email"},
                {"query": "build report", "groups": ["x"]},
                {},
            ):
                with pytest.raises(MCPError) as error:
                    await list_tools(client, cursor=first.next_cursor, **kwargs)
                refused.append(error.value.error)
        assert {e.code for e in refused} == {-32602}
        assert {(e.data or {}).get("field") for e in refused} == {"cursor"}

    @pytest.mark.parametrize(
        "cursor",
        [
            "search.abc",
            "search.-1",
            "search.99999999999",
            "eyJvIjogMn0=",  # FastMCP's own offset cursor, bare
        ],
    )
    async def test_a_forged_cursor_is_invalid_params(self, connect: Connect, cursor: str) -> None:
        from fastmcp_filtering.server.wire import _PREFIX, _scope_of

        scope = _scope_of({"query": "build report"})
        async with connect(numbered_server(max_results=10)) as client:
            for sent in (cursor, f"{_PREFIX}{scope}.{cursor}"):
                with pytest.raises(MCPError) as error:
                    await list_tools(client, query="build report", cursor=sent)
                assert error.value.error.code == -32602
                assert (error.value.error.data or {}).get("field") == "cursor"

    async def test_a_page_beyond_the_matches_is_empty(self, connect: Connect) -> None:
        from fastmcp_filtering.server.wire import _PREFIX, _scope_of

        scope = _scope_of({"query": "build report"})
        async with connect(numbered_server(max_results=10)) as client:
            page = await list_tools(
                client, query="build report", cursor=f"{_PREFIX}{scope}.search.500"
            )
        assert page.tools == []
        assert page.next_cursor is None


class TestHiddenStaysHidden:
    async def test_query_and_meta_tool_skip_what_a_layer_hides(self, connect: Connect) -> None:
        async with connect(make_server(HideSecret())) as client:
            assert "launch_rocket" not in await ranked(client, "launch rocket")
            found = await client.call_tool("search_tools", {"query": "launch rocket"})
        assert "launch_rocket" not in [t["name"] for t in found.structured_content["tools"]]

    async def test_an_unknown_inner_middleware_is_respected(self, connect: Connect) -> None:
        class HideEmail(Middleware):
            async def on_list_tools(
                self,
                context: MiddlewareContext[Any],
                call_next: CallNext[Any, Sequence[Tool]],
            ) -> Sequence[Tool]:
                return [t for t in await call_next(context) if "email" not in t.name]

        async with connect(make_server(HideEmail())) as client:
            assert "send-email" not in await ranked(client, "send email")


class TestMetaTool:
    async def test_output_schema_carries_no_python_docstring(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            tool = next(t for t in await client.list_tools() if t.name == "search_tools")
        assert tool.output_schema is not None
        assert "description" not in tool.output_schema
        assert "``" not in str(tool.output_schema)

    async def test_same_ranking_as_the_query_parameter(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            listed = await ranked(client, "open a pull request")
            found = await client.call_tool("search_tools", {"query": "open a pull request"})
        assert [t["name"] for t in found.structured_content["tools"]] == listed

    async def test_returns_full_definitions(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            found = await client.call_tool("search_tools", {"query": "send email"})
        assert found.structured_content["tools"][0] == snapshot(
            {
                "name": "send-email",
                "title": "Send Email",
                "description": "Send an email message to a recipient",
                "inputSchema": {"type": "object", "properties": {}},
                "_meta": {
                    "fastmcp": {"tags": []},
                    "io.modelcontextprotocol/groups": ["mail"],
                },
            }
        )

    async def test_can_be_renamed_or_turned_off(self, connect: Connect) -> None:
        renamed = make_server(search=SearchMiddleware(groups=GROUPS, search_tool="find_tools"))
        off = make_server(search=SearchMiddleware(groups=GROUPS, search_tool=None))
        async with connect(renamed) as client:
            names = [t.name for t in await client.list_tools()]
            assert "find_tools" in names
            assert "search_tools" not in names
        async with connect(off) as client:
            names = [t.name for t in await client.list_tools()]
            assert "search_tools" not in names

    async def test_bad_query_argument(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            result = await client.call_tool(
                "search_tools", {"query": "x" * 1001}, raise_on_error=False
            )
        assert result.is_error

    async def test_max_results_changed_later_applies_to_both_ways_of_searching(
        self, connect: Connect
    ) -> None:
        search = SearchMiddleware(groups=GROUPS, max_results=3)
        server = make_server(search=search)
        search.max_results = 1
        async with connect(server) as client:
            listed = await ranked(client, "open a pull request")
            found = await client.call_tool("search_tools", {"query": "open a pull request"})
        assert listed == ["create_pull_request"]
        assert [t["name"] for t in found.structured_content["tools"]] == ["create_pull_request"]

    async def test_answered_by_the_middlewares_discover(self, connect: Connect) -> None:
        class Curated(SearchMiddleware):
            async def discover(self, ctx: Any, query: str) -> list[dict[str, Any]]:
                found = await super().discover(ctx, query)
                return [t for t in found if t["name"] != "create_pull_request"]

        async with connect(make_server(search=Curated(groups=GROUPS))) as client:
            found = await client.call_tool("search_tools", {"query": "open a pull request"})
        names = [t["name"] for t in found.structured_content["tools"]]
        assert names
        assert "create_pull_request" not in names


class TestOtherLists:
    async def test_prompts_and_resources(self, connect: Connect) -> None:
        mcp = make_server()

        @mcp.prompt
        def review_code(diff: str) -> str:
            """Review a code change for bugs."""
            return diff

        @mcp.prompt
        def write_poem() -> str:
            """Write a short poem."""
            return "roses"

        @mcp.resource("docs://style-guide", description="The coding style guide")
        def style_guide() -> str:
            return "PEP 8"

        @mcp.resource("docs://menu", description="Lunch menu")
        def menu() -> str:
            return "soup"

        async with connect(mcp) as client:
            prompts = await call_method(client, "prompts/list", {"query": "review code"})
            resources = await call_method(client, "resources/list", {"query": "style guide"})
        assert [p["name"] for p in prompts["prompts"]] == ["review_code"]
        assert [r["uri"] for r in resources["resources"]] == ["docs://style-guide"]


class TestBadInput:
    @pytest.mark.parametrize("query", [3, ["a"], {"q": 1}, True])
    async def test_wrong_type(self, connect: Connect, query: Any) -> None:
        async with connect(make_server()) as client:
            with pytest.raises(MCPError) as error:
                await call_method(client, "tools/list", {"query": query})
            assert error.value.code == -32602
            assert error.value.data == {"field": "query"}
            assert len(await client.list_tools()) == len(CATALOG) + 1

    async def test_too_long(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            with pytest.raises(MCPError) as error:
                await list_tools(client, query="issue " * 200)
        assert error.value.code == -32602

    @pytest.mark.parametrize("query", ["", "   ", "\t\n", "\x00\x01"])
    async def test_blank_is_no_query(self, connect: Connect, query: str) -> None:
        async with connect(make_server()) as client:
            result = await list_tools(client, query=query)
        assert len(result.tools) == len(CATALOG) + 1

    async def test_control_characters_read_as_spaces(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            assert (await ranked(client, "send\x00email"))[0] == "send-email"


_RAW_HELLO = {
    "legacy": (
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
        {},
    ),
    "modern": (
        "server/discover",
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
    ),
}


async def raw_capabilities(server: FastMCP, era: str) -> dict[str, Any]:
    """The ``capabilities`` object of the era's first reply, as JSON on the wire."""
    method, params, headers = _RAW_HELLO[era]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with asgi_server(server, stateless_http=True) as running:
        transport = httpx.ASGITransport(app=running.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            reply = await http.post(
                "/mcp",
                json=body,
                headers={"accept": "application/json, text/event-stream", **headers},
            )
    data = [line[5:].strip() for line in reply.text.splitlines() if line.startswith("data:")]
    message = json.loads(next(d for d in data if d) if data else reply.text)
    return dict(message["result"]["capabilities"])


class TestCapabilitiesAndInstructions:
    async def test_tools_filtering_where_sep_1821_puts_it(self, era: str) -> None:
        """``capabilities.tools.filtering`` beside tools' own keys on the wire (typed models
        used to drop it), and its copy under ``experimental`` for typed clients."""
        capabilities = await raw_capabilities(make_server(), era)
        assert capabilities["tools"]["filtering"] is True
        assert "listChanged" in capabilities["tools"]
        assert capabilities["experimental"]["tools"]["filtering"] is True

    async def test_tools_filtering_and_instructions(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            capabilities = client.server_capabilities
            instructions = client.instructions
        assert capabilities is not None
        assert capabilities.experimental is not None
        assert capabilities.experimental["tools"]["filtering"] is True
        assert instructions is not None
        assert "params.query" in instructions
        assert "'source code', 'mail'" in instructions
        assert "search_tools" in instructions


class TestIndexFollowsTheCatalog:
    async def test_added_changed_and_removed_tools(self, connect: Connect) -> None:
        search = SearchMiddleware(groups=GROUPS, max_results=3)
        server = make_server(search=search)
        async with connect(server) as client:
            assert await ranked(client, "weather forecast") == []
            server.add_tool(stub("get_weather", "Weather forecast for a city"))
            assert await ranked(client, "weather forecast") == ["get_weather"]
            server.local_provider.remove_tool("get_weather")
            server.add_tool(stub("get_weather", "Tide tables for a harbour"))
            assert await ranked(client, "weather forecast") == ["get_weather"]  # the name
            assert await ranked(client, "tide tables") == ["get_weather"]
            server.local_provider.remove_tool("get_weather")
            assert await ranked(client, "weather forecast") == []

    async def test_removed_tool_is_never_returned(self, connect: Connect) -> None:
        search = SearchMiddleware(groups=GROUPS, max_results=3)
        server = make_server(search=search)
        async with connect(server) as client:
            assert "send-email" in await ranked(client, "send email")
            server.local_provider.remove_tool("send-email")
            assert "send-email" not in await ranked(client, "send email")

    async def test_unchanged_tools_are_not_described_again(
        self, connect: Connect, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        search = SearchMiddleware(groups=GROUPS, max_results=3)
        described: list[str] = []
        original = search._service.document

        def counting(component: Any) -> Any:
            described.append(component.name)
            return original(component)

        monkeypatch.setattr(search._service, "document", counting)
        server = make_server(search=search)
        async with connect(server) as client:
            await ranked(client, "email")
            first = len(described)
            await ranked(client, "issue")
            assert len(described) == first
            server.add_tool(stub("get_weather", "Weather forecast"))
            await ranked(client, "weather")
        assert described[first:] == ["get_weather"]


class TestConstruction:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"max_results": 0}, "max_results must be a positive integer"),
            ({"max_results": True}, "max_results must be a positive integer"),
            ({"search_tool": ""}, "search_tool must be a tool name or None"),
            ({"weights": {"body": 2.0}}, "unknown field weight"),
            ({"weights": {"name": -0.2}}, "field weight 'name' must be a finite number >= 0"),
            ({"weights": {"params": float("nan")}}, "field weight 'params' must be a finite"),
        ],
    )
    def test_bad_options(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            SearchMiddleware(**kwargs)

    def test_repr(self) -> None:
        assert repr(SearchMiddleware(max_results=5)).startswith("SearchMiddleware(max_results=5")


class CountingEmbedder:
    """A stand-in embedder: one dimension per topic word, counting the texts it embeds."""

    TOPICS = ("merge", "calendar", "mail", "weather", "repository")
    SYNONYMS = {"combine": "merge", "forecast": "weather", "agenda": "calendar"}

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        vectors = []
        for text in texts:
            words = [self.SYNONYMS.get(w, w) for w in text.lower().replace("_", " ").split()]
            vector = [1.0 if any(w.startswith(t) for w in words) else 0.0 for t in self.TOPICS]
            norm = sum(v * v for v in vector) ** 0.5 or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


@pytest.fixture
def numpy_needed() -> None:
    need("a semantic ranking", "numpy", hint=INSTALL_HINT)


class TestSemantic:
    @pytest.mark.usefixtures("numpy_needed")
    async def test_fused_ranking_finds_what_shares_no_word(self, connect: Connect) -> None:
        embedder = CountingEmbedder()
        server = make_server(search=SearchMiddleware(groups=GROUPS, semantic=embedder))
        server.add_tool(stub("merge_branches", "Join two lines of work"))
        async with connect(server) as client:
            # No tool says "combine": only the embeddings connect it to merging.
            found = await ranked(client, "combine")
            meta = await client.call_tool("search_tools", {"query": "combine"})
        assert sorted(found) == ["create_pull_request", "merge_branches"]
        assert [t["name"] for t in meta.structured_content["tools"]] == found

    @pytest.mark.usefixtures("numpy_needed")
    async def test_the_blend_matches_words_by_its_own_rules(self, connect: Connect) -> None:
        # One vector for every text: the blend ranks by its lexical share alone. The
        # lexical ranking counts "page" once however many parameters it begins
        # (DEFAULT_RULES); the blend's share counts each (BLENDED_RULES), as chosen with it.
        def same_vector(texts: Sequence[str]) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

        paged = {p: "Page of results" for p in ("page", "pageSize", "pageToken", "pageCursor")}
        orders = []
        semantic: Any
        for semantic in (False, same_vector):
            server = FastMCP("wiki")
            server.add_tool(stub("wiki_search", "Look a term up in the wiki", params={"term": ""}))
            server.add_tool(stub("search_items", "Search the item definitions", params=paged))
            install(server, SearchMiddleware(semantic=semantic))
            async with connect(server) as client:
                orders.append(await ranked(client, "search the wiki for pages about dragons"))
        assert orders == [["wiki_search", "search_items"], ["search_items", "wiki_search"]]

    @pytest.mark.usefixtures("numpy_needed")
    async def test_only_new_or_changed_tools_are_embedded(self, connect: Connect) -> None:
        embedder = CountingEmbedder()
        server = make_server(search=SearchMiddleware(groups=GROUPS, semantic=embedder))
        async with connect(server) as client:
            await ranked(client, "forecast")
            first = [t for t in embedder.embedded if "Put an event" in t or "Open a" in t]
            assert first  # the catalog was embedded
            count = len(embedder.embedded)
            await ranked(client, "agenda")
            assert len(embedder.embedded) == count + 1  # the new query only
            server.add_tool(stub("get_weather", "Weather for a city"))
            assert await ranked(client, "forecast") == ["get_weather"]
        tool_texts = [t for t in embedder.embedded[count:] if "Weather for a city" in t]
        assert len(tool_texts) == 1

    @pytest.mark.usefixtures("numpy_needed")
    async def test_prepare_embeds_the_catalog_before_any_search(self) -> None:
        embedder = CountingEmbedder()
        search = SearchMiddleware(groups=GROUPS, semantic=embedder)
        server = make_server(search=search)
        await search.prepare(server)
        # Every tool was embedded ahead: the first search embeds only its query.
        embedded = len(embedder.embedded)
        assert embedded >= len(await server.list_tools(run_middleware=False)) - 4
        async with Client(server) as client:
            await ranked(client, "forecast")
        assert len(embedder.embedded) == embedded + 1

    async def test_the_bundled_model(self, connect: Connect) -> None:
        need("the bundled model", *SEMANTIC_MODULES, hint=INSTALL_HINT)
        server = make_server(search=SearchMiddleware(groups=GROUPS, semantic=True, max_results=3))
        async with connect(server) as client:
            result = await ranked(client, "ask to merge my branch into main")
        assert "create_pull_request" in result

    def test_bad_option(self) -> None:
        with pytest.raises(ValueError, match="semantic must be True"):
            SearchMiddleware(semantic="minilm")  # type: ignore[arg-type]


class TestIndex:
    def test_a_query_of_common_words_still_matches(self) -> None:
        index = SearchIndex()
        index.upsert("get_me", Document(name="get_me", description="The authenticated user"))
        index.upsert("get_repo", Document(name="get_repo", description="A repository"))
        assert index.search("get me")[0][0] == "get_me"

"""Proxy mode against a real upstream subprocess: the recorded GitHub server's stand-in."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.prompts import Prompt
from fastmcp.server import create_proxy
from fastmcp.tools.base import Tool
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import unrestricted
from fastmcp_filtering.client import (
    call_method,
    concerns_meta,
    list_concerns,
    list_groups,
    list_tags,
    list_tools,
)
from fastmcp_filtering.gateway.config.models import FilteringConfig, load_config
from fastmcp_filtering.gateway.proxy import ConfigAnnotations, build_proxy
from fastmcp_filtering.search.middleware import SearchMiddleware

from .._servers import free_port
from .._support.standin import EXAMPLE_CONFIG, RECORDED, STANDIN, names, reply, standin_http
from ..conftest import ERAS

INITIAL = [  # issues (initial group) plus the meta-tools
    "add_issue_comment",
    "call_tool",
    "create_issue",
    "disable_tools",
    "enable_tools",
    "get_issue",
    "list_issues",
    "search_issues",
    "search_tools",
    "update_issue",
]


@pytest.mark.side_effect_lists
class TestExampleOverStdio:
    """examples/server-github.toml: the proxy starts the stand-in as a stdio subprocess."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_an_agent_session(self, era: str) -> None:
        proxy = build_proxy(load_config(EXAMPLE_CONFIG))
        async with Client(proxy, **ERAS[era]) as client:
            groups = await list_groups(client)
            assert [g.name for g in groups] == [
                "repos",
                "files",
                "branches",
                "issues",
                "pull_requests",
                "reviews",
                "search",
            ]
            assert groups[1].parents == ["repos"]
            assert [t.name for t in await list_tags(client)] == ["read-only", "irreversible"]
            assert [c.name for c in await list_concerns(client)] == ["risk"]
            assert await names(client) == INITIAL

            # A hidden tool is refused with the call that makes it available.
            with pytest.raises(ToolError, match=r'Call enable_tools\(groups=\["pull_requests"\]\)'):
                await client.call_tool("get_pull_request", {"owner": "o", "repo": "r"})
            enabled = await client.call_tool("enable_tools", {"groups": ["pull_requests"]})
            assert enabled.structured_content is not None
            assert enabled.structured_content["enabled"] == ["pull_requests"]

            # filter: the glob "*pull_request*" put ten proxied tools in the group; the
            # risk concern's default ("write") leaves out the irreversible merge.
            listed = await names(client, groups=["pull_requests"])
            assert listed == sorted(
                n for n in RECORDED if "pull_request" in n and n != "merge_pull_request"
            )
            read_only = await names(client, groups=["pull_requests"], tags=["read-only"])
            assert read_only == [
                "get_pull_request",
                "get_pull_request_comments",
                "get_pull_request_files",
                "get_pull_request_reviews",
                "get_pull_request_status",
                "list_pull_requests",
            ]

            # query search ranks the visible proxied tools.
            found = await names(client, query="comment on an issue")
            assert "add_issue_comment" in found
            top = (await list_tools(client, query="merge a pull request")).tools[0]
            assert top.name != "merge_pull_request"  # excluded by the concern default

            # concerns: refused under the default, reachable with a per-request override.
            with pytest.raises(ToolError, match=r"excluded by concern 'risk'"):
                await client.call_tool("merge_pull_request", {"owner": "o", "repo": "r"})
            wide = concerns_meta({"risk": "irreversible"})
            assert "merge_pull_request" in await names(client, meta=wide)
            merged = await client.call_tool(
                "merge_pull_request", {"owner": "o", "repo": "r", "pull_number": 7}, meta=wide
            )
            assert reply(merged) == {
                "upstream": "standin",
                "tool": "merge_pull_request",
                "arguments": {"owner": "o", "repo": "r", "pull_number": 7},
            }

            # A normal call reaches the upstream with its arguments; its errors come back.
            issue = await client.call_tool(
                "get_issue", {"owner": "o", "repo": "r", "issue_number": 3}
            )
            assert reply(issue)["arguments"] == {"owner": "o", "repo": "r", "issue_number": 3}
            with pytest.raises(ToolError, match="missing repo, issue_number"):
                await client.call_tool("get_issue", {"owner": "o"})

            # call_tool, for clients that ignore list_changed: every layer still applies.
            arguments = {"owner": "o", "repo": "r", "title": "t"}
            proxied = await client.call_tool(
                "call_tool", {"name": "create_issue", "arguments": arguments}
            )
            assert reply(proxied) == {
                "upstream": "standin",
                "tool": "create_issue",
                "arguments": arguments,
            }
            with pytest.raises(ToolError, match=r'enable_tools\(groups=\["repos", "branches"\]\)'):
                await client.call_tool(
                    "call_tool", {"name": "create_branch", "arguments": {"owner": "o"}}
                )


class TestFixedListsThroughTheGateway:
    """2026-07-28 through the proxy: enable_tools hands out definitions, no list moves."""

    async def test_a_client_with_no_identity_reaches_a_group_in_two_calls(self) -> None:
        proxy = build_proxy(load_config(EXAMPLE_CONFIG))
        async with asgi_server(proxy, stateless_http=True) as running, running.client() as client:
            before = await names(client)
            enabled = await client.call_tool("enable_tools", {"groups": ["pull_requests"]})
            handed = {t["name"]: t for t in (enabled.structured_content or {})["tools"]}
            assert "get_pull_request" in handed
            assert handed["get_pull_request"]["inputSchema"]["type"] == "object"
            arguments = {"owner": "o", "repo": "r", "pull_number": 1}
            result = await client.call_tool("get_pull_request", arguments)
            assert reply(result) == {
                "upstream": "standin",
                "tool": "get_pull_request",
                "arguments": arguments,
            }
            assert await names(client) == before

    async def test_side_effect_lists_makes_enable_and_concerns_change_later_lists(self) -> None:
        config = load_config(EXAMPLE_CONFIG).model_dump(exclude_none=True)
        config["side_effect_lists"] = True
        async with Client(build_proxy(FilteringConfig.model_validate(config))) as client:
            assert "get_pull_request" not in await names(client)
            await client.call_tool("enable_tools", {"groups": ["pull_requests"]})
            assert "get_pull_request" in await names(client)
            await call_method(client, "concerns/update", {"concerns": {"risk": "read"}})
            assert "create_pull_request" not in await names(client)

    def test_the_toml_options_reach_the_middlewares(self) -> None:
        config = load_config(EXAMPLE_CONFIG).model_dump(exclude_none=True)
        config["concerns_from_token"] = {"claim": "concerns"}
        built = FilteringConfig.model_validate(config)
        authorization = built.concern_authorization()
        assert authorization is not None
        assert authorization.claim == "concerns"
        with pytest.raises(ValueError, match=r"concerns_from_token\.scopes"):
            FilteringConfig.model_validate(
                {**config, "concerns_from_token": {"scopes": {"x": {"risk": "loud"}}}}
            )


def two_upstreams(url: str | None = None) -> FilteringConfig:
    """The stand-in twice, namespaced ``a`` (stdio) and ``b`` (stdio, or HTTP at ``url``)."""
    second: dict[str, Any] = (
        {"url": url} if url else {"command": sys.executable, "args": [str(STANDIN), "--label", "b"]}
    )
    return FilteringConfig.model_validate(
        {
            "upstreams": [
                {
                    "command": sys.executable,
                    "args": [str(STANDIN), "--label", "a"],
                    "namespace": "a",
                },
                {**second, "namespace": "b"},
            ],
            "groups": [
                {"name": "a_issues", "tools": ["a_*_issue", "a_list_issues"]},
                {"name": "b_search", "tools": ["b_search_*"]},
            ],
            "tags": [{"name": "read-only", "tools": ["*_get_*", "*_list_*", "*_search_*"]}],
        }
    )


@pytest.fixture(scope="class")
def http_upstream() -> Iterator[str]:
    with standin_http(label="b") as url:
        yield url


@pytest.mark.slow
class TestSeveralUpstreams:
    """Namespaced stdio and HTTP upstreams: globs see prefixed names, calls reach the right one."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_stdio_and_http_upstreams(self, era: str, http_upstream: str) -> None:
        proxy = build_proxy(two_upstreams(http_upstream))
        async with Client(proxy, **ERAS[era]) as client:
            everything = await names(client)
            assert len(everything) == 2 * len(RECORDED) + 1  # + search_tools
            assert {n.split("_", 1)[0] for n in everything if n != "search_tools"} == {"a", "b"}
            assert await names(client, groups=["a_issues"]) == [
                "a_create_issue",
                "a_get_issue",
                "a_list_issues",
                "a_update_issue",
            ]
            assert await names(client, groups=["b_search"], tags=["read-only"]) == [
                "b_search_code",
                "b_search_issues",
                "b_search_repositories",
                "b_search_users",
            ]
            args = {"owner": "o", "repo": "r", "issue_number": 1}
            assert reply(await client.call_tool("a_get_issue", args))["upstream"] == "a"
            result = reply(await client.call_tool("b_search_users", {"q": "octocat"}))
            assert result == {
                "upstream": "b",
                "tool": "search_users",
                "arguments": {"q": "octocat"},
            }


def tool(name: str) -> Tool:
    return Tool(name=name, parameters={"type": "object", "properties": {}})


class TestConfigAnnotations:
    def test_exact_name_beats_patterns_and_first_pattern_wins(self) -> None:
        annotations = ConfigAnnotations(
            tags={"read-only": ["get_*"]},
            concern_mapping={
                "get_*": {"risk": "read"},
                "*": {"risk": "write", "cost": "low"},
                "get_secret": {"risk": "high"},
            },
        )
        secret = annotations.annotate(tool("get_secret"))
        assert secret.tags == {"read-only"}
        assert secret.meta == {"concerns": {"risk": "high", "cost": "low"}}
        assert annotations.annotate(tool("get_issue")).meta == {
            "concerns": {"risk": "read", "cost": "low"}
        }
        plain = annotations.annotate(tool("create_issue"))
        assert plain.tags == set()
        assert plain.meta == {"concerns": {"risk": "write", "cost": "low"}}

    def test_an_unchanged_component_keeps_its_identity(self) -> None:
        """The proxy lists new objects each time; search indexes by identity."""
        annotations = ConfigAnnotations(tags={"read-only": ["get_*"]})
        first = annotations.annotate(tool("get_issue"))
        assert annotations.annotate(tool("get_issue")) is first
        changed = Tool(name="get_issue", description="new", parameters={"type": "object"})
        assert annotations.annotate(changed) is not first

    def test_nothing_to_add_returns_the_component(self) -> None:
        component = tool("create_issue")
        assert ConfigAnnotations(tags={"read-only": ["get_*"]}).annotate(component) is component

    async def test_relisted_proxied_resources_keep_their_identity_without_warnings(
        self,
    ) -> None:
        upstream = FastMCP("upstream")

        @upstream.resource("data://report")
        def report() -> str:
            return "r"

        @upstream.resource("data://{name}/notes")
        def notes(name: str) -> str:
            return name

        server = FastMCP("proxy")
        server.mount(create_proxy(upstream), namespace="a")
        annotations = ConfigAnnotations(concern_mapping={"*": {"risk": "read"}})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with unrestricted():
                first = await server.list_resources()
                second = await server.list_resources()
                templates = await server.list_resource_templates()
            marked = [annotations.annotate(r) for r in first]
            again = [annotations.annotate(r) for r in second]
            annotations.annotate(templates[0])
        # FastMCP's == serializes both components; a namespaced URI made it warn every listing.
        assert [str(w.message)[:60] for w in caught] == []
        assert all(a is b for a, b in zip(marked, again, strict=True))
        assert marked[0].meta is not None
        assert marked[0].meta["concerns"] == {"risk": "read"}

    async def test_tags_reach_filters_on_a_local_server(self) -> None:
        """The transform works on any FastMCP server, not only proxies."""
        server = FastMCP("local")
        server.add_tool(tool("get_issue"))
        server.add_tool(tool("create_issue"))
        server.add_transform(ConfigAnnotations(tags={"read-only": ["get_*"]}))
        listed = {t.name: t.tags for t in await server.list_tools()}
        assert listed == {"get_issue": {"read-only"}, "create_issue": set()}


ANNOTATED = Path(__file__).parents[1] / "_annotated_upstream.py"


def annotated_proxy(**extra: Any) -> FastMCP:
    """The annotated upstream behind a proxy with a ``risk`` concern from its annotations."""
    return build_proxy(
        FilteringConfig.model_validate(
            {
                "upstreams": [{"command": sys.executable, "args": [str(ANNOTATED)]}],
                "concerns": [{"name": "risk", "from_annotations": True, "default": "write"}],
                "apply_concern_defaults": "all",
                **extra,
            }
        )
    )


async def risks(client: Client[Any], **kwargs: Any) -> dict[str, str]:
    """Each listed upstream tool's ``_meta.concerns.risk``."""
    page = await list_tools(client, **kwargs)
    return {t.name: t.meta["concerns"]["risk"] for t in page.tools if "concerns" in (t.meta or {})}


class TestFromAnnotations:
    """``[[concerns]] from_annotations = true``: a risk from MCP annotations, no mapping written."""

    @pytest.mark.slow
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_risk_values_filter_and_refuse(self, era: str) -> None:
        async with Client(annotated_proxy(), **ERAS[era]) as client:
            [risk] = await list_concerns(client)
            assert (risk.values, risk.default, risk.ordered) == (
                ["read-only", "write", "destructive"],
                "write",
                True,
            )
            # The default (write) hides what is destructive, and what states nothing is.
            assert await risks(client) == {"read_notes": "read-only", "add_note": "write"}
            wide = concerns_meta({"risk": "destructive"})
            assert await risks(client, meta=wide) == {
                "read_notes": "read-only",
                "add_note": "write",
                "delete_notes": "destructive",
                "tidy_notes": "destructive",  # no annotations: the MCP defaults' reading
            }
            assert await risks(client, meta=concerns_meta({"risk": "read-only"})) == {
                "read_notes": "read-only"
            }
            with pytest.raises(ToolError, match=r"excluded by concern 'risk'"):
                await client.call_tool("delete_notes", {})
            deleted = await client.call_tool("delete_notes", {}, meta=wide)
            assert deleted.content[0].text == "deleted"  # type: ignore[union-attr]

    @pytest.mark.slow
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_concern_mapping_wins_over_annotations(self, era: str) -> None:
        proxy = annotated_proxy(
            concern_mapping={"tidy_notes": {"risk": "write"}, "read_*": {"risk": "write"}}
        )
        async with Client(proxy, **ERAS[era]) as client:
            assert await risks(client) == {
                "read_notes": "write",
                "add_note": "write",
                "tidy_notes": "write",
            }

    def test_annotations_give_the_value_prompts_get_none(self) -> None:
        annotations = ConfigAnnotations(from_annotations=["risk"])

        def annotated(**hints: bool) -> Tool:
            return Tool(name="t", parameters={"type": "object"}, annotations=hints or None)

        values = [
            (annotations.annotate(annotated(**h)).meta or {})["concerns"]["risk"]
            for h in (
                {"readOnlyHint": True},
                {"destructiveHint": False},
                {},
                {"destructiveHint": True},
            )
        ]
        assert values == ["read-only", "write", "destructive", "destructive"]
        # A destructive hint on a read-only tool means nothing (the MCP spec).
        both = annotated(readOnlyHint=True, destructiveHint=True)
        assert (annotations.annotate(both).meta or {})["concerns"] == {"risk": "read-only"}
        prompt = Prompt.from_function(lambda: "p", name="p")
        assert annotations.annotate(prompt).meta is None


def standin(label: str, **options: Any) -> dict[str, Any]:
    """The stand-in as a stdio upstream whose replies name ``label``; ``options`` add keys."""
    args = [str(STANDIN), "--label", label]
    if "instructions" in options:
        args += ["--instructions", options.pop("instructions")]
    return {"command": sys.executable, "args": args, **options}


GHOST = {"name": "ghost", "namespace": "g", "command": "/nonexistent/mcp-server"}
GHOST_REASON = "[Errno 2] No such file or directory: '<path>'"


def search_paragraph(config: FilteringConfig) -> str:
    """What the search layer adds to the instructions of a proxy of ``config``."""
    bare = config.model_copy(update={"upstreams": [], "instructions": None})
    return (
        SearchMiddleware(catalog=bare.catalog(), **config.search.options())
        .announce(
            mt.InitializeResult(
                protocol_version="2025-11-25",
                capabilities=mt.ServerCapabilities(),
                server_info=mt.Implementation(name="x", version="1"),
            )
        )
        .instructions
    )


@pytest.mark.slow
class TestUpstreamInstructions:
    """Each upstream's instructions reach the client, before the stack's paragraphs."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_one_upstream_keeps_its_instructions(self, era: str) -> None:
        config = FilteringConfig.model_validate(
            {"upstreams": [standin("a", instructions="Call get_issue for one issue.")]}
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert client.instructions == (
                f"Call get_issue for one issue.\n\n{search_paragraph(config)}"
            )

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_several_upstreams_under_their_names_after_the_configured_text(
        self, era: str
    ) -> None:
        config = FilteringConfig.model_validate(
            {
                "instructions": "One gateway for GitHub.",
                "upstreams": [
                    standin("a", namespace="a", instructions="A: issues.\nTwo lines."),
                    standin("b", namespace="b"),
                    standin("c", name="cee", namespace="c", instructions="C: pulls."),
                ],
                "search": {"enabled": False},
            }
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert client.instructions == snapshot(
                """\
One gateway for GitHub.

## a

A: issues.
Two lines.

## cee

C: pulls.\
"""
            )

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_dead_upstream_leaves_the_others_instructions(self, era: str) -> None:
        config = FilteringConfig.model_validate(
            {
                "on_upstream_error": "warn",
                "upstreams": [standin("a", namespace="a", instructions="A: issues."), GHOST],
                "search": {"enabled": False},
            }
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert client.instructions == "## a\n\nA: issues."


def upstream_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every warning logged about an upstream, by the package or by FastMCP."""
    return [
        r.getMessage()
        for r in caplog.records
        if (r.levelno >= logging.WARNING and "upstream" in r.getMessage().lower())
        or r.getMessage().startswith("Error during")
    ]


@pytest.mark.slow
class TestDeadUpstreams:
    """on_upstream_error: "warn" (the default with several upstreams) serves what is alive
    and names what is not, once; "raise" (the default with one) fails naming it."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_warn_serves_the_live_upstream_and_logs_the_dead_one_once(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        config = FilteringConfig.model_validate(
            {"on_upstream_error": "warn", "upstreams": [standin("a", namespace="a"), GHOST]}
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            for _ in range(3):
                listed = await names(client)
                assert listed == sorted([f"a_{n}" for n in RECORDED] + ["search_tools"])
            assert await client.list_prompts() == []
            args = {"owner": "o", "repo": "r", "issue_number": 1}
            assert reply(await client.call_tool("a_get_issue", args))["upstream"] == "a"
            with pytest.raises(ToolError, match="Unknown tool"):
                await client.call_tool("g_anything", {})
        assert upstream_warnings(caplog) == [
            f"upstream 'ghost' is unavailable: {GHOST_REASON}; serving the other upstreams "
            "without it until it answers"
        ]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_lone_dead_upstream_still_lets_clients_connect(self, era: str) -> None:
        config = FilteringConfig.model_validate(
            {"on_upstream_error": "warn", "upstreams": [{**GHOST, "namespace": None}]}
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert await names(client) == ["search_tools"]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_raise_fails_listings_naming_the_upstream(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        config = FilteringConfig.model_validate(
            {"on_upstream_error": "raise", "upstreams": [standin("a", namespace="a"), GHOST]}
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            with pytest.raises(MCPError, match=r"upstream 'ghost' is unavailable: .*<path>"):
                await client.list_tools()
        # The log says what clients get in this mode, not what "warn" would do.
        assert upstream_warnings(caplog)[:1] == [
            f"upstream 'ghost' is unavailable: {GHOST_REASON}; each request that needs it "
            "fails with an error naming it until it answers"
        ]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_by_default_one_dead_upstream_among_several_is_left_out(self, era: str) -> None:
        config = FilteringConfig.model_validate({"upstreams": [standin("a", namespace="a"), GHOST]})
        async with Client(build_proxy(config), **ERAS[era]) as client:
            listed = await names(client)
        assert listed == sorted([f"a_{n}" for n in RECORDED] + ["search_tools"])

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_by_default_a_lone_dead_upstream_fails_naming_it(self, era: str) -> None:
        config = FilteringConfig.model_validate({"upstreams": [{**GHOST, "namespace": None}]})
        async with Client(build_proxy(config), **ERAS[era]) as client:
            with pytest.raises(MCPError, match=r"upstream 'ghost' is unavailable"):
                await client.list_tools()

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_an_upstream_that_comes_back_is_served_again(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        config = FilteringConfig.model_validate(
            {
                "on_upstream_error": "warn",
                "upstreams": [
                    standin("a", namespace="a"),
                    # Asked again at once: the back-off after a failure has tests of its own.
                    {"name": "later", "namespace": "b", "url": url, "backoff": 0},
                ],
            }
        )
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert not [n for n in await names(client) if n.startswith("b_")]
            with standin_http(label="b", port=port):
                listed = await names(client)
                assert len([n for n in listed if n.startswith("b_")]) == len(RECORDED)
                result = reply(await client.call_tool("b_search_users", {"q": "x"}))
                assert result["upstream"] == "b"
        messages = [r.getMessage() for r in caplog.records if "'later'" in r.getMessage()]
        assert len(messages) == 2
        assert messages[0].startswith("upstream 'later' is unavailable: ")
        assert messages[1].startswith("upstream 'later' answers again (")

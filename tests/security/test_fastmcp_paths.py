"""What FastMCP renames, injects and mounts is judged like anything else (both eras).

Each class is one way a component reaches a client other than a provider's plain listing:
a ``ToolTransform`` rename before the stack, a ``ToolInjectionMiddleware``, a mounted server
with its own stack under a progressive parent. A reader (no ``github:admin``), an anonymous
client under ``unauthenticated="deny"`` and an admin try each.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server import create_proxy
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware.caching import ResponseCachingMiddleware
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.server.transforms import ToolTransform
from fastmcp.tools import Tool
from fastmcp.tools.tool_transform import ToolTransformConfig
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Concern, ConcernMiddleware, Group, add_filtering, concerns, in_group
from fastmcp_filtering.client import call_method, update_concerns

from .._principals import PrincipalByClientName, as_principal
from ..conftest import ERAS, use

ADMIN = Group("admin", access=require_scopes("github:admin"))


def _client(server: FastMCP, era: str, who: str | None) -> Client[Any]:
    return Client(server, **ERAS[era], **(as_principal(who) if who else {}))


async def _names(client: Client[Any]) -> list[str]:
    return sorted(t.name for t in await client.list_tools())


async def _found(client: Client[Any], query: str) -> list[str]:
    reply = await client.call_tool("search_tools", {"query": query})
    assert reply.structured_content is not None
    return [t["name"] for t in reply.structured_content["tools"]]


@pytest.fixture(params=list(ERAS), ids=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def renamed_server() -> FastMCP:
    """``drop_table`` in ``admin`` by ``@in_group``, renamed ``cleanup_table`` before the stack."""
    mcp = FastMCP("renamed")
    mcp.add_middleware(PrincipalByClientName())

    @in_group("admin")
    @mcp.tool
    def drop_table() -> str:
        """Drop every table of the database."""
        return "dropped"

    @mcp.tool
    def ping() -> str:
        return "pong"

    mcp.add_transform(ToolTransform({"drop_table": ToolTransformConfig(name="cleanup_table")}))
    add_filtering(mcp, groups=[ADMIN])
    return mcp


class TestARenameKeepsTheGroup:
    @pytest.mark.parametrize("who", ["reader", None])
    async def test_hidden_from_who_may_not_use_it(self, era: str, who: str | None) -> None:
        mcp = renamed_server()
        async with _client(mcp, era, who) as client:
            assert await _names(client) == ["ping", "search_tools"]
            assert "cleanup_table" not in await _found(client, "drop every table")
            with pytest.raises(ToolError, match="Unknown tool"):
                await client.call_tool("cleanup_table", {})

    async def test_however_many_times_it_was_wrapped(self, era: str) -> None:
        mcp = FastMCP("wrapped")
        mcp.add_middleware(PrincipalByClientName())

        @in_group("admin")
        @mcp.tool
        def drop_table() -> str:
            return "dropped"

        wrapped: Tool = drop_table
        for depth in range(24):
            wrapped = Tool.from_tool(wrapped, name=f"w{depth}")
        mcp.local_provider.remove_tool("drop_table")
        mcp.add_tool(wrapped)
        add_filtering(mcp, groups=[ADMIN])
        async with _client(mcp, era, "reader") as client:
            assert await _names(client) == ["search_tools"]

    async def test_the_admin_uses_it_under_its_new_name(self, era: str) -> None:
        async with _client(renamed_server(), era, "admin") as client:
            listed = {t.name: t for t in await client.list_tools()}
            assert "cleanup_table" in listed
            assert (listed["cleanup_table"].meta or {}).get("io.modelcontextprotocol/groups") == [
                "admin"
            ]
            assert (await client.call_tool("cleanup_table", {})).data == "dropped"

    async def test_a_pattern_on_the_old_name_still_holds(self, era: str) -> None:
        mcp = FastMCP("renamed")
        mcp.add_middleware(PrincipalByClientName())
        mcp.tool(lambda: "dropped", name="drop_table")
        mcp.add_transform(ToolTransform({"drop_table": ToolTransformConfig(name="cleanup")}))
        add_filtering(
            mcp, groups=[Group("admin", tools=["drop_*"], access=require_scopes("github:admin"))]
        )
        async with _client(mcp, era, "reader") as client:
            assert await _names(client) == ["search_tools"]


class TestARenameKeepsTheConcerns:
    async def test_a_renamed_tool_is_judged_by_its_declared_concerns(self) -> None:
        mcp = FastMCP("renamed")

        @concerns(cost="high")
        @mcp.tool
        def bulk_export() -> str:
            return "exported"

        mcp.tool(lambda: "pong", name="ping")
        mcp.add_transform(ToolTransform({"bulk_export": ToolTransformConfig(name="export_all")}))
        use(mcp, ConcernMiddleware(concerns=[Concern("cost", values=["minimal", "high"])]))
        async with Client(mcp, mode="legacy") as client:
            assert await _names(client) == ["export_all", "ping"]
            await update_concerns(client, {"cost": "minimal"})
            assert await _names(client) == ["ping"]


def injected_server(**options: Any) -> FastMCP:
    """A ``ToolInjectionMiddleware`` injects ``drop_database`` (``admin``) and ``status``."""

    def drop_database() -> str:
        """Drop the whole database."""
        return "gone"

    def status() -> str:
        """Report the database status."""
        return "ok"

    mcp = FastMCP("injected")
    mcp.add_middleware(PrincipalByClientName())
    mcp.add_middleware(
        ToolInjectionMiddleware(
            [in_group("admin")(Tool.from_function(drop_database)), Tool.from_function(status)]
        )
    )

    @mcp.tool
    def ping() -> str:
        return "pong"

    add_filtering(mcp, groups=[ADMIN, Group("ops", tools=["status"])], **options)
    return mcp


@pytest.mark.side_effect_lists
class TestInjectedToolsAreJudged:
    async def test_an_injection_added_after_the_stack_is_judged_too(self, era: str) -> None:
        mcp = FastMCP("late")
        mcp.add_middleware(PrincipalByClientName())
        add_filtering(mcp, groups=[ADMIN])

        def drop_database() -> str:
            return "gone"

        async with _client(mcp, era, "reader") as client:
            assert await _names(client) == ["search_tools"]
            mcp.add_middleware(
                ToolInjectionMiddleware([in_group("admin")(Tool.from_function(drop_database))])
            )
            assert await _names(client) == ["search_tools"]
            with pytest.raises(ToolError, match="Unknown tool"):
                await client.call_tool("drop_database", {})

    async def test_an_injection_swapped_in_after_the_stack_is_judged_too(self, era: str) -> None:
        mcp = FastMCP("swapped")
        mcp.add_middleware(PrincipalByClientName())
        mcp.add_middleware(ToolInjectionMiddleware([]))
        add_filtering(mcp, groups=[ADMIN])

        def drop_database() -> str:
            return "gone"

        async with _client(mcp, era, "reader") as client:
            assert await _names(client) == ["search_tools"]
            # Swapped in place of the empty one: the chain is as long as before.
            empty = next(
                i for i, m in enumerate(mcp.middleware) if type(m).__name__ == "JudgedInjection"
            )
            mcp.middleware[empty] = ToolInjectionMiddleware(
                [in_group("admin")(Tool.from_function(drop_database))]
            )
            assert await _names(client) == ["search_tools"]
            with pytest.raises(ToolError, match="Unknown tool"):
                await client.call_tool("drop_database", {})

    @pytest.mark.parametrize("who", ["reader", None])
    async def test_hidden_from_who_may_not_use_them(self, era: str, who: str | None) -> None:
        async with _client(injected_server(), era, who) as client:
            assert await _names(client) == ["ping", "search_tools", "status"]
            assert "drop_database" not in await _found(client, "drop the whole database")
            with pytest.raises(ToolError, match="Unknown tool"):
                await client.call_tool("drop_database", {})

    async def test_the_admin_lists_and_calls_them(self, era: str) -> None:
        async with _client(injected_server(), era, "admin") as client:
            assert await _names(client) == ["drop_database", "ping", "search_tools", "status"]
            assert (await client.call_tool("drop_database", {})).data == "gone"
            assert "drop_database" in await _found(client, "drop the whole database")

    async def test_a_group_not_enabled_hides_them_until_it_is(self, era: str) -> None:
        mcp = injected_server(progressive={"initial_groups": []})
        async with _client(mcp, era, "admin") as client:
            assert "status" not in await _names(client)
            with pytest.raises(ToolError, match="not enabled"):
                await client.call_tool("status", {})
            if era == "legacy":
                await client.call_tool("enable_tools", {"groups": ["ops"]})
                assert (await client.call_tool("status", {})).data == "ok"


def mounted_parent() -> FastMCP:
    """A child with its own ``admin`` group, mounted as ``ops`` under a progressive parent."""
    child = FastMCP("ops")

    @in_group("admin")
    @child.tool
    def wipe_vault() -> str:
        return "wiped"

    for name in ("wipe_backups", "wipe_keys", "wipe_logs"):
        in_group("admin")(child.tool(lambda: "wiped", name=name))

    @child.tool
    def restart() -> str:
        return "restarted"

    add_filtering(child, groups=[ADMIN], search=False)
    parent = FastMCP("parent")
    parent.add_middleware(PrincipalByClientName())
    parent.mount(child, namespace="ops")
    add_filtering(
        parent,
        groups=[Group("ops", tools=["ops_*"])],
        progressive={"initial_groups": [], "max_tools": 3},
    )
    return parent


class TestAMountedServersOwnAccess:
    async def test_a_hidden_child_tool_is_unknown_to_the_reader(self, era: str) -> None:
        async with _client(mounted_parent(), era, "reader") as client:
            with pytest.raises(ToolError) as hidden:
                await client.call_tool("ops_wipe_vault", {})
            with pytest.raises(ToolError) as absent:
                await client.call_tool("ops_no_such_tool", {})
        assert str(hidden.value) == str(absent.value).replace("ops_no_such_tool", "ops_wipe_vault")

    async def test_max_tools_counts_only_what_the_reader_may_use(self, era: str) -> None:
        if era != "legacy":
            pytest.skip("enabling groups keeps state: a session (2025-11-25) holds it here")
        async with _client(mounted_parent(), era, "reader") as client:
            reply = await client.call_tool("enable_tools", {"groups": ["ops"]})
            assert reply.structured_content is not None
            assert reply.structured_content["errors"] == []
            assert reply.structured_content["available_tools"] == ["ops_restart"]


class TestFastMCPsResponseCache:
    async def test_refused_when_the_stack_is_added(self) -> None:
        mcp = FastMCP("cached")
        mcp.tool(lambda item: f"deleted {item}", name="delete_item")
        mcp.add_middleware(ResponseCachingMiddleware())
        with pytest.raises(ValueError, match="Remove ResponseCachingMiddleware"):
            add_filtering(mcp, groups=[Group("write", tools=["delete_*"])], progressive=True)

    async def test_added_later_every_request_is_refused(self, era: str) -> None:
        """Added after the stack: no request is answered (none from another's cache)."""
        mcp = FastMCP("cached")
        mcp.tool(lambda item: f"deleted {item}", name="delete_item")
        add_filtering(
            mcp, groups=[Group("write", tools=["delete_*"])], progressive={"initial_groups": []}
        )
        mcp.add_middleware(ResponseCachingMiddleware())
        with pytest.raises(Exception, match="Remove ResponseCachingMiddleware"):
            async with _client(mcp, era, None) as client:
                await client.call_tool("delete_item", {"item": "x"})


def proxied_docs() -> FastMCP:
    """A proxy of an upstream whose hidden ``docs://salary-{year}`` precedes an open
    ``docs://{name}``: the upstream resolves a URI by its own order."""
    upstream = FastMCP("docs")

    @upstream.resource("docs://salary-{year}")
    def salary(year: str) -> str:
        return f"SECRET salaries {year}"

    @upstream.resource("docs://{name}")
    def doc(name: str) -> str:
        return f"doc {name}"

    proxy = create_proxy(upstream)
    proxy.add_middleware(PrincipalByClientName())
    add_filtering(
        proxy,
        groups=[
            Group("admin", tools=["docs://salary-*"], access=require_scopes("github:admin")),
            Group("data", tools=["docs://{name}"]),
        ],
    )
    return proxy


class TestAHiddenTemplateClaimsItsURIs:
    @pytest.mark.parametrize("who", ["reader", None])
    async def test_its_uri_is_not_read_through_an_open_template(
        self, era: str, who: str | None
    ) -> None:
        async with _client(proxied_docs(), era, who) as client:
            templates = [t.uri_template for t in await client.list_resource_templates()]
            assert templates == ["docs://{name}"]
            with pytest.raises(MCPError) as hidden:
                await client.read_resource("docs://salary-2024")
            with pytest.raises(MCPError) as absent:
                await client.read_resource("nothing://x")
            # As if nothing claimed it: not read through the open template.
            assert str(hidden.value) == str(absent.value).replace(
                "nothing://x", "docs://salary-2024"
            )
            assert (await client.read_resource("docs://readme"))[0].text == "doc readme"  # type: ignore[union-attr]

    async def test_the_admin_reads_it(self, era: str) -> None:
        async with _client(proxied_docs(), era, "admin") as client:
            read = await client.read_resource("docs://salary-2024")
        assert read[0].text == "SECRET salaries 2024"  # type: ignore[union-attr]


HIDDEN_TEMPLATE = "docs://admin/{report}"


def completing_server(*, hidden_first: bool, guard: str) -> tuple[FastMCP, list[str]]:
    """An open ``docs://{path*}`` and an admin-only ``docs://admin/{report}`` (guarded by a
    group's access rule, or by its own ``auth`` with or without a layer), in either order,
    and a completion handler that completes the admin template's argument; the second
    value records each reference the handler was asked about."""
    mcp = FastMCP("docs")
    mcp.add_middleware(PrincipalByClientName())
    asked: list[str] = []

    def add_open() -> None:
        mcp.resource("docs://{path*}", name="doc")(lambda path: f"doc {path}")

    def add_hidden() -> None:
        auth = require_scopes("github:admin") if guard != "group" else None
        mcp.resource(HIDDEN_TEMPLATE, name="admin_report", auth=auth)(lambda report: "SECRET")

    for add in (add_hidden, add_open) if hidden_first else (add_open, add_hidden):
        add()
    if guard == "group":
        groups = [Group("admin", tools=["admin_*"], access=require_scopes("github:admin"))]
    else:
        groups = [Group("ops", access=require_scopes("github:admin"))] if guard == "auth" else []
    add_filtering(mcp, groups=groups)

    @mcp.completion
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        asked.append(str(getattr(ref, "uri", "")))
        return ["payroll-2026"] if getattr(ref, "uri", None) == HIDDEN_TEMPLATE else []

    return mcp, asked


class TestCompletionOfHiddenTemplates:
    @pytest.mark.parametrize("hidden_first", [False, True])
    @pytest.mark.parametrize("guard", ["group", "auth", "auth_without_layer"])
    async def test_a_hidden_identifier_completes_as_a_made_up_one(
        self, era: str, hidden_first: bool, guard: str
    ) -> None:
        """Whatever the order, the handler never runs for it: an open wildcard template also
        matching its identifier as text must not complete the admin template for a reader."""
        mcp, asked = completing_server(hidden_first=hidden_first, guard=guard)
        answers = []
        async with _client(mcp, era, "reader") as reader:
            for uri in (HIDDEN_TEMPLATE, "docs://nothing/{report}"):
                params = {
                    "ref": {"type": "ref/resource", "uri": uri},
                    "argument": {"name": "report", "value": ""},
                }
                answers.append(await call_method(reader, "completion/complete", params))
        assert answers[0] == answers[1]
        assert answers[0]["completion"]["values"] == []
        assert HIDDEN_TEMPLATE not in asked
        async with _client(mcp, era, "admin") as admin:
            got = await call_method(
                admin,
                "completion/complete",
                params | {"ref": {"type": "ref/resource", "uri": HIDDEN_TEMPLATE}},
            )
        assert got["completion"]["values"] == ["payroll-2026"]

    async def test_the_open_template_still_completes(self, era: str) -> None:
        mcp, asked = completing_server(hidden_first=False, guard="group")
        async with _client(mcp, era, "reader") as reader:
            params = {
                "ref": {"type": "ref/resource", "uri": "docs://{path*}"},
                "argument": {"name": "path", "value": ""},
            }
            await call_method(reader, "completion/complete", params)
        assert asked == ["docs://{path*}"]

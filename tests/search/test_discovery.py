"""Search finds tools of groups not enabled yet, and says how to get them; meta-tools never rank."""

from __future__ import annotations

import pytest
from inline_snapshot import snapshot

from fastmcp_filtering.client import better_matches, call_method, list_tools
from fastmcp_filtering.core.declarations import BETTER_MATCHES_META_KEY

from .._support.discovery import GROUPS, brief, make_server, search, tool
from ..conftest import Connect


@pytest.mark.side_effect_lists
class TestSearchToolsDiscovers:
    async def test_a_tool_of_a_group_not_enabled_is_offered_with_the_call(
        self, connect: Connect
    ) -> None:
        async with connect(make_server()) as client:
            found = await search(client, "save text to a new file")
        assert brief(found)[0] == ("write_file", {"enable_tools": {"groups": ["write"]}})
        assert "inputSchema" not in found[0]
        # Callable and enable-able tools share one ranking; callable ones come whole.
        callable_ = [t for t in found if "available_after" not in t]
        assert callable_
        assert all("inputSchema" in t for t in callable_)

    async def test_a_child_under_a_disabled_parent_names_the_parent_first(
        self, connect: Connect
    ) -> None:
        async with connect(make_server(initial=())) as client:
            await client.call_tool("disable_tools", {"groups": ["files"]})
            found = await search(client, "save text to a new file")
        assert brief(found)[0] == ("write_file", {"enable_tools": {"groups": ["files", "write"]}})

    async def test_enabling_as_told_makes_it_callable(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            found = await search(client, "save text to a new file")
            await client.call_tool("enable_tools", found[0]["available_after"]["enable_tools"])
            again = await search(client, "save text to a new file")
            assert again[0]["name"] == "write_file"
            assert "available_after" not in again[0]
            assert (await client.call_tool("write_file", {"path": "x"})).content

    async def test_max_tools_says_what_to_disable_first(self, connect: Connect) -> None:
        # read has 2 tools, write 3 (members are counted whoever may see them).
        async with connect(make_server(max_tools=3)) as client:
            found = await search(client, "save text to a new file")
            assert brief(found)[0] == snapshot(
                (
                    "write_file",
                    {
                        "disable_tools": {"groups": ["read"]},
                        "enable_tools": {"groups": ["write"]},
                    },
                )
            )
            # Following the advice works.
            calls = found[0]["available_after"]
            await client.call_tool("disable_tools", calls["disable_tools"])
            reply = await client.call_tool("enable_tools", calls["enable_tools"])
            assert reply.structured_content["errors"] == []

    async def test_a_group_larger_than_max_tools_is_not_offered(self, connect: Connect) -> None:
        async with connect(make_server(max_tools=2)) as client:
            found = await search(client, "save text to a new file")
        assert "write_file" not in [t["name"] for t in found]

    async def test_what_another_layer_hides_is_never_named(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            for query in ["launch a rocket", "save the world", "shred destroy file", "rocket"]:
                names = [t["name"] for t in await search(client, query)]
                assert "launch_rocket" not in names
                assert "shred_file" not in names

    async def test_a_hidden_word_does_not_change_the_ranking(self, connect: Connect) -> None:
        # "rocket" is only in a tool another layer hides: the search must answer as if the
        # word were unknown, exactly as on a server without that tool.
        plain = make_server(rocket=False)
        async with connect(make_server()) as client, connect(plain) as reference:
            for query in ["rocket", "destroy", "save the world file"]:
                assert await search(client, query) == await search(reference, query)


@pytest.mark.side_effect_lists
class TestListQueryDiscovers:
    async def test_only_callable_tools_and_the_groups_with_better_matches(
        self, connect: Connect
    ) -> None:
        async with connect(make_server()) as client:
            result = await call_method(client, "tools/list", {"query": "save text to a new file"})
        names = [t["name"] for t in result["tools"]]
        assert "write_file" not in names
        assert names  # read tools still match "file" and "text"
        assert result["_meta"][BETTER_MATCHES_META_KEY] == ["write"]

    async def test_no_key_when_nothing_better_is_hidden(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            result = await call_method(client, "tools/list", {"query": "directory tree"})
        assert [t["name"] for t in result["tools"]] == ["directory_tree"]
        assert BETTER_MATCHES_META_KEY not in (result.get("_meta") or {})

    async def test_pages_hold_only_callable_tools(self, connect: Connect) -> None:
        async with connect(make_server(max_results=1)) as client:
            pages = []
            cursor = None
            while True:
                page = await list_tools(client, query="file text", cursor=cursor)
                pages.append(([t.name for t in page.tools], better_matches(page)))
                cursor = page.next_cursor
                if cursor is None:
                    break
        # write_file and edit_file rank among them, in a group not enabled: never listed,
        # named by their group on the page they would have been on.
        listed = [name for names, _ in pages for name in names]
        assert listed
        assert set(listed) <= {"read_text_file", "directory_tree"}
        assert all(len(names) == 1 for names, _ in pages)
        assert "write" in {group for _, groups in pages for group in groups}

    async def test_the_client_helper_reads_them(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            page = await list_tools(client, query="save text to a new file")
            assert better_matches(page) == ["write"]
            assert better_matches(await list_tools(client, query="directory tree")) == []

    async def test_a_filter_bounds_the_groups_named(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            result = await call_method(
                client,
                "tools/list",
                {"query": "record changes commit", "filter": {"groups": ["files"]}},
            )
        assert "git" not in (result.get("_meta") or {}).get(BETTER_MATCHES_META_KEY, [])


class TestMetaToolsAreNotRanked:
    async def test_requests_about_tools_do_not_get_meta_tools(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            for query in ["search tools", "enable tools for files", "disable tools", "tools"]:
                names = [t["name"] for t in await search(client, query)]
                assert not {"search_tools", "enable_tools", "disable_tools"} & set(names)
                listed = await call_method(client, "tools/list", {"query": query})
                assert not {"search_tools", "enable_tools", "disable_tools"} & {
                    t["name"] for t in listed["tools"]
                }

    async def test_naming_one_exactly_finds_it(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            listed = await call_method(client, "tools/list", {"query": "enable_tools"})
            found = await search(client, "enable_tools")
        assert [t["name"] for t in listed["tools"]] == ["enable_tools"]
        # Under hide_ungrouped too: a meta-tool is in no group, and always listed.
        assert [t["name"] for t in found] == ["enable_tools"]

    async def test_meta_tools_stay_in_the_plain_list(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            names = {t.name for t in await client.list_tools()}
        assert {"search_tools", "enable_tools", "disable_tools"} <= names


class TestOnlyWhatEnablingCanShow:
    def test_a_client_that_cannot_enable_groups_is_offered_nothing(self) -> None:
        from fastmcp_filtering.core.catalog import Catalog
        from fastmcp_filtering.core.options import ProgressiveOptions
        from fastmcp_filtering.progressive.rules import Enabled, EnabledStore, ProgressiveLayer
        from fastmcp_filtering.progressive.rules import _View as View

        catalog = Catalog(groups=GROUPS)
        layer = ProgressiveLayer(EnabledStore(catalog, ["files"], "test"), ProgressiveOptions())
        write = tool("write_file", "Save text", "write")
        can = View(layer, catalog, Enabled(frozenset({"files"}))).judge(write)
        assert can is not None
        assert can.enable == ("write",)
        for problem in ("anonymous", "store"):
            cannot = View(layer, catalog, Enabled(frozenset({"files"}), problem)).judge(write)
            # Still a hint for a direct call, but no enable call search could offer.
            assert cannot is not None
            assert cannot.discoverable
            assert cannot.enable == ()


@pytest.mark.side_effect_lists
class TestHintsFollowMaxTools:
    async def test_a_hidden_tools_hint_says_what_to_disable_first(self, connect: Connect) -> None:
        # read has 2 tools, write 3: with max_tools=3 write fits only once read is disabled.
        async with connect(make_server(max_tools=3)) as client:
            result = await client.call_tool("write_file", {"path": "x"}, raise_on_error=False)
            assert result.is_error
            assert result.content[0].text == snapshot(
                "Tool 'write_file' is in group 'write', which is not enabled. Call "
                'enable_tools(groups=["write"]) first. Enabled now: ["files", "read"]. max_tools '
                'leaves no room for that: call disable_tools(groups=["read"]) then '
                'enable_tools(groups=["write"]) instead.'
            )

    async def test_a_group_larger_than_max_tools_is_said_to_be(self, connect: Connect) -> None:
        async with connect(make_server(max_tools=2)) as client:
            result = await client.call_tool("write_file", {"path": "x"}, raise_on_error=False)
            assert result.is_error
            assert "No group can be enabled to show it within max_tools" in result.content[0].text

    async def test_without_a_cap_the_hint_is_unchanged(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            result = await client.call_tool("write_file", {"path": "x"}, raise_on_error=False)
            assert "max_tools" not in result.content[0].text

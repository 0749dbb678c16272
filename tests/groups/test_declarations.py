from __future__ import annotations

import pytest
from fastmcp import FastMCP
from fastmcp.tools import Tool

from fastmcp_filtering import GROUPS_META_KEY, Group, Tag, add_filtering, in_group
from fastmcp_filtering.client import call_method
from fastmcp_filtering.core.declarations import declared_groups_of

from ..conftest import Connect


class TestGroup:
    def test_parent_accepts_one_name_or_several(self) -> None:
        assert Group("a", parent="p").parents == ("p",)
        assert Group("a", parent=["p", "q", "p"]).parents == ("p", "q")
        assert Group("a").parents == ()

    @pytest.mark.parametrize("name", ["", " spaced", "a b", "-lead", "x" * 257, "é"])
    def test_invalid_name_is_refused_with_the_rule(self, name: str) -> None:
        with pytest.raises(ValueError, match="invalid group name"):
            Group(name)

    def test_non_string_name_is_refused(self) -> None:
        with pytest.raises(ValueError, match="must be a string"):
            Group(3)  # type: ignore[arg-type]

    def test_self_parent_is_refused(self) -> None:
        with pytest.raises(ValueError, match="names itself as parent"):
            Group("a", parent="a")

    def test_tools_as_bare_string_is_refused_with_the_fix(self) -> None:
        with pytest.raises(ValueError, match=r"tools=\['delete_\*'\]"):
            Group("admin", tools="delete_*")

    def test_wire_form_carries_parents_in_meta(self) -> None:
        group = Group(
            "repos",
            title="Repositories",
            description="Repos",
            parent="code",
            icons=[{"src": "https://example.com/r.png", "mimeType": "image/png"}],
            annotations={"audience": ["user"]},
        )
        assert group.to_wire() == {
            "name": "repos",
            "title": "Repositories",
            "description": "Repos",
            "icons": [{"src": "https://example.com/r.png", "mimeType": "image/png"}],
            "annotations": {"audience": ["user"]},
            "_meta": {GROUPS_META_KEY: ["code"]},
        }

    def test_an_annotations_title_is_kept_and_shown(self) -> None:
        """The grouping proposal's display-name order: title, annotations.title, name."""
        group = Group("repos", annotations={"title": "Repositories", "priority": 0.5})
        assert group.to_wire()["annotations"] == {"title": "Repositories", "priority": 0.5}
        assert group.display_title == "Repositories"
        assert Group("repos", title="Repos", annotations={"title": "R"}).display_title == "Repos"
        assert Group("repos").display_title is None

    async def test_groups_list_carries_the_annotations_title(self, connect: Connect) -> None:
        mcp = FastMCP("annotated")
        add_filtering(mcp, groups=[Group("repos", annotations={"title": "Repositories"})])
        async with connect(mcp) as client:
            groups = (await call_method(client, "groups/list", {}))["groups"]
        assert groups == [{"name": "repos", "annotations": {"title": "Repositories"}}]


class TestTag:
    def test_wire_form(self) -> None:
        assert Tag("stable", "Production-ready").to_wire() == {
            "name": "stable",
            "description": "Production-ready",
        }
        assert Tag("beta").to_wire() == {"name": "beta"}

    def test_invalid_name(self) -> None:
        with pytest.raises(ValueError, match="invalid tag name"):
            Tag("has space")


class TestInGroup:
    async def test_below_and_above_the_tool_decorator(self) -> None:
        mcp = FastMCP("t")

        @in_group("below")
        @mcp.tool
        def below() -> str:
            return ""

        @mcp.tool
        @in_group("above")
        def above() -> str:
            return ""

        tools = {t.name: t for t in await mcp.list_tools()}
        assert declared_groups_of(tools["below"]) == ("below",)
        assert declared_groups_of(tools["above"]) == ("above",)

    def test_on_a_component_sets_the_meta_key(self) -> None:
        tool = in_group("a", "b")(Tool.from_function(lambda: "x", name="t"))
        assert tool.meta == {GROUPS_META_KEY: ["a", "b"]}

    def test_sources_are_unioned(self) -> None:
        def fn() -> str:
            return ""

        in_group("deco")(fn)
        tool = Tool.from_function(fn, name="t", meta={GROUPS_META_KEY: ["meta"]})
        assert declared_groups_of(tool) == ("deco", "meta")

    def test_needs_a_name(self) -> None:
        with pytest.raises(ValueError, match="at least one group"):
            in_group()

    def test_checks_names(self) -> None:
        with pytest.raises(ValueError, match="invalid group name"):
            in_group("no spaces")

    def test_refuses_non_callables(self) -> None:
        with pytest.raises(TypeError, match="functions and FastMCP components"):
            in_group("a")(3)

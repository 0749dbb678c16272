from __future__ import annotations

import logging

import pytest
from fastmcp.prompts import Prompt
from fastmcp.resources import Resource, ResourceTemplate
from fastmcp.tools import Tool

from fastmcp_filtering import GROUPS_META_KEY, Catalog, Group, Tag, in_group


def tool(name: str, *groups: str) -> Tool:
    t = Tool.from_function(lambda: "", name=name)
    return in_group(*groups)(t) if groups else t


HIERARCHY = [
    Group("code"),
    Group("repos", parent="code"),
    Group("branches", parent="repos"),
    Group("issues"),
    Group("shared", parent=["code", "issues"]),
]


class TestValidation:
    def test_unknown_parent_names_the_culprit(self) -> None:
        with pytest.raises(ValueError, match=r"group 'repos' names unknown parent 'cod'"):
            Catalog(groups=[Group("code"), Group("repos", parent="cod")])

    def test_cycle_is_reported_with_its_path(self) -> None:
        with pytest.raises(ValueError, match=r"cycle: a -> b -> a|cycle: b -> a -> b"):
            Catalog(groups=[Group("a", parent="b"), Group("b", parent="a")])

    def test_duplicate_group(self) -> None:
        with pytest.raises(ValueError, match="group 'a' is declared twice"):
            Catalog(groups=[Group("a"), Group("a")])

    def test_duplicate_tag(self) -> None:
        with pytest.raises(ValueError, match="tag 't' is declared twice"):
            Catalog(tags=[Tag("t"), Tag("t")])

    def test_plain_strings_are_refused_with_the_fix(self) -> None:
        with pytest.raises(ValueError, match=r"use Group\('issues'\)"):
            Catalog(groups=["issues"])  # type: ignore[list-item]


class TestHierarchy:
    def test_ancestors_descendants_roots(self) -> None:
        catalog = Catalog(groups=HIERARCHY)
        assert catalog.ancestors("branches") == {"branches", "repos", "code"}
        assert catalog.descendants("code") == {"code", "repos", "branches", "shared"}
        assert catalog.roots() == ("code", "issues")
        assert catalog.children("code") == ("repos", "shared")


class TestMembership:
    def test_direct_groups_in_declaration_order_and_effective_with_ancestors(self) -> None:
        catalog = Catalog(groups=HIERARCHY)
        membership = catalog.membership(tool("t", "issues", "branches"))
        assert membership.direct == ("branches", "issues")
        assert membership.effective == {"branches", "repos", "code", "issues"}

    def test_patterns_match_tools_prompts_resources_and_templates(self) -> None:
        catalog = Catalog(groups=[Group("admin", tools=["delete_*", "repo://*", "admin_prompt"])])
        assert catalog.membership(tool("delete_repo")).direct == ("admin",)
        assert catalog.membership(tool("create_repo")).direct == ()
        prompt = Prompt.from_function(lambda: "x", name="admin_prompt")
        assert catalog.membership(prompt).direct == ("admin",)
        resource = Resource.from_function(lambda: "x", uri="repo://readme", name="readme")
        assert catalog.membership(resource).direct == ("admin",)
        template = ResourceTemplate.from_function(
            lambda owner: "x", uri_template="repo://{owner}", name="by_owner"
        )
        assert catalog.membership(template).direct == ("admin",)

    def test_kinds_limit_patterns_to_those_kinds(self) -> None:
        """A tool and a prompt of one name: ``kinds=["tool"]`` puts the tool alone in it."""
        catalog = Catalog(groups=[Group("fetch", tools=["fetch"], kinds=["tool"])])
        assert catalog.membership(tool("fetch")).direct == ("fetch",)
        prompt = Prompt.from_function(lambda: "x", name="fetch")
        assert catalog.membership(prompt).direct == ()
        with pytest.raises(ValueError, match=r"group 'g': kinds must name one or more of tool"):
            Group("g", tools=["x"], kinds=["tools"])

    def test_decorator_meta_and_patterns_are_unioned(self) -> None:
        catalog = Catalog(groups=[Group("a"), Group("b"), Group("c", tools=["x*"])])
        t = Tool.from_function(lambda: "", name="xt", meta={GROUPS_META_KEY: ["b"]})
        in_group("a")(t)
        assert catalog.membership(t).direct == ("a", "b", "c")

    def test_undeclared_group_is_reported_and_left_out(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        catalog = Catalog(groups=[Group("a")])
        with caplog.at_level(logging.WARNING, logger="fastmcp_filtering"):
            membership = catalog.membership(tool("t", "a", "nope"))
        assert membership.direct == ("a",)
        assert membership.undeclared == ("nope",)
        assert "tool 't' claims group 'nope', which no Group declares" in caplog.text

    def test_membership_is_cached_until_declarations_change(self) -> None:
        catalog = Catalog(groups=[Group("a", tools=["t*"])])
        t = tool("t1")
        first = catalog.membership(t)
        assert catalog.membership(t) is first
        version = catalog.version
        catalog._rebuild({"a": Group("a"), "b": Group("b", tools=["t*"])})
        assert catalog.version == version + 1
        assert catalog.membership(t).direct == ("b",)


class TestRuntimeChanges:
    async def test_add_and_remove_group(self) -> None:
        catalog = Catalog(groups=[Group("a")])
        await catalog.add_group(Group("b", parent="a", tools=["t*"]))
        assert catalog.membership(tool("t1")).effective == {"a", "b"}
        with pytest.raises(ValueError, match="already exists"):
            await catalog.add_group(Group("b"))
        with pytest.raises(ValueError, match=r"parent of \['b'\]"):
            await catalog.remove_group("a")
        removed = await catalog.remove_group("b")
        assert removed.name == "b"
        assert catalog.membership(tool("t1")).direct == ()
        with pytest.raises(ValueError, match="no group 'zz'"):
            await catalog.remove_group("zz")

    async def test_add_group_with_unknown_parent_leaves_catalog_unchanged(self) -> None:
        catalog = Catalog(groups=[Group("a")])
        with pytest.raises(ValueError, match="unknown parent"):
            await catalog.add_group(Group("b", parent="nope"))
        assert [g.name for g in catalog.groups] == ["a"]

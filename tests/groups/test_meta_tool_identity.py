"""What makes a meta-tool: the package's mark on the object itself, which no copy keeps."""

from __future__ import annotations

from fastmcp.tools import Tool

from fastmcp_filtering.core.catalog import MetaTool, is_meta_tool, mark_meta_tool, same_kind
from fastmcp_filtering.core.declarations import META_TOOL_KEY


def _search(query: str) -> str:
    return query


def _marked() -> MetaTool:
    return mark_meta_tool(MetaTool.from_function(_search, name="search_tools"))


def test_a_marked_meta_tool_is_one_and_says_so_to_clients() -> None:
    tool = _marked()
    assert is_meta_tool(tool)
    assert tool.meta == {META_TOOL_KEY: True}


def test_a_copy_fastmcp_makes_is_not_one() -> None:
    # A mounted server's namespaced copy keeps the class and the mark's value.
    copy = _marked().model_copy(update={"name": "child_search_tools"})
    assert isinstance(copy, MetaTool)
    assert not is_meta_tool(copy)


def test_a_copy_the_package_makes_of_one_stays_one() -> None:
    tool = _marked()
    copy = same_kind(tool, tool.model_copy(update={"meta": {"x": 1}}))
    assert is_meta_tool(copy)
    assert is_meta_tool(tool)


def test_a_copy_of_any_other_tool_stays_what_it_was() -> None:
    tool = Tool.from_function(_search)
    assert not is_meta_tool(same_kind(tool, tool.model_copy()))


def test_neither_the_meta_key_nor_the_class_alone_makes_one() -> None:
    claims = Tool.from_function(_search, meta={META_TOOL_KEY: True})
    assert not is_meta_tool(claims)
    assert not is_meta_tool(MetaTool.from_function(_search))

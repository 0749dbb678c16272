"""``ProgressiveOptions``: one object holds progressive disclosure's options, checked once."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from fastmcp import FastMCP
from inline_snapshot import snapshot

from fastmcp_filtering import (
    SEARCH_FIRST,
    OptionError,
    ProgressiveDisclosureMiddleware,
    ProgressiveOptions,
    add_filtering,
)
from fastmcp_filtering.core.options import option_defaults

from .._support.options import refusal
from .._support.progressive import GROUPS, make_server, names
from ..conftest import Connect


class TestChecks:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"max_tools": 0}, "max_tools must be a positive int or None, got 0"),
            ({"available_groups": "roots"}, "available_groups='roots' is not an option"),
            ({"call_unlisted": 1}, "call_unlisted must be True or False, got 1"),
            ({"offer_enable": False}, "offer_enable=False needs call_unlisted=True"),
            ({"enable_tool_name": "en able"}, "enable_tool_name='en able' is not a valid tool"),
            ({"call_tool_name": "enable_tools"}, "meta-tool names must differ"),
            ({"state_namespace": "concerns"}, "state_namespace='concerns' is reserved"),
            ({"initial_groups": "issues"}, "pass a list: initial_groups=['issues']"),
        ],
    )
    def test_the_object_refuses_what_the_middleware_refused(
        self, options: dict[str, Any], message: str
    ) -> None:
        assert message in refusal(ProgressiveOptions, **options)
        assert refusal(ProgressiveDisclosureMiddleware, groups=GROUPS, **options) == refusal(
            ProgressiveOptions, **options
        )

    def test_initial_groups_become_a_tuple_each_once(self) -> None:
        options = ProgressiveOptions(initial_groups=["issues", "repos", "issues"])
        assert options.initial_groups == ("issues", "repos")
        with pytest.raises(dataclasses.FrozenInstanceError):
            options.max_tools = 3  # type: ignore[misc]

    def test_the_catalog_checks_stay_with_the_middleware(self) -> None:
        options = ProgressiveOptions(initial_groups=["isues"])  # no catalog to know it here
        with pytest.raises(OptionError, match="initial_groups names unknown group 'isues'"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, options=options)


class TestOneDeclaration:
    def test_the_middleware_keywords_default_to_the_objects_defaults(self) -> None:
        parameters = inspect.signature(ProgressiveDisclosureMiddleware.__init__).parameters
        assert {n: parameters[n].default for n in option_defaults(ProgressiveOptions)} == (
            option_defaults(ProgressiveOptions)
        )


class TestOptionsArgument:
    async def test_options_and_keywords_answer_alike(self, connect: Connect) -> None:
        keywords: dict[str, Any] = {"initial_groups": ("issues",), "call_tool_name": "call_tool"}
        seen: list[list[str]] = []
        # make_server sets initial_groups unless given: () is the default, so no second value.
        with_object = {"options": ProgressiveOptions(**keywords), "initial_groups": ()}
        for given in (keywords, with_object):
            mcp, middleware = make_server(**given)
            assert middleware.options == ProgressiveOptions(**keywords)
            async with connect(mcp) as client:
                seen.append(await names(client))
        assert seen[0] == seen[1]
        assert " ".join(seen[0]) == snapshot(
            "call_tool create_issue disable_tools enable_tools link_issue list_issues ping"
        )

    def test_options_and_a_keyword_are_refused(self) -> None:
        with pytest.raises(OptionError) as caught:
            ProgressiveDisclosureMiddleware(
                groups=GROUPS, options=ProgressiveOptions(max_tools=3), hide_ungrouped=True
            )
        assert str(caught.value) == snapshot(
            "ProgressiveDisclosureMiddleware got options= and hide_ungrouped=True: give each "
            "option once, either in options=ProgressiveOptions(..., hide_ungrouped=True) or as "
            "keywords, leaving options= out"
        )

    def test_side_effect_lists_stays_a_keyword(self) -> None:
        middleware = ProgressiveDisclosureMiddleware(
            groups=GROUPS, options=ProgressiveOptions(), side_effect_lists=True
        )
        assert middleware.side_effect_lists is True

    def test_add_filtering_takes_the_object(self) -> None:
        options = ProgressiveOptions(initial_groups=["issues"], max_tools=5)
        stack = add_filtering(FastMCP("p"), groups=GROUPS, progressive=options)
        assert stack.progressive is not None
        assert stack.progressive.options is options
        assert stack.progressive.options.initial_groups == ("issues",)


class TestSearchFirstPreset:
    def test_the_preset_is_an_options_object(self) -> None:
        assert isinstance(SEARCH_FIRST, ProgressiveOptions)
        wider = dataclasses.replace(SEARCH_FIRST, max_tools=20)
        assert (wider.max_tools, wider.call_tool_name, wider.initial_groups) == (
            20,
            "call_tool",
            (),
        )

    def test_the_middleware_takes_it_as_options(self) -> None:
        middleware = ProgressiveDisclosureMiddleware(groups=GROUPS, options=SEARCH_FIRST)
        assert middleware.options is SEARCH_FIRST

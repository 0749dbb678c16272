"""``SearchOptions``: one object holds search's options, for the middleware and the stack alike."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from fastmcp import FastMCP
from inline_snapshot import snapshot

from fastmcp_filtering import (
    OptionError,
    ProgressiveOptions,
    SearchMiddleware,
    SearchOptions,
    add_filtering,
)
from fastmcp_filtering.client import list_tools
from fastmcp_filtering.core.options import option_defaults

from .._support.options import refusal
from .._support.search import GROUPS, make_server
from ..conftest import Connect


class TestChecks:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"max_results": 0}, "max_results must be a positive integer, got 0"),
            ({"max_results": True}, "max_results must be a positive integer, got True"),
            ({"search_tool": ""}, "search_tool must be a tool name or None to turn it off"),
            ({"weights": {"body": 2.0}}, "unknown field weight(s) ['body']"),
            ({"weights": {"name": -0.2}}, "field weight 'name' must be a finite number >= 0"),
            ({"compact_results": "yes"}, "compact_results must be True or False, got 'yes'"),
            ({"semantic": "minilm"}, "semantic must be True (the bundled MiniLM model), False"),
        ],
    )
    def test_the_object_refuses_what_the_middleware_refused(
        self, options: dict[str, Any], message: str
    ) -> None:
        assert message in refusal(SearchOptions, **options)
        assert refusal(SearchMiddleware, **options) == refusal(SearchOptions, **options)

    def test_it_is_immutable_and_keeps_its_own_weights(self) -> None:
        weights = {"name": 6.0}
        options = SearchOptions(weights=weights)
        weights["name"] = 0.0
        assert options.weights == {"name": 6.0}
        with pytest.raises(TypeError, match=r"SearchOptions\.weights cannot change"):
            options.weights["name"] = 1.0  # type: ignore[index]
        assert dataclasses.asdict(options)["weights"] == {"name": 6.0}
        with pytest.raises(dataclasses.FrozenInstanceError):
            options.max_results = 3  # type: ignore[misc]

    def test_positional_options_are_refused(self) -> None:
        with pytest.raises(TypeError):
            SearchOptions(5)  # type: ignore[call-arg]


class TestOneDeclaration:
    def test_the_middleware_keywords_default_to_the_objects_defaults(self) -> None:
        parameters = inspect.signature(SearchMiddleware.__init__).parameters
        assert {n: parameters[n].default for n in option_defaults(SearchOptions)} == (
            option_defaults(SearchOptions)
        )

    def test_keywords_build_the_object(self) -> None:
        middleware = SearchMiddleware(groups=GROUPS, max_results=3, search_tool="find_tools")
        assert middleware.options == SearchOptions(max_results=3, search_tool="find_tools")
        assert SearchMiddleware().options == SearchOptions()


class TestOptionsArgument:
    async def test_options_and_keywords_answer_alike(self, connect: Connect) -> None:
        seen: list[tuple[list[str], list[str]]] = []
        for middleware in (
            SearchMiddleware(groups=GROUPS, max_results=2, search_tool="find_tools"),
            SearchMiddleware(
                groups=GROUPS, options=SearchOptions(max_results=2, search_tool="find_tools")
            ),
        ):
            async with connect(make_server(search=middleware)) as client:
                ranked = await list_tools(client, query="open a pull request")
                listed = await client.list_tools()
            seen.append(([t.name for t in ranked.tools], sorted(t.name for t in listed)))
        assert seen[0] == seen[1]
        assert seen[0][0] == snapshot(["create_pull_request", "create_issue"])
        assert "find_tools" in seen[0][1]

    def test_options_and_a_keyword_are_refused(self) -> None:
        with pytest.raises(OptionError) as caught:
            SearchMiddleware(options=SearchOptions(max_results=3), max_results=5)
        assert str(caught.value) == snapshot(
            "SearchMiddleware got options= and max_results=5: give each option once, either in "
            "options=SearchOptions(..., max_results=5) or as keywords, leaving options= out"
        )

    def test_the_collaborators_stay_keywords(self) -> None:
        options = SearchOptions(max_results=3)
        middleware = SearchMiddleware(groups=GROUPS, options=options)
        assert middleware.options is options
        assert [g.name for g in middleware.catalog.groups] == ["code", "mail"]

    def test_another_object_is_refused(self) -> None:
        with pytest.raises(OptionError) as caught:
            SearchMiddleware(options=ProgressiveOptions())  # type: ignore[arg-type]
        assert str(caught.value) == snapshot(
            "options must be a SearchOptions, got ProgressiveOptions: "
            "SearchMiddleware(options=SearchOptions(...))"
        )


class TestStack:
    def test_add_filtering_takes_the_object(self) -> None:
        options = SearchOptions(max_results=4, compact_results=True)
        stack = add_filtering(FastMCP("s"), groups=GROUPS, search=options)
        assert stack.search is not None
        assert stack.search.options is options

    def test_search_first_uses_the_object_as_it_is(self) -> None:
        options = SearchOptions(max_results=7)
        stack = add_filtering(
            FastMCP("s"), groups=GROUPS, search=options, progressive="search_first"
        )
        assert stack.search is not None
        assert stack.search.options is options
        dict_stack = add_filtering(FastMCP("s"), groups=GROUPS, progressive="search_first")
        assert dict_stack.search is not None
        assert dict_stack.search.options == SearchOptions(max_results=5, compact_results=True)

    def test_a_wrong_value_names_the_object(self) -> None:
        with pytest.raises(OptionError) as caught:
            add_filtering(FastMCP("s"), search="yes")  # type: ignore[arg-type]
        assert str(caught.value) == snapshot(
            "search must be True, False or a dict of options or a SearchOptions(...), got 'yes'"
        )

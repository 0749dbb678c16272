"""``ConcernOptions``: the concerns' one option, its default declared once."""

from __future__ import annotations

import inspect

import pytest
from fastmcp import FastMCP
from inline_snapshot import snapshot

from fastmcp_filtering import (
    Concern,
    ConcernMiddleware,
    ConcernOptions,
    OptionError,
    add_filtering,
)
from fastmcp_filtering.core.options import option_defaults
from fastmcp_filtering.gateway import FilteringConfig

from .._support.options import refusal

RISK = [Concern("risk", values=["safe", "destructive"], default="safe", ordered=True)]


class TestChecks:
    def test_the_object_refuses_what_the_middleware_refused(self) -> None:
        message = refusal(ConcernOptions, apply_defaults="some")
        assert message == snapshot(
            "apply_defaults='some' is not an option: use 'configured' (defaults fill in for "
            "clients that stated concerns) or 'all' (every client)"
        )
        assert refusal(ConcernMiddleware, concerns=RISK, apply_defaults="some") == message


class TestOneDeclaration:
    def test_the_middleware_keyword_defaults_to_the_objects_default(self) -> None:
        parameters = inspect.signature(ConcernMiddleware.__init__).parameters
        assert {n: parameters[n].default for n in option_defaults(ConcernOptions)} == (
            option_defaults(ConcernOptions)
        )

    def test_the_stack_and_the_gateway_write_no_default_of_their_own(self) -> None:
        stack = add_filtering(FastMCP("c"), concerns=RISK)
        assert stack.concerns is not None
        assert stack.concerns.options == ConcernOptions()
        field = FilteringConfig.model_fields["apply_concern_defaults"]
        assert field.default is None


class TestOptionsArgument:
    def test_options_and_keyword_answer_alike(self) -> None:
        by_keyword = ConcernMiddleware(concerns=RISK, apply_defaults="all")
        by_object = ConcernMiddleware(concerns=RISK, options=ConcernOptions(apply_defaults="all"))
        assert by_keyword.options == by_object.options == ConcernOptions(apply_defaults="all")
        assert by_keyword.apply_defaults == by_object.apply_defaults == "all"

    def test_options_and_a_keyword_are_refused(self) -> None:
        with pytest.raises(OptionError) as caught:
            ConcernMiddleware(
                concerns=RISK, options=ConcernOptions(apply_defaults="all"), apply_defaults="all"
            )
        assert str(caught.value) == snapshot(
            "ConcernMiddleware got options= and apply_defaults='all': give each option once, "
            "either in options=ConcernOptions(..., apply_defaults='all') or as keywords, leaving "
            "options= out"
        )

    def test_the_stack_and_the_gateway_pass_it_on(self) -> None:
        stack = add_filtering(FastMCP("c"), concerns=RISK, apply_concern_defaults="all")
        assert stack.concerns is not None
        assert stack.concerns.apply_defaults == "all"
        config = FilteringConfig.model_validate(
            {
                "upstreams": [{"name": "u", "command": "true"}],
                "concerns": [{"name": "risk", "values": ["safe", "destructive"]}],
                "apply_concern_defaults": "all",
            }
        )
        assert config.concern_options() == ConcernOptions(apply_defaults="all")
        assert config.concern_middleware().apply_defaults == "all"

"""What ``serve`` says at startup about features its configuration cannot serve as written.

Over HTTP without ``[auth]`` a 2026-07-28 client has no identity, so progressive disclosure
and concerns keep nothing for it between requests: ``serve --http`` logs that once.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from fastmcp_filtering.gateway.cli import _unmet_needs
from fastmcp_filtering.gateway.config import FilteringConfig

from .test_cli import serve_http
from .test_proxy import EXAMPLE_CONFIG

AUTH = {"type": "static", "tokens": [{"token": "t", "client_id": "a"}]}


def config(**extra: Any) -> FilteringConfig:
    upstreams = [{"command": sys.executable}]
    groups = [{"name": "g", "tools": ["*"]}]
    return FilteringConfig.model_validate({"upstreams": upstreams, "groups": groups, **extra})


class TestUnmetNeeds:
    def test_progressive_over_http_without_auth_is_told(self) -> None:
        line = _unmet_needs(config(progressive={}), http=True)
        assert line == (
            "over HTTP without [auth], 2026-07-28 (stateless) clients keep no enabled groups "
            "(each request starts from the initial ones, and reach other groups' tools through "
            "search_tools and by exact name); 2025-11-25 clients keep them per session. "
            "Add [auth] to keep them per client"
        )

    def test_concerns_too(self) -> None:
        concerns = [{"name": "risk", "values": ["low", "high"]}]
        line = _unmet_needs(config(progressive={}, concerns=concerns), http=True)
        assert line is not None
        assert "keep no enabled groups and no stated concerns" in line

    @pytest.mark.parametrize(
        ("extra", "http"),
        [({"progressive": {}}, False), ({"progressive": {}, "auth": AUTH}, True), ({}, True)],
        ids=["stdio", "auth", "nothing-stateful"],
    )
    def test_nothing_is_said_when_everything_works(self, extra: dict[str, Any], http: bool) -> None:
        assert _unmet_needs(config(**extra), http=http) is None


@pytest.mark.slow
def test_serve_http_logs_it_once() -> None:
    with serve_http(EXAMPLE_CONFIG, "--quiet") as (_url, process):
        pass
    assert process.stderr is not None
    log = process.stderr.read().decode()
    assert log.count("over HTTP without [auth], 2026-07-28 (stateless) clients keep no") == 1

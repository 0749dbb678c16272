"""Each upstream's listing is kept until it says it changed (or ``list_ttl`` passes).

The gateway asks an upstream for its tools once, whichever client and era lists next,
and again as soon as the upstream sends ``notifications/tools/list_changed``. Counted,
never timed: ``misbehaving.py --count-listings`` writes a line per listing it is asked.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fastmcp_filtering.gateway.config.models import ConfigError, FilteringConfig, load_config
from fastmcp_filtering.gateway.proxy import build_proxy
from fastmcp_filtering.gateway.upstreams.listings import Listings, changed_kinds

from .._support.backoff import listings_asked
from .._support.upstream_scripts import MISBEHAVING
from ..conftest import ERAS


def counted(count: Path, *args: str, **options: Any) -> FilteringConfig:
    """A gateway of one ``misbehaving.py`` that counts its tool listings in ``count``."""
    upstream = {
        "command": sys.executable,
        "args": [str(MISBEHAVING), "--count-listings", str(count), *args],
        **options,
    }
    return FilteringConfig.model_validate({"upstreams": [upstream], "search": {"enabled": False}})


@pytest.mark.slow
class TestKeptListing:
    """Real stdio upstreams: what the gateway asks, counted."""

    async def test_clients_of_both_eras_share_one_upstream_listing(self, tmp_path: Path) -> None:
        count = tmp_path / "count"
        server = build_proxy(counted(count, "--tools", "echo,ping"))
        async with (
            Client(server, **ERAS["modern"]) as modern,
            Client(server, **ERAS["legacy"]) as legacy,
        ):
            for client in (modern, legacy, modern, legacy):
                assert {t.name for t in await client.list_tools()} == {"echo", "ping"}
            result = await legacy.call_tool("echo", {})
            assert '"tool": "echo"' in result.content[0].text  # type: ignore[union-attr]
        assert listings_asked(count) == 1

    async def test_list_changed_shows_the_new_tools_at_the_next_listing(
        self, era: str, tmp_path: Path
    ) -> None:
        count = tmp_path / "count"
        async with Client(build_proxy(counted(count, "--grow")), **ERAS[era]) as client:
            assert {t.name for t in await client.list_tools()} == {"echo", "grow"}
            await client.call_tool("grow", {})
            assert {t.name for t in await client.list_tools()} == {"echo", "grow", "grown_1"}
            result = await client.call_tool("grown_1", {})  # found by name, in the new listing
            assert '"tool": "grown_1"' in result.content[0].text  # type: ignore[union-attr]
        assert listings_asked(count) == 2

    async def test_list_ttl_zero_asks_on_every_listing(self, tmp_path: Path) -> None:
        count = tmp_path / "count"
        async with Client(build_proxy(counted(count, list_ttl=0))) as client:
            for _ in range(3):
                await client.list_tools()
        assert listings_asked(count) >= 3


class TestListings:
    """The keeper itself, in memory."""

    async def test_concurrent_requests_share_one_fetch(self) -> None:
        asked = 0
        release = asyncio.Event()

        async def fetch() -> list[str]:
            nonlocal asked
            asked += 1
            await release.wait()
            return ["a"]

        listings = Listings(seconds=60)
        waiting = [
            asyncio.create_task(listings.get("tool", fetch, give_up_after=5)) for _ in range(5)
        ]
        await asyncio.sleep(0)
        release.set()
        assert [list(x) for x in await asyncio.gather(*waiting)] == [["a"]] * 5
        assert await listings.get("tool", fetch, give_up_after=5) == ["a"]
        assert asked == 1

    async def test_a_change_during_a_fetch_is_not_overwritten_by_it(self) -> None:
        listings = Listings(seconds=60)
        answers = iter([["old"], ["new"]])

        async def fetch() -> list[str]:
            listings.forget(["tool"])  # the upstream says it changed while answering
            return next(answers)

        assert await listings.get("tool", fetch, give_up_after=5) == ["old"]
        assert await listings.get("tool", fetch, give_up_after=5) == ["new"]

    async def test_without_a_backoff_a_failed_listing_is_asked_again(self) -> None:
        listings = Listings(seconds=60, backoff=0)
        calls = iter([OSError("down"), ["up"]])

        async def fetch() -> list[str]:
            answer = next(calls)
            if isinstance(answer, Exception):
                raise answer
            return answer

        with pytest.raises(OSError, match="down"):
            await listings.get("tool", fetch, give_up_after=5)
        assert await listings.get("tool", fetch, give_up_after=5) == ["up"]

    def test_seconds_are_validated(self) -> None:
        with pytest.raises(ValueError, match=r"seconds=-1 .* give 0"):
            Listings(seconds=-1)

    def test_notifications_name_what_they_make_stale(self) -> None:
        import mcp_types as mt

        assert changed_kinds(mt.ToolListChangedNotification()) == ("tool",)
        assert changed_kinds(mt.ResourceListChangedNotification()) == ("resource", "template")
        assert changed_kinds(mt.PromptListChangedNotification()) == ("prompt",)
        assert changed_kinds(OSError("closed")) == ()


class TestConfig:
    def test_list_ttl_defaults_to_a_minute(self) -> None:
        config = FilteringConfig.model_validate({"upstreams": [{"command": "server"}]})
        assert config.upstreams[0].list_ttl == 60

    def test_a_negative_list_ttl_is_refused_in_toml_terms(self, tmp_path: Path) -> None:
        path = tmp_path / "gateway.toml"
        path.write_text('[[upstreams]]\ncommand = "server"\nlist_ttl = -1\n')
        with pytest.raises(ConfigError, match=r"list_ttl.*write 0"):
            load_config(path)

"""``[search]`` and ``[progressive]`` become the library's options objects, defaults and checks."""

from __future__ import annotations

from pathlib import Path

from inline_snapshot import snapshot

from fastmcp_filtering import ProgressiveOptions, SearchOptions
from fastmcp_filtering.core.options import option_names
from fastmcp_filtering.gateway import ProgressiveConfig, SearchConfig
from fastmcp_filtering.gateway.config.models import FilteringConfig, load_config
from fastmcp_filtering.gateway.proxy import build_proxy
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware
from fastmcp_filtering.search.middleware import SearchMiddleware

from .._support.gateway_config import UPSTREAM, error_of, write

GROUPS = '[[groups]]\nname = "issues"\ntools = ["*_issue"]\n'


class TestSameObject:
    def test_the_tables_yield_what_python_builds(self, tmp_path: Path) -> None:
        text = (
            UPSTREAM
            + GROUPS
            + "[search]\nmax_results = 5\nsearch_tool = false\nweights = { name = 6.0 }\n"
            + "compact_results = true\n"
            + '[progressive]\ninitial_groups = ["issues"]\nmax_tools = 8\n'
            + 'call_tool_name = "call_tool"\n'
        )
        config = load_config(write(tmp_path, text))
        assert config.search.to_options() == SearchOptions(
            max_results=5, search_tool=None, weights={"name": 6.0}, compact_results=True
        )
        assert config.progressive is not None
        assert config.progressive.to_options() == ProgressiveOptions(
            initial_groups=["issues"], max_tools=8, call_tool_name="call_tool"
        )

    def test_left_out_keys_take_the_objects_defaults(self, tmp_path: Path) -> None:
        config = load_config(write(tmp_path, UPSTREAM + "[progressive]\n"))
        assert config.search.to_options() == SearchOptions()
        assert config.progressive is not None
        assert config.progressive.to_options() == ProgressiveOptions()

    def test_the_proxy_hands_the_objects_to_the_middlewares(self, tmp_path: Path) -> None:
        text = UPSTREAM + GROUPS + "[search]\nmax_results = 4\n[progressive]\nmax_tools = 9\n"
        config = load_config(write(tmp_path, text))
        proxy = build_proxy(config)
        search = next(m for m in proxy.middleware if isinstance(m, SearchMiddleware))
        progressive = next(
            m for m in proxy.middleware if isinstance(m, ProgressiveDisclosureMiddleware)
        )
        assert search.options is config.search.to_options()
        assert config.progressive is not None
        assert progressive.options is config.progressive.to_options()

    def test_a_dumped_config_loads_again(self, tmp_path: Path) -> None:
        config = load_config(write(tmp_path, UPSTREAM + "[search]\nmax_results = 4\n"))
        again = FilteringConfig.model_validate(config.model_dump())
        assert again.search.to_options() == config.search.to_options()


class TestOneDeclaration:
    def test_the_tables_hold_the_objects_options_and_no_defaults(self) -> None:
        for table, kind in ((SearchConfig, SearchOptions), (ProgressiveConfig, ProgressiveOptions)):
            fields = dict(table.model_fields)
            assert fields.pop("enabled").default is True
            assert sorted(fields) == sorted(option_names(kind))
            assert {f.default for f in fields.values()} == {None}


class TestMistakes:
    def test_the_objects_check_names_the_key_and_line(self, tmp_path: Path) -> None:
        text = UPSTREAM + "\n[progressive]\nhide_ungrouped = true\noffer_enable = false\n"
        error = error_of(write(tmp_path, text))
        assert (error.key, error.line) == ("progressive.offer_enable", 7)
        assert str(error).partition("proxy.toml:")[2] == snapshot(
            "7: progressive.offer_enable: offer_enable=False needs call_unlisted=True: without "
            "enable_tools a tool of a group not enabled could never be reached"
        )

    def test_a_disabled_table_is_not_checked(self, tmp_path: Path) -> None:
        text = UPSTREAM + "[search]\nenabled = false\nmax_results = 0\n"
        assert load_config(write(tmp_path, text)).search.enabled is False

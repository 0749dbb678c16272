"""Proxy configuration files: what loads, and how each kind of mistake is reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from fastmcp_filtering import Concern, Group, Tag
from fastmcp_filtering.gateway.config.models import ConfigError, FilteringConfig, load_config

from .._support.gateway_config import UPSTREAM, error_of, write

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = ROOT / "examples" / "server-github.toml"


class TestExampleConfig:
    def test_loads_into_the_library_declarations(self) -> None:
        config = load_config(EXAMPLE_CONFIG)
        upstream = config.upstreams[0]
        assert upstream.command == sys.executable  # "python": the interpreter running us
        assert upstream.cwd == str(EXAMPLE_CONFIG.parent)  # so args are relative to the file
        assert upstream.args == ["upstream_standin.py"]
        assert (Path(upstream.cwd) / upstream.args[0]).is_file()
        groups = config.to_groups()
        assert [g.name for g in groups] == [
            "repos",
            "files",
            "branches",
            "issues",
            "pull_requests",
            "reviews",
            "search",
        ]
        assert groups[1] == Group(
            "files",
            title="Files",
            description="Read and write files in a repository",
            parent="repos",
            tools=["get_file_contents", "create_or_update_file", "push_files"],
        )
        assert config.to_tags()[0] == Tag("read-only", "Reads, never writes")
        assert config.to_concerns() == [
            Concern(
                "risk",
                values=["read", "write", "irreversible"],
                description="How much a tool may change: read < write < irreversible",
                default="write",
                ordered=True,
            )
        ]
        assert list(config.concern_mapping)[:2] == ["merge_pull_request", "push_files"]
        assert config.search.options() == {
            "max_results": 8,
            "search_tool": "search_tools",
            "instructions": True,
        }
        assert config.progressive is not None
        assert config.progressive.options()["initial_groups"] == ["issues"]


class TestFormats:
    def test_json_and_yaml_load_like_toml(self, tmp_path: Path) -> None:
        data = {
            "upstreams": [{"url": "http://127.0.0.1:9/mcp", "namespace": "gh"}],
            "groups": [{"name": "issues", "tools": ["gh_*_issue"]}],
            "search": {"search_tool": False},
        }
        from_json = load_config(write(tmp_path, json.dumps(data), "proxy.json"))
        yaml_text = (
            "upstreams:\n  - url: http://127.0.0.1:9/mcp\n    namespace: gh\n"
            "groups:\n  - name: issues\n    tools: ['gh_*_issue']\n"
            "search:\n  search_tool: false\n"
        )
        from_yaml = load_config(write(tmp_path, yaml_text, "proxy.yaml"))
        toml_text = (
            '[[upstreams]]\nurl = "http://127.0.0.1:9/mcp"\nnamespace = "gh"\n'
            '[[groups]]\nname = "issues"\ntools = ["gh_*_issue"]\n'
            "[search]\nsearch_tool = false\n"
        )
        from_toml = load_config(write(tmp_path, toml_text))
        assert from_json == from_yaml == from_toml
        assert from_toml.search.options()["search_tool"] is None

    def test_unknown_suffix(self, tmp_path: Path) -> None:
        error = error_of(write(tmp_path, "{}", "proxy.ini"))
        assert "name the file .toml, .json or .yaml" in str(error)


class TestUpstreams:
    def test_paths_resolve_against_the_config_file(self, tmp_path: Path) -> None:
        (tmp_path / "sub").mkdir()
        text = '[[upstreams]]\ncommand = "./bin/server"\ncwd = "sub"\n'
        upstream = load_config(write(tmp_path, text)).upstreams[0]
        assert upstream.command == str(tmp_path.resolve() / "bin" / "server")
        assert upstream.cwd == str(tmp_path.resolve() / "sub")

    def test_a_command_on_path_is_left_alone(self, tmp_path: Path) -> None:
        upstream = load_config(write(tmp_path, '[[upstreams]]\ncommand = "npx"\n')).upstreams[0]
        assert upstream.command == "npx"

    def test_environment_references(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PROXY_TEST_TOKEN", "s3cret")
        text = (
            '[[upstreams]]\ncommand = "npx"\nenv = { TOKEN = "${PROXY_TEST_TOKEN}" }\n'
            '[[upstreams]]\nurl = "https://example.com/mcp"\nnamespace = "r"\n'
            'headers = { Authorization = "Bearer ${PROXY_TEST_TOKEN}" }\n'
        )
        config = load_config(write(tmp_path, text))
        assert config.upstreams[0].env == {"TOKEN": "s3cret"}
        assert config.upstreams[1].headers == {"Authorization": "Bearer s3cret"}

    def test_unset_environment_variable(self, tmp_path: Path) -> None:
        text = '[[upstreams]]\ncommand = "npx"\nenv = { TOKEN = "${SURELY_NOT_SET_42}" }\n'
        error = error_of(write(tmp_path, text))
        assert (error.key, error.line) == ("upstreams[0].env.TOKEN", 3)
        assert "export SURELY_NOT_SET_42" in str(error)


# (config text after the upstream table, key, line, words of the fix)
MISTAKES = [
    pytest.param(
        '[[groups]]\nname = "code"\n\n[[groups]]\nname = "repos"\nparent = "code"\n\n'
        '[[groups]]\nname = "wiki"\nparent = "cod"\n',
        "groups[2].parent",
        14,
        'add a [[groups]] entry with name = "cod" or fix the name (known: ["code", "repos", '
        '"wiki"])',
        id="unknown-parent",
    ),
    pytest.param(
        '[[groups]]\nname = "a"\nparent = "b"\n[[groups]]\nname = "b"\nparent = "a"\n',
        "groups[0].parent",
        7,
        "groups form a cycle: a -> b -> a; remove one of these parent links",
        id="cycle",
    ),
    pytest.param(
        '[[groups]]\nname = "a"\n[[groups]]\nname = "a"\n',
        "groups[1].name",
        8,
        "declared twice",
        id="duplicate-group",
    ),
    pytest.param(
        '[[groups]]\nname = "a b"\n',
        "groups[0].name",
        6,
        "use 1 to 256 letters, digits",
        id="bad-group-name",
    ),
    pytest.param(
        '[[groups]]\nname = "a"\ntitel = "A"\n',
        "groups[0].titel",
        7,
        "unknown key 'titel'; remove it or use one of name, title,",
        id="typo-key",
    ),
    pytest.param(
        '[[groups]]\nname = "a"\nparent = 5\n',
        "groups[0].parent",
        7,
        "a valid string or a valid list (got 5)",
        id="wrong-type",
    ),
    pytest.param(
        '[[concerns]]\nname = "risk"\nvalues = ["low", "high"]\n\n'
        '[concern_mapping]\n"delete_*" = { cost = "high" }\n',
        'concern_mapping."delete_*".cost',
        10,
        "concern_mapping key \"delete_*\" uses concern 'cost', which is not declared; add a "
        '[[concerns]] entry with name = "cost" and its values or use one of ["risk"]',
        id="mapping-undeclared-concern",
    ),
    pytest.param(
        '[[concerns]]\nname = "risk"\nvalues = ["low", "high"]\n\n'
        '[concern_mapping]\n"delete_*" = { risk = "extreme" }\n',
        'concern_mapping."delete_*".risk',
        10,
        "concern_mapping key \"delete_*\" gives concern 'risk' the value 'extreme', which is "
        'not one of its values ["low", "high"]',
        id="mapping-undeclared-value",
    ),
    pytest.param(
        '[concern_mapping]\nget_issue = { risk = "low" }\n',
        "concern_mapping",
        5,
        "declare [[concerns]]",
        id="mapping-without-concerns",
    ),
    pytest.param(
        '[[concerns]]\nname = "risk"\nvalues = ["low", "high"]\ndefault = "medium"\n',
        "concerns[0].default",
        8,
        "pick one of them or leave default unset",
        id="concern-default",
    ),
    pytest.param(
        '[[groups]]\nname = "a"\n[progressive]\ninitial_groups = ["b"]\n',
        "progressive.initial_groups",
        8,
        'add a [[groups]] entry with name = "b" or fix the name (declared: ["a"])',
        id="unknown-initial-group",
    ),
    pytest.param(
        "[search]\nmax_results = 0\n",
        "search.max_results",
        6,
        "must be a positive integer",
        id="search-option",
    ),
    pytest.param(
        '[[upstreams]]\ncommand = "x"\nurl = "http://h/mcp"\n',
        "upstreams[1]",
        5,
        "give either command (a stdio server) or url (an HTTP server)",
        id="command-and-url",
    ),
    pytest.param(
        '[[upstreams]]\ncommand = "x"\nnamespace = "gh"\n'
        '[[upstreams]]\ncommand = "y"\nnamespace = "gh"\n',
        "upstreams[2].namespace",
        10,
        "give each upstream its own",
        id="duplicate-namespace",
    ),
    pytest.param(
        '[[concerns]]\nname = "risk"\nvalues = []\n',
        "concerns[0].values",
        7,
        "concern 'risk' needs at least one value: values = [\"high\"]",
        id="concern-without-values",
    ),
    pytest.param(
        '[[concerns]]\nname = "risk"\nvalues = ["low", "low"]\n',
        "concerns[0].values",
        7,
        "concern 'risk' repeats [\"low\"] in values; list each value once",
        id="concern-repeated-value",
    ),
    pytest.param(
        '[[concerns]]\nname = "risk"\nvalues = ["low", ""]\n',
        "concerns[0].values",
        7,
        "values of concern 'risk' must each be a non-empty string of at most 256 characters",
        id="concern-empty-value",
    ),
    pytest.param(
        "[search]\nweights = { nam = 2.0 }\n",
        "search.weights",
        6,
        'unknown field(s) ["nam"] in weights; use ["name", "title", "description", "tags", '
        '"groups", "params"]',
        id="search-weights",
    ),
    pytest.param(
        "[search]\nsearch_tool = true\n",
        "search.search_tool",
        6,
        "Input should be a valid string or false (got true)",
        id="search-tool-true",
    ),
    pytest.param(
        '[search]\nsearch_tool = "find tools"\n',
        "search.search_tool",
        6,
        "'find tools' is not a tool name: use 1 to 128 letters, digits, '_', '-' or '.', or "
        "false to turn the tool off",
        id="search-tool-name",
    ),
    pytest.param(
        '[search]\nsearch_tool = "enable_tools"\n[progressive]\n',
        "progressive.enable_tool_name",
        7,
        "'enable_tools' is also the name of search.search_tool; give each meta-tool its own name",
        id="meta-tool-clash",
    ),
    pytest.param(
        '[progressive]\ncall_tool_name = "disable_tools"\n',
        "progressive.call_tool_name",
        6,
        "'disable_tools' is also the name of progressive.disable_tool_name",
        id="meta-tool-clash-progressive",
    ),
    pytest.param(
        '[progressive]\nenable_tool_name = "en able"\n',
        "progressive.enable_tool_name",
        6,
        "'en able' is not a tool name: use 1 to 128 letters, digits, '_', '-' or '.'",
        id="meta-tool-name",
    ),
    pytest.param(
        "[progressive]\nmax_tools = 0\n",
        "progressive.max_tools",
        6,
        "max_tools must be a positive integer, or left out, got 0",
        id="max-tools",
    ),
    pytest.param(
        '[[groups]]\nname = "a"\nparent = { name = "b" }\n',
        "groups[0].parent",
        7,
        "Input should be a valid string or a valid list (got a table); fix the value",
        id="table-for-a-string",
    ),
]

# What a Python user writes, which a configuration file's author cannot.
PYTHON_IDIOMS = ("Group(", "Concern(", "mapping[", "=[", "['", "('", "None", "True", "False")


class TestMistakes:
    @pytest.mark.parametrize(("text", "key", "line", "fix"), MISTAKES)
    def test_names_file_key_line_and_fix(
        self, tmp_path: Path, text: str, key: str, line: int, fix: str
    ) -> None:
        path = write(tmp_path, UPSTREAM + "\n" + text)
        error = error_of(path)
        assert (error.key, error.line) == (key, line)
        assert str(error).startswith(f"{path}:{line}: {key}: ")
        assert fix in str(error)
        # The file's language: tables, keys and TOML values, never the Python API.
        assert not [idiom for idiom in PYTHON_IDIOMS if idiom in str(error)]

    def test_every_mistake_is_listed_in_line_order(self, tmp_path: Path) -> None:
        text = 'colour = "red"\n' + UPSTREAM + '[[groups]]\nname = "a"\ntitel = "A"\n'
        error = error_of(write(tmp_path, text))
        assert [(key, line) for key, line, _ in error.problems] == [
            ("colour", 1),
            ("groups[0].titel", 7),
        ]

    def test_missing_upstreams(self, tmp_path: Path) -> None:
        error = error_of(write(tmp_path, '[[groups]]\nname = "a"\n'))
        assert error.key == "upstreams"
        assert "add a [[upstreams]] table" in str(error)

    def test_toml_syntax_error_has_its_line(self, tmp_path: Path) -> None:
        error = error_of(write(tmp_path, UPSTREAM + "[[groups]\n"))
        assert error.line == 4
        assert "not valid TOML" in str(error)

    def test_json_syntax_error_has_its_line(self, tmp_path: Path) -> None:
        error = error_of(write(tmp_path, '{\n  "upstreams": [,]\n}', "proxy.json"))
        assert error.line == 2

    def test_json_mistakes_name_the_key(self, tmp_path: Path) -> None:
        data = {"upstreams": [{"url": "http://h/mcp"}], "groups": [{"name": "a", "parent": "b"}]}
        path = write(tmp_path, json.dumps(data), "proxy.json")
        error = error_of(path)
        assert str(error).startswith(f"{path}: groups[0].parent: group 'a' names unknown parent")

    def test_unreadable_file(self, tmp_path: Path) -> None:
        error = error_of(tmp_path / "absent.toml")
        assert "cannot read the file" in str(error)

    def test_building_the_model_directly_checks_cross_references(self) -> None:
        with pytest.raises(ValidationError, match=r"groups\[0\]\.parent: group 'a' names"):
            FilteringConfig.model_validate(
                {"upstreams": [{"command": "x"}], "groups": [{"name": "a", "parent": "b"}]}
            )


class TestConcernFromAnnotations:
    def test_values_and_order_are_preset(self, tmp_path: Path) -> None:
        text = (
            UPSTREAM + '[[concerns]]\nname = "risk"\nfrom_annotations = true\ndefault = "write"\n'
        )
        config = load_config(write(tmp_path, text))
        assert config.to_concerns() == [
            Concern(
                "risk",
                values=["read-only", "write", "destructive"],
                description="How much a tool may change, from its MCP annotations: "
                "read-only < write < destructive",
                default="write",
                ordered=True,
            )
        ]

    @pytest.mark.parametrize(
        ("body", "line", "fix"),
        [
            ('from_annotations = true\nvalues = ["low", "high"]\n', 4, "remove values"),
            ("from_annotations = true\nordered = false\n", 4, "remove ordered"),
            ('default = "low"\n', 4, "values is missing: add values = [...], or "),
            ('from_annotations = true\ndefault = "safe"\n', 7, "default 'safe' is not one"),
        ],
    )
    def test_mistakes(self, tmp_path: Path, body: str, line: int, fix: str) -> None:
        error = error_of(write(tmp_path, UPSTREAM + '[[concerns]]\nname = "risk"\n' + body))
        assert error.key.startswith("concerns[0]")
        assert error.line == line
        assert fix in str(error)

    def test_a_mapping_value_must_be_a_preset_value(self, tmp_path: Path) -> None:
        text = (
            UPSTREAM + '[[concerns]]\nname = "risk"\nfrom_annotations = true\n\n'
            '[concern_mapping]\n"get_*" = { risk = "read" }\n'
        )
        error = error_of(write(tmp_path, text))
        assert error.key == 'concern_mapping."get_*".risk'
        assert "'read'" in str(error)


def mcp_json(tmp_path: Path, servers: object, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


class TestUpstreamsFrom:
    """``upstreams_from = "mcp.json"``: the mcpServers file agents' hosts keep."""

    def test_servers_become_namespaced_upstreams(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GH_TOKEN", "secret")
        (tmp_path / "servers").mkdir()
        mcp_json(
            tmp_path / "servers",
            {
                "github": {
                    "command": "npx",
                    "args": ["-y", "server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GH_TOKEN}", "DEBUG": 1},
                },
                "my docs.v2": {"type": "http", "url": "https://docs.example/mcp", "auth": "tok"},
                "local": {"command": "./run.sh", "cwd": "sub", "description": "ignored"},
                "off": {"command": "nothing", "disabled": True},
                "me": {"command": "fastmcp-filtering", "args": ["serve", "../proxy.toml"]},
            },
        )
        config = load_config(write(tmp_path, 'upstreams_from = "servers/mcp.json"\n'))
        github, docs, local = config.upstreams
        assert (github.name, github.namespace, github.command) == ("github", "github", "npx")
        assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "secret", "DEBUG": "1"}
        assert (docs.name, docs.namespace, docs.url) == (
            "my docs.v2",
            "my_docs_v2",
            "https://docs.example/mcp",
        )
        assert docs.headers == {"Authorization": "Bearer tok"}
        # Relative paths in the JSON are relative to the JSON file.
        assert local.command == str(tmp_path / "servers" / "run.sh")
        assert local.cwd == str(tmp_path / "servers" / "sub")

    def test_one_server_is_not_namespaced_and_toml_upstreams_come_first(
        self, tmp_path: Path
    ) -> None:
        mcp_json(tmp_path, {"memory": {"command": "npx", "args": ["server-memory"]}})
        alone = load_config(write(tmp_path, 'upstreams_from = "mcp.json"\n'))
        assert [(u.name, u.namespace) for u in alone.upstreams] == [("memory", None)]
        text = 'upstreams_from = "mcp.json"\n\n' + UPSTREAM + 'namespace = "local"\n'
        both = load_config(write(tmp_path, text, "both.toml"))
        assert [(u.label, u.namespace) for u in both.upstreams] == [
            ("local", "local"),
            ("memory", "memory"),
        ]

    @pytest.mark.parametrize(
        ("content", "fix"),
        [
            ("{not json", "mcp.json:1: not valid JSON"),
            ('{"other": 1}', "no servers found"),
            ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "mcpServers.a.url: must be an http"),
            ('{"mcpServers": {"a": {"args": ["x"]}}}', 'mcpServers.a: give "command"'),
            ('{"mcpServers": {"a": {"url": "https://x/mcp", "auth": "oauth"}}}', "bearer token"),
            ('{"mcpServers": {"a": {"command": "x", "tools": {"t": {}}}}}', "tool transforms"),
            ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "list of strings"),
            ('{"mcpServers": {"a": {"url": "https://x/mcp", "type": "sse"}}}', "only to URLs"),
            (
                '{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE_UNSET}"}}}}',
                "NOPE_UNSET",
            ),
        ],
    )
    def test_mistakes_name_the_json_file_and_server(
        self, tmp_path: Path, content: str, fix: str
    ) -> None:
        (tmp_path / "mcp.json").write_text(content, encoding="utf-8")
        error = error_of(write(tmp_path, '# servers\nupstreams_from = "mcp.json"\n'))
        assert (error.key, error.line) == ("upstreams_from", 2)
        assert fix in str(error)

    def test_a_missing_file_and_a_file_with_no_enabled_server(self, tmp_path: Path) -> None:
        error = error_of(write(tmp_path, 'upstreams_from = "nowhere.json"\n'))
        assert "nowhere.json: cannot read it" in str(error)
        mcp_json(tmp_path, {"a": {"command": "x", "disabled": True}})
        error = error_of(write(tmp_path, 'upstreams_from = "mcp.json"\n'))
        assert error.key == "upstreams"


class TestConfigTypes:
    def test_a_number_given_as_a_string_is_an_error(self, tmp_path: Any) -> None:
        from fastmcp_filtering.gateway.config.models import load_config

        config = tmp_path / "proxy.toml"
        config.write_text(
            '[[upstreams]]\ncommand = "python"\nargs = ["x.py"]\n\n[search]\nmax_results = "8"\n'
        )
        with pytest.raises(ConfigError, match=r"proxy\.toml:6: search\.max_results"):
            load_config(config)

"""Zero-config grouping: ``suggest_config`` on recorded and real catalogs, and its TOML."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from fastmcp.tools.base import Tool
from inline_snapshot import snapshot

from fastmcp_filtering import SuggestedConfig, suggest_config
from fastmcp_filtering.gateway.config.models import FilteringConfig, load_config
from fastmcp_filtering.gateway.grouping.suggest import DEFAULT_META_TOOLS

from .._support.github import GITHUB, github_toml

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "bench" / "datasets"


def direct_groups(config: FilteringConfig, name: str) -> list[str]:
    """The groups whose patterns match ``name`` (the tool's direct groups)."""
    return [g.name for g in config.groups if any(fnmatch.fnmatchcase(name, p) for p in g.tools)]


def parsed(suggestion: SuggestedConfig, upstreams: list[dict[str, Any]]) -> FilteringConfig:
    """The proposal as ``load_config`` would build it (without reading a file)."""
    return FilteringConfig.model_validate(tomllib.loads(suggestion.to_toml(upstreams=upstreams)))


def assert_well_formed(
    suggestion: SuggestedConfig, names: list[str], others: Sequence[str] = (), cap: int = 15
) -> None:
    """Every tool in exactly one group; no group over ``cap`` or under 2; nothing else matched."""
    namespaces = suggestion.namespaces or ("",)
    config = parsed(suggestion, [{"command": "x", "namespace": n or None} for n in namespaces])
    for name in names:
        assert len(direct_groups(config, name)) == 1, (name, direct_groups(config, name))
    for name in [*others, *DEFAULT_META_TOOLS]:
        assert direct_groups(config, name) == [], name
    own = {g.name: len(suggestion.members[g.name]) for g in suggestion.groups}
    children: dict[str, list[str]] = defaultdict(list)
    for group in suggestion.groups:
        if group.parent is not None:
            children[str(group.parent)].append(group.name)

    def size(group: str) -> int:
        return own[group] + sum(size(c) for c in children[group])

    for group in suggestion.groups:
        assert own[group.name] <= cap, group.name
        if len(names) > 1:
            assert size(group.name) >= 2, group.name


class TestGithubCatalog:
    """The 26 tools recorded from @modelcontextprotocol/server-github (no annotations)."""

    def test_the_proposed_toml(self) -> None:
        assert github_toml() == snapshot("""\
# fastmcp-filtering proxy proposed by `fastmcp-filtering init` for npx -y
# @modelcontextprotocol/server-github@2025.4.8: 26 tools in 5 groups.
# Review it, then:
#   fastmcp-filtering check proxy.toml
#   fastmcp-filtering serve proxy.toml
#
# The same rules for every server (README: Zero-config grouping): groups from the topics the tool
# names share (verbs such as get or create set aside, plurals folded), 2 to 15 tools of their own,
# subgroups under a topic that has more; tags and the risk concern from the tools' MCP annotations;
# max_tools and initial_groups from the number of tools.

name = "server-github (filtered)"

[[upstreams]]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github@2025.4.8"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_PERSONAL_ACCESS_TOKEN}" }

# -- groups: patterns match the proxied tool names -------------------------------------------------

# 10 tools: create_pull_request, get_pull_request, list_pull_requests, create_pull_request_review,
# merge_pull_request, get_pull_request_files, get_pull_request_status, update_pull_request_branch,
# get_pull_request_comments, get_pull_request_reviews
[[groups]]
name = "pull_requests"
title = "Pull requests"
description = "Create, get, list, merge and update pull requests, with reviews, files, status, branch and comments"
tools = ["*pull_request*"]

# 6 tools: create_issue, list_issues, update_issue, add_issue_comment, search_issues, get_issue
[[groups]]
name = "issues"
title = "Issues"
description = "Add, create, get, list, search and update issues, with comment"
tools = ["*issue*"]

# 5 tools: search_repositories, create_repository, fork_repository, create_branch, list_commits
[[groups]]
name = "repositories"
title = "Repositories"
description = "Create, fork and search repositories; also: create branch and list commits"
tools = ["*_repository", "create_branch", "list_commits", "search_repositories"]

# 3 tools: create_or_update_file, get_file_contents, push_files
[[groups]]
name = "files"
title = "Files"
description = "Create, get and push files, with contents"
tools = ["create_or_update_file", "get_file_contents", "push_files"]

# 2 tools: search_code, search_users
[[groups]]
name = "search"
title = "Search"
description = "Search code and users"
tools = ["search_code", "search_users"]

# -- tags: the hints each tool's MCP annotations state ---------------------------------------------
# No tool states MCP annotations (readOnlyHint, destructiveHint...): no tags.

# -- concerns: a client states how much a tool may change ------------------------------------------
# risk is read-only, write or destructive, from each tool's readOnlyHint and destructiveHint; a tool
# that states neither is destructive, as the MCP defaults say, unless concern_mapping gives it a
# value. default = "write": a client that states its concerns sees no destructive tool unless it
# asks for risk = "destructive".
[[concerns]]
name = "risk"
from_annotations = true
default = "write"

# 26 tools state no annotations: their risk is guessed from the verb in their names (get, list,
# search...: read-only; delete, remove...: destructive; any other: write). Check these.
[concern_mapping]
"get_*" = { risk = "read-only" }
"list_*" = { risk = "read-only" }
"search_code" = { risk = "read-only" }
"search_issues" = { risk = "read-only" }
"search_repositories" = { risk = "read-only" }
"search_users" = { risk = "read-only" }
"create_*" = { risk = "write" }
"update_*" = { risk = "write" }
"add_issue_comment" = { risk = "write" }
"fork_repository" = { risk = "write" }
"merge_pull_request" = { risk = "write" }
"push_files" = { risk = "write" }

# -- search_tools: an agent finds tools by what it wants to do -------------------------------------
[search]
max_results = 10

# -- progressive disclosure: an agent enables the groups it needs ----------------------------------
# max_tools: half of the 26 tools, at least 15 and at most 30, and no fewer than a group shows with
# its parents; initial_groups: the largest groups that fit in half of max_tools.
# A client sees 6 of the 26 tools first (besides the gateway's own, such as search_tools): those of
# initial_groups. The others it finds with search_tools and enables with enable_tools.
[progressive]
initial_groups = ["issues"]
max_tools = 15
# call_tool_name = "call_tool"   # for clients that ignore tools/list_changed
""")

    def test_the_readme_shows_the_same_toml(self) -> None:
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        assert f"```toml\n{github_toml()}```" in readme

    def test_every_tool_in_one_group_and_none_over_the_cap(self) -> None:
        suggestion = suggest_config(GITHUB)
        assert_well_formed(suggestion, [t["name"] for t in GITHUB])
        assert sorted(n for names in suggestion.members.values() for n in names) == sorted(
            t["name"] for t in GITHUB
        )

    def test_load_config_reads_it(self, tmp_path: Path) -> None:
        path = tmp_path / "proxy.toml"
        path.write_text(
            suggest_config(GITHUB).to_toml(upstreams=[{"command": "python", "args": ["x.py"]}]),
            encoding="utf-8",
        )
        config = load_config(path)
        assert [g.name for g in config.groups] == [
            "pull_requests",
            "issues",
            "repositories",
            "files",
            "search",
        ]
        assert config.concerns[0].values == ["read-only", "write", "destructive"]
        assert config.progressive is not None
        assert config.progressive.initial_groups == ["issues"]

    def test_a_smaller_cap_makes_smaller_groups(self) -> None:
        suggestion = suggest_config(GITHUB, max_group_size=4)
        assert_well_formed(suggestion, [t["name"] for t in GITHUB], cap=4)
        parents = {g.name: g.parent for g in suggestion.groups}
        # Over the cap, pull requests split by what follows the topic in the names.
        assert parents["pull_requests"] is None
        assert "reviews" in parents
        assert parents["reviews"] == "pull_requests"

    def test_the_same_from_mcp_and_fastmcp_tool_objects(self) -> None:
        typed = [mt.Tool.model_validate(t) for t in GITHUB]
        fastmcp = [
            Tool(name=t["name"], description=t["description"], parameters=t["inputSchema"])
            for t in GITHUB
        ]
        expected = suggest_config(GITHUB)
        assert suggest_config(typed) == expected
        assert suggest_config(fastmcp) == expected


def real_catalogs() -> dict[str, list[dict[str, Any]]]:
    """Every server of the two public tool-retrieval sets in bench/datasets (530 servers)."""
    servers: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for name in ("etom", "arcade"):
        for line in (DATASETS / name / "tools.jsonl").read_text(encoding="utf-8").splitlines():
            tool = json.loads(line)
            servers[f"{name}:{tool['server']}"][tool["name"]] = tool
    return {server: list(tools.values()) for server, tools in servers.items()}


class TestAnyCatalog:
    @pytest.mark.slow
    def test_the_rules_hold_for_530_real_servers(self) -> None:
        catalogs = real_catalogs()
        assert len(catalogs) == 530
        for tools in catalogs.values():
            suggestion = suggest_config(tools)
            assert_well_formed(suggestion, [t["name"] for t in tools])
            assert suggestion.tool_count == len(tools)

    def test_a_topic_over_the_cap_becomes_a_parent_with_subgroups(self) -> None:
        subtopics = ["member", "label", "milestone", "webhook", "variable"]
        tools = [
            {"name": f"{verb}_project_{sub}s" if verb == "list" else f"{verb}_project_{sub}"}
            for sub in subtopics
            for verb in ("list", "get", "create", "delete")
        ]
        tools += [{"name": n} for n in ("list_projects", "get_project", "create_project")]
        tools += [{"name": n} for n in ("list_users", "get_user")]
        suggestion = suggest_config(tools)
        assert_well_formed(suggestion, [t["name"] for t in tools])
        assert [(g.name, g.parent, list(g.tools)) for g in suggestion.groups] == snapshot(
            [
                ("projects", None, ["*_project", "list_projects"]),
                ("labels", "projects", ["*label*"]),
                ("members", "projects", ["*member*"]),
                ("milestones", "projects", ["*milestone*"]),
                ("variables", "projects", ["*variable*"]),
                ("webhooks", "projects", ["*webhook*"]),
                ("users", None, ["*user*"]),
            ]
        )

    def test_several_servers_get_a_parent_each_and_stay_in_their_namespace(self) -> None:
        memory = [
            {"name": n, "annotations": {"readOnlyHint": n.startswith(("read", "search"))}}
            for n in ("create_entities", "delete_entities", "read_graph", "search_nodes")
        ]
        suggestion = suggest_config({"github": GITHUB, "memory": memory})
        names = [f"github_{t['name']}" for t in GITHUB] + [f"memory_{t['name']}" for t in memory]
        assert_well_formed(suggestion, names)
        assert suggestion.namespaces == ("github", "memory")
        parents = {g.name: g.parent for g in suggestion.groups}
        assert parents["github"] is None
        assert parents["github.pull_requests"] == "github"
        assert parents["memory"] is None
        assert all(p.startswith(("github_", "memory_")) for g in suggestion.groups for p in g.tools)
        assert all(p.startswith(("github_", "memory_")) for t in suggestion.tags for p in t.tools)
        with pytest.raises(ValueError, match="one upstream with each namespace"):
            suggestion.to_toml(upstreams=[{"command": "x"}])

    def test_patterns_never_match_prompts_resources_or_meta_tools(self) -> None:
        tools = [{"name": n} for n in ("search_code", "search_users", "get_user", "get_code")]
        others = ["search_help", "get_started", "docs://search_code/readme"]
        suggestion = suggest_config(tools, others=others)
        assert_well_formed(suggestion, [t["name"] for t in tools], others)
        patterns = [p for g in suggestion.groups for p in g.tools]
        assert not any(fnmatch.fnmatchcase(o, p) for o in others for p in patterns)

    def test_a_small_catalog_turns_progressive_disclosure_off(self) -> None:
        tools = [{"name": n} for n in ("get_weather", "get_forecast", "list_cities")]
        suggestion = suggest_config(tools)
        assert suggestion.progressive is False
        config = parsed(suggestion, [{"command": "x"}])
        assert config.progressive is not None
        assert config.progressive.enabled is False

    def test_max_tools_and_initial_groups_follow_the_catalog_size(self) -> None:
        tools = [
            {"name": f"{verb}_{noun}"}
            for verb in ("get", "list", "create", "delete")
            for noun in ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa")
        ]
        tools += [
            {"name": f"{verb}_{noun}_x"}
            for verb in ("get", "list")
            for noun in ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa")
        ]
        suggestion = suggest_config(tools)  # 42 tools
        assert suggestion.max_tools == 21  # half the catalog, between 15 and 30
        shown = sum(len(suggestion.members[g]) for g in suggestion.initial_groups)
        assert 0 < shown <= suggestion.max_tools // 2
        large = [{"name": f"tool_{i}_{w}"} for i in range(100) for w in ("a",)]
        assert suggest_config(large).max_tools == 30  # at most twice the cap

    def test_one_tool_and_no_tools(self) -> None:
        one = suggest_config([{"name": "echo"}])
        assert [(g.name, list(g.tools)) for g in one.groups] == [("tools", ["echo"])]
        empty = suggest_config([])
        assert empty.groups == ()
        assert empty.concerns == ()
        config = parsed(empty, [{"command": "x"}])
        assert config.groups == []


class TestAnnotations:
    def memory_tools(self) -> list[mt.Tool]:
        hints = {
            "create_entities": mt.ToolAnnotations(read_only_hint=False, destructive_hint=False),
            "delete_entities": mt.ToolAnnotations(destructive_hint=True, idempotent_hint=True),
            "read_graph": mt.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            "search_nodes": mt.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
            "fetch_url": mt.ToolAnnotations(read_only_hint=True, open_world_hint=True),
            "drop_everything": None,  # no annotations: guessed from "drop"
        }
        return [
            mt.Tool(name=n, input_schema={"type": "object"}, annotations=a)
            for n, a in hints.items()
        ]

    def test_tags_from_the_stated_hints_and_risk_from_annotations(self) -> None:
        suggestion = suggest_config(self.memory_tools())
        assert {t.name: list(t.tools) for t in suggestion.tags} == snapshot(
            {
                "read-only": ["fetch_url", "read_graph", "search_nodes"],
                "destructive": ["delete_entities"],
                "idempotent": ["delete_entities", "search_nodes"],
                "open-world": ["fetch_url"],
            }
        )
        assert dict(suggestion.risk) == {
            "create_entities": "write",
            "delete_entities": "destructive",
            "drop_everything": "destructive",
            "fetch_url": "read-only",
            "read_graph": "read-only",
            "search_nodes": "read-only",
        }
        assert suggestion.guessed == {"drop_everything"}
        assert suggestion.concern_mapping == {"drop_everything": {"risk": "destructive"}}
        [risk] = suggestion.concerns
        assert (risk.name, risk.from_annotations, risk.default) == ("risk", True, "write")

    def test_guessed_patterns_never_cover_an_annotated_tool(self) -> None:
        tools: list[Any] = [
            {"name": "get_a"},
            {"name": "get_b"},
            {"name": "get_c", "annotations": {"readOnlyHint": False, "destructiveHint": True}},
        ]
        suggestion = suggest_config(tools)
        assert suggestion.concern_mapping == {
            "get_a": {"risk": "read-only"},
            "get_b": {"risk": "read-only"},
        }


class TestBadInput:
    def test_bad_arguments_are_value_errors(self) -> None:
        with pytest.raises(ValueError, match="max_group_size must be at least 2"):
            suggest_config(GITHUB, max_group_size=1)
        with pytest.raises(ValueError, match=r"\['a'\] appear twice"):
            suggest_config([{"name": "a"}, {"name": "a"}])
        with pytest.raises(ValueError, match="every tool needs a name"):
            suggest_config([{"title": "no name"}])
        with pytest.raises(ValueError, match="to_toml needs the upstreams"):
            suggest_config(GITHUB).to_toml(upstreams=[])
        with pytest.raises(ValueError, match="tools without a namespace"):
            suggest_config(GITHUB).to_toml(upstreams=[{"command": "x", "namespace": "gh"}])
        with pytest.raises(ValueError, match=r"namespace 'my server' must be .* 'my_server'"):
            suggest_config({"my server": GITHUB})

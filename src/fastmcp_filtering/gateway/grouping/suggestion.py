"""A proposed configuration (``SuggestedConfig``) as the commented TOML ``load_config`` reads."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastmcp_filtering.core.errors import OptionError, OptionTypeError

if TYPE_CHECKING:
    from fastmcp_filtering.gateway.config.models import ConcernConfig, GroupConfig, TagConfig

_WIDTH = 100
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_UPSTREAM_KEYS = ("name", "command", "args", "env", "cwd", "url", "headers", "namespace", "mode")


@dataclass(frozen=True)
class SuggestedConfig:
    """A proposed proxy configuration, in the configuration's own models.

    ``groups``, ``tags`` and ``concerns`` are what ``[[groups]]``, ``[[tags]]``
    and ``[[concerns]]`` hold; ``members`` names each group's own tools,
    ``risk`` each tool's risk value and ``guessed`` those whose risk comes from
    their name. ``to_toml(upstreams=[...])`` writes the commented file that
    ``load_config`` reads.

    Example:
        ```python
        suggestion = suggest_config(await client.list_tools())
        text = suggestion.to_toml(upstreams=[{"command": "npx", "args": ["-y", "server"]}])
        ```
    """

    groups: tuple[GroupConfig, ...]
    members: Mapping[str, tuple[str, ...]]
    tags: tuple[TagConfig, ...]
    concerns: tuple[ConcernConfig, ...]
    concern_mapping: Mapping[str, Mapping[str, str]]
    risk: Mapping[str, str]
    guessed: frozenset[str]
    initial_groups: tuple[str, ...]
    max_tools: int
    progressive: bool
    max_group_size: int
    namespaces: tuple[str, ...] = ()
    others: tuple[str, ...] = field(default=())
    """Prompts, resources and templates: left in no group, so every client sees them."""

    @property
    def tool_count(self) -> int:
        """How many tools the proposal places."""
        return len(self.risk)

    def to_toml(
        self,
        *,
        upstreams: Sequence[Mapping[str, Any]],
        name: str | None = None,
        source: str | None = None,
        variables: Mapping[str, str] | None = None,
    ) -> str:
        """The proposal as a commented TOML file for ``load_config``.

        ``upstreams`` are ``[[upstreams]]`` tables (``command``/``args``/``env``
        or ``url``/``headers``, ``name``, ``namespace``...), one per namespace
        of a proposal made for several servers. ``name`` is the proxy's name,
        ``source`` what the proposal was made from (for the header comment),
        ``variables`` the environment variables the tables reference, each with
        where it is used (said in a comment above the upstreams).

        Example:
            ```python
            Path("proxy.toml").write_text(suggestion.to_toml(upstreams=[{"url": url}]))
            ```
        """
        if not upstreams:
            raise OptionError(
                "to_toml needs the upstreams to proxy: "
                "to_toml(upstreams=[{'command': 'npx', 'args': ['-y', 'some-server']}])"
            )
        namespaces = tuple(str(u["namespace"]) for u in upstreams if u.get("namespace"))
        if sorted(namespaces) != sorted(self.namespaces):
            raise OptionError(
                f"the proposal is for namespaces {list(self.namespaces)}; give one upstream "
                f"with each namespace, got {list(namespaces)}"
                if self.namespaces
                else "the proposal is for tools without a namespace; remove namespace from "
                "the upstreams, or propose with suggest_config({namespace: tools})"
            )
        return render(
            self, upstreams=upstreams, name=name, source=source, variables=variables or {}
        )


def counted(count: int, noun: str) -> str:
    """``1 group``, ``5 groups``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _string(text: str) -> str:
    # JSON's escapes are TOML's; DEL must be escaped in TOML too.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(text: str) -> str:
    return text if _BARE.fullmatch(text) else _string(text)


def toml_value(value: Any) -> str:
    """A TOML value: strings, booleans, ints, lists and inline tables of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise OptionTypeError(f"no TOML form for {type(value).__name__}")


def _array(key: str, items: Sequence[str]) -> list[str]:
    """``key = [...]`` on one line, or one item a line when too long."""
    line = f"{key} = {toml_value(list(items))}"
    if len(line) <= _WIDTH:
        return [line]
    return [f"{key} = [", *(f"    {_string(i)}," for i in items), "]"]


def _comment(text: str) -> list[str]:
    wrapped = textwrap.wrap(
        text, _WIDTH, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False
    )
    return wrapped or ["#"]


def _section(title: str) -> list[str]:
    head = f"# -- {title} "
    return ["", head + "-" * max(4, _WIDTH - len(head))]


def render(
    suggestion: SuggestedConfig,
    *,
    upstreams: Sequence[Mapping[str, Any]],
    name: str | None,
    source: str | None,
    variables: Mapping[str, str] | None = None,
) -> str:
    """The commented TOML of ``suggestion`` proxying ``upstreams``."""
    count, cap = suggestion.tool_count, suggestion.max_group_size
    lines = _comment(
        f"fastmcp-filtering proxy proposed by `fastmcp-filtering init`"
        f"{f' for {source}' if source else ''}: {counted(count, 'tool')} in "
        f"{counted(len(suggestion.groups), 'group')}."
    )
    lines += [
        "# Review it, then:",
        "#   fastmcp-filtering check proxy.toml",
        "#   fastmcp-filtering serve proxy.toml",
        "#",
    ]
    lines += _comment(
        "The same rules for every server (README: Zero-config grouping): groups from the "
        "topics the tool names share (verbs such as get or create set aside, plurals folded), "
        f"2 to {cap} tools of their own, subgroups under a topic that has more; tags and the "
        "risk concern from the tools' MCP annotations; max_tools and initial_groups from the "
        "number of tools."
    )
    lines += ["", f"name = {_string(name or 'fastmcp-filtering')}"]
    if variables:
        lines.append("")
        lines += _comment(
            "No secret is written here: set these environment variables before check and "
            "serve: " + "; ".join(f"{n} ({where})" for n, where in variables.items()) + "."
        )
    for upstream in upstreams:
        lines += ["", "[[upstreams]]"]
        unknown = sorted(set(upstream) - set(_UPSTREAM_KEYS))
        if unknown:
            raise OptionError(f"unknown upstream keys {unknown}; use {list(_UPSTREAM_KEYS)}")
        lines += [
            f"{key} = {toml_value(upstream[key])}"
            for key in _UPSTREAM_KEYS
            if upstream.get(key) not in (None, "", [], {})
        ]
    lines += _groups(suggestion)
    lines += _tags_and_risk(suggestion)
    lines += _section("search_tools: an agent finds tools by what it wants to do")
    lines += ["[search]", "max_results = 10"]
    lines += _progressive(suggestion)
    return "\n".join(lines) + "\n"


def _groups(suggestion: SuggestedConfig) -> list[str]:
    lines = _section("groups: patterns match the proxied tool names")
    if suggestion.others:
        lines += _comment(
            "The prompts, resources and templates are in no group: every client sees them, "
            "as a user or an application picks them."
        )
    if not suggestion.groups:
        lines += ["# The server lists no tools: no groups."]
    for group in suggestion.groups:
        members = suggestion.members[group.name]
        lines.append("")
        if members:
            lines += _comment(f"{len(members)} tools: {', '.join(members)}")
        lines += ["[[groups]]", f"name = {_string(group.name)}"]
        if group.title:
            lines.append(f"title = {_string(group.title)}")
        if group.description:
            lines.append(f"description = {_string(group.description)}")
        if group.parent:
            lines.append(f"parent = {toml_value(group.parent)}")
        if group.tools:
            lines += _array("tools", group.tools)
        if group.kinds:
            lines.append(f"kinds = {toml_value(group.kinds)}")
    return lines


def _first_view(suggestion: SuggestedConfig) -> str:
    """How many tools a client sees before it enables a group, and why: a parent group
    enabled shows its own tools, not its subgroups', so the file must not read as if
    ``initial_groups`` showed everything they hold."""
    initial = suggestion.initial_groups
    shown = sum(len(suggestion.members[g]) for g in initial)
    empty = [g for g in initial if not suggestion.members[g]]
    said = (
        f"A client sees {shown} of the {suggestion.tool_count} tools first (besides the "
        "gateway's own, such as search_tools): those of initial_groups."
    )
    if empty:
        said += (
            f" {', '.join(empty)} hold no tools of their own (their subgroups do, "
            "enabled by name): they add none."
        )
    return said + " The others it finds with search_tools and enables with enable_tools."


def _tags_and_risk(suggestion: SuggestedConfig) -> list[str]:
    lines = _section("tags: the hints each tool's MCP annotations state")
    if not suggestion.tags:
        lines += ["# No tool states MCP annotations (readOnlyHint, destructiveHint...): no tags."]
    for tag in suggestion.tags:
        lines += ["", "[[tags]]", f"name = {_string(tag.name)}"]
        if tag.description:
            lines.append(f"description = {_string(tag.description)}")
        lines += _array("tools", tag.tools)
    if not suggestion.concerns:
        return lines
    lines += _section("concerns: a client states how much a tool may change")
    lines += _comment(
        "risk is read-only, write or destructive, from each tool's readOnlyHint and "
        "destructiveHint; a tool that states neither is destructive, as the MCP defaults say, "
        'unless concern_mapping gives it a value. default = "write": a client that states '
        'its concerns sees no destructive tool unless it asks for risk = "destructive".'
    )
    for concern in suggestion.concerns:
        lines += ["[[concerns]]", f"name = {_string(concern.name)}", "from_annotations = true"]
        if concern.default:
            lines.append(f"default = {_string(concern.default)}")
    if suggestion.concern_mapping:
        lines.append("")
        lines += _comment(
            f"{len(suggestion.guessed)} tools state no annotations: their risk is guessed from "
            "the verb in their names (get, list, search...: read-only; delete, remove...: "
            "destructive; any other: write). Check these."
        )
        lines.append("[concern_mapping]")
        lines += [
            f"{_string(pattern)} = {toml_value(values)}"
            for pattern, values in suggestion.concern_mapping.items()
        ]
    return lines


def _progressive(suggestion: SuggestedConfig) -> list[str]:
    count, cap = suggestion.tool_count, suggestion.max_group_size
    lines = _section("progressive disclosure: an agent enables the groups it needs")
    if suggestion.progressive:
        lines += _comment(
            f"max_tools: half of the {count} tools, at least {cap} and at most {2 * cap}, and "
            "no fewer than a group shows with its parents; initial_groups: the largest groups "
            "that fit in half of max_tools."
        )
    else:
        lines += _comment(
            f"{count} tools fit in one view (at most {cap}): progressive disclosure is off; "
            "enabled = true turns it on with these options."
        )
    if suggestion.progressive:
        lines += _comment(_first_view(suggestion))
    lines.append("[progressive]")
    if not suggestion.progressive:
        lines.append("enabled = false")
    lines += _array("initial_groups", suggestion.initial_groups)
    lines.append(f"max_tools = {suggestion.max_tools}")
    lines.append('# call_tool_name = "call_tool"   # for clients that ignore tools/list_changed')
    return lines

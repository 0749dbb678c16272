"""A declarative proxy configuration (TOML, JSON or YAML) validated by pydantic models.

``load_config(path)`` reads the upstream server(s) to proxy and the groups, tags,
concerns, search and progressive-disclosure options to put in front of them, and
checks them with the library's own validation (``Group``, ``Catalog``, ``Concern``,
the middlewares' options). Every mistake is a ``ConfigError`` naming the file, the
key (``groups[2].parent``), the line for TOML, and the fix.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import override

from fastmcp_filtering.concern.middleware import ConcernMiddleware
from fastmcp_filtering.core.catalog import Catalog
from fastmcp_filtering.core.concerns import Concern, ConcernsFromToken
from fastmcp_filtering.core.declarations import Group, Tag
from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.core.options import (
    ApplyDefaults,
    ConcernOptions,
    ProgressiveOptions,
    SearchOptions,
    option_defaults,
    option_names,
)
from fastmcp_filtering.gateway.config.access import AccessConfig  # noqa: TC001 - pydantic resolves it
from fastmcp_filtering.gateway.config.auth import AuthConfig, StateConfig, StaticToken
from fastmcp_filtering.gateway.config.base import (
    EnvString,
    KeyPath,
    _CrossReferenceError,
    _format_key,
    _Model,
)
from fastmcp_filtering.gateway.config.mcp_json import McpJsonError, namespace_of, read_servers
from fastmcp_filtering.gateway.config.secret_values import literal_secrets
from fastmcp_filtering.gateway.config.toml_speak import speak_toml
from fastmcp_filtering.gateway.redact import safe_url
from fastmcp_filtering.gateway.upstreams.annotations import RISK_DESCRIPTION, RISK_VALUES
from fastmcp_filtering.gateway.upstreams.limits import Timeouts
from fastmcp_filtering.gateway.upstreams.listings import LONGEST_BACKOFF
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware
from fastmcp_filtering.search.middleware import SearchMiddleware

if TYPE_CHECKING:
    import os

    from fastmcp.utilities.components import FastMCPComponent

# The names MCP allows for a tool (the stack's meta-tools are tools too).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
# "python" in a config means the interpreter running this package, so an upstream
# installed beside it (or the example stand-in) is found whatever PATH says.
_PYTHON_COMMANDS = frozenset({"python", "python3"})


class ConfigError(OptionError):
    """A configuration mistake: the file, the key path, the line (TOML) and the fix.

    ``problems`` holds one ``(key, line, message)`` per mistake found; the
    message of the exception lists them all, one per line, each as
    ``FILE:LINE: KEY: what is wrong; the fix``.

    Example:
        ```python
        try:
            config = load_config("proxy.toml")
        except ConfigError as error:
            print(error.key, error.line, error)
        ```
    """

    def __init__(self, file: str, problems: Sequence[tuple[str, int | None, str]]) -> None:
        self.file = file
        self.problems = list(problems)
        self.key, self.line, _ = self.problems[0]
        lines = []
        for key, line, message in self.problems:
            where = f"{file}:{line}" if line is not None else file
            lines.append(f"{where}: {key}: {message}" if key else f"{where}: {message}")
        super().__init__("\n".join(lines))


def _check_patterns(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        if not pattern.strip():
            raise OptionError("patterns must be non-empty names or globs like 'delete_*'")
    return patterns


def _check_namespace_text(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", value):
        raise OptionError(
            f"namespace {value!r} must be 1 to 64 letters, digits, '_' or '-', starting with "
            "a letter or digit (it prefixes tool names: namespace_toolname)"
        )
    return value


Patterns = Annotated[list[str], AfterValidator(_check_patterns)]


def _check_seconds(value: float) -> float:
    if not value > 0 or value == float("inf"):
        raise OptionError(
            f"{value!r} is not a time in seconds; write a positive number such as 30 or 2.5"
        )
    return float(value)


Seconds = Annotated[float, AfterValidator(_check_seconds)]


def _zero_or_seconds(zero_means: str, example: str) -> Callable[[float], float]:
    """A validator of 0 (``zero_means``) or a positive number of seconds such as ``example``."""

    def check(value: float) -> float:
        if value == 0:
            return 0.0
        try:
            return _check_seconds(value)
        except ValueError:
            raise OptionError(
                f"{value!r} is not a time in seconds; write 0 ({zero_means}) "
                f"or a positive number such as {example}"
            ) from None

    return check


_check_backoff = _zero_or_seconds("ask a failed upstream on every request", "1")
_check_ttl = _zero_or_seconds("list on every request", "60")


def _within_a_day(value: float) -> float:
    """Refuse a back-off longer than a day: a typo (``1e308``), not a time to wait on."""
    if value > LONGEST_BACKOFF:
        raise OptionError(
            f"{value:g} seconds is longer than a day to leave a failed upstream alone; "
            f"write at most {LONGEST_BACKOFF:g}, such as 30"
        )
    return value


Backoff = Annotated[float, AfterValidator(_check_backoff), AfterValidator(_within_a_day)]
BackoffMax = Annotated[float, AfterValidator(_check_seconds), AfterValidator(_within_a_day)]


# The gateway's own command: an upstream that runs it would start gateways without end.
_GATEWAY_COMMAND = re.compile(r"(?<![\w-])fastmcp[-_]filtering(?![\w-])")
_GATEWAY_SERVES = re.compile(r"(?<![\w-])(serve|check)(?![\w-])")


def _runs_the_gateway(command: str, args: Sequence[str]) -> bool:
    """Whether a stdio upstream's command line starts ``fastmcp-filtering serve`` or ``check``."""
    text = " ".join([Path(command).name, *args])
    found = _GATEWAY_COMMAND.search(text)
    return found is not None and _GATEWAY_SERVES.search(text, found.end()) is not None


class UpstreamConfig(_Model):
    """One MCP server to proxy: a command to run over stdio, or a URL (streamable HTTP or SSE).

    ``command``/``args``/``env``/``cwd`` start a stdio server; ``url``/``headers``
    reach a remote one. ``${NAME}`` in ``env``, ``args``, ``url`` and ``headers``
    is read from the environment. The subprocess runs in ``cwd``, by default the
    config file's directory, so relative paths in ``args`` are relative to the
    config file; ``command = "python"`` runs the interpreter that runs
    fastmcp-filtering. ``namespace`` prefixes the upstream's tool and prompt names
    (``gh`` makes ``create_issue`` into ``gh_create_issue``); group and tag
    patterns match the prefixed names. ``mode`` picks the protocol era spoken to
    the upstream: ``"auto"`` (negotiate; works with servers that only speak the
    handshake era), ``"legacy"`` (2025-11-25 handshake), or ``"mirror"`` (the era
    of each incoming request, needed to forward sampling or elicitation; the
    upstream must speak both eras).

    Example:
        ```toml
        [[upstreams]]
        command = "npx"
        args = ["-y", "@modelcontextprotocol/server-github@2025.4.8"]
        env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }
        ```
    """

    name: str | None = None
    command: str | None = None
    args: list[EnvString] = Field(default_factory=list)
    env: dict[str, EnvString] = Field(default_factory=dict)
    cwd: str | None = None
    url: EnvString | None = None
    headers: dict[str, EnvString] = Field(default_factory=dict)
    namespace: Annotated[str, AfterValidator(_check_namespace_text)] | None = None
    mode: Literal["auto", "legacy", "mirror"] = "auto"
    connect_timeout: Seconds = 30.0
    """Seconds to start the upstream and finish its handshake."""
    list_timeout: Seconds = 30.0
    """Seconds for one listing (tools, prompts, resources), on top of ``connect_timeout``."""
    call_timeout: Seconds = 300.0
    """Seconds for one tool call, from connecting to its result."""
    list_ttl: Annotated[float, AfterValidator(_check_ttl)] = 60.0
    """Seconds the upstream's listings are kept when it does not say they changed (its
    ``list_changed`` notification relists at once); 0 relists on every request."""
    backoff: Backoff = 1.0
    """Seconds an upstream is left alone after a listing it did not answer (a timeout, a
    refused or dropped connection, its process gone; not an error it answered), each request
    failing at once meanwhile, doubled on each such failure in a row; 0 asks it on every
    request; at most a day."""
    backoff_max: BackoffMax = 30.0
    """The longest ``backoff`` grows to, in seconds: at least ``backoff``, at most a day."""
    _written_secrets: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _note_written_secrets(
        cls, data: Any, handler: ModelWrapValidatorHandler[UpstreamConfig]
    ) -> UpstreamConfig:
        # Read before ``${NAME}`` is expanded: afterwards a reference and a literal look alike.
        upstream = handler(data)
        if isinstance(data, Mapping):
            upstream._written_secrets = tuple(literal_secrets(data))
        return upstream

    @property
    def written_secrets(self) -> tuple[str, ...]:
        """The ``env`` and ``headers`` keys whose secret-looking value is written in the file
        rather than read from the environment (``env.API_KEY``)."""
        return self._written_secrets

    @model_validator(mode="after")
    def _backoff_capped(self) -> UpstreamConfig:
        if self.backoff > self.backoff_max:
            raise OptionError(
                f"backoff = {self.backoff:g} is above backoff_max = {self.backoff_max:g}, the "
                f"longest a back-off grows to; write backoff_max = {self.backoff:g} or more, "
                "or a smaller backoff"
            )
        return self

    @model_validator(mode="after")
    def _one_transport(self, info: ValidationInfo) -> UpstreamConfig:
        if (self.command is None) == (self.url is None):
            raise OptionError(
                "give either command (a stdio server) or url (an HTTP server), "
                'e.g. command = "npx" or url = "https://example.com/mcp"'
            )
        if self.url is not None:
            stray = [k for k in ("args", "env", "cwd") if getattr(self, k)]
            if stray:
                raise OptionError(f"{', '.join(stray)} apply to a command, not a url; remove them")
            if not re.match(r"https?://", self.url):
                raise OptionError(
                    f"url must start with http:// or https://, got {safe_url(self.url)!r}"
                )
            return self
        if self.headers:
            raise OptionError("headers apply to a url, not a command; remove them")
        assert self.command is not None
        if not self.command.strip():
            raise OptionError('command must not be empty: command = "npx"')
        if _runs_the_gateway(self.command, self.args):
            raise OptionError(
                "this command runs fastmcp-filtering itself, which would start gateways "
                "without end; list the servers that configuration proxies here instead, "
                "or reach a running gateway by url"
            )
        base = _base_dir(info)
        command = self.command
        if command in _PYTHON_COMMANDS:
            command = sys.executable
        elif "/" in command and not Path(command).is_absolute():
            command = str((base / command).resolve())
        cwd = str((base / self.cwd).resolve()) if self.cwd is not None else str(base)
        object.__setattr__(self, "command", command)
        object.__setattr__(self, "cwd", cwd)
        return self

    @property
    def label(self) -> str:
        """How messages name this upstream: its ``name``, namespace, command or URL.

        Never its arguments, nor a URL's credentials or query: they hold secrets.
        """
        if self.name:
            return self.name
        if self.namespace:
            return self.namespace
        if self.url is not None:
            return safe_url(self.url)
        return Path(self.command or "").name

    @property
    def timeouts(self) -> Timeouts:
        """``connect_timeout``, ``list_timeout`` and ``call_timeout`` together."""
        return Timeouts(self.connect_timeout, self.list_timeout, self.call_timeout)

    @property
    def secrets(self) -> list[str]:
        """The values messages must not show: ``args``, ``env`` and ``headers`` values."""
        return [*self.args, *self.env.values(), *self.headers.values()]


def _base_dir(info: ValidationInfo) -> Path:
    context = info.context if isinstance(info.context, Mapping) else {}
    base = context.get("base_dir")
    return Path(base) if base is not None else Path.cwd()


class GroupConfig(_Model):
    """A ``Group``: ``tools`` are names or globs matched against the proxied tool names.

    Example:
        ```toml
        [[groups]]
        name = "issues"
        title = "Issues"
        description = "Create, read and triage issues"
        tools = ["*_issue", "list_issues", "add_issue_comment"]
        ```

    ``access`` makes it access control (``AccessConfig``: scopes and claims of
    the token ``[auth]`` verified); ``restrictive`` makes its denial win over
    a member's other groups.
    """

    name: str
    title: str | None = None
    description: str | None = None
    parent: str | list[str] | None = None
    tools: Patterns = Field(default_factory=list)
    kinds: list[Literal["tool", "prompt", "resource", "template"]] | None = Field(
        default=None, min_length=1
    )
    """What ``tools`` patterns match (a tool and a prompt may share a name); None: every kind."""
    access: AccessConfig | None = None
    restrictive: bool = False

    def to_group(self) -> Group:
        """The library declaration."""
        return Group(
            self.name,
            title=self.title,
            description=self.description,
            parent=self.parent,
            tools=tuple(self.tools),
            access=self.access.checks() if self.access is not None else None,
            restrictive=self.restrictive,
            kinds=self.kinds,
        )


class TagConfig(_Model):
    """A ``Tag``; ``tools`` (names or globs) put the tag on matching proxied components.

    Example:
        ```toml
        [[tags]]
        name = "read-only"
        description = "Reads, never writes"
        tools = ["get_*", "list_*", "search_*"]
        ```
    """

    name: str
    description: str | None = None
    tools: Patterns = Field(default_factory=list)

    def to_tag(self) -> Tag:
        """The library declaration."""
        return Tag(self.name, self.description)


class ConcernsFromTokenConfig(_Model):
    """``ConcernsFromToken``: a caller's token configures its concerns.

    Example:
        ```toml
        [concerns_from_token]
        claim = "concerns"
        scopes = { interns = { risk = "read" } }
        ```
    """

    scopes: dict[str, dict[str, str]] = Field(default_factory=dict)
    claim: str | None = None

    def to_options(self) -> ConcernsFromToken:
        """The library's options object (validated there: at least one of the two)."""
        return ConcernsFromToken(scopes=self.scopes, claim=self.claim)


class ConcernConfig(_Model):
    """A ``Concern`` a client can state a preference on; values come from ``concern_mapping``.

    ``from_annotations = true`` gives each proxied tool a value from its MCP
    annotations with no mapping written: ``read-only`` (``readOnlyHint``),
    ``write`` (not read-only, ``destructiveHint`` false) or ``destructive``
    (anything else, as the MCP defaults say); ``values`` and ``ordered`` are then
    preset, and ``concern_mapping`` entries still win.

    Example:
        ```toml
        [[concerns]]
        name = "risk"
        values = ["read", "write", "destructive"]
        default = "write"
        ordered = true
        ```
    """

    name: str
    values: list[str] | None = None
    description: str | None = None
    default: str | None = None
    ordered: bool = False
    from_annotations: bool = False

    @model_validator(mode="after")
    def _preset(self) -> ConcernConfig:
        if not self.from_annotations:
            if self.values is None:
                raise OptionError(
                    "values is missing: add values = [...], or from_annotations = true for "
                    f"{list(RISK_VALUES)} from the MCP tool annotations"
                )
            return self
        if self.values is not None and self.values != list(RISK_VALUES):
            raise OptionError(
                f"from_annotations = true sets values to {list(RISK_VALUES)}; remove values"
            )
        if "ordered" in self.model_fields_set and not self.ordered:
            raise OptionError(
                "from_annotations = true is ordered (read-only first); remove ordered"
            )
        object.__setattr__(self, "values", list(RISK_VALUES))
        object.__setattr__(self, "ordered", True)
        if self.description is None:
            object.__setattr__(self, "description", RISK_DESCRIPTION)
        return self

    def to_concern(self) -> Concern:
        """The library declaration."""
        return Concern(
            self.name,
            values=tuple(self.values or ()),
            description=self.description,
            default=self.default,
            ordered=self.ordered,
        )


class _OptionsTable(_Model):
    """A table holding one feature's options object: ``enabled``, and that object's options.

    Each key but ``enabled`` is one of the options object's, typed as the file writes
    it and unset by default: what is left out takes the object's own default, and the
    object checks the values (a mistake names ``<table>.<key>``), so no default or
    range is written here.
    """

    _table: ClassVar[str]
    _kind: ClassVar[type[SearchOptions | ProgressiveOptions]]
    _meta_tool_keys: ClassVar[tuple[str, ...]]
    _built: Any = PrivateAttr(default=None)
    enabled: bool = True

    @model_validator(mode="after")
    def _check_options(self) -> _OptionsTable:
        if self.enabled:
            self._options_object()
        return self

    def _keywords(self) -> dict[str, Any]:
        """The options written in the file, as the options object's keywords (None: unset,
        as a dumped table writes what it left out)."""
        return self.model_dump(exclude={"enabled"}, exclude_unset=True, exclude_none=True)

    def meta_tools(self) -> list[tuple[KeyPath, str]]:
        """Each meta-tool these options name, with its key (a default's too); none if off."""
        if not self.enabled:
            return []
        values = {**option_defaults(self._kind), **self._keywords()}
        keys = [key for key in self._meta_tool_keys if isinstance(values[key], str)]
        return [((self._table, key), values[key]) for key in keys]

    def _options_object(self) -> Any:
        if self._built is None:
            # The file's words for a name the options object would refuse in Python's.
            _check_meta_tool_names(self.meta_tools())
            keywords = self._keywords()
            self._built = _guard(
                lambda: self._kind(**keywords),
                (self._table,),
                dict.fromkeys(option_names(self._kind)),
            )
        return self._built


class SearchConfig(_OptionsTable):
    """``[search]``: ``SearchOptions`` for ``SearchMiddleware``; on unless ``enabled = false``.

    ``search_tool = false`` turns the ``search_tools`` meta-tool off;
    ``semantic = true`` blends in the offline embedding ranking (the
    ``fastmcp-filtering[semantic]`` extra). Defaults are ``SearchOptions``'s.

    Example:
        ```toml
        [search]
        max_results = 8
        search_tool = "find_tools"
        ```
    """

    _table: ClassVar[str] = "search"
    _kind: ClassVar[type[SearchOptions | ProgressiveOptions]] = SearchOptions
    _meta_tool_keys: ClassVar[tuple[str, ...]] = ("search_tool",)

    max_results: int | None = None
    search_tool: str | Literal[False] | None = None
    instructions: bool | None = None
    weights: dict[str, float] | None = None
    semantic: bool | None = None
    compact_results: bool | None = None

    @override
    def _keywords(self) -> dict[str, Any]:
        keywords = super()._keywords()
        if keywords.get("search_tool") is False:
            keywords["search_tool"] = None  # a file has no None: false turns the tool off
        return keywords

    def to_options(self) -> SearchOptions:
        """The table as the library's ``SearchOptions`` (checked there).

        Example:
            ```python
            load_config("proxy.toml").search.to_options().max_results  # 10 unless set
            ```
        """
        built: SearchOptions = self._options_object()
        return built

    def options(self) -> dict[str, Any]:
        """The keyword options of ``SearchMiddleware`` these options make."""
        built = self.to_options()
        options: dict[str, Any] = {
            "max_results": built.max_results,
            "search_tool": built.search_tool,
            "instructions": built.instructions,
        }
        extra = {"weights": built.weights, "compact_results": built.compact_results}
        options |= {key: value for key, value in extra.items() if value}
        if built.semantic is not False:
            options["semantic"] = built.semantic
        return options


class ProgressiveConfig(_OptionsTable):
    """``[progressive]``: ``ProgressiveOptions`` for ``ProgressiveDisclosureMiddleware``; on
    when the table is present. Defaults are ``ProgressiveOptions``'s.

    ``call_tool_name`` adds a ``call_tool`` proxy for clients that ignore
    ``list_changed``; ``call_unlisted`` lets a client call any tool of a group it
    has not enabled by its exact name (search first).

    Example:
        ```toml
        [progressive]
        initial_groups = ["issues"]
        max_tools = 12
        call_tool_name = "call_tool"
        ```
    """

    _table: ClassVar[str] = "progressive"
    _kind: ClassVar[type[SearchOptions | ProgressiveOptions]] = ProgressiveOptions
    _meta_tool_keys: ClassVar[tuple[str, ...]] = (
        "enable_tool_name",
        "disable_tool_name",
        "call_tool_name",
    )

    initial_groups: list[str] | None = None
    max_tools: int | None = None
    hide_ungrouped: bool | None = None
    call_unlisted: bool | None = None
    offer_enable: bool | None = None
    available_groups: Literal["children", "all"] | None = None
    enable_tool_name: str | None = None
    disable_tool_name: str | None = None
    call_tool_name: str | None = None
    include_schemas: bool | None = None
    state_namespace: str | None = None

    def to_options(self) -> ProgressiveOptions:
        """The table as the library's ``ProgressiveOptions`` (checked there).

        Example:
            ```python
            load_config("proxy.toml").progressive.to_options().initial_groups  # ("issues",)
            ```
        """
        built: ProgressiveOptions = self._options_object()
        return built

    def options(self) -> dict[str, Any]:
        """The keyword options of ``ProgressiveDisclosureMiddleware`` these options make."""
        built = self.to_options()
        options = {name: getattr(built, name) for name in option_names(ProgressiveOptions)}
        return {**options, "initial_groups": list(built.initial_groups)}


class FilteringConfig(_Model):
    """The whole proxy: upstreams, declarations and middleware options.

    Cross-references are checked with the library's own validation when the
    model is built: unknown or cyclic parents, duplicate names, concern mapping
    to an undeclared concern or value, initial groups that do not exist.
    ``concern_mapping`` maps a tool name or glob to concern values; an exact name
    wins over patterns, and among patterns the first in the file wins.
    ``upstreams_from`` names an ``mcpServers`` JSON file (relative to the
    configuration file) whose servers are added after ``upstreams``, each named
    after its key and, when there are several upstreams, namespaced by it.

    Example:
        ```python
        config = FilteringConfig.model_validate({
            "upstreams": [{"command": "npx", "args": ["@modelcontextprotocol/server-memory"]}],
            "groups": [{"name": "graph", "tools": ["*"]}],
        })
        ```
    """

    name: str = "fastmcp-filtering"
    instructions: str | None = None
    on_upstream_error: Literal["raise", "warn"] | None = None
    """What a failing upstream does to requests: ``"warn"`` leaves it out and serves the
    others, ``"raise"`` fails each request that needs it, naming it. Unset: ``"warn"`` with
    several upstreams (one dead upstream is harmless), ``"raise"`` with one."""
    trust_upstream_groups: bool = False
    """Keep group membership an upstream claims in ``_meta`` (off: the config alone decides)."""
    upstreams_from: str | None = None
    upstreams: list[UpstreamConfig] = Field(min_length=1)
    groups: list[GroupConfig] = Field(default_factory=list)
    tags: list[TagConfig] = Field(default_factory=list)
    concerns: list[ConcernConfig] = Field(default_factory=list)
    concern_mapping: dict[str, dict[str, str]] = Field(default_factory=dict)
    apply_concern_defaults: ApplyDefaults | None = None
    """Concern defaults apply to clients that stated a concern (``configured``) or to all."""
    concerns_from_token: ConcernsFromTokenConfig | None = None
    """Concerns a caller's token configures, by scope or from a claim."""
    unauthenticated: Literal["deny", "allow"] = "deny"
    """What a client without a token gets of the groups with ``access``: nothing, or them."""
    side_effect_lists: bool | None = None
    """On 2026-07-28 too, ``enable_tools`` and ``concerns/update`` change the caller's later
    lists (which that revision forbids), for hosts that list again every turn. Unset: off."""
    search: SearchConfig = Field(default_factory=SearchConfig)
    progressive: ProgressiveConfig | None = None
    auth: AuthConfig | None = None
    """How HTTP requests are authenticated; None: they are not."""
    state: StateConfig = Field(default_factory=StateConfig)
    """Where per-client state lives (this process by default)."""

    @model_validator(mode="before")
    @classmethod
    def _read_upstreams_from(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("upstreams_from"), str):
            return data
        listed = data.get("upstreams", [])
        if not isinstance(listed, list):
            return data  # the type error is reported on upstreams
        context = info.context if isinstance(info.context, Mapping) else {}
        path = _base_dir(info) / Path(data["upstreams_from"]).expanduser()
        try:
            servers = read_servers(path, proxy_file=context.get("config_file"))
        except McpJsonError as error:
            raise _CrossReferenceError(("upstreams_from",), str(error)) from None
        namespaced = len(listed) + len(servers) > 1
        upstreams: list[Any] = list(listed)
        for key, table in servers:
            if namespaced:
                table = {**table, "namespace": namespace_of(key)}
            try:
                upstreams.append(
                    UpstreamConfig.model_validate(
                        {"name": key, **table}, context={"base_dir": path.parent}
                    )
                )
            except ValidationError as error:
                reasons = "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())
                raise _CrossReferenceError(
                    ("upstreams_from",), f"{path}: mcpServers.{key}: {reasons}"
                ) from None
        return {**data, "upstreams": upstreams}

    @field_validator("concern_mapping")
    @classmethod
    def _mapping_keys(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for key in value:
            if not key.strip():
                raise OptionError("concern_mapping keys are tool names or globs, not empty")
        return value

    @model_validator(mode="after")
    def _cross_references(self) -> FilteringConfig:
        self.catalog()
        _distinct_namespaces([u.namespace for u in self.upstreams])
        if self.concern_mapping and not self.concerns:
            raise _CrossReferenceError(
                ("concern_mapping",),
                "concern_mapping needs [[concerns]] to map onto; declare "
                '[[concerns]] name = "..." values = [...]',
            )
        if self.concerns:
            self.concern_middleware()
        tables: list[_OptionsTable] = [self.search]
        if self.progressive is not None:
            tables.append(self.progressive)
        # Each table checked its own names: here, one table's against the other's.
        _check_meta_tool_names([name for table in tables for name in table.meta_tools()])
        if self.search.enabled:
            _guard(
                lambda: SearchMiddleware(catalog=self.catalog(), options=self.search.to_options()),
                ("search",),
                dict.fromkeys(option_names(SearchOptions)),
            )
        if self.progressive is not None and self.progressive.enabled:
            progressive = self.progressive.to_options()
            _guard(
                lambda: ProgressiveDisclosureMiddleware(
                    catalog=self.catalog(), options=progressive
                ),
                ("progressive",),
                dict.fromkeys(option_names(ProgressiveOptions)),
            )
        return self

    # -- the library declarations -------------------------------------------------------

    def to_groups(self) -> list[Group]:
        """The declared groups as ``Group`` objects, in file order."""
        groups = []
        for index, group in enumerate(self.groups):
            groups.append(
                _guard(group.to_group, ("groups", index), group.model_dump(), default="name")
            )
        return groups

    def to_tags(self) -> list[Tag]:
        """The declared tags as ``Tag`` objects, in file order."""
        return [
            _guard(tag.to_tag, ("tags", i), tag.model_dump(), default="name")
            for i, tag in enumerate(self.tags)
        ]

    def to_concerns(self) -> list[Concern]:
        """The declared concerns as ``Concern`` objects, in file order."""
        return [
            _guard(concern.to_concern, ("concerns", i), concern.model_dump(), default="name")
            for i, concern in enumerate(self.concerns)
        ]

    def catalog(self, per_request: Callable[[FastMCPComponent], bool] | None = None) -> Catalog:
        """A fresh ``Catalog`` of the declared groups and tags (and ``Catalog``'s
        ``per_request``)."""
        groups, tags = self.to_groups(), self.to_tags()
        try:
            return Catalog(
                groups=groups,
                tags=tags,
                unauthenticated=self.unauthenticated,
                per_request=per_request,
            )
        except ValueError as error:
            raise _CrossReferenceError(self._catalog_key(str(error)), str(error)) from None

    def concern_authorization(self) -> ConcernsFromToken | None:
        """``concerns_from_token`` as the library's options object, or None."""
        table = self.concerns_from_token
        if table is None:
            return None
        built: ConcernsFromToken = _guard(
            table.to_options, ("concerns_from_token",), table.model_dump()
        )
        return built

    def concern_options(self) -> ConcernOptions:
        """The concerns' options: ``apply_concern_defaults`` where the file sets it."""
        if self.apply_concern_defaults is None:
            return ConcernOptions()
        return ConcernOptions(apply_defaults=self.apply_concern_defaults)

    def concern_middleware(self) -> ConcernMiddleware:
        """A ``ConcernMiddleware`` of the declared concerns, checking ``concern_mapping``.

        The middleware serves with patterns applied to the proxied components
        (see ``fastmcp_filtering.gateway.proxy``); this one validates names and values.
        """
        concerns = self.to_concerns()
        try:
            return ConcernMiddleware(
                concerns=concerns,
                mapping=self.concern_mapping,
                authorization=self.concern_authorization(),
                options=self.concern_options(),
            )
        except ValueError as error:
            message = str(error)
            scope = re.search(r"authorization\.scopes\[('.*?'|\".*?\")\]", message)
            if scope:
                message = message.replace("authorization.scopes", "concerns_from_token.scopes")
                where: KeyPath = ("concerns_from_token", "scopes", _unquote(scope.group(1)))
                raise _CrossReferenceError(where, message) from None
            key = re.search(r"mapping\[('.*?'|\".*?\")\]", message)
            if key:
                path: KeyPath = ("concern_mapping", _unquote(key.group(1)))
                concern = re.search(r"concern '([^']+)'", message)
                if concern:
                    path = (*path, concern.group(1))
                raise _CrossReferenceError(path, message) from None
            twice = re.search(r"concern '([^']+)' is declared twice", message)
            if twice:
                names = [c.name for c in self.concerns]
                index = len(names) - 1 - names[::-1].index(twice.group(1))
                raise _CrossReferenceError(("concerns", index, "name"), message) from None
            raise _CrossReferenceError(("concerns",), message) from None

    def _catalog_key(self, message: str) -> KeyPath:
        names = [g.name for g in self.groups]
        if match := re.search(r"tag '([^']+)' is declared twice", message):
            tag_names = [t.name for t in self.tags]
            return ("tags", _last_index(tag_names, match.group(1)), "name")
        if match := re.search(r"group '([^']+)' is declared twice", message):
            return ("groups", _last_index(names, match.group(1)), "name")
        if match := re.search(r"group '([^']+)' names unknown parent", message):
            return ("groups", names.index(match.group(1)), "parent")
        if match := re.search(r"cycle: (\S+) ->", message):
            return ("groups", names.index(match.group(1)), "parent")
        return ("groups",)


def _check_meta_tool_names(names: Sequence[tuple[KeyPath, str]]) -> None:
    """The stack's own tools (search, progressive) need valid names of their own."""
    seen: dict[str, KeyPath] = {}
    for path, name in names:
        if not _TOOL_NAME.fullmatch(name):
            raise _CrossReferenceError(
                path,
                f"{name!r} is not a tool name: use 1 to 128 letters, digits, '_', '-' or "
                "'.'" + (", or false to turn the tool off" if path[0] == "search" else ""),
            )
        if name in seen:
            raise _CrossReferenceError(
                path,
                f"{name!r} is also the name of {_format_key(seen[name])}; give each "
                "meta-tool its own name",
            )
        seen[name] = path


def _last_index(names: list[str], name: str) -> int:
    return len(names) - 1 - names[::-1].index(name)


def _unquote(text: str) -> str:
    return text[1:-1]


def _guard(
    build: Callable[[], Any],
    path: KeyPath,
    fields: Mapping[str, Any],
    *,
    default: str | None = None,
) -> Any:
    """Run a library constructor; a ``ValueError`` names the config key it is about."""
    try:
        return build()
    except _CrossReferenceError:
        raise
    except ValueError as error:
        message = speak_toml(str(error))
        # The option a message names first is the one it is about.
        found = {f: re.search(rf"\b{re.escape(f)}\b", message) for f in fields}
        named = sorted((m.start(), f) for f, m in found.items() if m is not None)
        field = named[0][1] if named else default
        raise _CrossReferenceError((*path, field) if field else path, message) from None


# -- loading --------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> FilteringConfig:
    """Read and validate a proxy configuration file (``.toml``, ``.json``, ``.yaml``).

    Relative paths in the file (``cwd``, a ``command`` with a slash, and the
    subprocess's working directory) are resolved against the file's directory.
    Raises ``ConfigError`` naming the file, the key, the line (TOML) and the fix.

    Example:
        ```python
        config = load_config("examples/server-github.toml")
        proxy = build_proxy(config)
        ```
    """
    file = Path(path)
    shown = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(
            shown, [("", None, f"cannot read the file ({reason}); check the path")]
        ) from None
    data = _parse(text, file, shown)
    if not isinstance(data, dict):
        raise ConfigError(
            shown,
            [("", None, f"the file must hold a table of settings, not {type(data).__name__}")],
        )
    locate = _toml_locator(text) if file.suffix.lower() == ".toml" else (lambda _path: None)
    context = {"base_dir": file.resolve().parent, "config_file": file.resolve()}
    try:
        return FilteringConfig.model_validate(data, context=context)
    except ValidationError as error:
        problems = _merge([_problem(e, locate) for e in error.errors()])
        raise ConfigError(shown, problems) from None


def _merge(problems: list[tuple[str, int | None, str]]) -> list[tuple[str, int | None, str]]:
    """One problem per key (a union reports each member), sorted by line."""
    merged: dict[str, tuple[str, int | None, str]] = {}
    for key, line, message in problems:
        if key in merged and key:
            previous = merged[key][2]
            should = re.match(r"Input should be (.*?) \(got (.*)\); fix the value$", message)
            if should and " (got " in previous:
                head, _, tail = previous.rpartition(" (got ")
                message = f"{head} or {should.group(1)} (got {tail}"
            else:
                message = f"{previous}; {message}"
        merged[key] = (key, line, message)
    return sorted(merged.values(), key=lambda p: (p[1] is None, p[1] or 0))


def _parse(text: str, file: Path, shown: str) -> Any:
    suffix = file.suffix.lower()
    try:
        if suffix == ".toml":
            return tomllib.loads(text)
        if suffix == ".json":
            return json.loads(text)
        if suffix in (".yaml", ".yml"):
            import yaml  # type: ignore[import-untyped]  # PyYAML comes with fastmcp's server extra

            return yaml.safe_load(text)
    except tomllib.TOMLDecodeError as error:
        line = re.search(r"line (\d+)", str(error))
        raise ConfigError(
            shown,
            [("", int(line.group(1)) if line else None, f"not valid TOML: {error}")],
        ) from None
    except json.JSONDecodeError as error:
        raise ConfigError(shown, [("", error.lineno, f"not valid JSON: {error.msg}")]) from None
    except Exception as error:  # yaml.YAMLError and friends
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        # Not str(error): it quotes the offending line, which may hold a token.
        problem = getattr(error, "problem", None) or type(error).__name__
        raise ConfigError(shown, [("", line, f"not valid YAML: {problem}")]) from None
    raise ConfigError(
        shown,
        [("", None, f"unknown file type {suffix!r}; name the file .toml, .json or .yaml")],
    )


def _problem(error: Any, locate: Callable[[KeyPath], int | None]) -> tuple[str, int | None, str]:
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, _CrossReferenceError):
        return _format_key(cause.path), locate(cause.path), cause.message
    path: KeyPath = tuple(p for p in error["loc"] if isinstance(p, int) or not _is_union_tag(p))
    kind = error["type"]
    message = error["msg"]
    if kind == "extra_forbidden":
        known = _known_keys(path[:-1])
        message = f"unknown key {path[-1]!r}; remove it" + (
            f" or use one of {', '.join(known)}" if known else ""
        )
    elif kind == "missing":
        name = path[-1]
        table = name in _MODELS and name not in ("search", "progressive", "auth", "state")
        message = f"required key {name!r} is missing; add " + (
            f"a [[{name}]] table" if table else f"{name} = ..."
        )
        if name == "upstreams":
            message += ' or upstreams_from = "mcp.json"'

    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    else:
        got = error.get("input")
        shown = "a table" if isinstance(got, dict) else repr(got)
        if any(isinstance(p, str) and p in _SECRET_KEYS for p in path):
            shown = f"a value of type {type(got).__name__}"  # it may be the secret itself
        message = f"{message} (got {shown}); fix the value"
    return _format_key(path), locate(path), speak_toml(message)


def _is_union_tag(part: str | int) -> bool:
    # pydantic names union members in the location (``str``, ``list[str]``, ``literal[...]``).
    return isinstance(part, str) and bool(
        re.fullmatch(r"(str|int|bool|list\[.*\]|literal\[.*\]|function-after\[.*\])", part)
    )


# Keys whose values are (or hold) secrets: a type error names the type, never the value.
_SECRET_KEYS = frozenset(
    {"env", "headers", "args", "url", "token", "tokens", "jwks_uri", "public_key", "secret"}
)

_MODELS: dict[str, type[BaseModel]] = {
    "upstreams": UpstreamConfig,
    "groups": GroupConfig,
    "tags": TagConfig,
    "concerns": ConcernConfig,
    "search": SearchConfig,
    "progressive": ProgressiveConfig,
    "auth": AuthConfig,
    "state": StateConfig,
}
# Tables inside tables: (table, key) -> the model of its entries.
_NESTED: dict[tuple[str, str], type[BaseModel]] = {("auth", "tokens"): StaticToken}


def _known_keys(path: KeyPath) -> list[str]:
    if not path:
        return list(FilteringConfig.model_fields)
    head = path[0]
    model = _MODELS.get(head) if isinstance(head, str) else None
    names = [p for p in path if isinstance(p, str)]
    if len(names) > 1:
        model = _NESTED.get((names[0], names[1]))
    return list(model.model_fields) if model is not None else []


# -- TOML line numbers ------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def _split_dotted(text: str) -> list[str]:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([^.\s]+)', text)
    return [a or b or c for a, b, c in parts]


def _toml_locator(text: str) -> Callable[[KeyPath], int | None]:
    """Find the line of a key path in TOML source: a best effort for the usual layouts."""
    lines = text.splitlines()
    # Each section: (path with array indices, first line number, header line number).
    sections: list[tuple[KeyPath, int]] = [((), 0)]
    counts: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        names = tuple(_split_dotted(match.group(2)))
        if match.group(1) == "[[":
            index = counts.get(names, 0)
            counts[names] = index + 1
            sections.append(((*names, index), number))
        else:
            sections.append((names, number))
    ends = [start for _, start in sections[1:]] + [len(lines)]

    def locate(path: KeyPath) -> int | None:
        best: tuple[int, int] | None = None  # (section index, matched length)
        for i, (section, _) in enumerate(sections):
            size = len(section)
            fits = size <= len(path) and tuple(path[:size]) == section
            if fits and (best is None or size > best[1]):
                best = (i, size)
        if best is None:
            return None
        i, size = best
        start, end = sections[i][1], ends[i]
        rest = [p for p in path[size:] if isinstance(p, str)]
        if not rest:
            return start + 1 if i else None
        key = rest[0]
        quoted = rf"(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')"
        pattern = re.compile(rf"^\s*{quoted}\s*(=|\.)")
        for number in range(start + (1 if i else 0), end):
            if pattern.match(lines[number]):
                return number + 1
        return start + 1 if i else None

    return locate


def _distinct_namespaces(namespaces: list[str | None]) -> None:
    """No namespace may repeat, nor be another's followed by ``_``, and at most one
    upstream goes without: their names would mix.

    With ``search`` and ``search_x``, upstream ``search``'s tool ``x_open`` and
    upstream ``search_x``'s ``open`` are both served as ``search_x_open``.
    """
    for index, namespace in enumerate(namespaces):
        if namespace is None:
            if None in namespaces[:index]:
                raise _CrossReferenceError(
                    ("upstreams", index),
                    "a second upstream without namespace: two upstreams without one can "
                    "list the same tool name, and one would take the other's calls; give "
                    'this one a namespace (namespace = "..." prefixes its tool names)',
                )
            continue
        if namespace in namespaces[:index]:
            raise _CrossReferenceError(
                ("upstreams", index, "namespace"),
                f"namespace {namespace!r} is used twice; give each upstream its own",
            )
        for other in namespaces[:index]:
            if other is None:
                continue
            short, long = sorted((other, namespace), key=len)
            if long.startswith(f"{short}_"):
                raise _CrossReferenceError(
                    ("upstreams", index, "namespace"),
                    f"namespaces {short!r} and {long!r} overlap: upstream {short!r}'s tool "
                    f"'{long[len(short) + 1 :]}_x' and upstream {long!r}'s tool 'x' would "
                    f"both be {long}_x; choose namespaces where neither is the other "
                    "followed by '_'",
                )

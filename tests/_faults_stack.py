"""A server with all four middlewares on one ``Catalog``, and an independent model of it.

The model says, from the declarations below and a client's state alone, which
components a client may be shown. It does not call into the package, so a test
that compares the server's lists with it checks the package, not itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.server.auth import require_scopes

from fastmcp_filtering import (
    Catalog,
    Concern,
    ConcernMiddleware,
    FilterMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    Tag,
    concerns,
    in_group,
    install,
)

from ._principals import TOKENS, PrincipalByClientName

GROUPS = [
    Group("issues", title="Issues", description="Create and triage issues"),
    Group("code", description="Code management"),
    Group("repos", description="Repositories", parent="code"),
    Group("admin", description="Destructive administration", tools=["delete_*"]),
    # Access control: only a token with vault:open may use it (tests/_principals.py: keeper).
    Group("vault", description="Sealed records", access=require_scopes("vault:open")),
]
TAGS = [Tag("stable", "Production-ready")]
CONCERNS = [
    Concern("security", values=["high", "medium", "low"], default="medium", ordered=True),
    Concern("cost", values=["minimal", "moderate", "high"]),
]
INITIAL_GROUPS = frozenset({"issues"})
META_TOOLS = frozenset({"enable_tools", "disable_tools", "call_tool", "search_tools"})
MAX_RESULTS = 10


@dataclass(frozen=True)
class Declared:
    """One component as the test declares it: the model's only input."""

    kind: str
    key: str
    """Name for tools and prompts, URI for resources, URI template for templates."""
    groups: tuple[str, ...] = ()
    undeclared: bool = False
    tags: frozenset[str] = frozenset()
    concerns: Mapping[str, str] = field(default_factory=dict)


DECLARED: list[Declared] = [
    Declared("tool", "create_issue", ("issues",), tags=frozenset({"stable"})),
    Declared("tool", "list_issues", ("issues",), tags=frozenset({"stable"})),
    Declared("tool", "create_repo", ("repos",), concerns={"security": "medium"}),
    Declared("tool", "delete_repo", ("admin",), concerns={"security": "low"}),
    Declared("tool", "delete_branch", ("admin",), tags=frozenset({"danger"})),
    Declared("tool", "encrypt_data", concerns={"security": "high", "cost": "minimal"}),
    Declared("tool", "dump_plaintext", concerns={"security": "low", "cost": "high"}),
    Declared("tool", "ping", tags=frozenset({"stable"})),
    Declared("tool", "typo", undeclared=True),
    Declared("tool", "open_vault", ("vault",)),
    Declared("prompt", "triage", ("issues",)),
    Declared("prompt", "hello"),
    Declared("prompt", "leak_prompt", concerns={"security": "low"}),
    Declared("prompt", "review_prompt", ("repos",)),
    Declared("resource", "repo://readme", ("repos",)),
    Declared("resource", "misc://notes"),
    Declared("resource", "secret://dump", concerns={"security": "low"}),
    Declared("resource", "vault://ledger", ("vault",)),
    Declared("template", "repo://{name}/license", ("repos",)),
    Declared("template", "secret://{name}/key", concerns={"security": "low"}),
]
PARENTS = {"repos": "code"}
ACCESS = {"vault": "vault:open"}
"""Each checked group and the scope its check requires."""


def make_stack(
    *, store: Any = None, page_size: int | None = None, apply_defaults: Any = "configured"
) -> FastMCP:
    """A fresh server: Filter, Search, Concern and ProgressiveDisclosure on one catalog."""
    mcp = FastMCP("stack", session_state_store=store, list_page_size=page_size)
    # Outermost: authenticates clients by their name, as a token verifier would.
    mcp.add_middleware(PrincipalByClientName())

    @in_group("vault")
    @mcp.tool
    def open_vault() -> str:
        return "vault opened"

    @in_group("vault")
    @mcp.resource("vault://ledger")
    def ledger() -> str:
        return "the ledger"

    @in_group("issues")
    @mcp.tool(tags={"stable"})
    def create_issue(title: str) -> str:
        return f"created {title}"

    @in_group("issues")
    @mcp.tool(tags={"stable"})
    def list_issues() -> str:
        return "[]"

    @concerns(security="medium")
    @in_group("repos")
    @mcp.tool
    def create_repo(name: str) -> str:
        return f"repo {name}"

    @concerns(security="low")
    @mcp.tool
    def delete_repo(name: str) -> str:
        return f"deleted {name}"

    @mcp.tool(tags={"danger"})
    def delete_branch(name: str) -> str:
        return f"deleted branch {name}"

    @concerns(security="high", cost="minimal")
    @mcp.tool
    def encrypt_data(data: str) -> str:
        return data[::-1]

    @concerns(security="low", cost="high")
    @mcp.tool
    def dump_plaintext(data: str) -> str:
        return data

    @mcp.tool(tags={"stable"})
    def ping() -> str:
        return "pong"

    @in_group("issuez")
    @mcp.tool
    def typo() -> str:
        return "hidden"

    @in_group("issues")
    @mcp.prompt
    def triage(issue: int) -> str:
        return f"Triage issue {issue}"

    @mcp.prompt
    def hello() -> str:
        return "hi"

    @concerns(security="low")
    @mcp.prompt
    def leak_prompt() -> str:
        return "secret"

    @in_group("repos")
    @mcp.prompt
    def review_prompt() -> str:
        return "review the repo"

    @in_group("repos")
    @mcp.resource("repo://readme")
    def readme() -> str:
        return "# readme"

    @mcp.resource("misc://notes")
    def notes() -> str:
        return "notes"

    @concerns(security="low")
    @mcp.resource("secret://dump")
    def dump() -> str:
        return "plaintext"

    @in_group("repos")
    @mcp.resource("repo://{name}/license")
    def license_of(name: str) -> str:
        return f"MIT {name}"

    @concerns(security="low")
    @mcp.resource("secret://{name}/key")
    def key_of(name: str) -> str:
        return f"key of {name}"

    catalog = Catalog(groups=GROUPS, tags=TAGS)
    install(mcp, FilterMiddleware(catalog=catalog))
    install(mcp, SearchMiddleware(catalog=catalog, max_results=MAX_RESULTS))
    install(mcp, ConcernMiddleware(concerns=CONCERNS, apply_defaults=apply_defaults))
    install(
        mcp,
        ProgressiveDisclosureMiddleware(
            catalog=catalog,
            initial_groups=sorted(INITIAL_GROUPS),
            call_tool_name="call_tool",
        ),
    )
    return mcp


OWN_PROXIES = frozenset({"run", "read", "render"})


def add_own_proxy(mcp: FastMCP) -> None:
    """Server tools of the application's own that call a tool, read a resource, render a prompt."""

    @mcp.tool
    async def run(name: str, ctx: Context, arguments: dict[str, Any] | None = None) -> str:
        result = await ctx.fastmcp.call_tool(name, arguments or {})
        return str((result.structured_content or {}).get("result"))

    @mcp.tool
    async def read(uri: str, ctx: Context) -> str:
        result = await ctx.fastmcp.read_resource(uri)
        return " ".join(str(getattr(c, "content", "")) for c in result.contents)

    @mcp.tool
    async def render(name: str, ctx: Context) -> str:
        result = await ctx.fastmcp.render_prompt(name, {})
        return " ".join(str(getattr(m.content, "text", "")) for m in result.messages)


# -- the model ---------------------------------------------------------------------------

_RANK = {"high": 0, "medium": 1, "low": 2}
_DEFAULTS = {"security": "medium"}


@dataclass
class ClientState:
    """What a client may see: its enabled groups and its concern configuration."""

    enabled: frozenset[str] = INITIAL_GROUPS
    configured: dict[str, str] | None = None
    """None until the client states a concern: concerns do not filter it (apply_defaults)."""
    concerns_unknown: bool = False
    """The store failed: no configuration is known, so whatever has concern values is hidden."""
    principal: str | None = None
    """Whose token the client sends (tests/_principals.py), or None: unauthenticated."""

    def copy(self) -> ClientState:
        return ClientState(
            self.enabled, _copied(self.configured), self.concerns_unknown, self.principal
        )

    @property
    def denied(self) -> frozenset[str]:
        """Checked groups this client's token does not pass: unknown to it."""
        token = TOKENS.get(self.principal or "")
        scopes = set(token.scopes) if token is not None else set()
        return frozenset(g for g, scope in ACCESS.items() if scope not in scopes)

    def groups(self) -> list[str]:
        """``groups/list`` for this client: every declared group it may use, in order."""
        return [g.name for g in GROUPS if g.name not in self.denied]

    def enable(self, names: object) -> None:
        """``enable_tools(groups=names)`` without max_tools: roots, and children of enabled."""
        if not isinstance(names, list):
            return
        wanted = {n for n in names if isinstance(n, str)} - self.denied
        added = {n for n in wanted if n in {g.name for g in GROUPS} and n not in PARENTS}
        enabled = self.enabled | added
        added_children = {c for c, p in PARENTS.items() if c in wanted and p in enabled}
        self.enabled = enabled | added_children

    def disable(self, names: object) -> None:
        """``disable_tools(groups=names)``: each named group and every group below it."""
        if not isinstance(names, list):
            return
        gone = {n for n in names if isinstance(n, str)}
        gone |= {c for c, p in PARENTS.items() if p in gone}
        self.enabled = self.enabled - gone


def _copied(configured: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if configured is None else dict(configured)


def effective(configured: Mapping[str, str] | None) -> dict[str, str]:
    """What filters a client: nothing until it states a concern, then the defaults fill in."""
    return {} if configured is None else {**_DEFAULTS, **configured}


def _concerns_admit(component: Declared, asked: Mapping[str, str]) -> bool:
    for name, wanted in asked.items():
        value = component.concerns.get(name)
        if value is None:
            continue
        if name == "security":
            if _RANK[value] > _RANK[wanted]:
                return False
        elif value != wanted:
            return False
    return True


def _progressive_admits(component: Declared, enabled: frozenset[str]) -> bool:
    if component.groups:
        return bool(enabled & set(component.groups))
    return not component.undeclared


def allowed(
    kind: str,
    state: ClientState,
    *,
    override: Mapping[str, str] | None = None,
    filter_groups: Iterable[str] | None = None,
    filter_tags: Iterable[str] = (),
) -> set[str]:
    """Keys of ``kind`` this client may be listed: every layer's decision and the filter."""
    asked = effective(state.configured if override is None else override)
    keep: set[str] = set()
    wanted_groups = None
    if filter_groups is not None:
        wanted_groups = set(filter_groups)
        wanted_groups |= {c for c, p in PARENTS.items() if p in wanted_groups}
    tags = set(filter_tags)
    for component in DECLARED:
        if component.kind != kind:
            continue
        if component.groups and set(component.groups) <= state.denied:
            continue
        if not _progressive_admits(component, state.enabled):
            continue
        if not _concerns_admit(component, asked):
            continue
        if override is None and state.concerns_unknown and component.concerns:
            continue
        if wanted_groups is not None and not wanted_groups & set(component.groups):
            continue
        if not tags <= component.tags:
            continue
        keep.add(component.key)
    if kind == "tool" and wanted_groups is None and not tags:
        # Meta-tools are in no group and carry no concern: always listed, unless filtered.
        keep |= META_TOOLS
    return keep


def searchable(found: list[dict[str, Any]], state: ClientState) -> bool:
    """Whether a ``search_tools`` answer names only what this client may learn of.

    A tool it may call comes whole; a tool hidden only because its group is not
    enabled may come with ``available_after`` and no schema; nothing else at all.
    """
    everything = ClientState(
        frozenset(g.name for g in GROUPS),
        _copied(state.configured),
        state.concerns_unknown,
        state.principal,
    )
    callable_ = allowed("tool", state)
    later = allowed("tool", everything) - callable_
    for tool in found:
        if "available_after" in tool:
            if tool["name"] not in later or "inputSchema" in tool:
                return False
        elif tool["name"] not in callable_:
            return False
    return True


def visible_tags(state: ClientState) -> set[str]:
    """``tags/list`` for this client: declared tags and the tags of what it may see."""
    tags = {t.name for t in TAGS}
    for component in DECLARED:
        if component.key in allowed(component.kind, state):
            tags |= component.tags
    return tags

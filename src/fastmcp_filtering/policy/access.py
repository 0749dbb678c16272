"""Access control by group: which groups a principal may use, judged once per request.

A ``Group(access=...)`` holds FastMCP auth checks. For each request the checks
of every ruled group run once against the request's token (FastMCP's
``get_access_token``), with the group standing in as the component; a group
fails when its own checks or any ancestor's fail. What fails is *denied*:

- ``GroupAccess.tree()`` is the catalog as this principal may know it (denied
  groups removed from ``groups``, ``group()``, hierarchy and membership). Every
  request-time answer that names groups (``groups/list``, ``filter`` names,
  ``enable_tools``, replies, hints, ``_meta`` marks) reads this tree, so a
  denied group answers as an unknown one.
- ``AccessLayer`` is the policy layer that conceals a denied group's members
  inside FastMCP's lookup (every path: lists, calls, reads, tasks, completions):
  a component is concealed when every group it is directly in is denied, or
  when any group containing it is denied and ``restrictive``.

Fail closed: outside a request, or when a check raises, a ruled group is denied.
"""

from __future__ import annotations

import enum
import logging
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from fastmcp.server.auth import AccessToken
from fastmcp.utilities.components import FastMCPComponent
from typing_extensions import override

from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.core.catalog import Membership, Unauthenticated
from fastmcp_filtering.core.request import is_unrestricted, request_memo
from fastmcp_filtering.policy.decision import CONCEALED, ClientRequest, Hidden, PolicyLayer

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from fastmcp import FastMCP

    from fastmcp_filtering.core.catalog import Catalog
    from fastmcp_filtering.core.declarations import Group, Tag

logger = logging.getLogger("fastmcp_filtering")


@dataclass(frozen=True, slots=True)
class _Rules:
    """The ruled groups of one catalog version, resolved once."""

    version: int
    checks: tuple[tuple[str, tuple[Callable[..., Any], ...], FastMCPComponent], ...]
    """Each group with its own checks, and the component it stands in as."""
    ruled: frozenset[str]
    """Groups under a check: those with checks and every group below them."""
    restrictive: frozenset[str]
    """Groups whose denial wins over a member's other groups."""


class GroupAccess:
    """The access rules of one catalog's groups, and this request's answer to them.

    One per catalog, kept as its ``access_rules`` (``access_of``): every middleware
    built on a catalog judges its checks with the same object, so they agree on what a
    principal may use.

    Example:
        ```python
        view = await access_of(catalog).tree()  # the groups this request's principal may know
        ```
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        catalog.set_audience(self.viewer)
        self._rules: _Rules | None = None
        self.layer = AccessLayer(self)
        self.enforced_on: weakref.WeakSet[FastMCP] = weakref.WeakSet()
        """The servers whose setup enforces these checks (and follows ``add_group``)."""
        catalog.access_rules = self

    def __repr__(self) -> str:
        return f"GroupAccess(ruled={sorted(self.rules().ruled)!r})"

    @property
    def unauthenticated(self) -> Unauthenticated:
        """What a client with no token gets of the ruled groups (the catalog's choice)."""
        return self.catalog.unauthenticated

    def rules(self) -> _Rules:
        rules = self._rules
        if rules is not None and rules.version == self.catalog.version:
            return rules
        catalog = self.catalog
        own = [g for g in catalog.groups if g.checks]
        ruled: set[str] = set()
        for group in own:
            ruled |= catalog.descendants(group.name)
        self._rules = rules = _Rules(
            version=catalog.version,
            checks=tuple((g.name, g.checks, _stand_in(g)) for g in own),
            ruled=frozenset(ruled),
            restrictive=frozenset(g.name for g in catalog.groups if g.restrictive),
        )
        return rules

    @property
    def active(self) -> bool:
        """Whether any group has access checks."""
        return bool(self.rules().checks)

    async def denied(self) -> frozenset[str]:
        """The groups this request's principal may not use (with everything below them)."""
        rules = self.rules()
        if not rules.checks or is_unrestricted():
            return frozenset()
        request = current_request()
        if request is None:
            # Startup or a programmatic call: no principal, so nothing ruled is usable.
            return rules.ruled
        remembered = request_memo()
        key = ("denied", id(self))
        cached = remembered.get(key) if remembered is not None else None
        if cached is not None and cached[0] is self:
            return cast("frozenset[str]", cached[1])
        denied = await self._evaluate(rules, _current_token())
        if remembered is not None:
            remembered[key] = (self, denied)
        return denied

    async def viewer(self, principal: object) -> _View | None:
        """What ``principal`` (a token ``current_principal`` gave) may see now; None: all.

        The catalog's ``audience``: a runtime change is announced to a remembered
        connection only when what its principal may see changed.
        """
        rules = self.rules()
        if not rules.checks:
            return None
        token: AccessToken | Literal[_Unusable.TOKEN] | None = _UNUSABLE
        if principal is None or isinstance(principal, AccessToken):
            token = principal
        if isinstance(token, AccessToken) and _expired(token):
            token = _UNUSABLE
        denied = await self._evaluate(rules, token)
        return _View(self.catalog, denied, rules.restrictive & denied)

    async def _evaluate(
        self, rules: _Rules, token: AccessToken | Literal[_Unusable.TOKEN] | None
    ) -> frozenset[str]:
        from fastmcp.utilities.authorization import AuthContext, run_auth_checks

        if token is _UNUSABLE:
            # An expired or unreadable token is a failed authentication, not its absence:
            # "allow" is for clients that sent none (a local stdio owner), never for these.
            return rules.ruled
        if token is None:
            return frozenset() if self.unauthenticated == "allow" else rules.ruled
        denied: set[str] = set()
        for name, checks, stand_in in rules.checks:
            try:
                allowed = await run_auth_checks(list(checks), AuthContext(token, stand_in))
            except Exception as exc:
                # AuthorizationError is a check's deliberate denial; anything else is a bug
                # in the check: both deny.
                logger.debug("access check of group %r denied: %r", name, exc)
                allowed = False
            if not allowed:
                denied |= self.catalog.descendants(name)
        return frozenset(denied)

    async def judge(self) -> _View:
        """What this request's principal may use: ``judge(component)`` conceals the rest."""
        denied = await self.denied()
        return _View(self.catalog, denied, self.rules().restrictive & denied)

    async def tree(self) -> Catalog | CatalogView:
        """The catalog as this request's principal may know it."""
        denied = await self.denied()
        return CatalogView(self.catalog, denied) if denied else self.catalog

    def open_groups(self) -> list[Group]:
        """Groups no check rules, in declaration order: what every client may be told of."""
        ruled = self.rules().ruled
        return [g for g in self.catalog.groups if g.name not in ruled]


class _Unusable(enum.Enum):
    """A token that was sent but cannot be trusted now (expired, unreadable)."""

    TOKEN = enum.auto()


_UNUSABLE = _Unusable.TOKEN


def _current_token() -> AccessToken | Literal[_Unusable.TOKEN] | None:
    """The request's verified token; None when none was sent, ``_UNUSABLE`` when it
    expired or could not be read."""
    from fastmcp.server.dependencies import get_access_token

    try:
        token = get_access_token()
    except Exception:
        return _UNUSABLE
    if token is None:
        return None
    if _expired(token):
        # The verifier checked it when the request came in; a long-lived session may outlive it.
        return _UNUSABLE
    return token


def _expired(token: AccessToken) -> bool:
    expires = getattr(token, "expires_at", None)
    return isinstance(expires, int | float) and expires <= time.time()


def current_principal() -> object:
    """Who this request authenticated as, for ``Catalog.remember``: its token, or None."""
    return _current_token()


def _stand_in(group: Group) -> FastMCPComponent:
    """The component a group's auth checks see: its name, title, description and meta."""
    return FastMCPComponent(
        name=group.name,
        title=group.display_title,
        description=group.description,
        meta=dict(group.meta or {}),
    )


class CatalogView:
    """A catalog with the groups one principal may not use taken out; read-only.

    Answers as ``Catalog`` does for the groups that remain: a denied group is
    unknown, missing from every parent's children and every member's groups.
    """

    __slots__ = ("_catalog", "denied")

    def __init__(self, catalog: Catalog, denied: frozenset[str]) -> None:
        self._catalog = catalog
        self.denied = denied

    def __repr__(self) -> str:
        return f"CatalogView({self._catalog!r}, denied={sorted(self.denied)!r})"

    @property
    def groups(self) -> tuple[Group, ...]:
        return tuple(g for g in self._catalog.groups if g.name not in self.denied)

    @property
    def tags(self) -> tuple[Tag, ...]:
        return self._catalog.tags

    @property
    def version(self) -> int:
        return self._catalog.version

    @property
    def key(self) -> Hashable:
        return (self._catalog.version, self.denied)

    def group(self, name: str) -> Group | None:
        return None if name in self.denied else self._catalog.group(name)

    def children(self, name: str) -> tuple[str, ...]:
        if name in self.denied:
            return ()
        return tuple(c for c in self._catalog.children(name) if c not in self.denied)

    def descendants(self, name: str) -> frozenset[str]:
        return frozenset() if name in self.denied else self._catalog.descendants(name) - self.denied

    def ancestors(self, name: str) -> frozenset[str]:
        # Denial reaches every group below a denied one: an allowed group's ancestors are allowed.
        return frozenset() if name in self.denied else self._catalog.ancestors(name)

    def roots(self) -> tuple[str, ...]:
        return tuple(r for r in self._catalog.roots() if r not in self.denied)

    def membership(self, component: FastMCPComponent) -> Membership:
        full = self._catalog.membership(component)
        if self.denied.isdisjoint(full.effective):
            return full
        return Membership(
            tuple(g for g in full.direct if g not in self.denied),
            full.effective - self.denied,
            full.undeclared,
        )


class AccessLayer(PolicyLayer):
    """Conceals the members of the groups a principal may not use, inside FastMCP's lookup."""

    @override
    def changes_with(self, *, modern: bool) -> bool:
        return False

    def __init__(self, access: GroupAccess) -> None:
        self.access = access

    def __repr__(self) -> str:
        return f"AccessLayer({self.access.catalog!r})"

    async def view(self, client: ClientRequest) -> _View:
        return await self.access.judge()


class _View:
    __slots__ = ("_catalog", "_denied", "_restrictive", "denied_groups", "key")

    def __init__(self, catalog: Catalog, denied: frozenset[str], restrictive: frozenset[str]):
        self._catalog = catalog
        self._denied = denied
        self.denied_groups = denied
        """Groups this principal may not use: a listed component's own ``_meta`` must not
        name them either (see ``Policy.denied_groups``)."""
        self._restrictive = restrictive
        self.key = ("access", id(catalog), catalog.version, denied)

    def sees(self, component: FastMCPComponent) -> bool:
        return self.judge(component) is None

    def knows(self, group: str) -> bool:
        return group not in self._denied

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        if not self._denied:
            return None
        membership = self._catalog.membership(component)
        if not membership.direct:
            return None
        if not self._restrictive.isdisjoint(membership.effective):
            return CONCEALED
        if all(g in self._denied for g in membership.direct):
            return CONCEALED
        return None


def access_of(catalog: Catalog) -> GroupAccess:
    """The access rules of ``catalog``'s groups: its ``access_rules``, made the first time."""
    access = catalog.access_rules
    return access if isinstance(access, GroupAccess) else GroupAccess(catalog)

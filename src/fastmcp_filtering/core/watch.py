"""What a catalog last saw of its server, and who to tell of a change: only what each sees.

FastMCP does not announce ``mcp.add_tool()`` at runtime, and a runtime
``Catalog.add_group`` changes what belongs where. ``Watch`` keeps the server's
components as last seen (their groups and tags) and the session-era connections
to tell, each with the principal it authenticated as. A change is announced to a
connection only when what that principal may see changed (its ``Viewer``, from
the access rules registered as the catalog's ``audience``, and each component's
own ``auth``), so no client learns when something it may not see came, went or
moved. A mounted server's components are judged by its own policy per request,
which no change outside a request can ask, and a provider may list some per
caller (the catalog's ``per_request``): changes to them are announced to nobody
(a client sees them at its next listing).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, cast

from fastmcp.server.middleware.authorization import AuthMiddleware

from fastmcp_filtering.core.request import unrestricted

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

    from fastmcp import FastMCP
    from fastmcp.utilities.components import FastMCPComponent
    from mcp.server.connection import Connection

logger = logging.getLogger("fastmcp_filtering")

Kind = Literal["tool", "prompt", "resource", "template"]

_LIST_CHANGED: dict[Kind, str] = {
    "tool": "notifications/tools/list_changed",
    "prompt": "notifications/prompts/list_changed",
    "resource": "notifications/resources/list_changed",
    "template": "notifications/resources/list_changed",
}
_GROUPS_LIST_CHANGED = "notifications/groups/list_changed"
TAGS_LIST_CHANGED = "notifications/tags/list_changed"


class Viewer(Protocol):
    """What one principal may see of a catalog's components and groups, now."""

    def sees(self, component: FastMCPComponent) -> bool:
        """Whether the principal may see ``component``."""
        ...

    def knows(self, group: str) -> bool:
        """Whether the principal may know of the group called ``group``."""
        ...


Audience: TypeAlias = "Callable[[object], Awaitable[Viewer | None]]"
"""Turns a connection's principal into its ``Viewer`` (None: it sees everything)."""


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class _Direct(Protocol):
    @property
    def direct(self) -> tuple[str, ...]: ...


class _Declarations(Protocol):
    """What the watch reads of its catalog: its groups and who is in which."""

    @property
    def groups(self) -> Sequence[_Named]: ...

    def membership(self, component: FastMCPComponent) -> _Direct: ...

    def per_request(self, component: FastMCPComponent) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Seen:
    """One component as last seen: itself (to judge), its direct groups and its tags."""

    component: FastMCPComponent
    groups: tuple[str, ...]
    tags: tuple[str, ...]


_Baseline = dict[Kind, dict[str, _Seen]]


@dataclass(frozen=True, slots=True)
class _Sight:
    """What one connection could see at one moment: the groups, each kind's entries, tags."""

    groups: tuple[str, ...]
    entries: dict[Kind, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] | None

    def changes(self, other: _Sight) -> list[str]:
        methods: set[str] = set()
        if self.groups != other.groups:
            methods.add(_GROUPS_LIST_CHANGED)
        if self.entries is None or other.entries is None:
            # The components were never seen: only the groups can be compared.
            if methods:
                methods |= set(_LIST_CHANGED.values())
            return sorted(methods)
        for kind, method in _LIST_CHANGED.items():
            if self.entries.get(kind) != other.entries.get(kind):
                methods.add(method)
        if _tags(self.entries) != _tags(other.entries):
            methods.add(TAGS_LIST_CHANGED)
        return sorted(methods)


class Watch:
    """A catalog's last look at its server, and the connections to tell of changes.

    Example:
        ```python
        watch.connections[connection] = token  # who the session authenticated as
        await watch.refresh(server)  # tells each connection what it can see changed
        ```
    """

    def __init__(self, declarations: _Declarations) -> None:
        self._declarations = declarations
        self.connections: weakref.WeakKeyDictionary[Connection, object] = (
            weakref.WeakKeyDictionary()
        )
        """Session-era connections to tell of changes, each with the principal it
        authenticated as (its token; None: none)."""
        self.audience: Audience | None = None
        """Set by the catalog's access rules; None: every connection sees everything."""
        self.baseline: _Baseline | None = None
        self.stale = True
        self.gates: tuple[object, ...] = ()
        """The checks of the server's FastMCP ``AuthMiddleware`` instances, as last read:
        what they deny a principal is no change of its own."""

    async def refresh(self, server: FastMCP, *, force: bool = False) -> None:
        """Read the server's components again and tell each connection what it sees changed."""
        if not (self.stale or force):
            return
        self.stale = False
        self.gates = tuple(m.auth for m in server.middleware if isinstance(m, AuthMiddleware))
        # What the server has, whoever asks; each connection is then told its own part.
        with unrestricted():
            fetched: dict[Kind, Sequence[FastMCPComponent]] = {
                "tool": await server.list_tools(run_middleware=False),
                "prompt": await server.list_prompts(run_middleware=False),
                "resource": await server.list_resources(run_middleware=False),
                "template": await server.list_resource_templates(run_middleware=False),
            }
        self.stale = False
        before = await self.sights()
        self.baseline = self._look(fetched)
        if all(sight.entries is None for sight in before.values()):
            return
        await self._announce(before)

    async def sights(self) -> dict[Connection, _Sight]:
        """What each connection sees now (for ``announce`` after a change)."""
        return {
            connection: await self._sight(principal)
            for connection, principal in list(self.connections.items())
        }

    async def declarations_changed(self, before: dict[Connection, _Sight]) -> None:
        """After the groups changed: judge the last look again and tell each connection."""
        if self.baseline is not None:
            self.baseline = self._look(
                {kind: [s.component for s in seen.values()] for kind, seen in self.baseline.items()}
            )
        self.stale = True
        await self._announce(before)

    async def broadcast(self, *methods: str) -> None:
        """Send each of ``methods`` to every remembered connection."""
        for connection in list(self.connections):
            await self._notify(connection, methods)

    def _look(self, fetched: Mapping[Kind, Iterable[FastMCPComponent]]) -> _Baseline:
        membership, per_request = self._declarations.membership, self._declarations.per_request
        return {
            kind: {
                c.key: _Seen(c, membership(c).direct, tuple(sorted(c.tags)))
                for c in components
                # Listed per request (a mounted server's, judged by its own policy; one a
                # provider lists by the caller's token): a change outside that request cannot
                # tell who may see it, and this look is one request's, so it is announced to
                # nobody.
                if not per_request(c)
            }
            for kind, components in fetched.items()
        }

    async def _sight(self, principal: object) -> _Sight:
        viewer = await self.audience(principal) if self.audience is not None else None
        names = tuple(g.name for g in self._declarations.groups)
        groups = names if viewer is None else tuple(n for n in names if viewer.knows(n))
        if self.baseline is None:
            return _Sight(groups, None)
        entries = {
            kind: {
                key: (tuple(g for g in seen.groups if viewer is None or viewer.knows(g)), seen.tags)
                for key, seen in entries.items()
                if (viewer is None or viewer.sees(seen.component))
                and await _auth_allows(seen.component, principal, self.gates)
            }
            for kind, entries in self.baseline.items()
        }
        return _Sight(groups, entries)

    async def _announce(self, before: dict[Connection, _Sight]) -> None:
        for connection, principal in list(self.connections.items()):
            was = before.get(connection)
            if was is None:
                continue
            methods = was.changes(await self._sight(principal))
            if methods:
                await self._notify(connection, methods)

    async def _notify(self, connection: Connection, methods: Iterable[str]) -> None:
        for method in methods:
            try:
                await connection.outbound.notify(method, None)
            except Exception:
                logger.debug("could not notify a closed connection", exc_info=True)
                self.connections.pop(connection, None)
                return


async def _auth_allows(
    component: FastMCPComponent, principal: object, gates: Sequence[object] = ()
) -> bool:
    """Whether FastMCP's own ``auth`` checks (the component's, then each ``AuthMiddleware``'s
    in ``gates``) admit ``principal`` (its token; anything else is no token) to
    ``component``, as FastMCP judges them for a request over HTTP."""
    own = getattr(component, "auth", None)
    checks = [*([own] if own is not None else []), *gates]
    if not checks:
        return True
    from fastmcp.server.auth import AccessToken
    from fastmcp.utilities.authorization import AuthContext, run_auth_checks

    token = principal if isinstance(principal, AccessToken) else None
    context = AuthContext(token=token, component=component)
    try:
        for check in checks:
            if not await run_auth_checks(cast("Any", check), context):
                return False
    except Exception:
        # A denial, or a check that failed: either way, not told.
        return False
    return True


def _tags(entries: dict[Kind, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]]) -> set[str]:
    return {t for seen in entries.values() for _, tags in seen.values() for t in tags}

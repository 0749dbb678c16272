"""Access control by group: ``AccessPolicy`` rules over token claims, ``GroupAccessMiddleware``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from fastmcp_filtering.core.catalog import Catalog
from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.policy.access import GroupAccess, access_of
from fastmcp_filtering.server.hooks import FilteringRuntime, set_up_on
from fastmcp_filtering.server.layers import LayerMiddleware
from fastmcp_filtering.server.transform import AccessTransform

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fastmcp import FastMCP
    from fastmcp.utilities.authorization import AuthContext

    from fastmcp_filtering.core.catalog import Unauthenticated
    from fastmcp_filtering.core.declarations import Group

_MISSING = object()


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """An auth check over the token's claims: the claim ``claim`` must hold a value.

    The value is ``value``, or with ``from_meta`` the value under that key of
    the group's ``meta`` (on a tool, its own ``meta``), so one policy serves
    every tenant's group. A claim holding a list passes when the list contains
    the value. A missing token, claim or meta key fails. ``claim`` may be a
    dotted path into nested claims (``"realm_access.roles"``); a claim whose own name
    holds dots (``"https://example.com/tenant"``) is read as that name first. It is a FastMCP
    ``AuthCheck``: it also works in ``@mcp.tool(auth=...)``.

    Example:
        ```python
        same_tenant = AccessPolicy(claim="tenant", from_meta="tenant")
        groups = [
            Group("acme", meta={"tenant": "acme"}, access=same_tenant),
            Group("globex", meta={"tenant": "globex"}, access=same_tenant),
            Group("ops", access=AccessPolicy(claim="roles", value="ops")),
        ]
        ```
    """

    claim: str
    value: str | None = None
    from_meta: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.claim, str) or not self.claim.strip("."):
            raise OptionError(f"AccessPolicy claim must be a claim name, got {self.claim!r}")
        if (self.value is None) == (self.from_meta is None):
            raise OptionError(
                f"AccessPolicy(claim={self.claim!r}) needs exactly one of value= (a fixed "
                "value) or from_meta= (a key of the group's meta holding the value)"
            )
        for name in ("value", "from_meta"):
            given = getattr(self, name)
            if given is not None and not isinstance(given, str):
                raise OptionError(f"AccessPolicy {name} must be a string, got {given!r}")

    def __call__(self, ctx: AuthContext) -> bool:
        if ctx.token is None:
            return False
        expected: object = self.value
        if self.from_meta is not None:
            expected = (ctx.component.meta or {}).get(self.from_meta, _MISSING)
        if not isinstance(expected, str):
            return False
        held = _claim(ctx.token.claims, self.claim)
        if isinstance(held, str):
            return held == expected
        if isinstance(held, list | tuple | set | frozenset):
            return expected in held
        return False


def _claim(claims: object, path: str) -> Any:
    # A claim named with dots (Auth0's "https://example.com/tenant") is that claim, not a path.
    if isinstance(claims, Mapping) and path in claims:
        return claims[path]
    current = claims
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING
        current = current[part]
    return current


class GroupAccessMiddleware(LayerMiddleware):
    """Access control by group alone, for a server that wants no other layer.

    Every middleware of the package built on a catalog enforces its groups'
    ``access`` checks already; this one enforces them without filtering,
    search or progressive disclosure, and makes the layer explicit in a stack.
    A principal that fails a group's checks finds its members nowhere: not in
    lists, calls, reads, prompts, completions or tasks. ``unauthenticated``
    (``"deny"`` by default, or ``"allow"``) is what a client with no token gets
    of the checked groups, when this middleware builds the catalog.

    Example:
        ```python
        from fastmcp.server.auth import require_scopes

        admin = Group("admin", tools=["delete_*"], access=require_scopes("github:admin"))
        install(mcp, GroupAccessMiddleware(groups=[admin]))
        ```
    """

    catalog: Catalog

    def __init__(
        self,
        *,
        groups: Iterable[Group] = (),
        unauthenticated: Unauthenticated | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        self.catalog = Catalog.shared(catalog, groups, unauthenticated=unauthenticated)
        self.policy_layer = access_of(self.catalog).layer

    def __repr__(self) -> str:
        return f"GroupAccessMiddleware(catalog={self.catalog!r})"

    @override
    def setup(self, server: FastMCP) -> None:
        super().setup(server)
        enforce_access(server, self.catalog)


def enforce_access(server: FastMCP, catalog: Catalog) -> None:
    """Enforce ``catalog``'s group checks on ``server``: now, and after a runtime ``add_group``.

    Every middleware built on the catalog calls this when it is set up, so declaring
    ``access`` is enough: no middleware can serve a ruled group's members without the
    layer that conceals them.

    Example:
        ```python
        enforce_access(mcp, catalog)  # in a LayerMiddleware's setup()
        ```
    """
    access = access_of(catalog)
    if server not in access.enforced_on:
        access.enforced_on.add(server)

        def follow() -> None:
            for each in list(access.enforced_on):
                _enforce(each, access)

        catalog.on_declarations_changed(follow)
    _enforce(server, access)


def _enforce(server: FastMCP, access: GroupAccess) -> None:
    if not access.active:
        return
    AccessTransform.ensure(server).add_layer(access.layer)
    if not any(isinstance(m, LayerMiddleware) for m in set_up_on(server)):
        # What only a layer's middleware refuses (completions of a hidden prompt, Prefab
        # renderers of hidden tools) needs one on the server; any one judges every layer.
        middleware = GroupAccessMiddleware(catalog=access.catalog)
        middleware.setup(server)
        FilteringRuntime.ensure(server).add(server, middleware)

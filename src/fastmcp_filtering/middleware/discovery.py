"""Search beyond what a client can call now: what it could use after enabling groups.

Progressive disclosure hides most tools until their group is enabled, which is
exactly when an agent needs search to tell it which group to enable. A
component is *discoverable* for a client when the policy hides it only because
one of its groups is not enabled (``Hidden.enable`` is set): no layer conceals
or refuses it, and the client can enable groups. Concealed components, and
those that concerns or FastMCP's own authorization hide, never become
candidates, so no ranking, count or hint names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from fastmcp_filtering.core.declarations import BETTER_MATCHES_META_KEY
from fastmcp_filtering.middleware.search_service import search_key
from fastmcp_filtering.policy.decision import Policy, PolicyLayer, widened
from fastmcp_filtering.policy.transform import LISTERS, AccessTransform

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import ComponentKind
    from fastmcp_filtering.middleware.search_service import SearchService

__all__ = [
    "BETTER_MATCHES_META_KEY",
    "Hit",
    "can_enable",
    "candidates",
    "discoverable",
    "rank_hits",
    "remedy",
]

_C = TypeVar("_C", bound="FastMCPComponent")


@dataclass(frozen=True, slots=True)
class Hit(Generic[_C]):
    """One ranked component: callable now, or after the calls in ``available_after``."""

    component: _C
    enable: tuple[str, ...] = ()
    """Groups to enable first, parents first; empty when the client can use it now."""


async def rank_hits(
    service: SearchService,
    kind: ComponentKind,
    usable: Sequence[_C],
    extra: Sequence[Hit[_C]],
    query: str,
) -> list[Hit[_C]]:
    """``usable`` and the enable-able ``extra`` in one ranking for ``query``, best first."""
    later = {id(h.component): h for h in extra}
    ranked = await service.rank(
        kind, [*usable, *(h.component for h in extra)], query, len(usable) + len(extra)
    )
    return [later.get(id(c)) or Hit(c) for c in ranked]


async def discoverable(server: FastMCP, kind: ComponentKind, usable: Sequence[_C]) -> list[Hit[_C]]:
    """Components of ``kind`` this client could use after enabling groups, not in ``usable``.

    Listed through the server's whole middleware chain and FastMCP's own checks,
    with only this server's policy widened to what enabling groups would show
    (``widened``); then judged by this request's policy, keeping what it hides
    with an enable path. Whatever else hides a component (a middleware, a
    mounted server's layers, FastMCP's auth) hides it here too.
    """
    listed = await _widened_listing(server, kind)
    if listed is None:
        return []
    every, policy = listed
    return _enable_only(every, policy, {search_key(c) for c in usable})


async def candidates(server: FastMCP, kind: ComponentKind) -> tuple[list[_C], list[Hit[_C]]]:
    """What this client can use now, and what it could after enabling groups: one listing.

    The widened listing holds both; this request's policy tells them apart, as
    ``AccessTransform`` would for the plain listing.
    """
    listed = await _widened_listing(server, kind)
    if listed is None:
        return list(await getattr(server, LISTERS[kind])()), []
    every, policy = listed
    # FastMCP lists a middleware's injected tools past every transform: no policy judges
    # them (and a provider's tool of the same name is not listed).
    injected = {t.name for m in server.middleware for t in getattr(m, "injected_tools", ())}
    usable = [c for c in every if c.name in injected or policy.judge(c) is None]
    return usable, _enable_only(every, policy, {search_key(c) for c in usable})


async def _widened_listing(
    server: FastMCP, kind: ComponentKind
) -> tuple[Sequence[Any], Policy] | None:
    """The widened listing and this request's policy; None when no layer could widen it."""
    transform = AccessTransform.of(server)
    if transform is None or not any(can_enable(layer) for layer in transform.layers):
        # No layer hides anything the client could show itself: nothing to list twice for.
        return None
    policy = await transform.policy()
    with widened(transform):
        every: Sequence[Any] = await getattr(server, LISTERS[kind])()
    return every, policy


def _enable_only(every: Sequence[_C], policy: Policy, taken: set[str]) -> list[Hit[_C]]:
    """Components of ``every`` not in ``taken`` that ``policy`` hides with an enable path."""
    hits: dict[str, Hit[_C]] = {}
    for component in every:
        key = search_key(component)
        if key in taken:
            continue
        hidden = policy.judge(component)
        if hidden is None or not hidden.enable:
            continue
        held = hits.get(key)
        # One entry per name, as a list shows it: the highest version hidden this way.
        if held is None or _newer(component, held.component):
            hits[key] = Hit(component, hidden.enable)
    return list(hits.values())


def can_enable(layer: PolicyLayer) -> bool:
    """Whether ``layer`` hides components the client can make visible (it words a remedy)."""
    return type(layer).remedy is not PolicyLayer.remedy


def _newer(a: FastMCPComponent, b: FastMCPComponent) -> bool:
    from fastmcp.utilities.versions import version_sort_key

    return bool(version_sort_key(a) > version_sort_key(b))


async def remedy(ctx: Context, enable: Sequence[str]) -> dict[str, Any] | None:
    """The meta-tool calls that make a component hidden with ``enable`` usable; None: none can."""
    transform = AccessTransform.of(ctx.fastmcp)
    if transform is None:
        return None
    for layer in transform.layers:
        calls = await layer.remedy(ctx, enable)
        if calls is not None:
            return calls
    return None

"""The one rule for mounted servers: a server's lookups answer to every server above it.

A client of a parent reaches a mounted server's components through the parent,
whose policy judges them by the names the mount gives them. But the mounted
server also looks components up by itself, on the client's behalf: its own
meta-tools (``call_tool``, ``enable_tools``, ``search_tools``), a tool of its
own calling ``ctx.fastmcp.call_tool``, ``ResourcesAsTools`` or FastMCP's
search transforms built on it. Those lookups never pass the parent.

``MountedUnder`` is a ``PolicyLayer`` of the mounted server's own
``AccessTransform``: its view holds this request's policy of each server the
server is mounted in (which holds the same layer for the servers above that
one), and judges a component as that parent would see it, renamed by the
mount (tool renames, then the namespace): by its layers and by the checks of
its FastMCP ``AuthMiddleware``, which hides from the parent's own requests
what it denies but never runs on the mounted server's, and by its own
``enable``/``disable`` rules (FastMCP's ``Visibility``). Whatever a parent
hides, whoever looks it up in the tree below, does not exist for the client
there either.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from fastmcp.prompts.base import Prompt
from fastmcp.resources.base import Resource
from fastmcp.resources.template import ResourceTemplate
from fastmcp.server.providers.fastmcp_provider import (
    FastMCPProviderPrompt,
    FastMCPProviderResource,
    FastMCPProviderResourceTemplate,
    FastMCPProviderTool,
)
from fastmcp.server.transforms import Namespace, ToolTransform, Visibility
from fastmcp.server.transforms.visibility import is_enabled
from fastmcp.tools.base import Tool
from typing_extensions import override

from fastmcp_filtering._fastmcp import auth_middleware_checks, request_token
from fastmcp_filtering.core.declarations import with_declared_groups
from fastmcp_filtering.policy.decision import CONCEALED, PolicyLayer
from fastmcp_filtering.server.transform import AccessTransform

if TYPE_CHECKING:
    from collections.abc import Awaitable, Hashable, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.auth import AccessToken
    from fastmcp.server.transforms import Transform
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.policy.decision import ClientRequest, Hidden, Policy

# Transforms that rename a component the same way for every request: how a parent names
# a mounted server's components. Others (a search transform that replaces a list) leave
# the names alone, and the parent judges the names those give.
_RENAMES = (Namespace, ToolTransform)

_T = TypeVar("_T")


class MountedUnder(PolicyLayer):
    """The policies of the servers this server is mounted in, as one layer of its own."""

    serves_declarations = True

    def __init__(self) -> None:
        self._parents: list[tuple[weakref.ref[FastMCP], tuple[Transform, ...]]] = []

    def __repr__(self) -> str:
        names = [parent.name for ref, _ in self._parents if (parent := ref()) is not None]
        return f"MountedUnder({names!r})"

    @override
    def changes_with(self, *, modern: bool) -> bool:
        """As the layers above: a parent's client can change what they hide."""
        return any(
            layer.changes_with(modern=modern)
            for parent in self.live()
            if (transform := AccessTransform.of(parent)) is not None
            for layer in transform.layers
        )

    def add(self, parent: FastMCP, renames: Sequence[Transform]) -> None:
        """Judge by ``parent``'s policy too, under the names ``renames`` give (inner first)."""
        kept = tuple(t for t in renames if isinstance(t, _RENAMES))
        self._parents = [(ref, r) for ref, r in self._parents if ref() not in (None, parent)]
        self._parents.append((weakref.ref(parent), kept))

    def live(self) -> list[FastMCP]:
        """The servers above that still exist."""
        return [parent for ref, _ in self._parents if (parent := ref()) is not None]

    @override
    async def view(self, client: ClientRequest) -> _AboveView:
        above: list[_Above] = []
        for ref, renames in self._parents:
            parent = ref()
            if parent is None:
                continue
            transform = AccessTransform.of(parent)
            policy = await transform.policy() if transform is not None else None
            gates = auth_middleware_checks(parent)
            # The parent's own enable/disable rules (FastMCP's Visibility): what it disables
            # does not exist for its clients, in the tree below either.
            shown = tuple(t for t in parent.transforms if isinstance(t, Visibility))
            if gates or shown or (policy is not None and not policy.hides_nothing):
                above.append(_Above(policy, parent, renames, gates, shown))
        return _AboveView(above, request_token() if any(a.gates for a in above) else None)


@dataclass(frozen=True, slots=True)
class _Above:
    """One server above: its policy for the request, the renames its mount applies, and the
    checks of its FastMCP ``AuthMiddleware`` instances (they drop from its lists and refuse
    its calls what they deny, outside any layer)."""

    policy: Policy | None
    """None: the server has no layers."""
    parent: FastMCP
    renames: tuple[Transform, ...]
    gates: tuple[Any, ...]
    shown: tuple[Transform, ...] = ()
    """The parent's own ``Visibility`` transforms."""


class _AboveView:
    """This request's policy of each server above, applied to the names they give."""

    def __init__(self, above: Sequence[_Above], token: AccessToken | None) -> None:
        self._above = tuple(above)
        self._token = token
        states = tuple(a.policy.state for a in self._above if a.policy is not None)
        # A gate judges the request's token, which no key here holds: never remembered.
        gated = any(a.gates for a in self._above)
        self.key: Hashable | None = None if gated or None in states else ("above", *states)
        self.unlisted = True
        self.denied_groups = frozenset().union(
            *(a.policy.denied_groups for a in self._above if a.policy is not None)
        )

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        for above in self._above:
            form = as_mounted(component, above.parent, above.renames)
            if form is None:
                return CONCEALED
            # The gates first: a parent's hint (a group to enable) must not stand in for
            # its AuthMiddleware's denial, which conceals.
            if above.gates and not _admitted(form, above.gates, self._token):
                return CONCEALED
            if above.shown and not _shown(form, above.shown):
                return CONCEALED
            hidden = above.policy.judge(form) if above.policy is not None else None
            if hidden is not None:
                return hidden
        return None


def _admitted(component: FastMCPComponent, gates: Sequence[Any], token: AccessToken | None) -> bool:
    """Whether each ``AuthMiddleware`` check admits the request's token to ``component`` as
    the parent names it; a check that would wait (an async one that awaits) cannot be told
    here, and conceals."""
    from fastmcp.exceptions import AuthorizationError
    from fastmcp.utilities.authorization import AuthContext, run_auth_checks

    context = AuthContext(token=token, component=component)
    try:
        return all(_at_once(run_auth_checks(gate, context), False) for gate in gates)
    except AuthorizationError:
        return False


def _shown(component: FastMCPComponent, rules: Sequence[Transform]) -> bool:
    """Whether the parent's ``Visibility`` ``rules``, in order, leave ``component`` enabled
    (each marks it, a later one over an earlier; the server then drops what is marked
    disabled); a rule that would wait conceals."""
    kind, _ = _wrapped(component)
    marked: Any = component
    for rule in rules:
        listed = _settled(getattr(rule, f"list_{kind}")([marked])) if kind else []
        if len(listed) != 1:
            return False
        marked = listed[0]
    return bool(is_enabled(marked))


def as_mounted(
    component: FastMCPComponent, parent: FastMCP, renames: Sequence[Transform]
) -> FastMCPComponent | None:
    """``component`` as ``parent`` lists it through the mount; None when that cannot be told
    (a rename that waits on something): concealed, like anything unknown."""
    kind, wrapped = _wrapped(with_declared_groups(component))
    if wrapped is None:
        return None
    listed: Sequence[Any] = [wrapped]
    for transform in renames:
        listed = _settled(getattr(transform, f"list_{kind}")(listed))
        if len(listed) != 1:
            return None
    return cast("FastMCPComponent", listed[0])


def _wrapped(component: FastMCPComponent) -> tuple[str, Any]:
    """The list a component's kind is renamed by, and the component as the mount wraps it
    (FastMCP's provider components, which carry no function of the mounted server's; never
    run, so bound to no server)."""
    if isinstance(component, Tool):
        return "tools", FastMCPProviderTool.wrap(None, component)
    if isinstance(component, ResourceTemplate):
        return "resource_templates", FastMCPProviderResourceTemplate.wrap(None, component)
    if isinstance(component, Resource):
        return "resources", FastMCPProviderResource.wrap(None, component)
    if isinstance(component, Prompt):
        return "prompts", FastMCPProviderPrompt.wrap(None, component)
    return "", None


def _settled(pending: Awaitable[Sequence[Any]]) -> Sequence[Any]:
    """What a rename returns when it completes without waiting (Namespace and ToolTransform
    only compute); an empty list (nothing: concealed) when it would wait."""
    return _at_once(pending, [])


def _at_once(pending: Awaitable[_T], waits: _T) -> _T:
    """What ``pending`` returns when it completes without waiting; ``waits`` when it would."""
    coroutine = cast("Any", pending)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast("_T", done.value)
    coroutine.close()
    return waits


def judged_above(server: FastMCP) -> bool:
    """Whether ``server`` is mounted in a server whose policy judges its lookups."""
    transform = AccessTransform.of(server)
    return transform is not None and any(
        isinstance(layer, MountedUnder) and layer.live() for layer in transform.layers
    )


def mount_under(child: FastMCP, parent: FastMCP, renames: Sequence[Transform]) -> None:
    """Judge every lookup on ``child`` by ``parent``'s policy too (and so by every server
    above ``parent``): the mount's one rule, set up with the parent's middlewares."""
    transform = AccessTransform.ensure(child)
    layer = next((la for la in transform.layers if isinstance(la, MountedUnder)), None)
    if layer is None:
        layer = MountedUnder()
        transform.add_layer(layer)
    layer.add(parent, renames)

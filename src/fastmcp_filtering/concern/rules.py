"""The concern layer of the access policy: declarations, component values, client views."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastmcp.server.auth import AccessToken
from typing_extensions import override

from fastmcp_filtering.core.concerns import (
    MAX_CONFIG_ENTRIES,
    REQUEST_META_KEY,
    STATE_NAMESPACE,
    Concern,
    ConcernsFromToken,
    check_value,
    declared_values_of,
    label,
    parse_config,
)
from fastmcp_filtering.core.declarations import validate_name
from fastmcp_filtering.core.errors import OptionError, StateUnavailable
from fastmcp_filtering.core.request import (
    OutageLog,
    load_state,
    request_override,
)
from fastmcp_filtering.policy.access import current_principal
from fastmcp_filtering.policy.decision import CONCEALED, Hidden, LayerView, PolicyLayer

if TYPE_CHECKING:
    from collections.abc import Hashable

    from fastmcp.server.context import Context
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.options import ApplyDefaults, ConcernOptions
    from fastmcp_filtering.policy.decision import ClientRequest

logger = logging.getLogger("fastmcp_filtering")

_MAX_CACHED = 100_000


class ConcernLayer(PolicyLayer):
    """Concern declarations and mapping, validated once; one client's view per request.

    A component is hidden when, for a concern the client asked for (or that has
    a default), its value is not the one asked for (or stricter, for an ordered
    concern). Components without a value for a concern match any. The client
    may not discover what its concerns exclude; a call names the concern.
    With ``apply_defaults="configured"`` a client that never stated a concern
    is not filtered at all (the proposal's backward compatibility); ``"all"``
    applies the defaults to it too.
    """

    def __init__(
        self,
        concerns: Iterable[Concern],
        mapping: Mapping[str, Mapping[str, str]] | None,
        *,
        options: ConcernOptions,
        authorization: ConcernsFromToken | None = None,
        side_effect_lists: bool = False,
    ) -> None:
        if not isinstance(side_effect_lists, bool):
            raise OptionError(
                f"side_effect_lists must be True or False, got {side_effect_lists!r}: True lets "
                "concerns/update change later 2026-07-28 lists, which the specification forbids"
            )
        self.side_effect_lists = side_effect_lists
        self.apply_defaults: ApplyDefaults = options.apply_defaults
        if isinstance(concerns, Concern | str | Mapping):
            raise OptionError(
                "concerns must be a list of Concern: concerns=[Concern('security', values=[...])]"
            )
        declared: dict[str, Concern] = {}
        for concern in concerns:
            if not isinstance(concern, Concern):
                raise OptionError(
                    f"concerns must hold Concern objects, got {type(concern).__name__}: "
                    f"use Concern({concern!r}, values=[...])"
                )
            if concern.name in declared:
                raise OptionError(f"concern {concern.name!r} is declared twice; declare it once")
            declared[concern.name] = concern
        if not declared:
            raise OptionError(
                "ConcernMiddleware needs at least one Concern: "
                "concerns=[Concern('security', values=['high', 'low'])]"
            )
        if len(declared) > MAX_CONFIG_ENTRIES:
            raise OptionError(
                f"{len(declared)} concerns declared; at most {MAX_CONFIG_ENTRIES} are supported"
            )
        self.concerns = declared
        self.mapping = self._check_mapping(mapping)
        self.authorization = self._check_authorization(authorization)
        self.defaults = {c.name: c.default for c in declared.values() if c.default is not None}
        self.outage = OutageLog("ConcernMiddleware")
        # Values per component object: a listing judges every component on every request.
        self._values: dict[int, tuple[FastMCPComponent, dict[str, str] | ValueError]] = {}

    def __repr__(self) -> str:
        return f"ConcernLayer(concerns={list(self.concerns)!r})"

    def _check_mapping(
        self, mapping: Mapping[str, Mapping[str, str]] | None
    ) -> dict[str, dict[str, str]]:
        if mapping is None:
            return {}
        if not isinstance(mapping, Mapping):
            raise OptionError(
                "mapping must map component names to concern values, like "
                f"{{'encrypt_data': {{'security': 'high'}}}}, got {type(mapping).__name__}"
            )
        checked: dict[str, dict[str, str]] = {}
        for key, values in mapping.items():
            if not isinstance(key, str) or not key:
                raise OptionError(f"mapping keys must be component names or URIs, got {key!r}")
            if not isinstance(values, Mapping):
                raise OptionError(
                    f"mapping[{key!r}] must be an object like {{'security': 'high'}}, "
                    f"got {type(values).__name__}"
                )
            for name, value in values.items():
                self.check_value(name, value, where=f"mapping[{key!r}]")
            checked[key] = dict(values)
        return checked

    def _check_authorization(self, authorization: object) -> ConcernsFromToken | None:
        if authorization is None:
            return None
        if not isinstance(authorization, ConcernsFromToken):
            raise OptionError(
                f"authorization must be a ConcernsFromToken, got {type(authorization).__name__}: "
                "authorization=ConcernsFromToken(scopes={'interns': {'security': 'high'}})"
            )
        for scope, values in authorization.scopes.items():
            for name, value in values.items():
                self.check_value(name, value, where=f"authorization.scopes[{scope!r}]")
        return authorization

    def check_value(self, name: object, value: object, *, where: str) -> None:
        """Raise ``ValueError`` unless ``name`` is a declared concern and ``value`` one of its."""
        key = validate_name(name, what=f"concern in {where}")
        concern = self.concerns.get(key)
        if concern is None:
            raise OptionError(
                f"{where} uses concern {name!r}, which is not declared; declare "
                f"Concern({name!r}, values=[...]) or use one of {sorted(self.concerns)}"
            )
        check_value(value, what=f"{where} value of concern {name!r}")
        if value not in concern.rank:
            raise OptionError(
                f"{where} gives concern {name!r} the value {value!r}, which is not one of "
                f"its values {list(concern.values)}"
            )

    def values_of(self, component: FastMCPComponent) -> dict[str, str]:
        """The concern values of ``component``; ``ValueError`` when its sources disagree."""
        cached = self._values.get(id(component))
        if cached is None or cached[0] is not component:
            values: dict[str, str] | ValueError
            try:
                values = declared_values_of(component, self.mapping)
                for name, value in values.items():
                    self.check_value(name, value, where=label(component))
            except ValueError as exc:
                values = exc
            if len(self._values) > _MAX_CACHED:
                self._values.clear()
            # Holding the component keeps its id from being reused by another object.
            cached = self._values[id(component)] = (component, values)
        if isinstance(cached[1], ValueError):
            raise cached[1]
        return cached[1]

    def effective(self, configured: Mapping[str, str]) -> dict[str, str]:
        """A client's configuration with the defaults of the concerns it did not configure."""
        return {**self.defaults, **configured}

    def sanitize(self, raw: object) -> dict[str, str] | None:
        """Keep the stored entries the current declarations still allow; None: none stored.

        Raises ``StateUnavailable`` for a stored value that is no configuration (a
        corrupt entry): unknown, not "stated none", which would show everything.
        """
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise StateUnavailable("the stored concerns are not a configuration")
        return {
            name: value
            for name, value in raw.items()
            if name in self.concerns
            and isinstance(value, str)
            and value in self.concerns[name].rank
        }

    async def stored(self, ctx: Context) -> dict[str, str] | None:
        """This client's stored configuration, None if it never stated one.

        Raises ``StateUnavailable``.
        """
        return self.sanitize(await load_state(ctx, STATE_NAMESPACE))

    def unstated(self, *, per_request: bool = False) -> LayerView:
        """The view of a client that stated no concern: unfiltered, or the defaults."""
        # Asking nothing admits every component (but those with bad declarations).
        asked = self.effective({}) if self.apply_defaults == "all" else {}
        return _ConcernView(self, asked, per_request)

    def from_token(self, *, per_request: bool = False) -> LayerView:
        """The view of a client that stated nothing itself: what its token states, if any."""
        token = current_principal()
        if self.authorization is None or not isinstance(token, AccessToken):
            return self.unstated(per_request=per_request)
        configured, ignored = self.authorization.configured(
            token.scopes, token.claims, self.concerns
        )
        for entry in ignored:
            logger.warning("ConcernMiddleware ignores a token's %s: not a declared value", entry)
        if configured is None:
            return self.unstated(per_request=per_request)
        return _ConcernView(self, self.effective(configured), per_request)

    def fixed(self, *, modern: bool) -> bool:
        """Whether lists ignore stored concerns: on 2026-07-28 a list "MUST NOT vary ... as a
        side effect of other requests", unless ``side_effect_lists`` opts out."""
        return modern and not self.side_effect_lists

    @override
    def changes_with(self, *, modern: bool) -> bool:
        """``concerns/update`` changes lists only where they are not fixed."""
        return not self.fixed(modern=modern)

    async def view(self, client: ClientRequest) -> LayerView:
        # Where nothing is stored for this client, a refusal names only the per-request way.
        per_request = client.key is None or self.fixed(modern=client.info.modern)
        override = request_override(client.info.meta)
        if override is not None:
            # Validated, with -32602 for bad input, by ConcernMiddleware before this runs.
            configured, _ = parse_config(override, self.concerns, field=REQUEST_META_KEY)
            return _ConcernView(self, self.effective(configured), per_request)
        if per_request:
            # 2026-07-28: the request and its authorization, never another request's state.
            return self.from_token(per_request=True)
        try:
            stored = await self.stored(client.ctx)
        except StateUnavailable as exc:
            # The client's configuration is unknown: hide whatever any configuration could.
            self.outage.failed(exc, "hiding every component with concern values")
            return _UnknownConfiguration(self)
        self.outage.answered()
        if stored is None:
            return self.from_token()
        return _ConcernView(self, self.effective(stored))

    def refusal(
        self, component: FastMCPComponent, asked: Mapping[str, str], *, per_request: bool = False
    ) -> str | None:
        """Why a client asking ``asked`` does not get ``component``; None when it does.

        ``per_request``: nothing is stored for this client, so the remedy named is the
        request's ``_meta`` alone.
        """
        try:
            values = self.values_of(component)
        except ValueError as exc:
            # A component with a bad declaration: hide it, loudly.
            what = label(component)
            logger.error("ConcernMiddleware hides %s: %s", what, exc)
            return f"{what} is unavailable: the server's concern values for it are invalid"
        if not values or not asked:
            return None
        for name, value in values.items():
            wanted = asked.get(name)
            concern = self.concerns[name]
            if wanted is None or concern.admits(value, wanted):
                continue
            accepted = concern.accepted(wanted)
            return _excluded(label(component), name, value, wanted, accepted, per_request)
        return None


def _excluded(
    what: str, name: str, value: str, wanted: str, accepted: Sequence[str], per_request: bool
) -> str:
    """The refusal of a component a concern excludes, with the way to get it."""
    asks = f"{name}={wanted!r}" + (f" (which accepts {accepted})" if len(accepted) > 1 else "")
    remedy = (
        ""
        if per_request
        else f"send concerns/update with {name}: {value!r} (it replaces your whole "
        "configuration) or "
    )
    return (
        f"{what} is excluded by concern {name!r}: it is {name}={value!r} and this "
        f"client's concerns ask {asks}. Concerns are a preference filter, not a "
        f"permission: to use it, {remedy}set params._meta[{REQUEST_META_KEY!r}] "
        f"to {{{name!r}: {value!r}}} on this request"
    )


@dataclass(frozen=True, slots=True)
class _ConcernView:
    """One client's effective concerns (its configuration plus the defaults) for one request."""

    layer: ConcernLayer
    asked: Mapping[str, str]
    per_request: bool = False

    @property
    def key(self) -> Hashable:
        return (id(self.layer), tuple(sorted(self.asked.items())), self.per_request)

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        message = self.layer.refusal(component, self.asked, per_request=self.per_request)
        return None if message is None else Hidden(message)


@dataclass(frozen=True, slots=True)
class _UnknownConfiguration:
    """The store failed: only components that suit every configuration are shown."""

    layer: ConcernLayer

    @property
    def key(self) -> Hashable:
        return (id(self.layer), "unknown configuration")

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        try:
            values: Any = self.layer.values_of(component)
        except ValueError:
            return CONCEALED
        return CONCEALED if values else None

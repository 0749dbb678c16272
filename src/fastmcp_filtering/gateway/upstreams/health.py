"""An upstream's health: which upstreams failed, for everyone or for one client's headers.

``UpstreamHealth`` logs a failing upstream once and its return once; a failure that one
client's forwarded headers may have caused is that client's (``Listings.scope``), logged
once for those headers and never the others' news.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Literal

from fastmcp_filtering.gateway.grouping.suggestion import counted
from fastmcp_filtering.gateway.redact import Redactor
from fastmcp_filtering.gateway.upstreams.failures import describe_failure, unanswered, unsendable
from fastmcp_filtering.gateway.upstreams.limits import UpstreamTimeout
from fastmcp_filtering.gateway.upstreams.listings import BackingOff, keep_recent

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger("fastmcp_filtering")

_MAX_DROPS_REMEMBERED = 1000

# What clients get while an upstream is down, by ``on_upstream_error``.
_CONSEQUENCE = {
    "warn": "serving the other upstreams without it",
    "raise": "each request that needs it fails with an error naming it",
}
_CLIENT_CONSEQUENCE = {
    "warn": "served the other upstreams without it",
    "raise": "told so by each request that needs it",
}


class UpstreamHealth:
    """Which upstreams failed and why; one warning when an upstream fails, a notice when back.

    ``unavailable`` maps each failing upstream's label to the reason. The same
    failure repeated (every listing asks every upstream) is logged once. A failure
    of a request that carried a client's forwarded headers (its ``scope``) that
    those headers may have caused (an error the upstream answered, a reset, a
    stall: anything but a connection that could not be made) is that client's:
    logged once for those headers, never marking the upstream unavailable to the
    others; and an error the upstream answered says it is up.

    Example:
        ```python
        health = UpstreamHealth()
        health.failed("github", OSError("connection refused"))
        assert health.unavailable == {"github": "connection refused"}
        ```
    """

    def __init__(
        self,
        *,
        log: bool = True,
        mode: Literal["raise", "warn"] = "warn",
        redact: Callable[[str], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.unavailable: dict[str, str] = {}
        self._clients = _ClientFailures(clock)
        self.log = log
        """False: record failures without logging them (``check`` reports them itself)."""
        self.mode = mode
        """What the proxy does with a failing upstream: the log says it as it is."""
        self.redact = redact or Redactor()
        """What a reason goes through before anyone reads it: no secret, no internal path."""
        self.closing = False
        """Set when the proxy stops its upstreams: requests still in flight then fail unlogged."""
        self.dropped_tools: dict[tuple[str, str], str] = {}
        """Each (upstream label, tool name) left out of listings, and why."""
        # Per failing upstream: the requests it failed (or was left out of) since it failed.
        self._missed: dict[str, int] = {}

    def reason_of(self, error: BaseException) -> str:
        """The reason ``error`` gives, as anyone may read it (no secret): nothing recorded."""
        reason = describe_failure(error)
        # The proxy's own words hold no secret.
        return reason if isinstance(error, UpstreamTimeout) else self.redact(reason)

    def failed(self, label: str, error: BaseException, *, scope: str = "") -> str:
        """Record that ``label`` failed; returns the reason (logged the first time).

        ``scope``: the request carried a client's forwarded headers (``Listings.scope``);
        a failure they may have caused is then recorded for that scope alone.
        """
        reason = self.reason_of(error)
        if self.closing:
            return reason
        told = heard(error, scope)
        if scope and told != "silence":
            if told == "answer":
                self.answered(label)  # it answered that client: it is up
            self._scope_failed(label, scope, reason)
            return reason
        self.missed(label)
        if self.unavailable.get(label) != reason:
            self.unavailable[label] = reason
            if not self.log:
                return reason
            logger.warning(
                "upstream %r is unavailable: %s; %s until it answers",
                label,
                reason,
                _CONSEQUENCE[self.mode],
            )
        return reason

    def missed(self, label: str) -> None:
        """Count one more request ``label`` failed, or was left out of, while down."""
        self._missed[label] = self._missed.get(label, 0) + 1

    def dropped(self, label: str, name: str, reason: str) -> None:
        """Log (once per tool) that upstream ``label``'s tool ``name`` is not served, and why."""
        if (label, name) in self.dropped_tools:
            return
        # Bounded: an upstream renaming its bad tools on every listing cannot grow this.
        if len(self.dropped_tools) >= _MAX_DROPS_REMEMBERED:
            self.dropped_tools.clear()
        self.dropped_tools[label, name] = reason
        if self.log:
            logger.warning(
                "upstream %r lists a tool the proxy does not serve: %s (%r)",
                label,
                reason,
                self.redact(name)[:130],
            )

    def _scope_failed(self, label: str, scope: str, reason: str) -> None:
        unlogged = self._clients.failed(label, scope)
        if not self.log or unlogged is None:
            return
        logger.warning(
            "upstream %r failed a request carrying one client's forwarded headers: %s; "
            "until it answers them that client is %s (the others are served as before)%s",
            label,
            reason,
            _CLIENT_CONSEQUENCE[self.mode],
            f"; {unlogged} other clients' headers failed since the last such line"
            if unlogged
            else "",
        )

    def failing(self, label: str, scope: str = "") -> bool:
        """Whether ``label``'s latest news is a failure, for everyone or for ``scope``."""
        return label in self.unavailable or self._clients.failing(label, scope)

    def answered(self, label: str, scope: str = "") -> None:
        """Record that ``label`` answered (``scope``'s request: its headers', when given);
        logged when it had failed for everyone (for one client's headers: at debug)."""
        missed = self._missed.pop(label, 0)
        if self.unavailable.pop(label, None) is not None and self.log:
            # At the outage's own level: a log kept to warnings shows its end too.
            logger.warning(
                "upstream %r answers again (%s failed or went without it meanwhile)",
                label,
                counted(missed, "request"),
            )
        if scope and self._clients.answered(label, scope) and self.log:
            logger.debug("upstream %r answers a client's forwarded headers again", label)


class _ClientFailures:
    """Which clients' forwarded headers an upstream failed last (the ``MOST_KEPT`` most
    recently failed), and when the log last said so: once per run of failures of a set of
    headers, and at most once a minute per upstream, so that a client sending new failing
    headers on every request cannot fill the log."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._failing: OrderedDict[tuple[str, str], None] = OrderedDict()
        # Per upstream: when the log last said a client's headers failed, and how many new
        # failures it has not said since.
        self._told: dict[str, tuple[float, int]] = {}
        self._clock = clock

    def failed(self, label: str, scope: str) -> int | None:
        """Record ``scope``'s failure; how many went unlogged before it when the log should
        say it now, else None."""
        known = (label, scope) in self._failing
        keep_recent(self._failing, (label, scope), None)
        if known:
            return None
        now = self._clock()
        told, unlogged = self._told.get(label, (-math.inf, 0))
        if now - told < _QUIET:
            self._told[label] = (told, unlogged + 1)
            return None
        self._told[label] = (now, 0)
        return unlogged

    def failing(self, label: str, scope: str) -> bool:
        return (label, scope) in self._failing

    def answered(self, label: str, scope: str) -> bool:
        """Forget ``scope``'s failure; whether it had one."""
        if (label, scope) not in self._failing:
            return False
        del self._failing[label, scope]
        return True


_QUIET = 60.0
"""Seconds after a line about one client's failing headers in which the log says no other."""


Heard = Literal["silence", "unsent", "unanswered", "answer"]


def heard(error: BaseException, scope: str = "") -> Heard:
    """What a failed request tells of its upstream, asked with ``scope``'s forwarded headers
    (none: "").

    ``silence``: it did not answer, and no client's headers can have caused that (with
    headers: a connection never made). ``unsent``: a request carrying a client's headers
    could not be made from them. ``unanswered``: one carrying them was sent, then reset or
    never answered, their doing or the upstream's (``Probe`` asks without them). ``answer``:
    an error status or a JSON-RPC error: the upstream is up.

    Example:
        ```python
        heard(httpx2.ConnectError("refused"), "alice")  # "silence"
        heard(httpx2.ReadError("reset"), "alice")  # "unanswered"
        heard(MCPError(code=-32603, message="Server returned an error response"))  # "answer"
        ```
    """
    if isinstance(error, UpstreamTimeout | BackingOff) or unanswered(error):
        silent = not scope or unanswered(error, forwarded=True)
        return "silence" if silent else "unanswered"
    if unsendable(error):
        return "unsent" if scope else "silence"
    return "answer"

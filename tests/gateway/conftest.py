"""Fixtures of the gateway's tests."""

from __future__ import annotations

from functools import partial

import pytest

from fastmcp_filtering.gateway.upstreams import provider as upstreams_module
from fastmcp_filtering.gateway.upstreams.listings import Listings

from .._support.backoff import Clock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The clock every upstream's back-off (and listing age) is measured on."""
    fake = Clock()
    monkeypatch.setattr(upstreams_module, "Listings", partial(Listings, clock=fake))
    return fake

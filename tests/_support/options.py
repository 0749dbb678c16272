"""What an options object or a middleware says when it refuses its options."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from fastmcp_filtering import OptionError

if TYPE_CHECKING:
    from collections.abc import Callable


def refusal(build: Callable[..., object], **options: Any) -> str:
    """The ``OptionError`` message of ``build(**options)``; fails the test if it builds."""
    with pytest.raises(OptionError) as caught:
        build(**options)
    return str(caught.value)

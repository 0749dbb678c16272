"""What the proxy configuration's models share: strict tables, ``${ENV}`` values, key paths."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.gateway.config.toml_speak import speak_toml

if TYPE_CHECKING:
    from collections.abc import Sequence

KeyPath = tuple[str | int, ...]

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _CrossReferenceError(OptionError):
    """A library ``ValueError`` tied to the config key it is about."""

    def __init__(self, path: KeyPath, message: str) -> None:
        self.path = path
        # The library speaks Python (declare Group('x')); a config file's reader, TOML.
        self.message = speak_toml(message)
        super().__init__(f"{_format_key(path)}: {self.message}")


def _format_key(path: Sequence[str | int]) -> str:
    """``("groups", 2, "parent")`` as ``groups[2].parent``; odd keys are quoted."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            plain = re.fullmatch(r"[A-Za-z0-9_-]+", part) is not None
            shown = part if plain else json.dumps(part)
            text += f".{shown}" if text else shown
    return text


def _expand_env(value: str) -> str:
    """``value`` with each ``${NAME}`` read from the environment; unset is a mistake."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            raise OptionError(
                f"environment variable {name} is not set; export {name} before starting, "
                "or write the value instead of ${" + name + "}"
            )
        return found

    return _ENV_REFERENCE.sub(substitute, value)


class _Model(BaseModel):
    """A table of the file: unknown keys are mistakes, values keep the type they were written in."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


EnvString = Annotated[str, AfterValidator(_expand_env)]

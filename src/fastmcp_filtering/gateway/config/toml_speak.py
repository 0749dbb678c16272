"""The library's validation messages, reworded for a configuration file.

``Group``, ``Catalog``, ``Concern`` and the middlewares explain a mistake in
Python (``declare Group('b')``, ``values=['high']``, ``mapping['get_*']``); a
proxy configuration checks itself with them, and its author writes TOML (or
JSON, YAML). ``speak_toml`` rewrites those idioms into the file's terms: tables
to add (``add a [[groups]] entry with name = "b"``), keys with values
(``values = ["high"]``), lists and strings as TOML writes them.
"""

from __future__ import annotations

import ast
import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

_STRING = r"'(?:[^'\\]|\\.)*'"
_LIST = rf"\[(?:{_STRING}(?:, {_STRING})*)?\]"
_TUPLE = rf"\({_STRING}(?:, {_STRING})+\)"


def _toml_string_of(text: str) -> str:
    """A Python string, list or tuple literal as TOML writes it (double quotes, brackets)."""
    value = ast.literal_eval(text)
    return json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False)


_REWRITES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (
        re.compile(rf"declare Group\(({_STRING})\)"),
        lambda m: f"add a [[groups]] entry with name = {_toml_string_of(m.group(1))}",
    ),
    (
        re.compile(rf"declare Concern\(({_STRING}), values=\[\.\.\.\]\)"),
        lambda m: (
            f"add a [[concerns]] entry with name = {_toml_string_of(m.group(1))} and its values"
        ),
    ),
    (
        re.compile(rf"\bmapping\[({_STRING})\]"),
        lambda m: f"concern_mapping key {_toml_string_of(m.group(1))}",
    ),
    (re.compile(r"\bConcern '"), "concern '"),
    (
        re.compile(rf"repeats value\(s\) ({_LIST}); list each once"),
        lambda m: f"repeats {m.group(1)} in values; list each value once",
    ),
    (
        re.compile(r"^a value of concern ('[^']+') must be a (.*?), got"),
        r"values of concern \1 must each be a \2, got",
    ),
    (
        re.compile(rf"unknown field weight\(s\) ({_LIST}); fields are ({_TUPLE})"),
        lambda m: f"unknown field(s) {m.group(1)} in weights; use {_toml_string_of(m.group(2))}",
    ),
    (re.compile(r"positive int or None"), "positive integer, or left out"),
    (re.compile(r"\(got True\)"), "(got true)"),
    (re.compile(r"(?<=should be )False\b"), "false"),
    (re.compile(r"\b(\w+)=(?=[\['])"), r"\1 = "),
    (re.compile(_LIST), lambda m: _toml_string_of(m.group(0))),
    (re.compile(rf"(?<= = )({_STRING})"), lambda m: _toml_string_of(m.group(1))),
]


def speak_toml(message: str) -> str:
    """``message`` with the library's Python idioms written as a configuration file's.

    Example:
        ```python
        speak_toml("group 'a' names unknown parent 'b'; declare Group('b') or fix the name")
        # 'group \\'a\\' names unknown parent \\'b\\'; add a [[groups]] entry with
        #  name = "b" or fix the name'
        ```
    """
    for pattern, replacement in _REWRITES:
        message = pattern.sub(replacement, message)
    return message

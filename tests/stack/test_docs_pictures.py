"""The documentation site draws what prose alone explains badly, and its overview shows the
demo the README shows.

The diagrams are mermaid blocks, which mkdocs-material renders when ``pymdownx.superfences``
has the ``mermaid`` fence (without it they are code listings: the check below reads the
configuration for it). The overview page includes the README's demo section by a snippet, so
the two cannot drift apart.
"""

from __future__ import annotations

import re

import pytest

from .._servers import ROOT

DOCS = ROOT / "docs"


def test_mermaid_blocks_are_rendered_as_diagrams() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    fences = config[config.index("pymdownx.superfences") :]
    assert re.search(r"custom_fences:\s*\n\s*- name: mermaid\s*\n\s*class: mermaid", fences)


@pytest.mark.parametrize(
    ("page", "kind"),
    [
        ("architecture.md", "flowchart"),  # the subpackages and what imports what
        ("gateway.md", "flowchart"),  # the request path: kept listings, back-off, scope
        ("progressive-disclosure.md", "stateDiagram-v2"),  # a group's states
        ("protocol-eras.md", "flowchart"),  # the two eras
    ],
)
def test_each_page_draws_its_picture(page: str, kind: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert re.search(rf"```mermaid\n\s*{kind}\b", text), f"{page} has no {kind} diagram"


def test_the_overview_shows_the_readmes_demo() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- --8<-- [start:demo] -->")[1].split("<!-- --8<-- [end:demo] -->")[0]
    # The section holds the block the demo test keeps equal to what the demo prints.
    assert "<!-- demo-output:start -->" in section
    assert "<!-- demo-output:end -->" in section
    overview = (DOCS / "index.md").read_text(encoding="utf-8")
    assert '--8<-- "README.md:demo"' in overview
    # No copy of its own left to go stale (the table's header row).
    assert not re.search(r"^step\s+tools\s+bytes", overview, re.MULTILINE)

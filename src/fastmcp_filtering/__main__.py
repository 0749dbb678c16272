"""``python -m fastmcp_filtering``: the ``fastmcp-filtering`` command line."""

from __future__ import annotations

from fastmcp_filtering.cli import main

raise SystemExit(main())

"""``python -m fastmcp_filtering``: the ``fastmcp-filtering`` command line."""

from __future__ import annotations

from fastmcp_filtering.gateway.cli import main

raise SystemExit(main())

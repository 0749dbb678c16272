"""The declarations and what they resolve to: groups, tags, concerns, the catalog, the wire.

Depends on FastMCP and the adapter only; every other subpackage builds on it.
"""

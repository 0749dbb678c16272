"""The one decision (what a client may see and use) and its layers, applied in FastMCP's lookup.

One layer per concern: access by group, concerns, progressive disclosure; the transform
that applies them where FastMCP resolves components; background tasks. Depends on ``core``.
"""

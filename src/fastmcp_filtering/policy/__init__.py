"""The one decision (what a client may see and use) and its layers, FastMCP left out.

One layer per concern: access by group, concerns, progressive disclosure, Prefab
renderers. It lists nothing and subclasses nothing of FastMCP: ``server`` applies it
in FastMCP's lookup and hands the layers what they must list. Depends on ``core``.
"""

"""Where the package meets FastMCP: the policy applied in its lookup, and its hooks.

``AccessTransform`` (the policy in FastMCP's component lookup) and ``ServerListing``
(what a layer must list, through that lookup), the per-server ``FilteringRuntime``
and the list hooks every middleware of the package shares, ``LayerMiddleware`` (the
base of those that own a policy layer), ``Wire`` at the MCP SDK's dispatch, judged
tool injection, the background-task guard and mounted servers. Depends on ``policy``
and ``core``.
"""

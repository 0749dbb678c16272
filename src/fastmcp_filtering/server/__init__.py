"""Where the package meets FastMCP: the policy applied in its lookup, and its hooks.

``AccessTransform`` (the policy in FastMCP's component lookup), the per-server
``FilteringRuntime`` and the list hooks the middlewares share, ``Wire`` at the MCP
SDK's dispatch, judged tool injection, the background-task guard, mounted servers,
and the listings the policy's layers ask for. Depends on ``policy`` and ``core``.
"""

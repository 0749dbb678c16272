"""Groups and tags: ``groups/list``, ``tags/list``, ``filter`` on lists, membership in ``_meta``.

``middleware`` (``FilterMiddleware``). Declarations live in ``core.declarations``.
Depends on ``access``, ``server``, ``policy`` and ``core``.
"""

"""Query search: ``query`` on lists and the ``search_tools`` meta-tool.

``middleware`` (``SearchMiddleware``), ``service`` (indexes that follow the catalog,
the catalog snapshot, discovery), ``candidates`` (what a client's search ranks),
``tool`` (``search_tools``) and ``rate_limit``. The engine itself is ``retrieval``.
Depends on ``access``, ``server``, ``policy``, ``retrieval`` and ``core``.
"""

"""Concerns: the client states security, cost, ...; lists narrow.

``rules`` (the ``ConcernLayer``: what a client's stated concerns hide) and
``middleware`` (``ConcernMiddleware``: ``concerns/list``, ``concerns/update``, the
request's ``_meta`` and the marks on each listed component). Declarations live in
``core.concerns``. Depends on ``access``, ``server``, ``policy`` and ``core``.
"""

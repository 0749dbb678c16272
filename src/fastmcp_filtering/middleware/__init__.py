"""The public middlewares and ``add_filtering``.

Each middleware owns one policy layer or one protocol feature (groups and tags, query
search, concerns, progressive disclosure, access); they build on ``server``,
``policy``, ``retrieval`` and ``core``.
"""

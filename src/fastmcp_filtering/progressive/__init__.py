"""Progressive disclosure: the client enables groups, lists grow within ``max_tools``.

``rules`` (the ``ProgressiveLayer``, enabling and disabling, the hierarchy),
``middleware`` (``ProgressiveDisclosureMiddleware``) and ``tools`` (the
``enable_tools``, ``disable_tools`` and ``call_tool`` meta-tools). Depends on
``concern`` (its state namespace), ``access``, ``server``, ``policy`` and ``core``.
"""

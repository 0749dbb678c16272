"""Access control by group: which groups the caller's token may use.

The rules (``GroupAccess``: the catalog as one principal may use it) are the policy's
ground floor, read by every layer, and live in ``policy.access``; here is the
middleware that serves them. Depends on ``server``, ``policy`` and ``core``.
"""

"""Zero-config grouping: groups, names and patterns suggested from an upstream's tools, and
the configuration ``init`` writes from them.
"""

"""The gateway: filtering for servers you did not write, from a configuration file.

``load_config`` reads a TOML, JSON or YAML file into the configuration models,
``build_proxy`` puts FastMCP's proxy in front of its upstreams with the package's
middlewares, and ``fastmcp-filtering serve | check | init`` runs them from the command
line. Everything here builds on the middlewares; nothing below imports it.

Example:
    ```python
    from fastmcp_filtering.gateway import build_proxy, load_config

    proxy = build_proxy(load_config("filtering.toml"))
    proxy.run()
    ```
"""

from __future__ import annotations

from fastmcp_filtering.gateway.config.auth import AuthConfig, StateConfig
from fastmcp_filtering.gateway.config.models import (
    ConcernConfig,
    ConfigError,
    FilteringConfig,
    GroupConfig,
    ProgressiveConfig,
    SearchConfig,
    TagConfig,
    UpstreamConfig,
    load_config,
)
from fastmcp_filtering.gateway.proxy import ConfigAnnotations, build_proxy, upstream_transport

__all__ = [
    "AuthConfig",
    "ConcernConfig",
    "ConfigAnnotations",
    "ConfigError",
    "FilteringConfig",
    "GroupConfig",
    "ProgressiveConfig",
    "SearchConfig",
    "StateConfig",
    "TagConfig",
    "UpstreamConfig",
    "build_proxy",
    "load_config",
    "upstream_transport",
]

"""The gateway's configuration: the models a TOML, JSON or YAML file is read into, and
what they are checked against (access, auth, state, an ``mcpServers`` file, secrets).
"""

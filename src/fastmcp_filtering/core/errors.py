"""The package's exceptions: one root, so ``except FilteringError`` catches all of them.

An option or declaration that cannot work raises ``OptionError`` (a ``ValueError``,
as Python's own checks raise) or ``OptionTypeError`` (a ``TypeError``) where it is
given, naming the value and the fix. A client without state to keep gets
``StateUnavailable``; the gateway's own errors (a config file's mistakes, an
upstream that does not answer) descend from the same root. What reaches an MCP
client is never one of these: each boundary maps them to a JSON-RPC error or a
tool result that says what to do next.

Example:
    ```python
    try:
        Group("bad name!")
    except FilteringError as error:  # an OptionError, naming the value and the fix
        print(error)
    ```
"""

from __future__ import annotations


class FilteringError(Exception):
    """The root of every exception fastmcp-filtering raises.

    Example:
        ```python
        try:
            add_filtering(mcp, groups=[Group("a"), Group("a")])
        except FilteringError as error:
            print(error)
        ```
    """


class OptionError(FilteringError, ValueError):
    """An option, declaration or value that cannot work: the message names it and the fix.

    A ``ValueError``, so code that catches Python's own value checks catches it too.

    Example:
        ```python
        SearchMiddleware(max_results=0)  # OptionError: max_results must be a positive integer ...
        ```
    """


class OptionTypeError(FilteringError, TypeError):
    """A value of the wrong type where one is given: the message names what was expected.

    Example:
        ```python
        await catalog.add_group("admin")  # OptionTypeError: add_group() takes a Group ...
        ```
    """


class StateUnavailable(FilteringError):
    """The client has no identity to keep state under, or the state store failed.

    Example:
        ```python
        try:
            state = await load_state(ctx, "progressive")
        except StateUnavailable:
            ...  # refuse the request, saying what the client can do instead
        ```
    """


class UpstreamError(FilteringError):
    """A server behind the gateway did not answer in time, or answered what cannot be read.

    Example:
        ```python
        try:
            tools = await listings.get("tool", fetch_tools, give_up_after=60)
        except UpstreamError as error:  # UpstreamTimeout, BackingOff, ...
            print(describe_failure(error))
        ```
    """

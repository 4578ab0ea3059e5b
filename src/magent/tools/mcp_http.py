"""The HTTP transports of MCP servers (SSE, streamable HTTP), with OAuth where the server asks."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from magent.models.servers import HttpServer, OAuthSettings

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""Largest single reply accepted over streamable HTTP; big outputs are cut by the registry, not lost here."""


def uses_oauth(server: HttpServer) -> bool:
    """Whether magent answers the server's 401 with OAuth: unless the config sends ``Authorization``."""
    return not any(name.lower() == "authorization" for name in server.config.headers)


def with_oauth(server: HttpServer) -> HttpServer:
    """``server`` with its OAuth settings filled in (the defaults where the config gives none)."""
    if server.config.oauth is not None:
        return server
    return server.model_copy(update={"config": server.config.model_copy(update={"oauth": OAuthSettings()})})


def http_transport(server: HttpServer, stack: AsyncExitStack, auth: Any = None) -> Any:
    """The SDK's client transport for ``server``; ``auth``: an OAuth provider to use instead of
    the run's (which cannot send a person to log in: ``mcp_auth.LoginRequired``)."""
    from magent.tools.mcp_auth import provider_for

    if auth is None and uses_oauth(server):
        auth = provider_for(with_oauth(server))
    headers = dict(server.config.headers)
    timeout = float(server.connect_timeout_seconds)
    if server.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(server.config.url, headers=headers, timeout=timeout, sse_read_timeout=3600, auth=auth)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(timeout, read=3600), auth=auth)
    stack.push_async_callback(client.aclose)
    return streamable_http_client(server.config.url, http_client=client, max_sse_event_size=MAX_EVENT_BYTES)


def login_required(error: BaseException | None) -> Any:
    """The ``LoginRequired`` behind a failed connection (the SDK's task groups may wrap it), or None."""
    from magent.tools.mcp_auth import LoginRequired

    seen = 0
    stack = [error]
    while stack and seen < 50:
        exc = stack.pop()
        seen += 1
        if isinstance(exc, LoginRequired):
            return exc
        if isinstance(getattr(exc, "exceptions", None), (list, tuple)):  # an exception group
            stack.extend(exc.exceptions)  # type: ignore[union-attr]
        elif exc is not None:
            stack.extend(e for e in (exc.__cause__, exc.__context__) if e is not None)
    return None

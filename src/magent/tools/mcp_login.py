"""``magent mcp login / logout`` and who is logged in: OAuth logins to the configured HTTP servers."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from magent.errors import UsageError
from magent.tools.setup import ToolConfig

LOGIN_TIMEOUT_SECONDS = 300.0
"""How long ``magent mcp login`` waits for the person to log in and the server to answer."""


@dataclass
class LoginState:
    server: str
    logged_in: bool
    expires_at: str | None = None
    """When the access token expires (UTC, ISO 8601); None when it does not say."""
    refreshable: bool = False
    """Whether a refresh token lets magent renew it without asking."""
    tools: int | None = None
    """How many tools the server offered (after a login)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if not self.logged_in:
            return "not logged in"
        if self.expires_at is None:
            return "logged in"
        stale = datetime.fromisoformat(self.expires_at) < datetime.now(timezone.utc)
        verb = "expired" if stale else "expires"
        return f"logged in, token {verb} {self.expires_at}" + (" (renewed as needed)" if self.refreshable else "")


def http_server(config: ToolConfig, name: str) -> Any:
    """The configured HTTP server ``name``, with its OAuth settings; ``UsageError`` if none is."""
    from magent.models.servers import HttpServer
    from magent.tools.mcp_http import with_oauth

    server = config.servers.get(name)
    if server is None:
        known = ", ".join(sorted(config.servers)) or "none"
        raise UsageError(f"no MCP server named {name!r} (servers: {known})")
    if not isinstance(server, HttpServer):
        raise UsageError(f"MCP server {name!r} runs over stdio: logins are for servers reached over HTTP")
    return with_oauth(server)


def state(server: Any) -> LoginState:
    """Who is logged in to ``server`` (read from its token file; nothing is sent)."""
    from magent.tools.mcp_auth import TokenFile

    doc = TokenFile(server.name, server.config.url).read()
    tokens = doc.get("tokens") or {}
    expires = doc.get("expires_at")
    return LoginState(server=server.name, logged_in=bool(tokens),
                      expires_at=datetime.fromtimestamp(expires, timezone.utc).isoformat(timespec="seconds")
                      if expires else None, refreshable=bool(tokens.get("refresh_token")))


async def login(config: ToolConfig, name: str) -> LoginState:
    """Log in to server ``name`` afresh: the person is sent to the authorization server (their
    browser, and the URL printed), its redirect comes back to 127.0.0.1, and the token is stored."""
    from magent.tools.mcp import MCPProvider
    from magent.tools.mcp_auth import Callback, TokenFile, open_browser, provider_for
    from magent.tools.mcp_http import uses_oauth

    server = http_server(config, name)
    if not uses_oauth(server):
        raise UsageError(f"MCP server {name!r} sends its own Authorization header (config.headers): "
                         "magent does not log in to it")
    settings = server.config.oauth
    patient = server.model_copy(update={"connect_timeout_seconds": max(server.connect_timeout_seconds,
                                                                       LOGIN_TIMEOUT_SECONDS)})
    async with Callback(settings.callback_port) as callback:  # (a port in use: the old login is kept)
        TokenFile(server.name, server.config.url).forget(client=settings.client_id is None)
        auth = provider_for(server, redirect=open_browser, callback=callback.wait,
                            redirect_uri=callback.redirect_uri)
        provider = MCPProvider(patient, secrets=config.secrets, auth=auth)
        began = time.monotonic()
        try:
            await provider.start()
            tools = len(await provider.list_tools())
        finally:
            await provider.close()
    done = state(server)
    done.tools = tools
    if not done.logged_in:  # it answered without asking for a login
        raise UsageError(f"MCP server {name!r} answered without asking for a login "
                         f"({time.monotonic() - began:.1f}s): there is nothing to log in to")
    return done


def logout(config: ToolConfig, name: str) -> bool:
    """Forget the server's tokens (and a dynamically registered client); whether it had any."""
    from magent.tools.mcp_auth import TokenFile

    server = http_server(config, name)
    return TokenFile(server.name, server.config.url).forget(client=True)

"""OAuth for MCP servers over HTTP, by the mcp SDK's ``OAuthClientProvider``, which does the
protocol (discovery, registration, PKCE, scopes, refresh). magent gives it a token store
(``$MAGENT_HOME/auth/SERVER.json``, mode 0600: the only file that holds a token), and for ``magent
mcp login`` a browser and a 127.0.0.1 listener for the redirect. In a run there is no browser: a
server that needs a login raises ``LoginRequired``, which pauses the run (kind ``auth``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, urlparse

from magent import paths
from magent.errors import ToolError, UsageError

SCHEMA_VERSION = 1
CLIENT_NAME = "magent"


class LoginRequired(ToolError):
    """The server wants an OAuth login that magent has no token for (or can no longer refresh)."""

    def __init__(self, server: str, mcp_file: Path | None = None):
        self.server = server
        self.command = f"magent mcp login {server}"
        if mcp_file is not None and mcp_file != paths.mcp_servers_file():  # (not the home's servers)
            import shlex

            self.command += f" --mcp {shlex.quote(str(mcp_file))}"
        super().__init__(f"MCP server {server!r} needs you to log in: run `{self.command}`")


def auth_dir(root: Path | None = None) -> Path:
    return (root or paths.home()) / "auth"


class TokenFile:
    """The SDK's ``TokenStorage`` for one server: tokens, when they expire and the registered
    client, in ``auth/SERVER.json``. Tokens given for another URL are not this server's."""

    def __init__(self, server: str, url: str, *, preregistered: Any = None):
        self.server = server
        self.url = url
        self.path = auth_dir() / f"{server}.json"
        self.preregistered = preregistered
        """The client from the server's config (``oauth.client_id``), used instead of a stored one."""

    def read(self) -> dict[str, Any]:
        """What is stored for this server at this URL (``{}``: nothing, or for another URL)."""
        try:
            doc = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) and doc.get("url") == self.url else {}

    def _write(self, **changes: Any) -> None:
        self._save({"schema_version": SCHEMA_VERSION, "server": self.server, **self.read(), "url": self.url,
                    **changes})

    def _save(self, doc: dict[str, Any]) -> None:
        from magent.store.files import atomic_write

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(self.path, (json.dumps(doc, indent=2) + "\n").encode())  # (created 0600)

    def expires_at(self) -> float | None:
        return self.read().get("expires_at")

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.read().get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: Any) -> None:
        expires = time.time() + tokens.expires_in if tokens.expires_in else None
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires,
                    saved_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.preregistered is not None:
            return self.preregistered
        info = self.read().get("client")
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: Any) -> None:
        if self.preregistered is None:
            self._write(client=client_info.model_dump(mode="json", exclude_none=True))

    def forget(self, *, client: bool) -> bool:
        """Remove the tokens (and with ``client`` the registered client too); whether any were stored."""
        doc = self.read()
        had = "tokens" in doc
        if client or "client" not in doc:
            self.path.unlink(missing_ok=True)
        elif had:
            self._save({k: v for k, v in doc.items() if k not in ("tokens", "expires_at", "saved_at")})
        return had


def provider_for(server: Any, *, redirect: Callable[[str], Awaitable[None]] | None = None,
                 callback: Callable[[], Awaitable[Any]] | None = None, redirect_uri: str | None = None) -> Any:
    """The SDK's OAuth provider (an ``httpx`` auth) for an HTTP server. Without ``redirect`` the
    flow cannot send a person anywhere: it raises ``LoginRequired`` instead (a run)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    settings = server.config.oauth
    url = server.config.url
    pre = None
    if settings.client_id:
        method = settings.token_endpoint_auth_method or ("client_secret_basic" if settings.client_secret else "none")
        pre = OAuthClientInformationFull(client_id=settings.client_id, client_secret=settings.client_secret,
                                         token_endpoint_auth_method=method,
                                         redirect_uris=[redirect_uri] if redirect_uri else None)
    store = TokenFile(server.name, url, preregistered=pre)

    async def no_browser(_url: str) -> None:
        raise LoginRequired(server.name)

    async def no_callback() -> Any:
        raise LoginRequired(server.name)

    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME, redirect_uris=[redirect_uri or "http://127.0.0.1/callback"],
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="client_secret_basic" if settings.client_secret else "none",
        scope=settings.scope)
    auth = OAuthClientProvider(url, metadata, store, redirect_handler=redirect or no_browser,
                               callback_handler=callback or no_callback,
                               client_metadata_url=settings.client_metadata_url)
    # The SDK learns when a token expires only from a token response; for one stored by an
    # earlier process, the store says (so an expired token is refreshed before it is sent).
    auth.context.token_expiry_time = store.expires_at()
    return auth


class Callback:
    """A listener on 127.0.0.1 for the authorization server's redirect (``/callback?code&state``)."""

    def __init__(self, port: int = 0):
        self.port = port
        self._server: asyncio.AbstractServer | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def __aenter__(self) -> "Callback":
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        except OSError as exc:  # a fixed callback_port in use
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise UsageError(f"cannot wait for the login's answer on 127.0.0.1:{self.port} (oauth.callback_port): "
                             f"{reason[:1].lower()}{reason[1:]}") from None
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            target = line.split(" ")[1] if line.count(" ") >= 2 else "/"
            query = {k: v[0] for k, v in parse_qs(urlparse(target).query).items()}
            if urlparse(target).path == "/callback" and ("code" in query or "error" in query):
                ok = "code" in query
                body = ("magent is logged in; you can close this tab." if ok else
                        f"the login failed: {query.get('error_description') or query.get('error')}")
                assert self._result is not None
                if not self._result.done():
                    self._result.set_result(query)
                status = "200 OK"
            else:
                body, status = "not found", "404 Not Found"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}".encode())
            await writer.drain()
        except (asyncio.TimeoutError, OSError, IndexError):
            pass
        finally:
            writer.close()

    async def wait(self) -> Any:
        """The redirect's parameters (``AuthorizationCodeResult``); ``ToolError`` when it says no."""
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._result is not None
        query = await self._result
        if "code" not in query:
            raise ToolError(f"the authorization server refused the login: "
                            f"{query.get('error_description') or query.get('error')}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


async def open_browser(url: str) -> None:
    """Send the person to ``url``: print it, and open it in their browser (``BROWSER`` if set)."""
    import webbrowser

    print(f"open this address in your browser to log in (waiting for it):\n  {url}", file=sys.stderr, flush=True)
    await asyncio.to_thread(webbrowser.open, url)

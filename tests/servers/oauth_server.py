"""A test MCP server behind OAuth, with its own authorization server (the mcp SDK's), over
streamable HTTP: ``python oauth_server.py PORT``.

It registers clients dynamically, approves every authorization at once (the browser that follows
the URL lands on the client's redirect with a code), and issues access tokens that live
``OAUTH_ACCESS_SECONDS`` (default 3600; honoured a minute longer) with refresh tokens. Each token it issues is a line in
``OAUTH_LOG`` (when set): ``authorization_code`` or ``refresh_token``. Tool: ``hello``.
"""

from __future__ import annotations

import os
import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken, AuthorizationCode, AuthorizationParams, RefreshToken, construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

ACCESS_SECONDS = int(os.environ.get("OAUTH_ACCESS_SECONDS", "3600"))


class ApproveAll:
    """An authorization server that says yes to everyone (in memory)."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode) -> OAuthToken:
        del self.codes[code.code]
        return self._issue(client.client_id, code.scopes, "authorization_code")

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        del self.refresh[refresh_token.token]
        return self._issue(client.client_id, scopes or refresh_token.scopes, "refresh_token")

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        return found if found is not None and (found.expires_at or 0) > time.time() else None

    async def revoke_token(self, token: object) -> None:
        pass

    def _issue(self, client_id: str, scopes: list[str], grant: str) -> OAuthToken:
        access, refresh = f"acc-{secrets.token_hex(12)}", f"ref-{secrets.token_hex(12)}"
        # honoured a minute past what the client is told, so that a client slowed down (a loaded
        # machine) between its check and the server's is not refused: whether it renewed in time
        # is what OAUTH_LOG says
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + ACCESS_SECONDS + 60)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        if os.environ.get("OAUTH_LOG"):
            with open(os.environ["OAUTH_LOG"], "a") as log:
                log.write(grant + "\n")
        return OAuthToken(access_token=access, expires_in=ACCESS_SECONDS, refresh_token=refresh,
                          scope=" ".join(scopes) or None)


def main() -> None:
    port = int(sys.argv[1])
    base = f"http://127.0.0.1:{port}"
    server = MCPServer("guarded", log_level="WARNING", auth_server_provider=ApproveAll(), auth=AuthSettings(
        issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True)))

    @server.tool(description="Say hello (only to a client with a valid token).")
    def hello() -> str:
        return "hello, logged-in client"

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()

"""``magent mcp login / logout`` on bad input, and the token store's file (its flows run against the
conformance suite's authorization servers: tests/test_mcp_conformance.py)."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

from support.cli import invoke
from servers.harness import stdio_server, write_mcp_file


def servers(tmp_path: Path) -> Path:
    return write_mcp_file(tmp_path / "mcp.yaml", [
        stdio_server("local"),
        {"name": "remote", "transport": "streamable_http", "config": {"url": "http://127.0.0.1:9/mcp"}}])


def test_login_to_an_unknown_or_stdio_server_is_one_line_exit_2(tmp_path: Path) -> None:
    mcp = str(servers(tmp_path))
    unknown = invoke("mcp", "login", "nope", "--mcp", mcp)
    assert unknown.code == 2 and "no MCP server named 'nope' (servers: " in unknown.err
    local = invoke("mcp", "login", "local", "--mcp", mcp)
    assert local.code == 2 and "runs over stdio: logins are for servers reached over HTTP" in local.err
    assert len(unknown.err.strip().splitlines()) == 1 and "Traceback" not in local.err


def test_the_token_store_is_the_owners_alone_and_logout_empties_it(tmp_path: Path, magent_home: Path) -> None:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from magent.tools.mcp_auth import TokenFile

    mcp = str(servers(tmp_path))
    store = TokenFile("remote", "http://127.0.0.1:9/mcp")
    asyncio.run(store.set_client_info(OAuthClientInformationFull(client_id="c1", redirect_uris=None)))
    asyncio.run(store.set_tokens(OAuthToken(access_token="at-123456", refresh_token="rt-654321", expires_in=60)))
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    listed = json.loads(invoke("mcp", "list", "--json", "--mcp", mcp).out)
    login = next(s for s in listed if s["name"] == "remote")["login"]
    assert login["logged_in"] and login["refreshable"] and login["expires_at"]
    assert TokenFile("remote", "http://elsewhere/mcp").read() == {}  # another URL: not this login
    r = invoke("mcp", "logout", "remote", "--mcp", mcp)
    assert r.code == 0 and r.out.strip() == "logged out of remote" and not store.path.exists()
    assert invoke("mcp", "logout", "remote", "--mcp", mcp).out.strip() == "remote: was not logged in"

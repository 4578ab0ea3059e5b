"""``magent mcp login / logout`` on bad input, and the token store's file (its flows run against the
conformance suite's authorization servers: tests/test_mcp_conformance.py)."""

from __future__ import annotations

import asyncio
import os
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


def test_a_login_is_renewed_unasked_and_its_tokens_stay_in_the_store(tmp_path: Path, magent_home: Path) -> None:
    """A real OAuth-guarded server (tests/servers/oauth_server.py) whose tokens live 2 s: after the
    login they are renewed by their refresh token without a browser, in a task too, and neither
    the old nor the new token is in any file of the home but the token store."""
    import subprocess
    import sys
    import time

    from servers.harness import _wait_listening, free_port
    from support.cli import run
    from support.conformance import DIR

    grants = tmp_path / "grants.log"
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "servers" / "oauth_server.py"), str(port)],
                            env={**os.environ, "OAUTH_ACCESS_SECONDS": "2", "OAUTH_LOG": str(grants)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_listening(proc, port)
        mcp = write_mcp_file(tmp_path / "mcp.yaml", [{"name": "guarded", "transport": "streamable_http",
                                                      "config": {"url": f"http://127.0.0.1:{port}/mcp"}}])
        login = run("mcp", "login", "guarded", "--mcp", str(mcp), env={"BROWSER": str(DIR / "browser.py")})
        assert login.code == 0 and "logged in to guarded: 1 tool(s)" in login.out, login.err
        store = magent_home / "auth" / "guarded.json"
        first = json.loads(store.read_text())["tokens"]
        time.sleep(2.5)  # the access token has expired
        agent = tmp_path / "greeter.yaml"
        agent.write_text(f"name: greeter\nrole: greets\nsystem_prompt: Greet.\ntools: [guarded.*]\nmcp_servers: {mcp}\n"
                         "llm_config: {model: scripted, script: greeter.script.yaml}\n")
        (tmp_path / "greeter.script.yaml").write_text(
            "responses:\n  - tool_calls: [{name: guarded.hello, arguments: {}}]\n  - content: done\n")
        task = run("run", str(agent), "-t", "say hello", "--json", "--no-input", env={"BROWSER": "false"})
        assert task.code == 0, task.out[-2000:] + task.err
        assert "hello, logged-in client" in task.out, task.out[-3000:]
    finally:
        proc.kill()
        proc.wait()
    assert grants.read_text().split() == ["authorization_code", "refresh_token"]
    second = json.loads(store.read_text())["tokens"]
    assert second["access_token"] != first["access_token"]
    for token in (first["access_token"], first["refresh_token"], second["access_token"], second["refresh_token"]):
        holders = [p.relative_to(magent_home) for p in magent_home.rglob("*")
                   if p.is_file() and token in p.read_text(errors="replace")]
        assert holders in ([], [Path("auth/guarded.json")]), holders


def test_a_server_that_sends_its_own_authorization_has_no_login_to_show(tmp_path: Path, magent_home: Path) -> None:
    """magent never logs in to a server whose file gives an Authorization header: `mcp list` said
    "not logged in" of it, as if a login were missing."""
    mcp = str(write_mcp_file(tmp_path / "mcp.yaml", [
        {"name": "keyed", "transport": "streamable_http",
         "config": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer not-a-real-key"}}},
        {"name": "remote", "transport": "streamable_http", "config": {"url": "http://127.0.0.1:9/mcp"}}]))
    listed = {s["name"]: s["login"] for s in json.loads(invoke("mcp", "list", "--json", "--mcp", mcp).out)}
    assert listed["keyed"] is None and listed["remote"]["logged_in"] is False
    rows = {line.split()[0]: line for line in invoke("mcp", "list", "--mcp", mcp).out.splitlines()[1:]}
    assert rows["keyed"].rstrip().endswith(" -") and "not logged in" in rows["remote"]

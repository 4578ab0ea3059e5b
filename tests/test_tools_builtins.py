"""Built-in connectors behind the same interface: http.fetch, shell.run, kv."""

from __future__ import annotations

import asyncio
import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from magent.tools.registry import ToolRegistry
from magent.tools.setup import build_registry


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        port = self.server.server_address[1]
        routes = {
            "/hello": (200, b"hello from the test server"),
            "/big": (200, b"x" * 200_000),
            "/missing": (404, b"no such page"),
        }
        if self.path == "/slow":
            self.server.release.wait(600)  # type: ignore[attr-defined]  # only the client's timeout ends it
        if self.path == "/in":
            return self._redirect(f"http://127.0.0.1:{port}/hello")
        if self.path == "/out":
            return self._redirect("http://example.com/secret")
        status, body = routes.get(self.path, (200, b"slow done"))
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _redirect(self, where: str) -> None:
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def web() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.release = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.release.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def registry(tmp_path: Path, text: str) -> ToolRegistry:
    path = tmp_path / "mcp.yaml"
    path.write_text(text)
    reg = build_registry(mcp_files=[path], home_config=False, kv_path=tmp_path / "kv.jsonl")
    asyncio.run(reg.start())
    return reg


def call(reg: ToolRegistry, name: str, **args):
    return asyncio.run(reg.call(name, args))


def test_only_kv_and_memory_are_on_by_default(tmp_path: Path) -> None:
    reg = registry(tmp_path, "servers: []\n")
    assert {t.server for t in reg.all_tools()} == {"kv", "memory"}
    off = call(reg, "shell.run", command="echo hi")
    assert off.outcome == "ERROR" and off.content == "tool 'shell.run' does not exist"
    assert call(reg, "kv.set", key="k", value={"n": 1}).ok
    assert call(reg, "kv.get", key="k").content == '{"n": 1}'
    assert call(reg, "kv.get", key="nope").outcome == "FAILURE"


def test_http_fetch_reaches_allowed_hosts_with_a_size_cap(tmp_path: Path, web: str) -> None:
    reg = registry(tmp_path, "builtins:\n  http: {enabled: true, allow_hosts: ['127.0.0.1'], max_bytes: 1000}\n")
    hello = call(reg, "http.fetch", url=f"{web}/hello")
    assert hello.outcome == "SUCCESS"
    assert hello.content == f"HTTP 200 text/plain; charset=utf-8 {web}/hello\n\nhello from the test server"
    big = call(reg, "http.fetch", url=f"{web}/big")
    assert big.ok and big.content.endswith("x" * 1000 + "\n[... truncated at 1000 bytes]")
    missing = call(reg, "http.fetch", url=f"{web}/missing")
    assert missing.outcome == "FAILURE" and missing.content == f"HTTP 404 from {web}/missing: no such page"
    followed = call(reg, "http.fetch", url=f"{web}/in")
    assert followed.ok and followed.content.endswith("hello from the test server")


def test_http_fetch_refuses_other_hosts_and_redirects_to_them(tmp_path: Path, web: str) -> None:
    port = web.rsplit(":", 1)[1]
    reg = registry(tmp_path, f"builtins:\n  http: {{enabled: true, allow_hosts: ['127.0.0.1:{port}']}}\n")
    elsewhere = call(reg, "http.fetch", url="http://example.com/")
    assert elsewhere.outcome == "FAILURE"
    assert elsewhere.content == f"host of 'http://example.com/' is not in the allowed hosts (127.0.0.1:{port})"
    other_port = call(reg, "http.fetch", url="http://127.0.0.1:1/")
    assert other_port.outcome == "FAILURE" and "not in the allowed hosts" in other_port.content
    redirected = call(reg, "http.fetch", url=f"{web}/out")
    assert redirected.outcome == "FAILURE" and "'http://example.com/secret' is not in the allowed" in redirected.content
    scheme = call(reg, "http.fetch", url="file:///etc/passwd")
    assert scheme.outcome == "FAILURE"


def test_http_fetch_times_out(tmp_path: Path, web: str) -> None:
    reg = registry(tmp_path, "builtins:\n  http: {enabled: true, allow_hosts: ['127.0.0.1'], timeout_seconds: 0.5,"
                             " retry: {max_attempts: 1}}\n")  # (a GET that timed out is tried again by default)
    slow = call(reg, "http.fetch", url=f"{web}/slow")
    assert slow.outcome == "FAILURE" and slow.content == f"no answer from {web}/slow within 0.5s"


def shell(tmp_path: Path, timeout: float = 30) -> ToolRegistry:
    return registry(tmp_path, "builtins:\n  shell:\n    enabled: true\n"
                              f"    allow_commands: [echo, cat, sleep, 'false']\n    timeout_seconds: {timeout}\n")


def test_shell_runs_allowed_commands_without_a_shell(tmp_path: Path) -> None:
    reg = shell(tmp_path)
    out = call(reg, "shell.run", command="echo 'two words' $HOME;")
    assert out.outcome == "SUCCESS"
    assert out.data == {"exit_code": 0, "stdout": "two words $HOME;\n", "stderr": ""}
    assert out.content == "exit code 0\n--- stdout ---\ntwo words $HOME;\n\n--- stderr ---\n"
    piped = call(reg, "shell.run", command=["cat"], stdin="from stdin")
    assert piped.ok and piped.data["stdout"] == "from stdin"
    failed = call(reg, "shell.run", command="false")
    assert failed.outcome == "FAILURE" and failed.error == "false exited with code 1"


def test_shell_refuses_commands_not_on_the_allowlist(tmp_path: Path) -> None:
    reg = shell(tmp_path)
    for command in ("rm -rf /tmp/x", "/bin/echo hi", "sh -c 'echo hi'"):
        res = call(reg, "shell.run", command=command)
        assert res.outcome == "ERROR" and "is not allowed (allowed: echo, cat, sleep, false)" in res.content
    unbalanced = call(reg, "shell.run", command="echo 'open")
    assert unbalanced.outcome == "ERROR" and "cannot parse the command" in unbalanced.content


def test_shell_timeout_stops_the_command(tmp_path: Path) -> None:
    reg = shell(tmp_path, timeout=0.5)
    res = call(reg, "shell.run", command="sleep 600")  # only the timeout ends it
    assert res.outcome == "TIMEOUT" and res.content == "sleep timed out after 0.5s and was stopped"

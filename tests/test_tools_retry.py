"""Tool retries (issue 33): who is tried again, how often, and the record of each attempt."""

from __future__ import annotations

import asyncio
import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from magent.tools import attempts
from magent.tools.function import FunctionProvider, ToolFailure
from magent.tools.setup import build_registry
from support.cli import invoke
from support.engine import events
from test_engine_tools import toolbox_flow


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch) -> list[float]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(attempts, "sleep", sleep)
    return waits


def flaky_provider(fails: int) -> tuple[FunctionProvider, list[str]]:
    """``fs.read`` (idempotent) and ``fs.write`` (not): each raises ``fails`` times, then works."""
    calls: list[str] = []

    def make(name: str):
        def fn(path: str) -> str:
            calls.append(name)
            if calls.count(name) <= fails:
                raise ConnectionError(f"{name} lost its connection")
            return f"{name} {path}"
        return fn

    p = FunctionProvider("fs")
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    p.add("read", make("read"), "Read.", schema, idempotent=True)
    p.add("write", make("write"), "Write.", schema, idempotent=False)
    return p, calls


def registry(tmp_path: Path, provider: FunctionProvider, server_extra: str = "", tools: str = ""):
    path = tmp_path / "mcp.yaml"
    path.write_text(f"servers:\n  - name: fs\n    transport: stdio\n    config: {{command: unused}}\n"
                    f"{server_extra}{tools}")
    reg = build_registry(mcp_files=[path], home_config=False, extra_providers=[provider])
    asyncio.run(reg.start())
    return reg


def test_an_idempotent_tool_is_tried_again_and_each_attempt_is_kept(tmp_path, no_waiting):
    provider, calls = flaky_provider(fails=2)
    reg = registry(tmp_path, provider)
    result = asyncio.run(reg.call("fs.read", {"path": "a"}))
    assert result.ok and result.content == "read a" and calls == ["read"] * 3
    assert [a["outcome"] for a in result.attempts] == ["ERROR", "ERROR", "SUCCESS"]
    assert no_waiting == [1.0, 2.0]  # the default backoff, doubled
    assert result.notes[:2] == [
        "attempt 1 of 3: error: ConnectionError: read lost its connection; tried again after 1s",
        "attempt 2 of 3: error: ConnectionError: read lost its connection; tried again after 2s"]


def test_a_tool_that_is_not_idempotent_is_made_once_unless_its_config_says_so(tmp_path):
    provider, calls = flaky_provider(fails=1)
    reg = registry(tmp_path, provider, server_extra="    retry: {max_attempts: 5}\n")
    result = asyncio.run(reg.call("fs.write", {"path": "a"}))
    assert result.outcome == "ERROR" and calls == ["write"] and result.attempts == []
    provider, calls = flaky_provider(fails=1)
    reg = registry(tmp_path, provider, tools="    tools:\n      write: {retry: {max_attempts: 2, backoff: 0}}\n")
    result = asyncio.run(reg.call("fs.write", {"path": "a"}))
    assert result.ok and calls == ["write", "write"]


def test_the_server_policy_sets_attempts_and_a_refused_call_is_not_retried(tmp_path, no_waiting):
    provider, calls = flaky_provider(fails=5)
    reg = registry(tmp_path, provider, server_extra="    retry: {max_attempts: 2, backoff: 0.5}\n")
    result = asyncio.run(reg.call("fs.read", {"path": "a"}))
    assert result.outcome == "ERROR" and calls == ["read", "read"] and no_waiting == [0.5]
    bad = asyncio.run(reg.call("fs.read", {"path": 3}))  # arguments that do not fit: never ran
    assert bad.outcome == "ERROR" and calls == ["read", "read"] and bad.attempts == []


def test_a_failure_is_not_tried_again_unless_listed(tmp_path):
    calls: list[int] = []

    def no(path: str) -> str:
        calls.append(1)
        raise ToolFailure("no such file")

    p = FunctionProvider("fs")
    p.add("read", no, "Read.", {"type": "object", "properties": {"path": {"type": "string"}}}, idempotent=True)
    assert asyncio.run(registry(tmp_path, p).call("fs.read", {"path": "a"})).outcome == "FAILURE"
    assert calls == [1]
    reg = registry(tmp_path, p, tools="    tools:\n      read: {retry: {on: [failure], backoff: 0}}\n")
    assert asyncio.run(reg.call("fs.read", {"path": "a"})).outcome == "FAILURE" and len(calls) == 4


def test_a_run_records_each_attempt_and_trace_shows_them(tmp_path, magent_home, toolbox_url):
    script = """
responses:
  - tool_calls: [{name: tb.fail, arguments: {reason: busy}}]
  - content: gave up
"""
    flow = toolbox_flow(tmp_path, script, url=toolbox_url,
                        settings={"fail": {"retry": {"max_attempts": 3, "backoff": 0, "on": ["failure"]}}})
    r = invoke("run", str(flow), "-t", "x", "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = r.out.split()[1]
    (result,) = [e.model_dump() for e in events(task_id) if e.type == "tool_result"]
    assert [a["outcome"] for a in result["attempts"]] == ["FAILURE"] * 3
    assert result["notes"][0].startswith("attempt 1 of 3: failure: ")
    shown = invoke("trace", task_id)
    assert "attempt 3; earlier: FAILURE, FAILURE" in shown.out
    step = invoke("trace", task_id, "--step", "2")
    assert "note: attempt 2 of 3: failure:" in step.out


@pytest.mark.parametrize("retry,words", [
    ("{max_attempts: 0}", "retry.max_attempts: expected 1 or more"),
    ("{on: [sometimes]}", "retry.on[0]: "),
    ("{backoff: -1}", "retry.backoff: "),
])
def test_a_bad_retry_policy_is_a_config_error(tmp_path, retry, words):
    path = tmp_path / "mcp.yaml"
    path.write_text(f"servers:\n  - name: fs\n    transport: stdio\n    config: {{command: x}}\n    retry: {retry}\n")
    r = invoke("validate", str(path))
    assert r.code == 2 and r.err.count("\n") == 1
    assert words in r.err and "mcp.yaml:5:" in r.err


# the HTTP connector ---------------------------------------------------------------------------

class Busy(http.server.BaseHTTPRequestHandler):
    """Answers 503 (Retry-After: 2) to the first ``busy`` requests, then 200."""

    def _answer(self) -> None:
        self.server.seen.append(self.command)  # type: ignore[attr-defined]
        if len(self.server.seen) <= self.server.busy:  # type: ignore[attr-defined]
            self.send_response(503)
            self.send_header("Retry-After", self.server.retry_after)  # type: ignore[attr-defined]
            body = b"busy"
        else:
            self.send_response(200)
            body = b"ok now"
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815 - the stdlib's names

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def busy() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    server.seen, server.busy, server.retry_after = [], 2, "2"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def http_registry(tmp_path: Path):
    path = tmp_path / "mcp.yaml"
    path.write_text("builtins:\n  http: {enabled: true, allow_hosts: ['127.0.0.1']}\n")
    reg = build_registry(mcp_files=[path], home_config=False)
    asyncio.run(reg.start())
    return reg


def test_http_get_is_tried_again_honouring_retry_after(tmp_path, busy, no_waiting):
    url = f"http://127.0.0.1:{busy.server_address[1]}/x"
    result = asyncio.run(http_registry(tmp_path).call("http.fetch", {"url": url}))
    assert result.ok, result.content
    assert busy.seen == ["GET"] * 3 and no_waiting == [2.0, 2.0]
    assert result.content.splitlines()[1] == ("[attempt 1: HTTP 503, tried again after 2s (Retry-After); "
                                              "attempt 2: HTTP 503, tried again after 2s (Retry-After)]")


def test_http_post_is_never_tried_again(tmp_path, busy, no_waiting):
    url = f"http://127.0.0.1:{busy.server_address[1]}/x"
    result = asyncio.run(http_registry(tmp_path).call("http.fetch", {"url": url, "method": "POST", "body": "x"}))
    assert result.outcome == "FAILURE" and "HTTP 503" in result.content
    assert busy.seen == ["POST"] and no_waiting == []


def test_http_does_not_wait_a_retry_after_longer_than_a_minute(tmp_path, busy, no_waiting):
    busy.retry_after = "3600"
    url = f"http://127.0.0.1:{busy.server_address[1]}/x"
    result = asyncio.run(http_registry(tmp_path).call("http.fetch", {"url": url}))
    assert result.outcome == "FAILURE" and busy.seen == ["GET"] and no_waiting == []
    assert "Retry-After 3600s is too long to wait" in result.content

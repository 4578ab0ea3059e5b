"""Shared test setup.

Every test gets its own ``MAGENT_HOME`` (an empty temp dir), so no test can see
or touch a real home. Real model requests are forbidden for the whole suite:
the environment variable below makes magent's litellm adapter refuse any
endpoint that is not on 127.0.0.1 (subprocesses inherit it), and the socket
guard refuses non-loopback connections made in this process.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Iterator

import pytest

os.environ["MAGENT_FORBID_REMOTE_LLM"] = "1"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.pop("MAGENT_DEBUG", None)
# The suite starts hundreds of magent processes and test servers. With PYTHONDONTWRITEBYTECODE set
# (some shells and containers set it) each of them compiled all of magent again, about 0.15 s of
# CPU apiece; they cache the bytecode as any user's installed package has it (in __pycache__,
# which git ignores).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in (
            "127.0.0.1", "::1", "localhost"):
        raise ConnectionRefusedError(f"tests may not reach {host}: only 127.0.0.1 is allowed")
    return _real_connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BROWSER_TESTS = ROOT / "tests" / "test_trace_browser.py"


def pytest_configure(config: pytest.Config) -> None:
    """A run that includes the browser tests on a machine without Chromium stops at once, with
    one line that says how to get it (not with a failure per browser test, minutes later)."""
    if hasattr(config, "workerinput") or config.option.keyword or config.option.markexpr:
        return  # a worker (the controller checked), or a selection this cannot see through
    if any(str(BROWSER_TESTS) in str(d) for d in config.getoption("deselect") or []):
        return
    asked = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    if not any(p == BROWSER_TESTS or p in BROWSER_TESTS.parents for p in asked):
        return
    from support.browser import missing

    why = missing()
    if why:
        raise pytest.UsageError(f"{why}; or leave them out: --deselect tests/test_trace_browser.py")


@pytest.fixture(autouse=True)
def magent_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("MAGENT_HOME", str(home))
    return home


@pytest.fixture
def python_exe() -> str:
    return sys.executable


@pytest.fixture(scope="session")
def toolbox_url() -> Iterator[str]:
    """The URL of one real toolbox MCP server (tests/servers/toolbox.py) over streamable HTTP,
    shared by the tests of a worker that only need its tools to be there. A stdio server is a
    process per run (~0.6 s of CPU each, most of it importing the MCP SDK); tests of a server's
    own life (start, stderr, crash, hang, kill, pid files) keep their own processes."""
    from servers.harness import http_server

    with http_server("streamable_http") as (url, _proc):
        yield url

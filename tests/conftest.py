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


def _no_chromium() -> str | None:
    from support.browser import missing

    return missing()


def _no_jq() -> str | None:
    import shutil

    return None if shutil.which("jq") else "the jq one-liners' test needs jq on PATH: apt-get install jq"


def _no_fuse() -> str | None:
    from support.powercut import fuse_missing

    why = fuse_missing()
    return None if why is None else (f"the power-cut tests need FUSE 3: {why}: apt-get install fuse3 "
                                     "libfuse3-dev (and the lock's mfusepy)")


def _no_conformance() -> str | None:
    from support.conformance import missing

    return missing()


PREREQUISITES = {
    "test_mcp_conformance.py": _no_conformance,
    "test_trace_browser.py": _no_chromium,
    "test_reading_files.py": _no_jq,
    "test_power_cut.py": _no_fuse,
    "test_lossyfs.py": _no_fuse,
}
"""Test files that need something from the system or the npm registry (``.ci/run`` installs it
all), and what tells whether it is missing."""


def pytest_configure(config: pytest.Config) -> None:
    """A run that includes tests needing something the machine lacks (Chromium, jq, FUSE, the MCP
    conformance suite) stops
    at once, with one line that says what to install (not with a failure per test, minutes later)."""
    if hasattr(config, "workerinput") or config.option.keyword or config.option.markexpr:
        return  # a worker (the controller checked), or a selection this cannot see through
    asked = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    deselected = " ".join(map(str, config.getoption("deselect") or []))
    lacking: dict[str, list[str]] = {}
    for name, missing in PREREQUISITES.items():
        path = ROOT / "tests" / name
        if name in deselected or not any(p == path or p in path.parents for p in asked):
            continue
        why = missing()
        if why:
            lacking.setdefault(why, []).append(f"--deselect tests/{name}")
    if lacking:
        raise pytest.UsageError(" | ".join(f"{why}; or leave them out: {' '.join(files)}"
                                           for why, files in lacking.items()))


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

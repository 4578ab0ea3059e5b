"""The conformance suite's client command: magent's real MCP client, driven the way a person would.

The suite (``@modelcontextprotocol/conformance``) starts a scenario's server and runs this script
with the server's URL as its last argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and
any extra data (a pre-registered client) as JSON in ``MCP_CONFORMANCE_CONTEXT``. This script writes
an MCP servers file for the URL and runs the ``magent`` command line on it: ``mcp login`` first for
an auth scenario (the browser is ``browser.py`` beside this file, through ``BROWSER``), then
``tools list`` and ``tools call`` on every tool listed. In ``auth/metadata-default`` a task meets
the server first: it must pause for the login and finish on ``magent resume`` after it. Each
scenario gets a home of its own, under ``$MAGENT_HOME``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the basic-cimd scenario expects a client to present."""


def server_entry(url: str, scenario: str, context: dict) -> dict:
    """The servers file's entry for the scenario's server."""
    entry: dict = {"name": "conf", "transport": "streamable_http", "config": {"url": url},
                   "connect_timeout_seconds": 10}
    if scenario.startswith("auth/"):
        oauth: dict = {"client_metadata_url": CIMD_URL}
        if "client_id" in context:
            oauth = {"client_id": context["client_id"], "client_secret": context.get("client_secret")}
        entry["config"]["oauth"] = oauth
    return entry


def arguments(schema: dict) -> dict:
    """Arguments that satisfy a tool's input schema: a small value of each required property's type."""
    samples = {"number": 2, "integer": 3, "string": "x", "boolean": True, "array": [], "object": {}}
    props = schema.get("properties") or {}
    return {name: samples.get((props.get(name) or {}).get("type"), "x") for name in schema.get("required", [])}


def magent(*args: str) -> tuple[int, str]:
    """Run one ``magent`` command in this process (one interpreter start for the scenario, not one
    per command) through the real Typer app; its exit code and what it printed."""
    from typer.testing import CliRunner

    from magent.cli.app import app

    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    print(f"$ magent {' '.join(args)}  -> exit {result.exit_code}\n{result.output}", flush=True)
    return result.exit_code, result.stdout


AGENT = """name: caller
role: calls the conformance server's tool
system_prompt: Call the tool.
tools: [conf.*]
mcp_servers: servers.yaml
llm_config: {model: scripted, script: caller.script.yaml}
"""
SCRIPT = """responses:
  - tool_calls: [{name: conf.test-tool, arguments: {}}]
  - content: done
"""


def task_waits_for_login(home: Path) -> bool:
    """A task that meets the server before any login pauses (kind ``auth``, naming the login
    command); after the login, a plain ``magent resume`` finishes it. Whether it went so."""
    (home / "caller.yaml").write_text(AGENT)
    (home / "caller.script.yaml").write_text(SCRIPT)
    code, out = magent("run", str(home / "caller.yaml"), "-t", "call it", "--json", "--no-input")
    result = json.loads(out.splitlines()[-1])
    pause = result.get("pause") or {}
    if code != 3 or pause.get("kind") != "auth" or "magent mcp login conf" not in pause.get("question", ""):
        print(f"expected a pause for the login, got exit {code}: {pause}")
        return False
    command = shlex.split(pause["details"]["command"])  # the command the pause names, as given
    if command[:3] != ["magent", "mcp", "login"] or magent(*command[1:])[0] != 0:
        return False
    code, out = magent("resume", result["task_id"], "--json", "--no-input")
    if code != 0 or json.loads(out.splitlines()[-1])["status"] != "completed":
        print(f"expected the resumed task to complete, got exit {code}")
        return False
    return True


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    home = Path(os.environ["MAGENT_HOME"]) / scenario.replace("/", "_")
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(MAGENT_HOME=str(home), BROWSER=str(HERE / "browser.py"))
    servers = home / "servers.yaml"
    servers.write_text(json.dumps({"servers": [server_entry(url, scenario, context)]}))
    mcp = ["--mcp", str(servers)]
    if scenario == "auth/metadata-default":
        if not task_waits_for_login(home):
            return 1
    elif scenario.startswith("auth/"):
        if magent("mcp", "login", "conf", *mcp)[0] != 0:
            return 1
    code, listed = magent("tools", "list", "--server", "conf", "--json", *mcp)
    if code != 0:
        return 1
    failed = 0
    for tool in json.loads(listed)["tools"]:
        args = json.dumps(arguments(tool.get("input_schema") or {}))
        failed += magent("tools", "call", tool["name"], "--args", args, "--elicitation", "defaults", *mcp)[0] != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

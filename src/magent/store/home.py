"""Creating the home layout and its default config files (``magent init``)."""

from __future__ import annotations

from pathlib import Path

from magent import paths
from magent.store.files import atomic_write
from magent.store.tasks import Store

DEFAULT_MCP_SERVERS = """\
# MCP servers magent can start for a run. Agents name their tools `server.tool`
# (or `server.*`). Transports: stdio (command, args, env, cwd), sse and
# streamable_http (url, headers). Values may use ${ENV_VAR} or ${ENV_VAR:-default};
# resolved values are never written to disk.
servers: []
#  - name: time
#    transport: stdio
#    config:
#      command: mcp-server-time
#      args: []
#    tools:
#      get_current_time: {timeout_seconds: 30, idempotent: true}

# Built-in connectors. The key-value store is on; http and shell are off until enabled.
builtins:
  kv: {enabled: true}
  http: {enabled: false, allow_hosts: []}
  shell: {enabled: false, allow_commands: []}
"""

DEFAULT_RETENTION_POLICY = """\
# How long finished tasks are kept, in days, measured from completion (or last update).
# Precedence: the task's own --retention-days, then its tags (longest wins), then its
# status, then default_days. Running and paused tasks are never swept unless by_status
# names their status.
default_days: 7
by_task:
  critical: 30
  debug: 3
by_status:
  completed: 7
  failed: 14
# keep_checkpoints: 50   # cap checkpoints kept per task (newest, plus any a fork or pause needs)
"""


DEFAULT_DEFAULTS = """\
# Defaults for every run. Environment variables win over this file, and an agent's
# own llm_config wins over both (magent config show says what is in force, and why).
#
# The model of agents whose llm_config names none (MAGENT_MODEL overrides it): any
# litellm model string, e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-20241022,
# ollama/llama3.2, or openai/NAME with an endpoint for an OpenAI-compatible server.
# model: openai/gpt-4o-mini
#
# The API base URL that goes with the default model (MAGENT_ENDPOINT overrides it),
# e.g. llama.cpp's server (llama-server --port 8080) or Ollama on this machine.
# endpoint: http://127.0.0.1:8080/v1
#
# How long tasks are kept is set in retention_policy.yaml (default_days).
"""


def init_home(root: Path | None = None) -> list[Path]:
    """Create the home layout and default config files, leaving existing ones; returns those created."""
    store = Store(root).ensure()
    created: list[Path] = []
    for path, text in ((paths.mcp_servers_file(store.root), DEFAULT_MCP_SERVERS),
                       (paths.retention_policy_file(store.root), DEFAULT_RETENTION_POLICY),
                       (paths.defaults_file(store.root), DEFAULT_DEFAULTS)):
        if not path.exists():
            atomic_write(path, text.encode())
            created.append(path)
    return created

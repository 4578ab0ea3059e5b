"""``magent --version``, ``magent init`` and ``magent validate`` through the real app."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from magent import __version__, paths
from magent.config import load_mcp_servers, load_retention_policy
from magent.config.defaults import load_defaults
from magent.store.home import DEFAULT_MCP_SERVERS, DEFAULT_RETENTION_POLICY
from support.cli import invoke, run
from support.homes import snapshot_tree

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
GOOD, BAD = FIXTURES / "good", FIXTURES / "bad"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("MAGENT_TEST_API_KEY", "sk-test-123456")
    monkeypatch.delenv("MAGENT_TEST_UNSET_KEY", raising=False)


def test_version():
    r = invoke("--version")
    assert (r.code, r.out) == (0, f"magent {__version__} (magent-runner)\n")
    assert run("--version").out == f"magent {__version__} (magent-runner)\n"


def test_help_lists_the_read_commands():
    r = invoke("--help")
    assert r.code == 0
    for command in ("init", "validate", "tasks", "checkpoints"):
        assert f"  {command} " in r.out


# init -------------------------------------------------------------------------------------

def test_init_creates_the_layout_and_default_configs(magent_home):
    r = invoke("init")
    assert r.code == 0 and r.err == ""
    assert r.out.splitlines() == [f"created {paths.mcp_servers_file()}",
                                  f"created {paths.retention_policy_file()}",
                                  f"created {paths.defaults_file()}",
                                  f"magent home ready at {magent_home}"]
    for d in ("tasks", "locks", "config", "agents", "workflows"):
        assert stat.S_IMODE((magent_home / d).stat().st_mode) == 0o700
    assert paths.mcp_servers_file().read_text() == DEFAULT_MCP_SERVERS
    assert paths.retention_policy_file().read_text() == DEFAULT_RETENTION_POLICY
    # the defaults are valid configs of their kind
    assert load_mcp_servers(paths.mcp_servers_file()).config.builtins.kv.enabled
    policy = load_retention_policy(paths.retention_policy_file(), missing_ok=False)
    assert policy.default_days == 7 and policy.by_task == {"critical": 30, "debug": 3}


def test_init_twice_changes_nothing(magent_home):
    invoke("init")
    before = snapshot_tree(magent_home)
    r = invoke("init")
    assert r.code == 0 and r.out == f"magent home ready at {magent_home}\n"
    assert snapshot_tree(magent_home) == before


def test_init_keeps_a_config_the_user_edited(magent_home):
    invoke("init")
    mine = "default_days: 30\n"
    paths.retention_policy_file().write_text(mine)
    paths.mcp_servers_file().unlink()
    r = invoke("init")
    assert r.out.splitlines()[0] == f"created {paths.mcp_servers_file()}"
    assert paths.retention_policy_file().read_text() == mine


def test_init_then_validate_the_defaults():
    invoke("init")
    r = invoke("validate", str(paths.mcp_servers_file()), str(paths.retention_policy_file()))
    assert r.code == 0, r.err
    assert load_defaults(paths.defaults_file()).model is None   # all of it commented out
    assert [line.split()[:2] for line in r.out.splitlines()] == [
        ["ok", "mcp_servers"], ["ok", "retention_policy"]]


# validate ---------------------------------------------------------------------------------

def test_validate_a_mix_of_good_files(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    r = invoke("validate", "good/agent.yaml", "good/mcp_servers.yaml", "good/retention_policy.yaml",
               "good/scripted_agent.yaml")
    assert r.code == 0 and r.err == ""
    assert r.out.splitlines() == [
        "ok  agent             good/agent.yaml  (model openai/gpt-4o-mini)",
        "ok  mcp_servers       good/mcp_servers.yaml  (3 servers)",
        "ok  retention_policy  good/retention_policy.yaml",
        "ok  agent             good/scripted_agent.yaml  (model scripted)",
    ]


def test_validate_reports_each_bad_file_on_one_line_and_exits_2(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    r = invoke("validate", "good/agent.yaml", "bad/unknown_field.yaml", "bad/mcp_timeout.yaml",
               "bad/retention_status.yaml", "bad/python_tag.yaml")
    assert r.code == 2
    assert r.out.splitlines() == ["ok  agent             good/agent.yaml  (model openai/gpt-4o-mini)"]
    errors = r.err.splitlines()
    assert len(errors) == 4 and all(e.startswith("magent: error: ") for e in errors)
    assert errors[0] == ("magent: error: invalid agent: bad/unknown_field.yaml:6:3: "
                         "llm_config.fallback_modle: unknown field 'fallback_modle' "
                         "(did you mean 'fallback_model'?)")
    assert errors[1].startswith("magent: error: invalid mcp_servers: bad/mcp_timeout.yaml:6:26: "
                                "servers[0].tools.get_current_time.timeout_seconds: ")
    assert errors[2].startswith("magent: error: invalid retention_policy: bad/retention_status.yaml:3:3: ")
    # a file that cannot be parsed has no kind yet
    assert errors[3].startswith("magent: error: bad/python_tag.yaml:2:7: YAML tag")


def test_validate_json(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    r = invoke("validate", "--json", "good/retention_policy.yaml", "bad/wrong_type.yaml")
    assert r.code == 2
    assert json.loads(r.out) == [
        {"path": "good/retention_policy.yaml", "kind": "retention_policy", "valid": True, "error": None,
         "errors": []},
        {"path": "bad/wrong_type.yaml", "kind": "agent", "valid": False,
         "error": "bad/wrong_type.yaml:4:1: max_iterations: expected a whole number, "
                  "got 'lots'",
         "errors": ["bad/wrong_type.yaml:4:1: max_iterations: expected a whole number, "
                    "got 'lots'"]},
    ]


def test_validate_every_bad_fixture_fails_with_a_position(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    files = sorted(f"bad/{p.name}" for p in BAD.glob("*.yaml"))
    r = invoke("validate", *files)
    assert r.code == 2 and r.out == ""
    errors = r.err.splitlines()
    assert len(errors) == len(files)
    for path, line in zip(files, errors):
        assert line.startswith("magent: error: ") and f"{path}:" in line


def test_validate_missing_file_and_directory(tmp_path):
    r = invoke("validate", str(tmp_path / "nope.yaml"), str(tmp_path))
    assert r.code == 2
    assert r.err.splitlines() == [f"magent: error: {tmp_path / 'nope.yaml'}: file not found",
                                  f"magent: error: {tmp_path}: is a directory, not a config file"]


def test_validate_needs_a_file():
    assert invoke("validate").code == 2


def test_validate_does_not_write_anything(monkeypatch, magent_home, tmp_path):
    monkeypatch.chdir(FIXTURES)
    invoke("init")
    before_home, before_fixtures = snapshot_tree(magent_home), snapshot_tree(FIXTURES)
    invoke("validate", *[str(p) for p in sorted(GOOD.glob("*.yaml")) + sorted(BAD.glob("*.yaml"))])
    assert snapshot_tree(magent_home) == before_home
    assert snapshot_tree(FIXTURES) == before_fixtures


EXAMPLE_FILES = sorted(p for sub in ("agents", "workflows") for p in (EXAMPLES / sub).glob("*.y*ml"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_every_example_validates(path):
    r = invoke("validate", str(path))
    assert r.code == 0, r.err
    kind = "workflow" if path.parent.name == "workflows" else "agent"
    assert r.out.split()[:2] == ["ok", kind]


WORKFLOW_MISTAKES = [
    ("agent: writer", "agent: ghostwriter", "nodes.write.agent", "no agent 'ghostwriter'"),
    ("entry_point: write", "entrypoint: write", "entrypoint", "did you mean 'entry_point'?"),
    ("to: END}", "to: nowhere}", "edges[2].to", "no node 'nowhere'"),
]


@pytest.mark.parametrize("old,new,field,words", WORKFLOW_MISTAKES, ids=[m[2] for m in WORKFLOW_MISTAKES])
def test_validate_a_broken_workflow_names_the_field(tmp_path, monkeypatch, old, new, field, words):
    source = EXAMPLES / "workflows" / "write_review.yaml"
    for agent in ("writer.yaml", "critic.yaml"):
        (tmp_path / agent).write_bytes((EXAMPLES / "agents" / agent).read_bytes())
    (tmp_path / "scripts").mkdir()
    for script in (EXAMPLES / "agents" / "scripts").iterdir():
        (tmp_path / "scripts" / script.name).write_bytes(script.read_bytes())
    text = source.read_text()
    assert old in text
    (tmp_path / "ok.yaml").write_text(text)
    (tmp_path / "broken.yaml").write_text(text.replace(old, new, 1))
    monkeypatch.chdir(tmp_path)
    r = invoke("validate", "ok.yaml", "broken.yaml")
    assert r.code == 2
    assert r.out.startswith("ok  workflow          ok.yaml")
    line = r.err.strip()
    assert "\n" not in line
    assert line.startswith("magent: error: invalid workflow: broken.yaml:")
    assert f": {field}: " in line and words in line

"""Loading good configs: kinds, ``${VAR}`` interpolation, merge keys, and secrets kept off disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from magent.config import (
    detect_kind, expand, load_agent, load_file, load_mcp_servers, load_retention_policy,
)
from magent.config.files import ConfigKind
from magent.errors import ConfigError
from magent.models import StdioServer

GOOD = Path(__file__).parent / "fixtures" / "configs" / "good"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("MAGENT_TEST_API_KEY", "sk-test-123456")
    for name in ("MAGENT_TEST_ENDPOINT", "MAGENT_TEST_TOKEN", "MAGENT_TEST_UNSET"):
        monkeypatch.delenv(name, raising=False)


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("name,kind", [
    ("agent.yaml", ConfigKind.agent), ("scripted_agent.yaml", ConfigKind.agent),
    ("mcp_servers.yaml", ConfigKind.mcp_servers), ("retention_policy.yaml", ConfigKind.retention_policy),
])
def test_good_fixtures_are_detected_by_kind(name, kind):
    assert detect_kind(load_file(GOOD / name)) is kind


def test_good_agent_loads_with_env_and_defaults():
    loaded = load_agent(GOOD / "agent.yaml")
    a = loaded.agent
    assert a.name == "writer" and a.tools == ["kv.get", "kv.set", "time.*"]
    assert a.llm_config.api_key == "sk-test-123456"
    assert a.llm_config.endpoint == "http://127.0.0.1:4000/v1"  # the ${VAR:-default}
    assert "Prices are in $ (US dollars)" in a.system_prompt     # $$ is a literal $
    assert loaded.base_dir == GOOD


def test_good_mcp_file_loads_every_transport():
    cfg = load_mcp_servers(GOOD / "mcp_servers.yaml").config
    assert [s.transport for s in cfg.servers] == ["stdio", "sse", "streamable_http"]
    time = cfg.servers[0]
    assert isinstance(time, StdioServer) and time.config.env == {"TZ": "UTC"}
    assert time.tools["get_current_time"].timeout_seconds == 30
    assert cfg.servers[1].config.headers == {"Authorization": "Bearer none"}
    assert cfg.builtins.http.enabled and cfg.builtins.kv.enabled


def test_good_retention_policy_is_the_seed_example():
    p = load_retention_policy(GOOD / "retention_policy.yaml", missing_ok=False)
    assert p.default_days == 7 and p.by_task == {"critical": 30, "debug": 3}
    assert {k.value: v for k, v in p.by_status.items()} == {"completed": 7, "failed": 14}


def test_missing_optional_files_give_defaults(tmp_path):
    assert load_retention_policy(tmp_path / "none.yaml").default_days == 7
    assert load_mcp_servers(tmp_path / "none.yaml", missing_ok=True).config.servers == []
    with pytest.raises(ConfigError, match="file not found"):
        load_mcp_servers(tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="file not found"):
        load_retention_policy(tmp_path / "none.yaml", missing_ok=False)


def test_mcp_server_names_must_be_unique_and_not_builtin(tmp_path):
    two = _write(tmp_path, "servers:\n  - {name: t, transport: stdio, config: {command: a}}\n"
                           "  - {name: t, transport: stdio, config: {command: b}}\n")
    with pytest.raises(ConfigError) as exc:
        load_mcp_servers(two)
    assert exc.value.field == "servers[1].name" and exc.value.line == 3
    kv = _write(tmp_path, "servers:\n  - {name: kv, transport: stdio, config: {command: a}}\n")
    with pytest.raises(ConfigError, match="taken by a built-in"):
        load_mcp_servers(kv)


def test_scripted_model_needs_a_script(tmp_path):
    f = _write(tmp_path, "name: e\nrole: r\nsystem_prompt: s\nllm_config: {model: scripted}\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    assert exc.value.field == "llm_config.script"


def test_json_config_files_load_too(tmp_path):
    f = _write(tmp_path, json.dumps({"default_days": 3, "by_task": {"x": 1}}), "policy.json")
    assert load_retention_policy(f, missing_ok=False).default_days == 3


# ${VAR} interpolation ---------------------------------------------------------------------

@pytest.mark.parametrize("text,env,expected", [
    ("${A}", {"A": "x"}, "x"),
    ("pre-${A}-post", {"A": "x"}, "pre-x-post"),
    ("${A:-dflt}", {}, "dflt"),
    ("${A:-dflt}", {"A": ""}, "dflt"),          # :- also covers set-but-empty, as in the shell
    ("${A:-}", {}, ""),
    ("${A:-dflt}", {"A": "set"}, "set"),
    ("${A}${B}", {"A": "1", "B": "2"}, "12"),
    ("$$", {}, "$"),
    ("$${A}", {"A": "x"}, "${A}"),               # escaped: not a reference
    ("cost: $5", {}, "cost: $5"),                # a lone $ is text
    ("${A:-a b/c:d}", {}, "a b/c:d"),
])
def test_expand(monkeypatch, text, env, expected):
    for name in ("A", "B"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert expand(text, lambda n: KeyError(n)) == expected


@pytest.mark.parametrize("text", ["${A", "${1X}", "${A:default}", "${A-default}", "${}", "${A B}"])
def test_malformed_references_are_errors_not_text(text):
    with pytest.raises(ValueError, match="malformed variable reference"):
        expand(text, lambda n: KeyError(n))


def test_missing_variable_error_names_it_and_where(tmp_path, monkeypatch):
    monkeypatch.delenv("MAGENT_TEST_UNSET", raising=False)
    f = _write(tmp_path, "servers:\n  - name: t\n    transport: stdio\n    config:\n"
                         "      command: srv\n      env: {TOKEN: '${MAGENT_TEST_UNSET}'}\n")
    with pytest.raises(ConfigError) as exc:
        load_mcp_servers(f)
    assert exc.value.field == "servers[0].config.env.TOKEN"
    assert exc.value.line == 6
    assert "MAGENT_TEST_UNSET is not set" in str(exc.value)


def test_variables_inside_lists_are_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGENT_TEST_ARG", "--verbose")
    f = _write(tmp_path, "a: ['${MAGENT_TEST_ARG}', plain]\n")
    assert load_file(f).data == {"a": ["--verbose", "plain"]}


def test_non_string_values_are_left_alone(tmp_path):
    src = load_file(_write(tmp_path, "n: 3\nf: 0.5\nb: true\nz: null\n"))
    assert src.data == {"n": 3, "f": 0.5, "b": True, "z": None}


# secrets stay in memory -------------------------------------------------------------------

def test_raw_keeps_the_reference_and_data_the_value():
    src = load_file(GOOD / "agent.yaml")
    assert src.raw["llm_config"]["api_key"] == "${MAGENT_TEST_API_KEY}"
    assert src.data["llm_config"]["api_key"] == "sk-test-123456"
    assert "sk-test-123456" in src.secrets
    assert "sk-test-123456" not in json.dumps(src.raw)
    # defaults are not secrets: they are written in the file already
    assert src.secrets == {"sk-test-123456"}


def test_raw_is_what_a_task_snapshot_stores(tmp_path):
    """What the store writes from a config (``raw``) never contains a resolved secret."""
    from support.homes import HomeBuilder

    src = load_file(GOOD / "agent.yaml")
    home = HomeBuilder(tmp_path / "home")
    t = home.task("uses a secret", config_snapshot={"agents": {"writer": {"raw": src.raw}}})
    t.say("user", "hello")
    t.checkpoint("writer", state={"metadata": {"agent": src.raw["llm_config"]}})
    t.close()
    for f in (tmp_path / "home").rglob("*"):
        if f.is_file():
            assert b"sk-test-123456" not in f.read_bytes(), f
    assert b"${MAGENT_TEST_API_KEY}" in (t.path / "task.json").read_bytes()


# merge keys and anchors -------------------------------------------------------------------

def test_merge_keys_let_written_keys_override(tmp_path):
    f = _write(tmp_path, "base: &b {model: x, endpoint: 'http://e'}\n"
                         "llm_config:\n  <<: *b\n  model: y\n")
    src = load_file(f)
    assert src.data["llm_config"] == {"model": "y", "endpoint": "http://e"}
    assert src.where(("llm_config", "model")) == (4, 3)  # the written key, not the anchor


def test_an_aliased_mapping_with_a_merge_can_be_reused(tmp_path):
    f = _write(tmp_path, "b: &b {x: 1}\nc: &c {<<: *b, x: 2}\nd: *c\ne: *c\n")
    assert load_file(f).data == {"b": {"x": 1}, "c": {"x": 2}, "d": {"x": 2}, "e": {"x": 2}}


def test_loader_matches_safe_load_on_plain_documents(tmp_path):
    text = ("a: 1\nb: [1, 2.5, 'x', null, true]\nc: {d: {e: f}}\ng: |\n  block\n  text\n"
            "h: 2024-01-02\ni: 0x1f\nj: ~\n")
    assert load_file(_write(tmp_path, text)).data == yaml.safe_load(text)


def test_marks_point_at_each_field(tmp_path):
    src = load_file(_write(tmp_path, "a:\n  b:\n    - x\n    - {c: 1}\n"))
    assert src.where(("a",)) == (1, 1)
    assert src.where(("a", "b")) == (2, 3)
    assert src.where(("a", "b", 1, "c")) == (4, 8)
    assert src.where(("a", "b", 1, "nope")) == (4, 7)  # deepest known prefix: the item

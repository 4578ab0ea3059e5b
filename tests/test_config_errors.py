"""Every bad config names file:line:col, the field path and what is wrong, in one line.

The files are in ``tests/fixtures/configs/bad``; each has exactly one mistake.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.config import load_agent, load_file, load_mcp_servers, load_retention_policy
from magent.config.files import ConfigKind, detect_kind
from magent.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
BAD = FIXTURES / "bad"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("MAGENT_TEST_API_KEY", "sk-test-123456")
    monkeypatch.delenv("MAGENT_TEST_UNSET_KEY", raising=False)
    monkeypatch.chdir(FIXTURES)  # so paths are shown relative, as a user typing them sees them


def _load(path: Path):
    """Load ``path`` as whatever kind it is, like ``magent validate`` does."""
    source = load_file(path)
    kind = detect_kind(source)
    if kind is ConfigKind.agent:
        return load_agent(path, source)
    if kind is ConfigKind.mcp_servers:
        return load_mcp_servers(path)
    return load_retention_policy(path, missing_ok=False)


# file, line, column, field path (None: the error is about the file), words the message must hold
CASES = [
    ("malformed.yaml", 3, 14, None, ["YAML syntax: a '[' begins a list that is not closed", "began on line 2"]),
    ("python_tag.yaml", 2, 7, None, ["YAML tag !!python/object/apply:os.system is not allowed"]),
    ("python_tag_mapping.yaml", 4, 13, None, ["YAML tag !!python/object:builtins.dict is not allowed"]),
    ("duplicate_key.yaml", 6, 3, "llm_config.model", ["duplicate key 'model'", "first defined on line 5"]),
    ("unknown_field.yaml", 6, 3, "llm_config.fallback_modle",
     ["unknown field 'fallback_modle'", "did you mean 'fallback_model'?"]),
    ("unknown_field_far.yaml", 4, 1, "colour", ["unknown field 'colour'", "allowed:", "system_prompt"]),
    ("wrong_type.yaml", 4, 1, "max_iterations", ["expected a whole number, got 'lots'"]),
    ("bad_agent_name.yaml", 1, 1, "name", ["a name of lowercase letters, digits and '_'", "'Writer-2'"]),
    ("missing_var.yaml", 6, 3, "llm_config.api_key",
     ["environment variable MAGENT_TEST_UNSET_KEY is not set"]),
    ("malformed_var.yaml", 6, 3, "llm_config.api_key",
     ["malformed variable reference '${MAGENT_TEST_API_KEY:fallback}'", "${NAME:-default}"]),
    ("mcp_transport.yaml", 2, 5, "servers[0]", ["unknown transport 'stdoi'", "'stdio'", "'sse'"]),
    ("mcp_timeout.yaml", 6, 26, "servers[0].tools.get_current_time.timeout_seconds",
     ["expected more than 0, got 0"]),
    ("mcp_config_typo.yaml", 6, 7, "servers[0].config.header", ["did you mean 'headers'?"]),
    ("retention_status.yaml", 3, 3, "by_status.finished", ["invalid key", "'finished' is not one of", "failed or cancelled"]),
    ("retention_negative.yaml", 3, 3, "by_task.debug", ["expected 0 or more, got -3"]),
    ("two_documents.yaml", 2, 1, None, ["second YAML document"]),
    ("top_level_list.yaml", 1, 1, None, ["expected a mapping"]),
    ("unknown_kind.yaml", 1, 1, None, ["cannot tell what kind of config"]),
    ("control_char.yaml", 3, 10, None, ["'\\x01'", "not allowed in YAML"]),
]


def test_every_bad_fixture_has_a_case():
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(c[0] for c in CASES)


@pytest.mark.parametrize("name,line,column,field,words", CASES, ids=[c[0] for c in CASES])
def test_bad_config_error_names_file_line_column_and_field(name, line, column, field, words):
    with pytest.raises(ConfigError) as exc:
        _load(BAD / name)
    err = exc.value
    assert (err.path, err.line, err.column, err.field) == (f"bad/{name}", line, column, field)
    text = str(err)
    prefix = f"bad/{name}:{line}:{column}: " + (f"{field}: " if field else "")
    assert text.startswith(prefix), text
    for word in words:
        assert word in text, text
    assert "\n" not in text and "Traceback" not in text


def test_error_path_is_absolute_when_the_file_is_outside_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (monkeypatch: the worker's directory is restored after the test)
    with pytest.raises(ConfigError) as exc:
        _load(BAD / "wrong_type.yaml")
    assert str(exc.value).startswith(f"{BAD / 'wrong_type.yaml'}:4:1: max_iterations: ")


def test_a_misspelt_field_is_reported_before_the_missing_one_it_causes(tmp_path):
    f = tmp_path / "agent.yaml"
    f.write_text("name: w\nrole: r\nsystem_prompt: s\nllm_config:\n  modle: gpt\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    assert exc.value.field == "llm_config.modle"
    assert "did you mean 'model'?" in str(exc.value)
    assert "more error" not in str(exc.value) and len(exc.value.errors) == 1  # the missing model is its echo


def test_missing_required_field_is_named(tmp_path):
    f = tmp_path / "agent.yaml"
    f.write_text("name: w\nrole: r\nllm_config: {model: gpt}\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    assert exc.value.field == "system_prompt"
    assert "missing required field 'system_prompt'" in str(exc.value)


def test_did_you_mean_inside_a_discriminated_union(tmp_path):
    f = tmp_path / "mcp.yaml"
    f.write_text("servers:\n  - name: t\n    transport: stdio\n    config: {comand: x}\n")
    with pytest.raises(ConfigError) as exc:
        load_mcp_servers(f)
    assert exc.value.field == "servers[0].config.comand"
    assert "did you mean 'command'?" in str(exc.value)


@pytest.mark.parametrize("text,line,column,words", [
    ("a: 'unclosed\n", 2, 1, ["YAML syntax: a quote is not closed before the file ends", "began on line 1"]),
    ("a: b: c\n", 1, 5, ["YAML syntax: a ': ' inside a value reads as a new key"]),
    ("a: *nowhere\n", 1, 4, ["a '*' begins a reference to an anchor that is not defined"]),
    ("a:\n\tb: 1\n", 2, 1, ["a tab: YAML indents with spaces only"]),
    ("a: &x [*x]\n", 1, 4, ["a[0]: an alias refers to a value that contains it (recursive)"]),
    ("? [a, b]\n: 1\n", 1, 3, ["mapping keys must be plain scalars"]),
    ("a: !!set {x, y}\n", 1, 4, ["YAML tag !!set is not allowed"]),
    ("a: !custom 1\n", 1, 4, ["YAML tag !custom is not allowed"]),
])
def test_yaml_syntax_errors_are_one_line_with_a_position(tmp_path, text, line, column, words):
    """Each is one line naming the file, line and column, in magent's own words (a syntax error
    with a hint at its usual cause)."""
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_file(f)
    assert (exc.value.line, exc.value.column) == (line, column)
    assert str(exc.value).startswith(f"{f}:{line}:{column}: ")
    for word in words:
        assert word in str(exc.value)
    assert "\n" not in str(exc.value)


def test_alias_bomb_is_refused_quickly(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="values once aliases are expanded"):
        load_file(f)


@pytest.mark.parametrize("setup,words", [
    (lambda p: None, ["file not found"]),
    (lambda p: p.mkdir(), ["is a directory"]),
])
def test_unreadable_files(tmp_path, setup, words):
    p = tmp_path / "x.yaml"
    setup(p)
    with pytest.raises(ConfigError) as exc:
        load_file(p)
    assert str(exc.value).startswith(f"{p}: ")
    for word in words:
        assert word in str(exc.value)


def test_empty_file_is_reported_as_empty(tmp_path):
    f = tmp_path / "empty.yaml"
    f.write_text("# nothing here\n")
    with pytest.raises(ConfigError, match="the file is empty"):
        detect_kind(load_file(f))


@pytest.mark.parametrize("line,field,words", [
    ("max_iterations: yes", "max_iterations", ["expected a whole number, got True"]),
    ("max_iterations: '10'", "max_iterations", ["expected a whole number, got '10'"]),
    ("temperature: true", "temperature", ["expected a number, got True"]),
    ("tools: kv.get", "tools", ["expected a list, got 'kv.get'"]),
    ("llm_config: [gpt]", "llm_config", ["expected a mapping, got a list"]),
    ("role: 42", "role", ["expected text, got 42"]),
    ("role: [writer]", "role", ["expected text, got a list"]),
    # a mapping is how a stored prompt is named, so the error says what a mapping must hold
    ("system_prompt: {a: b}", "system_prompt",
     [":3:1: system_prompt: a text, or a stored prompt referred to as {prompt: NAME, version: V}",
      "(unknown field 'a')"]),
])
def test_yaml_types_are_kept_not_coerced(tmp_path, line, field, words):
    """A YAML boolean is not a number and a quoted number is a string: wrong types are errors."""
    f = tmp_path / "agent.yaml"
    base = {"name": "name: w", "role": "role: r", "system_prompt": "system_prompt: s",
            "llm_config": "llm_config: {model: gpt}"}
    base[field] = line
    f.write_text("\n".join(base.values()) + "\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    assert exc.value.field == field
    for word in words:
        assert word in str(exc.value)


def test_json_conversions_still_apply(tmp_path):
    """An integer where a float is wanted, a status name as a key, a date as text, are fine."""
    f = tmp_path / "agent.yaml"
    f.write_text("name: w\nrole: 2024-01-02\nsystem_prompt: s\ntemperature: 1\n"
                 "llm_config: {model: gpt, timeout_seconds: 30}\n")
    agent = load_agent(f).agent
    assert agent.temperature == 1.0 and agent.role == "2024-01-02"
    p = tmp_path / "policy.yaml"
    p.write_text("by_status: {failed: 3}\n")
    assert list(load_retention_policy(p, missing_ok=False).by_status.values()) == [3]


@pytest.mark.parametrize("key", ["api_base", "base_url", "endpoint"])
def test_the_endpoint_has_litellms_and_the_openai_sdks_names_too(tmp_path, key):
    f = tmp_path / "agent.yaml"
    f.write_text("name: w\nrole: r\nsystem_prompt: s\nllm_config:\n  model: openai/local\n"
                 f"  {key}: http://127.0.0.1:8080/v1\n"
                 f"  fallback_model: {{model: openai/other, {key}: 'http://127.0.0.1:9090/v1'}}\n")
    config = load_agent(f).agent.llm_config
    assert config.endpoint == "http://127.0.0.1:8080/v1"
    assert config.fallback_model.endpoint == "http://127.0.0.1:9090/v1"


@pytest.mark.parametrize("typo", ["api_bse", "apibase", "base_ur"])
def test_a_misspelt_endpoint_name_suggests_the_endpoint_not_the_api_key(tmp_path, typo):
    f = tmp_path / "agent.yaml"
    f.write_text(f"name: w\nrole: r\nsystem_prompt: s\nllm_config:\n  model: openai/local\n  {typo}: http://h/v1\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    assert f"unknown field '{typo}' (did you mean 'endpoint'?)" in str(exc.value)


def test_the_endpoint_is_given_once(tmp_path):
    f = tmp_path / "agent.yaml"
    f.write_text("name: w\nrole: r\nsystem_prompt: s\nllm_config:\n  model: openai/local\n"
                 "  endpoint: http://a/v1\n  api_base: http://b/v1\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    assert str(exc.value).endswith("agent.yaml:4:1: llm_config: endpoint and api_base are the same "
                                   "setting (the endpoint): give it once")


@pytest.mark.parametrize("prompt,line,column,words", [
    ("Note: be brief", 3, 20, "a ': ' inside a value reads as a new key; if it is text, put the whole value in quotes"),
    ("{task} and nothing else", 3, 23, "more follows a value that looked complete (one starting with '{'"),
    ('"Say hello" to them', 3, 28, "more follows a value that looked complete"),
    ("[draft] the copy", 3, 24, "more follows a value that looked complete"),
], ids=["colon", "brace", "quote", "bracket"])
def test_a_yaml_syntax_error_says_what_to_change_in_magents_words(tmp_path, prompt, line, column, words):
    """The usual cause is a prompt YAML reads as structure: magent names it at file:line:col."""
    f = tmp_path / "agent.yaml"
    f.write_text(f"name: w\nrole: r\nsystem_prompt: {prompt}\nllm_config: {{model: scripted}}\n")
    with pytest.raises(ConfigError) as exc:
        load_agent(f)
    text = str(exc.value)
    assert text.startswith(f"{f}:{line}:{column}: YAML syntax: "), text
    assert words in text and "\n" not in text
    for pyyaml in ("mapping values are not allowed", "expected <block end>", "but found"):
        assert pyyaml not in text

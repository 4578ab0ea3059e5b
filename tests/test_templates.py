"""Templates (issue 12 item 4): prompts and tool-node arguments over State and --set values,
rendered with Jinja2's sandbox and StrictUndefined, checked before anything runs; and the
prompt store (seed 004): named, versioned templates under $MAGENT_HOME/prompts/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import magent
from support.cli import invoke
from support.engine import kv_store, task_dir

ROOT = Path(__file__).resolve().parent.parent
REPLY = str(ROOT / "examples/workflows/templated_reply.yaml")
TASK = "My order never arrived"


def last(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def sent_system(task_id: str, step: int = 3) -> str:
    sent = json.loads(invoke("trace", task_id, "--step", str(step), "--request", "--json").out)
    call = sent[0] if isinstance(sent, list) else sent["calls"][0]
    return call["request"]["messages"][0]["content"]


def agent_file(folder: Path, prompt: str, name: str = "a", extra: str = "") -> Path:
    (folder / "s.yaml").write_text("responses:\n  - content: done\n")
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\nrole: r\nsystem_prompt: {prompt}\n{extra}"
                    "llm_config: {model: scripted, script: s.yaml}\n")
    return path


def test_set_values_fill_the_prompt_and_the_tool_arguments() -> None:
    r = invoke("run", REPLY, "-t", TASK, "--set", "ticket_id=1042", "--set", "customer=Jane", "--json")
    assert r.code == 0, r.out + r.err
    task_id = last(r.out)["task_id"]
    assert kv_store(task_id)["ticket-1042"] == TASK  # key and value rendered from --set and the task
    entries = [e for e in task_dir(task_id).entries.load().values() if e.name == "workflow"]
    assert [e.content for e in entries] == ["Reply to Jane about ticket 1042 in a friendly tone."]
    assert sent_system(task_id).startswith("You write replies for Tidy support")  # a default applies
    events = [json.loads(line) for line in r.out.strip().splitlines()[:-1]]
    assert not [e for e in events if e.get("type") == "warning" and "ticket_id" in json.dumps(e)]


def test_optional_values_override_the_defaults() -> None:
    result = magent.run(REPLY, TASK, set={"ticket_id": 7, "customer": "Ade", "tone": "formal", "product": "Acme"})
    assert result.success
    entries = [e for e in task_dir(result.task_id).entries.load().values() if e.name == "workflow"]
    assert entries[0].content == "Reply to Ade about ticket 7 in a formal tone."
    assert sent_system(result.task_id).startswith("You write replies for Acme support, in two sentences.\n"
                                                 'Sign as "The Acme team".')


def test_a_missing_required_value_is_a_usage_error_and_nothing_is_written(magent_home: Path) -> None:
    r = invoke("run", REPLY, "-t", TASK, "--set", "customer=Jane")
    assert r.code == 2
    assert "a template needs metadata.ticket_id (" in r.err and "templated_reply.yaml:13)" in r.err
    assert "--set ticket_id=VALUE" in r.err
    assert not (magent_home / "tasks").exists() or not list((magent_home / "tasks").iterdir())
    with pytest.raises(magent.errors.UsageError, match="metadata.customer"):
        magent.run(REPLY, TASK, set={"ticket_id": 1})


def test_prompts_without_template_marks_are_sent_exactly_as_written(tmp_path: Path) -> None:
    plain = 'Answer as JSON like {"a": 1} or { b }; keep {this} and $dollars as written.'
    agent = agent_file(tmp_path, json.dumps(plain))
    result = magent.run(str(agent), "go")
    assert result.success and sent_system(result.task_id, 2) == plain


@pytest.mark.parametrize("prompt, line, words", [
    ("|\n  Fine line.\n  Broken {{ metadata.x \n", 5, "template does not parse"),
    ("|\n  Fine line.\n  Hello {{ customer }}\n", 5, "template uses unknown name 'customer'"),
    ('"{% if metadata.x %}open"', 3, "template does not parse"),
])
def test_template_mistakes_are_config_errors_at_their_line(tmp_path: Path, prompt: str, line: int,
                                                          words: str) -> None:
    agent = agent_file(tmp_path, prompt)
    for command in (("validate", str(agent)), ("run", str(agent), "-t", "x")):
        r = invoke(*command)
        assert r.code == 2, r.out + r.err
        assert f"a.yaml:{line}: system_prompt: {words}" in r.err, r.err


def test_the_sandbox_refuses_python_internals(tmp_path: Path) -> None:
    agent = agent_file(tmp_path, '"{{ task.__class__.__mro__ }}"')
    result = magent.run(str(agent), "go")
    assert result.status == "failed" and result.error.type == "template"
    assert "system prompt of agent 'a'" in result.error.message and "unsafe" in result.error.message
    assert result.model_calls == []


def test_stored_prompts_are_listed_shown_and_used_by_version(tmp_path: Path, magent_home: Path) -> None:
    v1 = tmp_path / "v1.txt"
    v1.write_text("You help with {{ metadata.product }}.")
    assert invoke("prompts", "add", "helper", "--version", "1", "--file", str(v1), "-d", "Helps").code == 0
    r = invoke("prompts", "add", "helper", "--version", "2", input="You help with {{ metadata.product }}, briefly.")
    assert r.code == 0, r.err
    again = invoke("prompts", "add", "helper", "--version", "1", input="other")
    assert again.code == 2 and "never changed" in again.err
    assert (magent_home / "prompts/helper/1.yaml").is_file()

    listed = json.loads(invoke("prompts", "list", "--json").out)
    assert [(p["name"], p["versions"], p["required"]) for p in listed] == [("helper", ["1", "2"], ["product"])]
    assert "helper  1, 2" in invoke("prompts", "list").out
    shown = json.loads(invoke("prompts", "show", "helper", "--version", "1", "--json").out)
    assert shown["text"] == "You help with {{ metadata.product }}." and shown["description"] == "Helps"
    assert invoke("prompts", "show", "helper").out.splitlines()[0] == "helper version 2"

    agent = agent_file(tmp_path, "{prompt: helper, version: 1}")
    assert invoke("validate", str(agent)).code == 0
    missing = invoke("run", str(agent), "-t", "go")
    assert missing.code == 2 and "metadata.product" in missing.err
    result = magent.run(str(agent), "go", set={"product": "Tidy"})
    assert result.success and sent_system(result.task_id, 2) == "You help with Tidy."

    wrong = agent_file(tmp_path, "{prompt: helper, version: 7}", name="b")
    r = invoke("validate", str(wrong))
    assert r.code == 2 and "b.yaml:3:" in r.err and "no version '7' (versions: 1, 2)" in r.err
    r = invoke("prompts", "show", "nothing")
    assert r.code == 2 and "no prompt 'nothing'" in r.err and "helper" in r.err

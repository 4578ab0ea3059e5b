"""The API behind ``magent new`` and ``magent prompts``: each call gives a Python user what the
command shows (checked against the command's own output on the same home), raises the command's
error for bad input — and the command still prints that error as one line and exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import magent
from magent.errors import ConfigError, UsageError
from support.cli import invoke


def _json(*args: str) -> object:
    r = invoke(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _refused(args: list[str], message: str, input: str | None = None) -> None:
    r = invoke(*args, input=input)
    assert r.code == 2 and r.out == "" and message in r.err, (r.code, r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


# new --------------------------------------------------------------------------------------

def test_new_agent_and_workflow_write_the_files_the_command_writes(tmp_path: Path) -> None:
    agent = magent.new_agent("support_bot", folder=tmp_path / "api", model="ollama/llama3.2")
    assert agent == tmp_path / "api" / "support_bot.yaml"
    assert invoke("new", "agent", "support_bot", "--dir", str(tmp_path / "cli"), "--model", "ollama/llama3.2").code == 0
    # the same file but for the path it names in its opening comment
    assert agent.read_text().replace(str(tmp_path / "api"), "D") == \
        (tmp_path / "cli" / "support_bot.yaml").read_text().replace(str(tmp_path / "cli"), "D")
    flow = magent.new_workflow("answer_review", folder=tmp_path)
    (checked,) = magent.validate(agent)
    assert checked.ok and checked.kind == "agent"
    assert [r.kind for r in magent.validate(flow) if r.ok] == ["workflow"]


def test_new_refuses_to_overwrite_and_bad_names_as_the_command_does(tmp_path: Path) -> None:
    path = magent.new_agent("helper", folder=tmp_path)
    path.write_text("# mine\n")
    with pytest.raises(UsageError, match="already exists \\(--force replaces it\\)"):
        magent.new_agent("helper", folder=tmp_path)
    with pytest.raises(UsageError, match="already exists"):
        magent.new_workflow("helper", folder=tmp_path)
    assert path.read_text() == "# mine\n"
    _refused(["new", "agent", "helper", "--dir", str(tmp_path)], f"{path} already exists (--force replaces it)")
    assert path.read_text() == "# mine\n"
    assert magent.new_agent("helper", folder=tmp_path, force=True) == path and "name: helper" in path.read_text()
    with pytest.raises(UsageError, match="'Bad-Name' is not a usable name"):
        magent.new_workflow("Bad-Name", folder=tmp_path)
    _refused(["new", "workflow", "Bad-Name", "--dir", str(tmp_path)], "'Bad-Name' is not a usable name")
    assert not (tmp_path / "Bad-Name.yaml").exists()


def test_new_agent_names_the_default_model_of_the_home_given(tmp_path: Path, magent_home: Path) -> None:
    other = tmp_path / "other"
    (other / "config").mkdir(parents=True)
    (other / "config" / "defaults.yaml").write_text("model: ollama/qwen3\n")
    text = magent.new_agent("local", folder=tmp_path, home=other).read_text()
    assert "(now ollama/qwen3;" in text
    assert "(now ollama/qwen3;" not in magent.new_agent("plain", folder=tmp_path).read_text()


# prompts ----------------------------------------------------------------------------------

def test_prompts_list_show_and_add_as_the_commands_do(tmp_path: Path, magent_home: Path) -> None:
    assert magent.prompts() == [] and _json("prompts", "list", "--json") == []
    assert magent.prompts_folder() == magent_home / "prompts"
    v1 = tmp_path / "v1.txt"
    v1.write_text("You help with {{ metadata.product }}.")
    first = magent.add_prompt("helper", "1", file=v1, description="Helps")
    assert first.path == magent_home / "prompts" / "helper" / "1.yaml" and first.versions == ["1"]
    assert first.required == ["product"] and first.text == v1.read_text()
    r = invoke("prompts", "add", "helper", "--version", "2", input="Briefly, {{ task }}.")
    assert r.code == 0 and r.out == f"stored helper version 2 ({magent_home / 'prompts' / 'helper' / '2.yaml'})\n"
    third = magent.add_prompt("helper", "10", "About {{ metadata.product | default('Tidy') }}.")
    assert third.versions == ["1", "2", "10"] and third.required == []

    (latest,) = magent.prompts()
    assert latest.version == "10" and latest.versions == ["1", "2", "10"]
    assert [p.as_dict(text=False) for p in magent.prompts()] == _json("prompts", "list", "--json")
    assert magent.prompt("helper", "1").as_dict() == _json("prompts", "show", "helper", "--version", "1", "--json")
    assert magent.prompt("helper").as_dict() == _json("prompts", "show", "helper", "--json")
    assert magent.prompt("helper", "2").names == ["task"]


def test_prompt_mistakes_are_typed_errors_and_one_line_from_the_command(tmp_path: Path, magent_home: Path) -> None:
    magent.add_prompt("helper", "1", "Hello.")
    with pytest.raises(UsageError, match="already has version '1': versions are never changed"):
        magent.add_prompt("helper", "1", "Other.")
    _refused(["prompts", "add", "helper", "-v", "1"], "already has version '1'", input="Other.")
    assert magent.prompt("helper").text == "Hello."
    with pytest.raises(ConfigError, match=r"no prompt 'nothing' in .* \(prompts: helper\)"):
        magent.prompt("nothing")
    _refused(["prompts", "show", "nothing"], "no prompt 'nothing'")
    with pytest.raises(ConfigError, match=r"has no version '7' \(versions: 1\)"):
        magent.prompt("helper", "7")
    broken = tmp_path / "broken.txt"
    broken.write_text("fine\nthen {{ oops\n")
    with pytest.raises(UsageError, match=f"{broken}:2: "):
        magent.add_prompt("helper", "2", file=broken)
    _refused(["prompts", "add", "helper", "-v", "2", "-f", str(broken)], f"{broken}:2: ")
    with pytest.raises(UsageError, match="^the text:1: "):
        magent.add_prompt("helper", "2", "{% if %}")
    with pytest.raises(UsageError, match="cannot read .*missing.txt"):
        magent.add_prompt("helper", "2", file=tmp_path / "missing.txt")
    with pytest.raises(UsageError, match="not both"):
        magent.add_prompt("helper", "2", "text", file=broken)
    with pytest.raises(UsageError, match="is not a prompt name"):
        magent.add_prompt("Bad Name", "1", "text")
    assert magent.prompt("helper").versions == ["1"]


def test_prompts_read_the_home_given_per_call(tmp_path: Path, magent_home: Path) -> None:
    other = tmp_path / "other"
    stored = magent.add_prompt("elsewhere", "1", "Hi.", home=other)
    assert stored.path == other / "prompts" / "elsewhere" / "1.yaml"
    assert [p.name for p in magent.prompts(home=other)] == ["elsewhere"] and magent.prompts() == []
    assert magent.prompt("elsewhere", home=other).text == "Hi."
    assert magent.prompts_folder(home=other) == other / "prompts"

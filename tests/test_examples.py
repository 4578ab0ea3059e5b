"""The examples, the README and the docs, as a new user meets them.

Every YAML under ``examples/`` validates, and the tour (the README's five minutes, then the rest
in docs/tour.md) runs command by command (``<ID>`` becomes the task id the previous command printed).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_FILES = sorted((ROOT / "examples").rglob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLE_FILES])
def test_every_example_file_validates(path: Path) -> None:
    result = invoke("validate", str(path))
    assert result.code == 0, result.out + result.err
    assert result.out.startswith("ok")


def _commands(section: str) -> list[tuple[str, str]]:
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            line, _, comment = line.partition("  #")
            if line.strip().startswith("magent "):
                commands.append((line.strip(), comment.strip()))
    return commands


def readme_tour() -> list[tuple[str, str]]:
    """The tour's commands in order, each with its comment (empty where it has none): the
    README's five minutes, then the rest of docs/tour.md (which includes the README's part
    rather than repeating it)."""
    readme = (ROOT / "README.md").read_text()
    first = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    page = (ROOT / "docs" / "tour.md").read_text()
    assert '--8<-- "README.md:tour"' in page   # the page shows the README's part as written
    rest = page.split("## The rest of the tour", 1)[1]
    return _commands(first) + _commands(rest)


def check_comment(command: str, comment: str, code: int, out: str) -> None:
    """What a tour comment promises is what a terminal shows: a quoted line is printed, a step
    said to hold a tool call holds one, and a command that stops for a person says how a
    terminal user gets past its inline prompt (``--no-input``, or the comment says press ``l``)."""
    if code == 3 and command.split()[1] in ("run", "resume", "chat"):   # those ask inline
        assert "--no-input" in command or "press `l`" in comment, (
            f"{command!r} stops at an inline prompt in a terminal; give it --no-input or say to press `l`")
    for quoted in re.findall(r'"([^"]+)"', comment):
        shown = quoted.split("...", 1)[0].strip()
        assert shown in out, f"{command!r} promises {quoted!r}:\n{out}"
    if "--step" in command and "tool call" in comment:
        assert "tool call 1:" in out, f"{command!r} promises a tool call:\n{out}"


def run_tour(magent, folder: Path, background=None) -> None:
    """Run the README's tour with ``magent(*args) -> (exit code, stdout, stderr)`` in ``folder``
    (the one holding ``examples/``): globs expanded as a shell would, ``<ID>`` the task id the
    last run printed, each comment held to its word (``check_comment``). A command ending in
    ``&`` runs as a process of its own, ``background(args) -> Popen`` (default: ``python -m
    magent``), while the next ones run; its task id is the first line it prints, and it must end with 0 or 3 by the tour's end."""
    commands = readme_tour()
    assert len(commands) >= 10
    task_id = None
    started: list[tuple[str, subprocess.Popen]] = []
    background = background or (lambda args: subprocess.Popen(
        [sys.executable, "-m", "magent", *args], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True))
    try:
        for command, comment in commands:
            behind = command.endswith("&")
            command = command.rstrip("&").strip()
            args = []
            for arg in shlex.split(command)[1:]:   # expand globs as a shell would
                args.extend(sorted(str(p.relative_to(folder)) for p in folder.glob(arg)) if "*" in arg else [arg])
            if "<ID>" in command:
                assert task_id, f"{command!r} needs a task id but no command printed one"
                args = [task_id if a == "<ID>" else a for a in args]
            if behind:
                proc = background(args)
                started.append((command, proc))
                first = proc.stdout.readline()
                assert first.startswith("task "), f"{command}\n{first}{proc.stderr.read()}"
                task_id = first.split()[1]
                continue
            code, out, err = magent(*args)
            assert code in (0, 3), f"{command}\n{out}\n{err}"
            check_comment(command, comment, code, out)
            if out.startswith("task "):
                task_id = out.split()[1]
    finally:
        for command, proc in started:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode in (0, 3), f"{command}\n{out}\n{err}"


def test_the_tour_runs_as_written(magent_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)

    def magent(*args: str) -> tuple[int, str, str]:
        result = invoke(*args)
        return result.code, result.out, result.err

    run_tour(magent, ROOT)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"Run the tests .*?```sh\n(.*?)\n```", readme, re.S)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == command
    assert not any(line.startswith("export ") and "PIP_" not in line for line in ci)  # nothing the README lacks


def test_the_docs_local_model_config_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The providers guide's local-server llm_config loads as written (endpoint, a fallback mapping)."""
    from magent.config import load_agent

    text = (ROOT / "docs" / "guides" / "providers.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "127.0.0.1:8080" in b)
    agent = tmp_path / "local.yaml"
    agent.write_text("name: local\nrole: r\nsystem_prompt: s\n" + block)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme")
    config = load_agent(agent).agent.llm_config
    assert config.endpoint == "http://127.0.0.1:8080/v1"
    assert (config.fallback_model.model, config.fallback_model.api_key) == ("openai/gpt-4o-mini", "sk-readme")


def test_every_example_has_a_one_line_description() -> None:
    listed = invoke("examples", "list", "--json")
    assert listed.code == 0, listed.err
    examples = json.loads(listed.out)
    assert len(examples) >= 30
    for example in examples:
        about = example["about"]
        assert about and "\n" not in about and len(about) <= 100, example
        assert "seed" not in about.lower() and not about.endswith((":", ",")), example


def test_world_clock_ends_with_the_times(magent_home: Path) -> None:
    run = invoke("run", str(ROOT / "examples/workflows/world_clock.yaml"), "-t", "What time is it in Paris?")
    assert run.code == 0, run.err
    answer = run.out.strip().splitlines()[-1]
    assert re.fullmatch(r"In Paris it is now \d{4}-\d\d-\d\dT\d\d:\d\d, and 17:00 in Tokyo is "
                        r"\d{4}-\d\d-\d\dT\d\d:00 in Paris\.", answer), answer

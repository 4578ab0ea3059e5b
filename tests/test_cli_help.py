"""``--help`` of every command, as a new user reads it in an 80-column terminal: examples,
words for what options take, whole one-line descriptions; and shell completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from magent.cli.app import app
from support.cli import invoke, run
from support.homes import HomeBuilder


def _commands() -> list[tuple[str, ...]]:
    from typer.main import get_command

    found: list[tuple[str, ...]] = []

    def walk(cmd, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            found.append(path)

    walk(get_command(app), ())
    return found


COMMANDS = _commands()
PYTHON_TYPES = re.compile(r"<(str|int|float|bool|path|list\[[^\]]*\]|[a-z]+ range|[a-z]+)>", re.I)


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_every_command_explains_itself_with_examples_in_words(path: tuple[str, ...]) -> None:
    r = invoke(*path, "--help")
    assert r.code == 0, r.err
    assert re.search(r"^  Examples?:$", r.out, re.M), r.out
    examples = r.out.split("Example", 1)[1]
    assert f"magent {' '.join(path)}" in examples           # the examples are of this command
    assert not PYTHON_TYPES.search(r.out), r.out
    assert "`" not in r.out
    assert max(len(line) for line in r.out.splitlines()) <= 80, r.out


def test_the_command_list_shows_whole_descriptions_at_80_columns() -> None:
    for group in ((), *sorted({p[:1] for p in COMMANDS if len(p) > 1})):
        out = invoke(*group, "--help").out
        listed = out.split("Commands:\n", 1)[1].splitlines()
        assert listed and not [line for line in listed if line.rstrip().endswith("...")], out


def _complete(words: str, cwd: Path | None = None) -> list[str]:
    env = {**os.environ, "_MAGENT_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    p = subprocess.run([sys.executable, "-m", "magent"], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=120)
    return p.stdout.split()


def test_completion_offers_task_ids_names_and_leaves_files_to_the_shell(magent_home: Path, tmp_path: Path) -> None:
    home = HomeBuilder()
    a, b = home.task("first"), home.task("second")
    home.close()
    assert set(_complete("magent trace ")) >= {a.id, b.id}
    assert _complete(f"magent resume {a.id[:6]}") == [a.id]
    (magent_home / "workflows").mkdir(exist_ok=True)
    (magent_home / "workflows" / "publish.yaml").write_text("name: publish\n")
    assert _complete("magent run pu") == ["publish"]
    # Nothing offered means the shell completes file names itself: bash's script says
    # -o default, zsh's answer is _files.
    (tmp_path / "flow.yaml").write_text("name: x\n")
    assert _complete("magent run fl", cwd=tmp_path) == []
    assert _complete("magent validate fl", cwd=tmp_path) == []
    # Typer detects the shell from the process tree (so the verdict would depend on the shell
    # that started pytest); with detection off, --show-completion takes the shell by name.
    shown = run("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    script = shown.out
    assert "complete -o default -F" in script and "_MAGENT_COMPLETE=complete_bash" in script
    assert "--install-completion" in invoke("--help").out

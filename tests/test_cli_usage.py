"""Command-line mistakes read like every other error: one line, exit 2."""

from __future__ import annotations

import pytest

from support.cli import run


@pytest.mark.parametrize("args, message", [
    (["checkpoints", "show", "abc", "-1"], "magent: error: unknown option -1 (no value here is a negative number) (see 'magent checkpoints show --help')"),
    (["run"], "magent: error: TARGET is missing (see 'magent run --help')"),
    (["run", "x.yaml", "-t", "x", "--bogus"], "magent: error: unknown option --bogus (see 'magent run --help')"),
    (["retention", "sweep", "--dry-run", "--retention-days", "3"], "unknown option --retention-days"),
    (["tasks", "list", "--jsn"], "magent: error: unknown option --jsn; did you mean --json? (see 'magent tasks list --help')"),
    (["nosuchcommand"], "magent: error: unknown command 'nosuchcommand'; commands: init, validate, run,"),
    (["tasks", "lst"], "magent: error: unknown command 'lst'; did you mean 'list'? (see 'magent tasks --help')"),
])
def test_usage_errors_are_one_line_with_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.code == 2
    assert result.err.count("\n") == 1 and message in result.err, result.err
    assert result.out == ""


def test_a_bare_group_prints_its_help() -> None:
    result = run("tasks")
    assert result.code == 2 and "list" in result.err and "cancel" in result.err

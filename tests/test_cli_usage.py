"""Command-line mistakes read like every other error: one line, exit 2."""

from __future__ import annotations

import pytest

from support.cli import run


@pytest.mark.parametrize("args, message", [
    (["checkpoints", "show", "abc", "-1"], "magent: error: No such option: -1 (see 'magent checkpoints show --help')"),
    (["run"], "magent: error: Missing argument 'TARGET' (see 'magent run --help')"),
    (["run", "x.yaml", "-t", "x", "--bogus"], "magent: error: No such option: --bogus (see 'magent run --help')"),
    (["retention", "sweep", "--dry-run", "--retention-days", "3"], "No such option: --retention-days"),
    (["nosuchcommand"], "magent: error: No such command 'nosuchcommand'"),
])
def test_usage_errors_are_one_line_with_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.code == 2
    assert result.err.count("\n") == 1 and message in result.err, result.err
    assert result.out == ""


def test_a_bare_group_prints_its_help() -> None:
    result = run("tasks")
    assert result.code == 2 and "list" in result.err and "cancel" in result.err

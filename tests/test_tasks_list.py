"""``magent tasks list`` as a user with many tasks meets it: filters, tokens and cost, and a
layout that fits a narrow or a wide terminal; ``magent tools list`` fits 120 columns."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from magent.ids import now
from magent.models import Usage
from support.cli import invoke
from support.homes import HomeBuilder
from support.terminal import Terminal

ANSI = re.compile(r"\x1b\[[0-9;]*m")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _snapshot(model: str, fallback: str | None = None) -> dict:
    config = {"model": model, **({"fallback_model": fallback} if fallback else {})}
    return {"kind": "agent", "agent": "a", "agents": {"a": {"raw": {"name": "a", "llm_config": config}}},
            "options": {"model_override": None}}


@pytest.fixture
def home() -> dict[str, str]:
    builder = HomeBuilder()
    base = now()
    made = {
        "invoice": builder.task("Chase the unpaid invoice from ACME", workflow="billing", tags=["finance", "urgent"],
                                created_at=base - timedelta(days=3), result="Sent a reminder",
                                usage=Usage(input=1200, output=300, cost=0.0123, calls=4),
                                config_snapshot=_snapshot("openai/gpt-4o-mini")),
        "triage": builder.task("Checkout is broken", workflow="triage", tags=["urgent"],
                               created_at=base - timedelta(hours=5), result="Paged the on-call about the INVOICE page",
                               config_snapshot=_snapshot("anthropic/claude-3-5-haiku-20241022",
                                                         fallback="openai/gpt-4o")),
        "notes": builder.task("Remember the meeting", workflow="note_taker", created_at=base - timedelta(minutes=10),
                              config_snapshot=_snapshot("scripted")),
    }
    return {name: t.task.id for name, t in made.items()}


def _ids(*args: str) -> list[str]:
    result = invoke("tasks", "list", "--json", *args)
    assert result.code == 0, result.err
    return [row["id"] for row in json.loads(result.out)]


def test_each_filter_keeps_only_what_it_names(home: dict[str, str]) -> None:
    assert _ids() == [home["notes"], home["triage"], home["invoice"]]
    assert _ids("-n", "2") == [home["notes"], home["triage"]]
    assert _ids("--limit", "1", "--tag", "urgent") == [home["triage"]]
    assert _ids("--search", "invoice") == [home["triage"], home["invoice"]]  # the text, or the result
    assert _ids("--search", "REMINDER") == [home["invoice"]]
    assert _ids("--tag", "urgent", "--tag", "finance") == [home["invoice"]]
    assert _ids("--workflow", "triage") == [home["triage"]]
    assert _ids("--model", "gpt-4o-mini") == [home["invoice"]]
    assert _ids("--model", "openai/gpt-4o") == [home["triage"]]  # a fallback counts
    assert _ids("--model", "openai/*") == [home["triage"], home["invoice"]]
    assert _ids("--since", "1h") == [home["notes"]]
    assert _ids("--since", "1d") == [home["notes"], home["triage"]]
    assert _ids("--since", (now() - timedelta(days=10)).strftime("%Y-%m-%d")) == _ids()
    assert _ids("--workflow", "nothing") == []
    assert invoke("tasks", "list", "--search", "nothing like it").out == "no tasks match\n"


def test_a_task_run_from_an_agent_file_is_found_by_its_model(magent_home: Path) -> None:
    run = invoke("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "remember")
    assert run.code == 0
    assert len(_ids("--model", "scripted")) == 1 and _ids("--model", "gpt-4o") == []


def test_a_task_is_found_by_the_models_it_called_too(home: dict[str, str]) -> None:
    """Its checkpoints' usage per model counts as well as its configuration: a task whose
    configuration names no model (an older magent kept none) is found by what answered."""
    builder = HomeBuilder(init=False)
    old = builder.task("Old one", workflow="legacy", created_at=now() - timedelta(days=30))
    old.checkpoint("END", reason="finish", usage_by_model={"ollama/llama3.2": Usage(input=5, output=2, calls=1)})
    assert _ids("--model", "llama3.2") == [old.task.id]
    assert _ids("--model", "ollama/*") == [old.task.id]
    assert _ids("--model", "scripted") == [home["notes"]]         # configured, still found
    # a damaged latest checkpoint: the one before it still tells
    old.checkpoint("END", reason="finish", usage_by_model={"ollama/llama3.2": Usage(input=9, output=4, calls=2)})
    old.checkpoint_file(1).write_bytes(b"{")
    assert _ids("--model", "llama3.2") == [old.task.id]


@pytest.mark.parametrize("args, message", [
    (("--since", "yesterday"), "--since: 'yesterday' is neither an age (30m, 2h, 3d, 1w) nor a date"),
    (("-n", "0"), "--limit: expected 1 or more, got '0'"),
    (("--status", "done"), "--status 'done' is not a status"),
])
def test_bad_filters_are_one_line_usage_errors(home: dict[str, str], args: tuple[str, ...], message: str) -> None:
    result = invoke("tasks", "list", *args)
    assert result.code == 2 and message in result.err and len(result.err.strip().splitlines()) == 1


def test_tokens_and_cost_columns_in_a_pipe(home: dict[str, str]) -> None:
    lines = invoke("tasks", "list").out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "WORKFLOW", "TASK", "CREATED", "CALLS", "TOKENS", "COST"]
    row = next(line for line in lines if line.startswith(home["invoice"][:8]))
    assert "Chase the unpaid invoice from ACME" in row and "1,500" in row and "$0.0123" in row


@pytest.mark.slow
@pytest.mark.parametrize("columns, shown, gone", [
    (120, ["ID", "STATUS", "WORKFLOW", "TASK", "CREATED", "CALLS", "TOKENS", "COST"], []),
    (60, ["ID", "STATUS", "TASK", "CREATED"], ["CALLS", "TOKENS", "WORKFLOW"]),
])
def test_the_table_fits_the_terminal_by_leaving_out_columns_before_cutting_the_task(
        home: dict[str, str], columns: int, shown: list[str], gone: list[str]) -> None:
    screen = Terminal("tasks", "list", columns=columns, env={"NO_COLOR": "1"}).screen()
    screen = ANSI.sub("", screen)
    lines = [line for line in screen.splitlines() if line.strip()]
    assert all(len(line) <= columns for line in lines), screen
    header = lines[0].split()
    assert all(name in header for name in shown) and not any(name in header for name in gone), screen
    assert "Chase the unpaid invoice" in screen  # the task text keeps a readable width


@pytest.mark.slow
def test_tools_list_fits_120_columns(magent_home: Path) -> None:
    screen = Terminal("tools", "list", "--mcp", str(EXAMPLES / "mcp/time.yaml"), columns=120,
                      env={"NO_COLOR": "1"}).screen()
    screen = ANSI.sub("", screen)
    lines = [line for line in screen.splitlines() if line.strip()]
    assert lines[0].split() == ["TOOL", "DESCRIPTION", "ARGUMENTS"], screen
    assert all(len(line) <= 120 for line in lines), screen
    assert any(line.startswith("time.convert_time") for line in lines), screen


def test_the_piped_table_pads_each_column_to_its_widest_and_strips_line_ends(
        capsys: pytest.CaptureFixture[str]) -> None:
    from magent import render

    render.grid(["A", "BB", "C"], [["xyz", ("s", "bold"), ""], ["", "long cell", "é…"], ["a  ", "", ""]], flexible=0)
    assert capsys.readouterr().out == ("A    BB         C\n"
                                       "xyz  s\n"
                                       "     long cell  é…\n"
                                       "a\n")
    render.grid(["ONLY", "HEADER"], [], flexible=0)
    assert capsys.readouterr().out == "ONLY  HEADER\n"


@pytest.mark.parametrize("before, shown", [
    (timedelta(0), "0s ago"), (timedelta(seconds=59, microseconds=999999), "59s ago"),
    (timedelta(seconds=60), "1m ago"), (timedelta(seconds=3599, microseconds=999999), "59m ago"),
    (timedelta(hours=1), "1h ago"), (timedelta(days=1, microseconds=-1), "23h ago"), (timedelta(days=1), "1d ago"),
    (timedelta(days=400, hours=23), "400d ago"), (-timedelta(microseconds=1), "0s ago"), (-timedelta(days=2), "0s ago"),
])
def test_ages_count_whole_units_and_never_below_zero(before: timedelta, shown: str) -> None:
    from magent import render

    moment = now()
    assert render.ago(moment - before, moment) == shown
    assert render.ago(None) == "-"


def test_the_table_ages_rows_as_ago_does_in_any_order() -> None:
    """The table works an age out only where it leaves the span of the row before's (rows come
    newest first); rows in any order still get each its own."""
    import random
    from types import SimpleNamespace

    from magent import render

    moment = now()
    befores = [timedelta(seconds=s, microseconds=u) for s in (0, 1, 59, 60, 3599, 3600, 86399, 86400, 10**6)
               for u in (0, 1, 999999)] + [-timedelta(seconds=5)]
    rows = [SimpleNamespace(created_at=moment - b) for b in sorted(befores)]
    for order in (rows, rows[::-1], random.Random(3).sample(rows, len(rows))):
        assert render._ages(order, moment) == [render.ago(r.created_at, moment) for r in order]  # type: ignore[arg-type]

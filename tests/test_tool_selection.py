"""Dynamic tool selection (issue 33, item 2): an agent's ``tool_selection`` makes each request
carry its best-fitting tools, ``tools.search`` finds the rest, and the trace says why."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from magent import paths
from servers.harness import TOOLBOX, write_mcp_file
from support.cli import invoke, run
from support.crashflow import only_task
from support.engine import events, write
from support.openai_stub import OpenAIStub

TIME_SERVER = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
WORLD_CLOCK = """
responses:
  - content: I will look up the current time in Paris and convert a Tokyo meeting time.
    tool_calls:
      - name: time.get_current_time
        arguments: {timezone: Europe/Paris}
      - name: time.convert_time
        arguments: {source_timezone: Asia/Tokyo, time: "17:00", target_timezone: Europe/Paris}
  - content: The current Paris time is in the first tool result above.
"""


def servers(folder: Path, url: str | None = None) -> None:
    """The reference time server and the toolbox over stdio (and over streamable HTTP at ``url``)."""
    entries = [{"name": "time", "transport": "stdio",
                "config": {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}},
               {"name": "tb", "transport": "stdio", "config": {"command": sys.executable, "args": [str(TOOLBOX)]}}]
    if url is not None:
        entries.append({"name": "web", "transport": "streamable_http", "config": {"url": url}})
    write_mcp_file(folder / "mcp.yaml", entries)


def agent(folder: Path, script: str, selection: str, tools: str = "[time.*, tb.*, web.*]") -> Path:
    write(folder, "clock.script.yaml", script)
    return write(folder, "clock.yaml", f"""
        name: clock
        role: Answers questions about times and time zones
        system_prompt: You answer questions about the current time. Always use the time tools.
        tools: {tools}
        mcp_servers: mcp.yaml
        tool_selection: {selection}
        llm_config: {{model: scripted, script: clock.script.yaml}}
        """)


def turns(task_id: str) -> list[int]:
    """The numbers of the steps that are model turns."""
    steps = json.loads(invoke("trace", task_id, "--json").out)["steps"]
    return [n for n, step in enumerate(steps, 1) if step.get("iteration") is not None]


def requests(task_id: str) -> list[dict]:
    """Every model call's request as ``magent trace --step N --request --json`` rebuilds it."""
    out = []
    for n in turns(task_id):
        shown = invoke("trace", task_id, "--step", str(n), "--request", "--json")
        assert shown.code == 0, shown.err
        out.extend(json.loads(shown.out))
    return out


def tool_names(call: dict) -> list[str]:
    return [t["function"]["name"] for t in call["request"].get("tools") or []]


def test_three_servers_top_k_5_send_five_tools_and_the_world_clock_task_completes(
        magent_home: Path, tmp_path: Path, toolbox_url: str) -> None:
    servers(tmp_path, toolbox_url)
    target = agent(tmp_path, WORLD_CLOCK, "{top_k: 5}")
    result = invoke("run", str(target), "-t", "What time is it in Paris?", "--no-input")
    assert result.code == 0, result.out + result.err
    task_id = only_task(magent_home)
    first, second = requests(task_id)
    # Of the time server's 2 tools and the toolbox's (each ~18) twice, the five that fit the task
    # best (in the servers' order), then tools.search for the rest.
    assert tool_names(first) == ["tb__add", "tb__stamp", "time__convert_time", "time__get_current_time",
                                 "web__stamp", "tools__search"]
    selection = first["tool_selection"]
    allowed = selection["allowed"]
    assert selection["method"] == "bm25" and allowed > 30 and selection["left_out"] == allowed - 5
    assert [(t["tool"], t["by"], t["rank"]) for t in selection["carried"]] == [
        ("tb.add", "top_k", 5), ("tb.stamp", "top_k", 3), ("time.convert_time", "top_k", 1),
        ("time.get_current_time", "top_k", 2), ("web.stamp", "top_k", 4)]
    assert selection["carried"][2]["relevance"] == 1.0 and selection["carried"][0]["relevance"] == 0.0
    assert len(tool_names(second)) == 6  # the answer turn: five again, and the search
    outcomes = [(e.field("tool"), e.field("outcome")) for e in events(task_id) if e.type == "tool_result"]
    assert sorted(outcomes) == [("time.convert_time", "SUCCESS"), ("time.get_current_time", "SUCCESS")]
    overview = invoke("trace", task_id).out
    assert "carried 6 tools: tb.add, tb.stamp, time.convert_time, time.get_current_time, web.stamp, tools.search" \
        in overview
    detail = invoke("trace", task_id, "--step", "2")
    assert f"tools carried: 5 of {allowed}, ranked by bm25 · {allowed - 5} left out, tools.search offered" \
        in detail.out
    assert "time.convert_time  top_k · rank 1 · score 0.90 = 0.8 x relevance 1.00 + 0.2 x success 0.50" \
           " (0 past calls)" in detail.out


SEARCHER = """
responses:
  - content: I need to add.
    tool_calls: [{name: tools.search, arguments: {query: add two integers}}]
  - content: Adding.
    tool_calls: [{name: tb.add, arguments: {a: 2, b: 3}}]
  - content: It is 5.
"""


def test_a_search_adds_the_tools_it_found_to_the_next_requests_also_after_kill_9(
        magent_home: Path, tmp_path: Path) -> None:
    servers(tmp_path)
    target = agent(tmp_path, SEARCHER, "{top_k: 2}", tools="[time.*, tb.*]")
    # killed with SIGKILL once the search's result is on disk, before the turn's checkpoint
    killed = run("run", str(target), "-t", "What time is it in Paris?",
                 env={"MAGENT_FAILPOINT": "after_tool_entry@1"})
    assert killed.code == -9, killed.err
    task_id = only_task(magent_home)
    resumed = invoke("resume", task_id, "--no-input")
    assert resumed.code == 0, resumed.out + resumed.err
    first, second, third = requests(task_id)
    assert tool_names(first) == ["time__convert_time", "time__get_current_time", "tools__search"]
    found = second["request"]["messages"][-1]
    assert found["content"] == "Found 1 tool; from your next turn on you can call:\n- tb.add: Add two integers."
    assert "tb__add" in tool_names(second) and "tb__add" in tool_names(third)
    assert [t["by"] for t in second["tool_selection"]["carried"] if t["tool"] == "tb.add"] == ["search"]
    add = [e for e in events(task_id) if e.type == "tool_result" and e.field("tool") == "tb.add"]
    assert [e.field("outcome") for e in add] == ["SUCCESS"]
    shown = invoke("trace", task_id, "--step", str(turns(task_id)[1]), "--request")
    assert "carried: found by tools.search · rank" in shown.out


def test_past_success_in_this_home_ranks_tools_that_the_text_cannot_tell_apart(
        magent_home: Path, tmp_path: Path) -> None:
    servers(tmp_path)
    calls = """
responses:
  - tool_calls: [{name: tb.fail, arguments: {}}, {name: tb.pid, arguments: {}}]
  - tool_calls: [{name: tb.fail, arguments: {}}, {name: tb.pid, arguments: {}}]
  - content: done
"""
    first = agent(tmp_path, calls, "{top_k: 1}", tools="[tb.*]")
    assert invoke("run", str(first), "-t", "zzz", "--no-input").code == 0
    stats = json.loads((magent_home / "cache" / "tool-stats.json").read_text())
    assert stats["tools"]["tb.fail"] == [2, 0] and stats["tools"]["tb.pid"] == [2, 2]
    before = set((magent_home / "tasks").iterdir())
    agent(tmp_path, "responses:\n  - content: done\n", "{top_k: 1}", tools="[tb.*]")
    assert invoke("run", str(first), "-t", "zzz", "--no-input").code == 0
    (latest,) = set((magent_home / "tasks").iterdir()) - before
    (call,) = requests(latest.name)
    (carried,) = call["tool_selection"]["carried"]
    assert carried == {"tool": "tb.pid", "by": "top_k", "rank": 1, "score": 0.15, "relevance": 0.0,
                       "success": 0.75, "calls": 2}


def test_an_embedding_model_ranks_by_similarity(magent_home: Path, tmp_path: Path) -> None:
    servers(tmp_path)
    target = agent(tmp_path, WORLD_CLOCK, "{top_k: 2}", tools="[time.*, tb.*]")
    with OpenAIStub() as stub:
        write(paths.config_dir(), "memory.yaml", f"""
            embedding_model: openai/stub-embed
            embedding_endpoint: {stub.url}
            embedding_api_key: sk-stub-not-a-real-key
            """)
        assert invoke("run", str(target), "-t", "What time is it in Paris?", "--no-input").code == 0
        assert any(r.path.endswith("/embeddings") for r in stub.received)
    first = requests(only_task(magent_home))[0]
    assert first["tool_selection"]["method"] == "embedding openai/stub-embed"
    assert len(tool_names(first)) == 3 and tool_names(first)[-1] == "tools__search"


def test_a_failing_embedding_model_falls_back_to_bm25_with_a_warning(magent_home: Path, tmp_path: Path) -> None:
    servers(tmp_path)
    target = agent(tmp_path, WORLD_CLOCK, "{top_k: 2}", tools="[time.*, tb.*]")
    with OpenAIStub() as stub:
        stub.embedding_status = 500
        write(paths.config_dir(), "memory.yaml", f"""
            embedding_model: openai/stub-embed
            embedding_endpoint: {stub.url}
            """)
        assert invoke("run", str(target), "-t", "What time is it in Paris?", "--no-input").code == 0
    task_id = only_task(magent_home)
    first = requests(task_id)[0]
    assert first["tool_selection"]["method"] == "bm25"
    assert tool_names(first) == ["time__convert_time", "time__get_current_time", "tools__search"]
    (warning,) = [e.field("message") for e in events(task_id) if e.type == "warning"]
    assert warning.startswith("tool selection: embedding model 'openai/stub-embed'")
    assert warning.endswith("; ranking by BM25 instead")


@pytest.mark.parametrize(("tools", "always", "message"), [
    ("[kv.*]", "[kv.sett]", "tool_selection.always[0]: unknown tool 'kv.sett' (did you mean 'kv.set'?)"),
    ("[kv.get, kv.list]", "[kv.lst]", "tool_selection.always[0]: 'kv.lst' is not one of the agent's tools "
                                      "(did you mean 'kv.list'?)"),
])
def test_validate_names_an_always_tool_that_is_not_there(magent_home: Path, tmp_path: Path, tools: str,
                                                         always: str, message: str) -> None:
    path = write(tmp_path, "a.yaml", f"""
        name: a
        role: tester
        system_prompt: test
        tools: {tools}
        tool_selection:
          top_k: 2
          always: {always}
        llm_config: {{model: scripted, script: a.script.yaml}}
        """)
    write(tmp_path, "a.script.yaml", "responses:\n  - content: hi\n")
    result = invoke("validate", str(path))
    assert result.code == 2
    assert f"{path}:7:12: {message}" in result.err, result.err
    assert "Traceback" not in result.err


def test_the_same_inputs_choose_the_same_tools(magent_home: Path, tmp_path: Path) -> None:
    from magent.engine.selecting import query_of
    from magent.llm.base import ToolSpec
    from magent.models import Message
    from magent.tools.selection import bm25, document, rank

    specs = [ToolSpec(name=f"s.tool_{i}", description=f"does thing {i % 3} with time", parameters={})
             for i in range(12)]
    history = [Message(role="user", content="what time is thing 2"), Message(role="assistant", content="ok")]
    orders = {tuple((s.name, s.score) for s in rank(bm25(query_of(history), [document(s) for s in specs]),
                                                   specs, {"s.tool_5": (3, 1)})) for _ in range(5)}
    assert len(orders) == 1


def test_min_score_leaves_out_what_does_not_match_and_always_stays(magent_home: Path, tmp_path: Path) -> None:
    write(tmp_path, "a.script.yaml", "responses:\n  - content: Noted.\n")
    target = write(tmp_path, "a.yaml", """
        name: a
        role: note taker
        system_prompt: You take notes.
        tools: [kv.*, memory.*]
        tool_selection: {top_k: 3, min_score: 0.5, always: [kv.list]}
        llm_config: {model: scripted, script: a.script.yaml}
        """)
    assert invoke("run", str(target), "-t", "Remember that the weekly sync is in room Atlas").code == 0
    (call,) = requests(only_task(magent_home))
    assert tool_names(call) == ["kv__list", "memory__remember", "tools__search"]
    carried = call["tool_selection"]["carried"]
    assert [(t["tool"], t["by"]) for t in carried] == [("kv.list", "always"), ("memory.remember", "top_k")]
    assert carried[0]["score"] < 0.5 <= carried[1]["score"]

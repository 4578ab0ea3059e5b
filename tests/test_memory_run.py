"""Long-term memory in runs: retrieval before model turns, the memory.* tools, summaries,
scopes between workflows, exactly-once writes across a kill and resume, and failures that
must not fail a run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from magent import paths
from magent.llm.base import LLMRequest
from magent.memory.service import Memory
from magent.testing import FunctionModel
from support.cli import invoke, run
from support.engine import events, run_with, task_dir, write
from support.openai_stub import OpenAIStub

FACT = "The weekly sync is in room Atlas on Tuesdays."


def agent(folder: Path, name: str = "helper", memory: str = "{long_term: true}",
          tools: str = "[memory.*]") -> Path:
    return write(folder, f"{name}.yaml", f"""
        name: {name}
        role: remembers things
        system_prompt: You help.
        tools: {tools}
        memory: {memory}
        llm_config: {{model: scripted, script: {name}.script.yaml}}
        """)


def learner_or_answerer(request: LLMRequest) -> dict | str:
    """A model that stores the fact when it has no memory of it, and answers from memory when
    it has (it reads its system prompt, as a real model would)."""
    if any(m.role == "tool" for m in request.messages):
        return "Stored."
    if "room Atlas" in request.system:
        return "From memory: the weekly sync is in room Atlas."
    return {"tool_calls": [{"name": "memory.remember", "arguments": {"content": FACT, "importance": 0.8}}]}


def test_a_fact_remembered_in_one_task_reaches_the_model_in_a_later_one(magent_home: Path, tmp_path: Path) -> None:
    target = agent(tmp_path)
    model = FunctionModel(learner_or_answerer)
    first = run_with(model, target, "Note that the weekly sync moved to room Atlas on Tuesdays")
    assert first.result == "Stored."
    n = len(model.requests)
    second = run_with(model, target, "Where is the weekly sync?")
    assert second.result == "From memory: the weekly sync is in room Atlas."
    system = model.requests[n].system
    assert "## Memories from earlier tasks" in system and FACT in system
    recalled = [e for e in events(second.task_id) if e.type == "memory_recalled"]
    assert len(recalled) == 1
    (hit,) = recalled[0].field("hits")
    assert hit["content"] == FACT and hit["scope"] == "agent:helper" and hit["score"] == 1.0
    assert hit["why"] == "matched weekly, sync (2 of 2 words)"
    # The memory is in the request, never in the stored conversation.
    assert FACT not in task_dir(second.task_id).entries.path.read_text()
    with Memory.open() as memory:
        (entry,) = memory.store.list()
    assert (entry.source, entry.source_agent, entry.source_task, entry.access_count) == (
        "agent", "helper", first.task_id, 1)  # recalled once (its own task does not recall it)


def test_trace_shows_what_was_recalled_and_why(magent_home: Path, tmp_path: Path) -> None:
    target = agent(tmp_path)
    run_with(FunctionModel(learner_or_answerer), target, "Note the weekly sync room")
    second = run_with(FunctionModel(learner_or_answerer), target, "Where is the weekly sync?")
    shown = invoke("trace", second.task_id[:8])
    assert shown.code == 0
    assert "◆ recalled 1 memory (text search for 'Where is the weekly sync?'): [" in shown.out
    assert "1.00: matched weekly, sync (2 of 2 words)" in shown.out
    doc = json.loads(invoke("trace", second.task_id[:8], "--json").out)
    assert [s["step_name"] for s in doc["steps"]][:3] == ["helper", "memory", "helper:0"]


def test_recall_is_shown_again_only_when_what_is_recalled_changes(magent_home: Path, tmp_path: Path) -> None:
    target = agent(tmp_path)
    run_with(FunctionModel(learner_or_answerer), target, "Note the weekly sync room")
    turns = []

    def model(request: LLMRequest) -> dict | str:
        turns.append(request.system)
        if len(turns) == 1:  # meanwhile another task stores a related memory
            with Memory.open() as other:
                other.remember("The weekly sync has a new agenda", scope="agent", scope_name="helper")
        if len(turns) < 3:
            return {"tool_calls": [{"name": "memory.search", "arguments": {"query": "sync"}}]}
        return "done"

    outcome = run_with(FunctionModel(model), target, "What about the weekly sync?")
    recalled = [len(e.field("hits")) for e in events(outcome.task_id) if e.type == "memory_recalled"]
    assert recalled == [1, 2]  # turn 0 recalled one; turn 1 two; turn 2 the same two: no new event
    assert "new agenda" not in turns[0] and "new agenda" in turns[1] and "new agenda" in turns[2]


def test_workflows_do_not_read_each_others_memories_unless_global(magent_home: Path, tmp_path: Path) -> None:
    def flow(name: str) -> Path:
        folder = tmp_path / name
        agent(folder, memory="{long_term: true, scope: workflow}")
        return write(folder, "flow.yaml", f"""
            name: {name}
            entry_point: work
            nodes: {{work: {{type: agent, agent: helper}}}}
            edges: []
            """)

    blog, docs = flow("blog"), flow("docs")
    run_with(FunctionModel(learner_or_answerer), blog, "Note the weekly sync room")
    looker = FunctionModel(lambda r: "I do not know." if "room Atlas" not in r.system else "Atlas")
    assert run_with(looker, docs, "Where is the weekly sync?").result == "I do not know."
    assert run_with(looker, blog, "Where is the weekly sync?").result == "Atlas"
    with Memory.open() as memory:
        memory.remember("Everyone: the weekly sync is in room Atlas", scope="global")
    assert run_with(looker, docs, "Where is the weekly sync?").result == "Atlas"


def test_a_summary_is_stored_when_the_agent_finishes(magent_home: Path, tmp_path: Path) -> None:
    target = agent(tmp_path, memory="{summarize_on_finish: true, scope: global}", tools="[]")
    outcome = run_with(FunctionModel(lambda r: "Paris is the capital."), target, "Capital of France?")
    with Memory.open() as memory:
        (entry,) = memory.store.list()
    assert entry.content == "Task: Capital of France?\nAnswer from helper: Paris is the capital."
    assert (entry.memory_type, entry.scope, entry.source, entry.source_task) == (
        "episodic", "global", "system", outcome.task_id)
    stored = [e for e in events(outcome.task_id) if e.type == "memory_stored"]
    assert [(e.field("kind"), e.field("id")) for e in stored] == [("summary", entry.id)]


def scripted_agent(folder: Path, memory: str, responses: str) -> Path:
    write(folder, "helper.script.yaml", f"responses:\n{responses}")
    return agent(folder, memory=memory)


@pytest.mark.slow
def test_a_remember_repeated_after_a_kill_is_stored_once(magent_home: Path, tmp_path: Path) -> None:
    target = scripted_agent(tmp_path, "{scope: global}", f"""
  - tool_calls: [{{name: memory.remember, arguments: {{content: "{FACT}"}}}}]
  - content: Stored.
""")
    killed = run("run", str(target), "-t", "note it", env={"MAGENT_FAILPOINT": "after_tool_call"})
    assert killed.code == -9  # the memory was written; its result was not
    (task_id,) = [p.name for p in paths.tasks_dir().iterdir()]
    with Memory.open() as memory:
        assert [e.content for e in memory.store.list()] == [FACT]
    resumed = invoke("resume", task_id[:8])
    assert resumed.code == 0, resumed.err
    with Memory.open() as memory:
        assert [e.content for e in memory.store.list()] == [FACT]
    results = [e for e in events(task_id) if e.type == "tool_result"]
    assert results[-1].field("result").startswith("already remembered [")
    stored = [e for e in events(task_id) if e.type == "memory_stored"]  # the trace says both
    assert [(e.field("again"), e.field("content")) for e in stored] == [(None, FACT), (True, FACT)]
    assert "◆ already had semantic memory [" in invoke("trace", task_id[:8]).out


@pytest.mark.slow
def test_a_summary_repeated_after_a_kill_is_stored_once(magent_home: Path, tmp_path: Path) -> None:
    target = scripted_agent(tmp_path, "{summarize_on_finish: true, scope: global}", "  - content: Done.\n")
    # checkpoints: run_start, node_start, then node_end -- killed just before it, summary stored
    killed = run("run", str(target), "-t", "do it", env={"MAGENT_FAILPOINT": "before_checkpoint@3"})
    assert killed.code == -9
    (task_id,) = [p.name for p in paths.tasks_dir().iterdir()]
    with Memory.open() as memory:
        assert memory.store.count() == 1
    assert invoke("resume", task_id[:8]).code == 0
    with Memory.open() as memory:
        (entry,) = memory.store.list()
    assert entry.content == "Task: do it\nAnswer from helper: Done." and entry.source_task == task_id


def test_a_failing_embedding_model_falls_back_to_text_search_with_a_warning(magent_home: Path,
                                                                            tmp_path: Path) -> None:
    target = agent(tmp_path)
    run_with(FunctionModel(learner_or_answerer), target, "Note the weekly sync room")
    with OpenAIStub() as stub:
        stub.embedding_status = 500
        write(paths.config_dir(), "memory.yaml", f"""
            embedding_model: openai/stub-embed
            embedding_endpoint: {stub.url}
            embedding_api_key: sk-stub-not-a-real-key
            """)
        model = FunctionModel(learner_or_answerer)
        outcome = run_with(model, target, "Where is the weekly sync?")
        assert any(r.path.endswith("/embeddings") for r in stub.received)
    assert outcome.result == "From memory: the weekly sync is in room Atlas."
    warnings = [e.field("message") for e in events(outcome.task_id) if e.type == "warning"]
    assert len(warnings) == 1
    assert warnings[0].startswith("memory: embedding model 'openai/stub-embed' at http://127.0.0.1:")
    assert warnings[0].endswith("; searched by text only")
    assert "⚠ memory: embedding model" in invoke("trace", outcome.task_id[:8]).out


def test_hybrid_search_with_a_working_embedding_model(magent_home: Path, tmp_path: Path) -> None:
    target = agent(tmp_path)
    with OpenAIStub() as stub:
        write(paths.config_dir(), "memory.yaml", f"""
            embedding_model: openai/stub-embed
            embedding_endpoint: {stub.url}
            embedding_api_key: sk-stub-not-a-real-key
            """)
        run_with(FunctionModel(learner_or_answerer), target, "Note the weekly sync room")
        outcome = run_with(FunctionModel(learner_or_answerer), target, "Where is the weekly sync?")
    (recalled,) = [e for e in events(outcome.task_id) if e.type == "memory_recalled"]
    assert recalled.field("mode") == "hybrid"
    (hit,) = recalled.field("hits")
    assert hit["vector_score"] is not None and "similarity" in hit["why"]
    assert outcome.result == "From memory: the weekly sync is in room Atlas."


def test_an_unreadable_memory_database_does_not_fail_the_run(magent_home: Path, tmp_path: Path) -> None:
    db = paths.memory_db()
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database at all" * 50)
    outcome = run_with(FunctionModel(lambda r: "fine"), agent(tmp_path), "Where is the weekly sync?")
    assert outcome.result == "fine"
    (warning,) = [e.field("message") for e in events(outcome.task_id) if e.type == "warning"]
    assert warning.startswith(f"long-term memory is unavailable for this turn: the memory database {db}")
    assert db.read_bytes() == b"not a database at all" * 50


def test_a_locked_memory_database_still_recalls_and_the_tool_says_why_it_failed(magent_home: Path,
                                                                               tmp_path: Path) -> None:
    target = agent(tmp_path)
    run_with(FunctionModel(learner_or_answerer), target, "Note the weekly sync room")
    write(paths.config_dir(), "memory.yaml", "busy_timeout_seconds: 0.2\n")
    other = sqlite3.connect(paths.memory_db(), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        replies = iter([{"tool_calls": [{"name": "memory.remember", "arguments": {"content": "x"}}]}, "ok"])
        model = FunctionModel(lambda r: next(replies))
        outcome = run_with(model, target, "Where is the weekly sync?")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert outcome.result == "ok"
    assert FACT in model.requests[0].system  # reading is not blocked by another writer
    (result,) = [e for e in events(outcome.task_id) if e.type == "tool_result"]
    assert result.field("outcome") == "FAILURE" and "is locked by another process" in result.field("error")


def test_the_office_memory_example_remembers_across_tasks(magent_home: Path, monkeypatch) -> None:
    from support.cli import UUID

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    flow = "examples/workflows/office_memory.yaml"
    learned = invoke("run", flow, "-t", "Remember: the weekly sync is in room Atlas", "--set", "mode=learn")
    assert learned.code == 0, learned.err
    first = UUID.search(learned.out).group(0)
    asked = invoke("run", flow, "-t", "Where is the weekly sync?")
    assert asked.code == 0 and "◆ memory: recalled 1: " in asked.out
    second = UUID.search(asked.out).group(0)
    (recalled,) = [e for e in events(second) if e.type == "memory_recalled"]
    (hit,) = recalled.field("hits")
    assert hit["content"] == "The weekly sync is in room Atlas on Tuesdays at 10:00."
    assert hit["scope"] == "workflow:office_memory"
    with Memory.open() as memory:
        fact = memory.store.get(hit["id"])
        summary = [e for e in memory.store.list() if e.memory_type == "episodic"]
    assert fact.source_task == first and fact.source_agent == "office_librarian" and fact.access_count == 1
    assert [s.source_task for s in summary] == [second]
    assert "◆ recalled 1 memory" in invoke("trace", second[:8]).out


def test_consolidation_after_a_task_that_stored_memories(magent_home: Path, tmp_path: Path) -> None:
    write(paths.config_dir(), "memory.yaml", "consolidation: {after_task: true}\n")
    with Memory.open() as memory:
        older = memory.remember(FACT, scope="agent", scope_name="helper", importance=0.9).entry
    outcome = run_with(FunctionModel(learner_or_answerer), agent(tmp_path, memory="{scope: agent}"), "note it")
    with Memory.open() as memory:
        active = memory.store.list()
        archived = memory.store.list(status="archived")
    assert [e.id for e in active] == [older.id]  # the task's duplicate was merged into it
    assert [(e.content, e.merged_into) for e in archived] == [(FACT, older.id)]
    (done,) = [e for e in events(outcome.task_id) if e.type == "memory_consolidated"]
    assert done.field("merged") == [archived[0].id]
    assert [e.type for e in events(outcome.task_id)][-1] == "run_finished"  # consolidated before it
    shown = invoke("trace", outcome.task_id[:8]).out
    assert "◆ memory consolidation: 2 active memories: merged 1 near-duplicate, decayed 0, archived 0" in shown


def test_a_sub_agent_recalls_and_summarizes_in_its_own_session(magent_home: Path, tmp_path: Path) -> None:
    agent(tmp_path, memory="{long_term: true, summarize_on_finish: true, scope: agent}", tools="[]")
    lead = write(tmp_path, "lead.yaml", """
        name: lead
        role: delegates
        system_prompt: You delegate.
        sub_agents: [helper]
        llm_config: {model: scripted, script: lead.script.yaml}
        """)
    with Memory.open() as memory:
        memory.remember(FACT, scope="agent", scope_name="helper")

    def model(request: LLMRequest) -> dict | str:
        if request.agent == "helper":
            return "Room Atlas." if "room Atlas" in request.system else "I do not know."
        if not any(m.role == "tool" for m in request.messages):
            return {"tool_calls": [{"name": "agents.helper", "arguments": {"task": "Where is the weekly sync?"}}]}
        return "The helper says: " + request.messages[-1].content

    outcome = run_with(FunctionModel(model), lead, "Find out where the sync is")
    assert outcome.result == "The helper says: Room Atlas."
    (recalled,) = [e for e in events(outcome.task_id) if e.type == "memory_recalled"]
    assert recalled.field("agent") == "helper" and recalled.field("session")  # the child's session
    with Memory.open() as memory:
        (summary,) = [e for e in memory.store.list() if e.memory_type == "episodic"]
    assert summary.content == "Task: Where is the weekly sync?\nAnswer from helper: Room Atlas."


def test_trace_shows_what_was_stored_and_forgotten(magent_home: Path, tmp_path: Path) -> None:
    def model(request: LLMRequest) -> dict | str:
        results = [m.content for m in request.messages if m.role == "tool"]
        if not results:
            return {"tool_calls": [{"name": "memory.remember", "arguments": {"content": FACT}}]}
        if len(results) == 1:  # "remembered [abcd1234] (semantic, agent:helper)"
            memory_id = results[0].split("[")[1].split("]")[0]
            return {"tool_calls": [{"name": "memory.forget", "arguments": {"id": memory_id}}]}
        return "Stored, then forgot it."

    outcome = run_with(FunctionModel(model), agent(tmp_path, memory="{scope: agent}"), "Try remembering")
    written = [e for e in events(outcome.task_id) if e.type in ("memory_stored", "memory_forgotten")]
    assert [(e.type, e.field("content"), e.field("scope"), e.field("agent")) for e in written] == [
        ("memory_stored", FACT, "agent:helper", "helper"), ("memory_forgotten", FACT, "agent:helper", "helper")]
    assert written[0].field("id") == written[1].field("id") and written[0].field("call_id")
    shown = invoke("trace", outcome.task_id[:8])
    assert shown.code == 0
    short_id = written[0].field("id")[:8]
    assert f"◆ stored semantic memory [{short_id}] in agent:helper: {FACT}" in shown.out
    assert f"◆ forgot memory [{short_id}] in agent:helper: {FACT}" in shown.out
    steps = json.loads(invoke("trace", outcome.task_id[:8], "--json").out)["steps"]
    assert [s["step_name"] for s in steps].count("memory") == 2


SECRET = "tok-7f3a9c-zebra-42"


def test_a_secret_from_the_environment_never_reaches_the_memory_database(magent_home: Path, tmp_path: Path,
                                                                         monkeypatch) -> None:
    """A value that came from ${VAR} is masked wherever memory would keep it: a memory.remember,
    the task summary, the trace of both, and the database file, its log and an export."""
    monkeypatch.setenv("MAGENT_MEMORY_TEST_TOKEN", SECRET)
    target = write(tmp_path, "helper.yaml", """
        name: helper
        role: remembers things
        system_prompt: You help.
        tools: [memory.*]
        memory: {summarize_on_finish: true, scope: global}
        llm_config: {model: scripted, script: helper.script.yaml, api_key: "${MAGENT_MEMORY_TEST_TOKEN}"}
        """)

    def model(request: LLMRequest) -> dict | str:
        if not any(m.role == "tool" for m in request.messages):
            return {"tool_calls": [{"name": "memory.remember",
                                    "arguments": {"content": f"The deploy token is {SECRET}", "tags": [SECRET]}}]}
        return f"Noted the token {SECRET}."

    outcome = run_with(FunctionModel(model), target, f"Remember the deploy token {SECRET}")
    assert outcome.status == "completed"
    with Memory.open() as memory:
        contents = sorted(e.content for e in memory.store.list())
        tags = [t for e in memory.store.list() for t in e.tags]
    assert contents == ["Task: Remember the deploy token [REDACTED]\nAnswer from helper: Noted the token [REDACTED].",
                        "The deploy token is [REDACTED]"]
    assert SECRET not in tags
    exported = invoke("memory", "export")
    assert exported.code == 0 and "[REDACTED]" in exported.out and SECRET not in exported.out
    stored = [e.field("content") for e in events(outcome.task_id) if e.type == "memory_stored"]
    assert len(stored) == 2 and all(SECRET not in c for c in stored)
    on_disk = b"".join(p.read_bytes() for p in paths.memory_dir().iterdir())
    assert len(on_disk) > 0 and SECRET.encode() not in on_disk
    assert SECRET not in invoke("trace", outcome.task_id[:8]).out

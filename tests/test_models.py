"""The seed 002 entities and their validation rules (models only; the store's side is in test_store_*)."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import TypeAdapter, ValidationError

from magent.ids import is_uuid4, new_id
from magent.models import (
    SCHEMA_VERSION, Agent, Checkpoint, EdgeDef, HumanFeedback, MCPServer, MCPServersFile, Message,
    NodeDef, RetentionPolicy, State, StdioServer, HttpServer, StepRecord, SubAgentSession,
    SubAgentSessionInfo, Task, TaskStatus, Tool, ToolCall, ToolCallRecord, ToolSettings, TraceLog,
    Workflow,
)


def _task(**kw):
    base = dict(id=new_id(), description="do it", assigned_agent="writer", workflow="demo")
    return Task(**{**base, **kw})


def _agent(**kw):
    base = dict(name="writer", role="writes", system_prompt="You write.",
                llm_config={"model": "scripted", "script": "s.yaml"})
    return Agent(**{**base, **kw})


def _fields(exc: ValidationError) -> list[str]:
    return [".".join(map(str, e["loc"])) for e in exc.errors()]


# ids ---------------------------------------------------------------------------------------

def test_new_ids_are_uuid4_and_distinct():
    ids = {new_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(is_uuid4(i) and uuid.UUID(i).version == 4 for i in ids)


@pytest.mark.parametrize("bad", [
    # fixed values, so parallel test workers collect the same test ids
    "2caa1a14-e6d0-11f1-86c6-02fc00000001",    # version 1
    "00000000-0000-0000-0000-000000000000",    # nil
    "5266dd0c-52fb-4d0a-91a8-3556bd67a14",     # too short
    "ff179fc684b643b7bb3da2a915c3cfa8",        # no dashes
    "../../etc",
    "",
    "5266dd0c-52fb-4d0a-91a8-3556bd67a14b\n",  # a name with a trailing newline is another name
])
def test_task_id_must_be_uuid4(bad):
    with pytest.raises(ValidationError) as exc:
        _task(id=bad)
    assert _fields(exc.value) == ["id"]
    assert "UUID v4" in str(exc.value)


@pytest.mark.parametrize("model,field", [
    (lambda v: Checkpoint(checkpoint_id=v, task_id=new_id(), sequence=0, position="a"), "checkpoint_id"),
    (lambda v: Checkpoint(checkpoint_id=new_id(), task_id=v, sequence=0, position="a"), "task_id"),
    (lambda v: SubAgentSession(session_id=v, parent_task_id=new_id(), agent_name="a",
                               task_description="t"), "session_id"),
    (lambda v: TraceLog(task_id=v), "task_id"),
])
def test_other_ids_must_be_uuid4(model, field):
    model(new_id())  # a real one is fine
    with pytest.raises(ValidationError) as exc:
        model(str(uuid.uuid1()))
    assert _fields(exc.value) == [field]


# Agent ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["writer", "w", "writer_2", "a_b_c9"])
def test_agent_name_pattern_accepts_snake_case(name):
    assert _agent(name=name).name == name


@pytest.mark.parametrize("name", ["Writer", "2writer", "_writer", "writer-x", "writer x", "", "wrïter"])
def test_agent_name_pattern_rejects_others(name):
    with pytest.raises(ValidationError) as exc:
        _agent(name=name)
    assert _fields(exc.value) == ["name"]


def test_agent_defaults_follow_the_seed():
    a = _agent()
    assert (a.max_iterations, a.temperature, a.tools) == (10, 0.7, [])


@pytest.mark.parametrize("temperature", [-0.1, 2.1])
def test_agent_temperature_is_bounded(temperature):
    with pytest.raises(ValidationError) as exc:
        _agent(temperature=temperature)
    assert _fields(exc.value) == ["temperature"]


def test_agent_tools_must_be_unique():
    with pytest.raises(ValidationError) as exc:
        _agent(tools=["kv.get", "kv.set", "kv.get"])
    assert "repeated: kv.get" in str(exc.value)


def test_agent_needs_llm_config_with_a_model():
    with pytest.raises(ValidationError) as exc:
        _agent(llm_config={"endpoint": "http://127.0.0.1:1"})
    assert _fields(exc.value) == ["llm_config.model"]


# Tool -------------------------------------------------------------------------------------

def test_tool_timeout_defaults_to_300():
    assert Tool(name="get", server="kv").timeout_seconds == 300
    assert ToolSettings().timeout_seconds == 300


@pytest.mark.parametrize("bad", [0, -1, 1.5, "soon"])
def test_tool_timeout_must_be_a_positive_integer(bad):
    with pytest.raises(ValidationError) as exc:
        Tool(name="get", server="kv", timeout_seconds=bad)
    assert _fields(exc.value) == ["timeout_seconds"]
    with pytest.raises(ValidationError):
        ToolSettings(timeout_seconds=bad)


def test_tool_full_name():
    assert Tool(name="get", server="kv").full_name == "kv.get"


# MCPServer --------------------------------------------------------------------------------

def test_mcp_server_transports_pick_their_config():
    adapter = TypeAdapter(MCPServer)
    stdio = adapter.validate_python({"name": "time", "transport": "stdio",
                                     "config": {"command": "mcp-server-time", "args": ["--x"],
                                                "env": {"TZ": "UTC"}}})
    assert isinstance(stdio, StdioServer) and stdio.config.args == ["--x"]
    sse = adapter.validate_python({"name": "remote", "transport": "sse",
                                   "config": {"url": "http://127.0.0.1:9/sse"}})
    assert isinstance(sse, HttpServer) and sse.config.url.endswith("/sse")
    http = adapter.validate_python({"name": "remote", "transport": "streamable_http",
                                    "config": {"url": "https://127.0.0.1/mcp"}})
    assert http.transport == "streamable_http"


@pytest.mark.parametrize("server,field", [
    ({"name": "x", "transport": "stdio", "config": {"url": "http://127.0.0.1"}}, "command"),
    ({"name": "x", "transport": "sse", "config": {"command": "srv"}}, "url"),
    ({"name": "x", "transport": "carrier-pigeon", "config": {}}, ""),
    ({"name": "x", "transport": "sse", "config": {"url": "ftp://host"}}, "url"),
    ({"name": "9x", "transport": "stdio", "config": {"command": "srv"}}, "name"),
])
def test_mcp_server_bad_configs_are_rejected(server, field):
    with pytest.raises(ValidationError) as exc:
        MCPServersFile(servers=[server])
    assert any(f.endswith(field) for f in _fields(exc.value))


def test_mcp_servers_file_defaults():
    f = MCPServersFile()
    assert f.servers == [] and f.builtins.kv.enabled and not f.builtins.shell.enabled
    assert not f.builtins.http.enabled and f.builtins.http.allow_hosts == []


# State ------------------------------------------------------------------------------------

def _msg(role="user", content="hi"):
    return {"role": role, "content": content}


def test_state_apply_appends_messages_and_replaces_the_rest():
    s0 = State(messages=[Message(**_msg("user", "one"))], current_agent="a",
               metadata={"k": 1}, routing_key="x")
    s1 = s0.apply({"messages": [_msg("assistant", "two")], "current_agent": "b",
                   "metadata": {"j": 2}, "routing_key": None})
    assert [m.content for m in s1.messages] == ["one", "two"]
    assert s1.current_agent == "b"
    assert s1.metadata == {"j": 2}  # replaced, not merged
    assert s1.routing_key is None
    # the original is untouched: apply returns a new State
    assert [m.content for m in s0.messages] == ["one"] and s0.metadata == {"k": 1}


def test_state_apply_never_drops_messages():
    s = State(messages=[Message(**_msg(content=str(i))) for i in range(3)])
    assert [m.content for m in s.apply({"messages": []}).messages] == ["0", "1", "2"]
    assert len(s.apply({"current_agent": "x"}).messages) == 3


def test_state_apply_rejects_unknown_fields_naming_them():
    with pytest.raises(ValueError, match="'routingkey'"):
        State().apply({"routingkey": "x"})


@pytest.mark.parametrize("updates,field", [
    ({"metadata": "not a dict"}, "metadata"),
    ({"current_agent": 3}, "current_agent"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
    ({"messages": {"role": "user"}}, "messages"),
])
def test_state_apply_rejects_wrong_types_naming_the_field(updates, field):
    with pytest.raises(ValueError) as exc:
        State().apply(updates)
    assert str(exc.value).startswith(field + ":")


def test_message_roles_and_tool_calls():
    m = Message(role="assistant", tool_calls=[ToolCall(id="c1", server="kv", tool="get",
                                                        arguments={"key": "a"})])
    assert m.tool_calls[0].full_name == "kv.get"
    assert m.timestamp.tzinfo is not None
    with pytest.raises(ValidationError):
        Message(role="narrator", content="x")


# Task -------------------------------------------------------------------------------------

def test_task_statuses_are_the_seeds_four_plus_three():
    assert {s.value for s in TaskStatus} == {"pending", "running", "completed", "failed",
                                             "awaiting_human", "interrupted", "cancelled"}
    assert _task().status is TaskStatus.pending
    assert {s.value for s in TaskStatus if s.finished} == {"completed", "failed", "cancelled"}
    with pytest.raises(ValidationError):
        _task(status="paused")


def test_task_description_required_and_non_empty():
    with pytest.raises(ValidationError) as exc:
        _task(description="")
    assert _fields(exc.value) == ["description"]


def test_task_timestamps_are_aware_and_default_to_now():
    t = _task()
    assert t.created_at.tzinfo is not None and t.updated_at.tzinfo is not None


# schema_version --------------------------------------------------------------------------

@pytest.mark.parametrize("doc", [
    lambda: _task(),
    lambda: Checkpoint(checkpoint_id=new_id(), task_id=new_id(), sequence=0, position="a"),
    lambda: TraceLog(task_id=new_id()),
])
def test_on_disk_documents_carry_schema_version(doc):
    dumped = json.loads(doc().model_dump_json())
    assert dumped["schema_version"] == SCHEMA_VERSION == 19


# Checkpoint and Human Feedback ------------------------------------------------------------

def test_checkpoint_sequence_cannot_be_negative():
    with pytest.raises(ValidationError) as exc:
        Checkpoint(checkpoint_id=new_id(), task_id=new_id(), sequence=-1, position="a")
    assert _fields(exc.value) == ["sequence"]


def test_human_feedback_actions():
    for action in ("approve", "reject", "modify"):
        assert HumanFeedback(action=action).action == action
    with pytest.raises(ValidationError):
        HumanFeedback(action="maybe")
    fb = HumanFeedback(action="modify", message="shorter", state_updates={"routing_key": "x"})
    assert State().apply(fb.state_updates).routing_key == "x"


# TraceLog and sub-agents ------------------------------------------------------------------

def test_trace_log_round_trips_through_json():
    sid = new_id()
    trace = TraceLog(
        task_id=new_id(),
        steps=[StepRecord(step_name="writer", message="called kv", agent="writer",
                          tool_calls=[ToolCallRecord(server="kv", tool="get", arguments={"k": 1},
                                                     result={"v": 2}, duration_ms=3)])],
        sub_agent_sessions={sid: SubAgentSessionInfo(session_id=sid, agent="helper",
                                                     message_count=4, status="completed")})
    again = TraceLog.model_validate_json(trace.model_dump_json())
    assert again == trace
    with pytest.raises(ValidationError):
        StepRecord(step_name="x", status="fatal")


def test_sub_agent_session_statuses():
    s = SubAgentSession(session_id=new_id(), parent_task_id=new_id(), agent_name="helper",
                        task_description="look it up", message_history=[Message(**_msg())])
    assert s.status == "running"
    with pytest.raises(ValidationError):
        s.model_validate({**s.model_dump(), "status": "paused"})


# Workflow ---------------------------------------------------------------------------------

def test_workflow_edges_use_from_and_nodes_keep_kind_fields():
    wf = Workflow.model_validate({
        "name": "review", "entry_point": "draft",
        "nodes": {"draft": {"type": "agent", "agent": "writer"}, "check": {"type": "human"}},
        "edges": [{"from": "draft", "to": "check"},
                  {"from": "check", "to": "END", "condition": "routing_key == 'pass'"}]})
    assert wf.edges[0].from_ == "draft" and wf.edges[1].condition == "routing_key == 'pass'"
    assert wf.nodes["draft"].model_extra == {"agent": "writer"}
    assert wf.max_iterations == 50
    assert isinstance(wf.nodes["check"], NodeDef) and isinstance(wf.edges[0], EdgeDef)


def test_workflow_rejects_unknown_top_level_fields():
    with pytest.raises(ValidationError) as exc:
        Workflow.model_validate({"name": "w", "entry_point": "a", "nodes": {}, "entrypoint": "a"})
    assert _fields(exc.value) == ["entrypoint"]


# Retention policy -------------------------------------------------------------------------

def test_retention_policy_defaults_and_seed_example():
    assert RetentionPolicy().default_days == 7
    p = RetentionPolicy.model_validate({"default_days": 7, "by_task": {"critical": 30, "debug": 3},
                                        "by_status": {"completed": 7, "failed": 14}})
    assert p.by_status[TaskStatus.failed] == 14 and p.by_task["critical"] == 30


@pytest.mark.parametrize("doc,field", [
    ({"default_days": -1}, "default_days"),
    ({"by_status": {"finished": 3}}, "by_status.finished"),
    ({"by_task": {"debug": "soon"}}, "by_task.debug"),
    ({"keep_checkpoints": 0}, "keep_checkpoints"),
])
def test_retention_policy_rejects_bad_values(doc, field):
    with pytest.raises(ValidationError) as exc:
        RetentionPolicy.model_validate(doc)
    assert any(f.startswith(field) for f in _fields(exc.value))


# strictness everywhere --------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: _task(colour="red"),
    lambda: _agent(colour="red"),
    lambda: State(colour="red"),
    lambda: Message(role="user", colour="red"),
    lambda: Tool(name="t", server="s", colour="red"),
    lambda: RetentionPolicy(colour="red"),
    lambda: Checkpoint(checkpoint_id=new_id(), task_id=new_id(), sequence=0, position="a",
                       colour="red"),
])
def test_unknown_fields_are_errors(make):
    with pytest.raises(ValidationError) as exc:
        make()
    assert _fields(exc.value) == ["colour"]

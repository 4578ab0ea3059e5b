"""Pydantic models of the seed entities and of the YAML configs. Imports nothing else of magent.

Each name is imported from its module on first use (PEP 562): a run loads the models it
uses (a task, its checkpoints and entries), not the trace's, which only ``magent trace``
builds. The model modules do not use ``from __future__ import annotations``: pydantic would
``eval`` each string annotation when it builds a model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.models.base import SCHEMA_VERSION, Document, Model

if TYPE_CHECKING:
    from magent.models.agent import AGENT_NAME_PATTERN, Agent, LLMConfig
    from magent.models.checkpoint import Checkpoint, CheckpointSummary, HumanFeedback, HumanRequest
    from magent.models.entry import Entry, Event
    from magent.models.memory import (
        AgentMemory, ConsolidationSettings, MemoryEntry, MemoryRetention, MemorySettings,
    )
    from magent.models.retention import RetentionPolicy
    from magent.models.servers import (
        HttpConfig, HttpServer, MCPServer, MCPServersFile, SSEConfig, StdioConfig, StdioServer,
        ToolSettings,
    )
    from magent.models.state import Message, State, ToolCall
    from magent.models.task import ForkRef, Task, TaskStatus, Usage
    from magent.models.tools import Builtins, RateLimit, Tool
    from magent.models.trace import (
        ActionRecord, ActionToolCall, LLMCallRecord, StepRecord, SubAgentSession, SubAgentSessionInfo,
        ToolCallRecord, TraceLog,
    )
    from magent.models.workflow import EdgeDef, NodeDef, Workflow

_WHERE = {
    "AGENT_NAME_PATTERN": "agent", "Agent": "agent", "LLMConfig": "agent",
    "Checkpoint": "checkpoint", "CheckpointSummary": "checkpoint", "HumanFeedback": "checkpoint",
    "HumanRequest": "checkpoint", "Entry": "entry", "Event": "entry", "AgentMemory": "memory",
    "ConsolidationSettings": "memory", "MemoryEntry": "memory", "MemoryRetention": "memory",
    "MemorySettings": "memory", "RetentionPolicy": "retention", "Message": "state",
    "State": "state", "ToolCall": "state", "ForkRef": "task", "Task": "task", "TaskStatus": "task",
    "Usage": "task", "Builtins": "tools", "HttpConfig": "servers", "HttpServer": "servers",
    "MCPServer": "servers", "MCPServersFile": "servers", "RateLimit": "tools", "SSEConfig": "servers",
    "StdioConfig": "servers", "StdioServer": "servers", "Tool": "tools", "ToolSettings": "servers",
    "ActionRecord": "trace", "ActionToolCall": "trace", "LLMCallRecord": "trace",
    "StepRecord": "trace", "SubAgentSession": "trace", "SubAgentSessionInfo": "trace",
    "ToolCallRecord": "trace", "TraceLog": "trace", "EdgeDef": "workflow", "NodeDef": "workflow",
    "Workflow": "workflow",
}
"""Name → its module under ``magent.models``."""

__all__ = [
    "AGENT_NAME_PATTERN", "ActionRecord", "ActionToolCall", "Agent", "AgentMemory", "Builtins", "Checkpoint",
    "CheckpointSummary", "ConsolidationSettings", "Document", "EdgeDef", "Entry", "Event", "ForkRef", "HttpConfig",
    "HttpServer", "HumanFeedback", "HumanRequest", "LLMCallRecord", "LLMConfig", "MCPServer",
    "MCPServersFile", "MemoryEntry", "MemoryRetention", "MemorySettings", "Message", "Model", "NodeDef",
    "RateLimit", "RetentionPolicy", "SCHEMA_VERSION",
    "SSEConfig", "State", "StdioConfig", "StdioServer", "StepRecord", "SubAgentSession",
    "SubAgentSessionInfo", "Task", "TaskStatus", "Tool", "ToolCall", "ToolCallRecord",
    "ToolSettings", "TraceLog", "Usage", "Workflow",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Pydantic models of the seed entities and of the YAML configs. Imports nothing else of magent.

Each name is imported from its module on first use (PEP 562): a run loads the models it
uses (a task, its checkpoints and entries), not the trace's, which only ``magent trace``
builds.

The model modules do not use ``from __future__ import annotations``: pydantic makes a model's
fields from its annotations when the class is created, and a string annotation costs it an
``eval`` (a compile) each, while a real one is already built (callgrind: 22 M of the ~125 M
instructions of importing the models a run uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.models.base import SCHEMA_VERSION, Document, Model

if TYPE_CHECKING:
    from magent.models.agent import AGENT_NAME_PATTERN as AGENT_NAME_PATTERN
    from magent.models.agent import Agent as Agent
    from magent.models.agent import LLMConfig as LLMConfig
    from magent.models.checkpoint import Checkpoint as Checkpoint
    from magent.models.checkpoint import CheckpointSummary as CheckpointSummary
    from magent.models.checkpoint import HumanFeedback as HumanFeedback
    from magent.models.checkpoint import HumanRequest as HumanRequest
    from magent.models.entry import Entry as Entry
    from magent.models.entry import Event as Event
    from magent.models.memory import AgentMemory as AgentMemory
    from magent.models.memory import ConsolidationSettings as ConsolidationSettings
    from magent.models.memory import MemoryEntry as MemoryEntry
    from magent.models.memory import MemoryRetention as MemoryRetention
    from magent.models.memory import MemorySettings as MemorySettings
    from magent.models.retention import RetentionPolicy as RetentionPolicy
    from magent.models.servers import HttpConfig as HttpConfig
    from magent.models.servers import HttpServer as HttpServer
    from magent.models.servers import MCPServer as MCPServer
    from magent.models.servers import MCPServersFile as MCPServersFile
    from magent.models.servers import SSEConfig as SSEConfig
    from magent.models.servers import StdioConfig as StdioConfig
    from magent.models.servers import StdioServer as StdioServer
    from magent.models.servers import ToolSettings as ToolSettings
    from magent.models.state import Message as Message
    from magent.models.state import State as State
    from magent.models.state import ToolCall as ToolCall
    from magent.models.task import ForkRef as ForkRef
    from magent.models.task import Task as Task
    from magent.models.task import TaskStatus as TaskStatus
    from magent.models.task import Usage as Usage
    from magent.models.tools import Builtins as Builtins
    from magent.models.tools import RateLimit as RateLimit
    from magent.models.tools import Tool as Tool
    from magent.models.trace import ActionRecord as ActionRecord
    from magent.models.trace import ActionToolCall as ActionToolCall
    from magent.models.trace import LLMCallRecord as LLMCallRecord
    from magent.models.trace import StepRecord as StepRecord
    from magent.models.trace import SubAgentSession as SubAgentSession
    from magent.models.trace import SubAgentSessionInfo as SubAgentSessionInfo
    from magent.models.trace import ToolCallRecord as ToolCallRecord
    from magent.models.trace import TraceLog as TraceLog
    from magent.models.workflow import EdgeDef as EdgeDef
    from magent.models.workflow import NodeDef as NodeDef
    from magent.models.workflow import Workflow as Workflow

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

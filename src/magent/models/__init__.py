"""Pydantic models of the seed entities and of the YAML configs. Imports nothing else of magent."""

from magent.models.agent import AGENT_NAME_PATTERN, Agent, LLMConfig
from magent.models.base import SCHEMA_VERSION, Document, Model
from magent.models.checkpoint import Checkpoint, CheckpointSummary, HumanFeedback, HumanRequest
from magent.models.entry import Entry, Event
from magent.models.memory import (
    AgentMemory, ConsolidationSettings, MemoryEntry, MemoryRetention, MemorySettings,
)
from magent.models.retention import RetentionPolicy
from magent.models.state import Message, State, ToolCall
from magent.models.task import ForkRef, Task, TaskStatus, Usage
from magent.models.tools import (
    Builtins, HttpConfig, HttpServer, MCPServer, MCPServersFile, RateLimit, SSEConfig,
    StdioConfig, StdioServer, Tool, ToolSettings,
)
from magent.models.trace import (
    ActionRecord, ActionToolCall, LLMCallRecord, StepRecord, SubAgentSession,
    SubAgentSessionInfo, ToolCallRecord, TraceLog,
)
from magent.models.workflow import EdgeDef, NodeDef, Workflow

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

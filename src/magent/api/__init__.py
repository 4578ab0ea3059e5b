"""magent's Python API, which ``magent run`` and the other commands call: a task started here is
the same on disk. Names load on first use (PEP 562), so a light reader need not load pydantic."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports them on first use
    from magent.api.batching import BatchDetails as BatchDetails
    from magent.api.batching import BatchProgress as BatchProgress
    from magent.api.batching import BatchRow as BatchRow
    from magent.api.batching import BatchRun as BatchRun
    from magent.api.batching import BatchStart as BatchStart
    from magent.api.batching import BatchSummary as BatchSummary
    from magent.api.batching import SkippedRow as SkippedRow
    from magent.api.batching import abatch as abatch
    from magent.api.batching import aresume_batch as aresume_batch
    from magent.api.batching import batch as batch
    from magent.api.batching import batch_details as batch_details
    from magent.api.batching import batch_results as batch_results
    from magent.api.batching import batches as batches
    from magent.api.batching import resume_batch as resume_batch
    from magent.api.followups import achat as achat
    from magent.api.followups import chat as chat
    from magent.api.inspection import CheckpointView as CheckpointView
    from magent.api.inspection import Checkpoints as Checkpoints
    from magent.api.inspection import checkpoint as checkpoint
    from magent.api.inspection import checkpoints as checkpoints
    from magent.api.inspection import validate as validate
    from magent.api.prompting import StoredPrompt as StoredPrompt
    from magent.api.prompting import add_prompt as add_prompt
    from magent.api.prompting import prompt as prompt
    from magent.api.prompting import prompts as prompts
    from magent.api.prompting import prompts_folder as prompts_folder
    from magent.api.remembering import MemoryList as MemoryList
    from magent.api.remembering import MemorySearch as MemorySearch
    from magent.api.remembering import add_memory as add_memory
    from magent.api.remembering import consolidate_memory as consolidate_memory
    from magent.api.remembering import export_memories as export_memories
    from magent.api.remembering import forget_memories as forget_memories
    from magent.api.remembering import import_memories as import_memories
    from magent.api.remembering import memories as memories
    from magent.api.remembering import memory_entry as memory_entry
    from magent.api.remembering import search_memory as search_memory
    from magent.api.migrating import MigrationReport as MigrationReport
    from magent.api.migrating import migrate_tasks as migrate_tasks
    from magent.api.replaying import areplay as areplay
    from magent.api.replaying import replay as replay
    from magent.api.retention import RetentionPlan as RetentionPlan
    from magent.api.retention import retention_plan as retention_plan
    from magent.api.retention import sweep as sweep
    from magent.api.starting import Home as Home
    from magent.api.starting import copy_examples as copy_examples
    from magent.api.starting import examples as examples
    from magent.api.starting import examples_folder as examples_folder
    from magent.api.starting import init as init
    from magent.api.starting import new_agent as new_agent
    from magent.api.starting import new_workflow as new_workflow
    from magent.api.tooling import ToolList as ToolList
    from magent.api.tooling import amcp_servers as amcp_servers
    from magent.api.tooling import mcp_servers as mcp_servers
    from magent.api.tracing import HtmlReport as HtmlReport
    from magent.api.tracing import StepRequests as StepRequests
    from magent.api.tracing import StyledLine as StyledLine
    from magent.api.tracing import TraceExport as TraceExport
    from magent.api.tracing import TraceReading as TraceReading
    from magent.api.tracing import export_trace as export_trace
    from magent.api.tracing import follow_trace as follow_trace
    from magent.api.tracing import read_trace as read_trace
    from magent.api.tracing import trace_html as trace_html
    from magent.api.tooling import acall_tool as acall_tool
    from magent.api.tooling import alist_tools as alist_tools
    from magent.api.tooling import call_tool as call_tool
    from magent.api.tooling import list_tools as list_tools
    from magent.api.definition import Definition as Definition
    from magent.api.definition import PathLike as PathLike
    from magent.api.definition import load as load
    from magent.api.reading import TaskDetails as TaskDetails
    from magent.api.reading import task as task
    from magent.api.reading import task_details as task_details
    from magent.api.reading import tasks as tasks
    from magent.api.reading import trace_log as trace_log
    from magent.api.result import AgentResult as AgentResult
    from magent.api.result import ErrorInfo as ErrorInfo
    from magent.api.result import Provenance as Provenance
    from magent.api.result import TokenUsage as TokenUsage
    from magent.api.runs import EventHandler as EventHandler
    from magent.api.runs import StartHandler as StartHandler
    from magent.api.runs import Target as Target
    from magent.api.runs import TokenHandler as TokenHandler
    from magent.api.runs import aresume as aresume
    from magent.api.runs import arun as arun
    from magent.api.steering import Sent as Sent
    from magent.api.steering import acancel as acancel
    from magent.api.steering import apause as apause
    from magent.api.steering import asteer as asteer
    from magent.api.steering import cancel as cancel
    from magent.api.steering import pause as pause
    from magent.api.steering import steer as steer
    from magent.api.runs import decision_of as decision_of
    from magent.api.runs import resume as resume
    from magent.api.runs import run as run

_WHERE = {
    "batching": ("BatchDetails", "BatchProgress", "BatchRow", "BatchRun", "BatchStart", "BatchSummary",
                 "SkippedRow", "abatch", "aresume_batch", "batch", "batch_details", "batch_results", "batches",
                 "resume_batch"),
    "followups": ("achat", "chat"),
    "inspection": ("CheckpointView", "Checkpoints", "checkpoint", "checkpoints", "validate"),
    "prompting": ("StoredPrompt", "add_prompt", "prompt", "prompts", "prompts_folder"),
    "remembering": ("MemoryList", "MemorySearch", "add_memory", "consolidate_memory", "export_memories",
                    "forget_memories", "import_memories", "memories", "memory_entry", "search_memory"),
    "migrating": ("MigrationReport", "migrate_tasks"),
    "replaying": ("areplay", "replay"),
    "retention": ("RetentionPlan", "retention_plan", "sweep"),
    "starting": ("Home", "copy_examples", "examples", "examples_folder", "init", "new_agent", "new_workflow"),
    "tooling": ("ToolList", "acall_tool", "alist_tools", "amcp_servers", "call_tool", "list_tools",
                "mcp_servers"),
    "tracing": ("HtmlReport", "StepRequests", "StyledLine", "TraceExport", "TraceReading", "export_trace",
                "follow_trace", "read_trace", "trace_html"),
    "definition": ("Definition", "PathLike", "load"),
    "reading": ("TaskDetails", "task", "task_details", "tasks", "trace_log"),
    "result": ("AgentResult", "ErrorInfo", "Provenance", "TokenUsage"),
    "steering": ("Sent", "acancel", "answer_after", "apause", "asteer", "cancel", "pause", "steer"),
    "runs": ("EventHandler", "StartHandler", "Target", "TokenHandler", "aresume", "arun",
             "decision_of", "resume", "run"),
}
_MODULE = {name: module for module, names in _WHERE.items() for name in names}

__all__ = sorted(_MODULE)


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module 'magent.api' has no attribute {name!r}")
    return getattr(importlib.import_module(f"magent.api.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)

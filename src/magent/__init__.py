"""magent: a local-first agent runner, from the terminal or from Python::

    result = magent.run("examples/workflows/write_review.yaml", "Write copy for Tidy")

The API (``run``, ``resume``, ``chat``, ``tasks``, ``read_trace``, ``AgentResult``... see
docs/guides/python-api.md) is imported on first use, so ``import magent`` loads neither pydantic
nor litellm nor mcp. Errors are ``magent.errors`` types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.errors import BatchNotFoundError as BatchNotFoundError
from magent.errors import ConfigError as ConfigError
from magent.errors import MagentError as MagentError
from magent.errors import MemoryNotFoundError as MemoryNotFoundError
from magent.errors import TaskLockedError as TaskLockedError
from magent.errors import TaskNotFoundError as TaskNotFoundError
from magent.errors import TaskStateError as TaskStateError
from magent.errors import UsageError as UsageError
from magent.version import DISTRIBUTION as DISTRIBUTION
from magent.version import __version__ as __version__

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
    from magent.api.runs import aresume as aresume
    from magent.api.runs import arun as arun
    from magent.api.steering import acancel as acancel
    from magent.api.steering import apause as apause
    from magent.api.steering import asteer as asteer
    from magent.api.steering import cancel as cancel
    from magent.api.steering import pause as pause
    from magent.api.steering import steer as steer
    from magent.api.runs import resume as resume
    from magent.api.runs import run as run

_API = (
        "AgentResult", "BatchDetails", "BatchProgress", "BatchRow", "BatchRun", "BatchStart",
        "BatchSummary", "CheckpointView", "Checkpoints", "Definition", "ErrorInfo", "Home",
        "HtmlReport", "MemoryList", "MemorySearch", "Provenance", "RetentionPlan", "SkippedRow",
        "StepRequests", "StoredPrompt", "TaskDetails", "TokenUsage", "ToolList", "TraceExport",
        "TraceReading", "abatch", "acall_tool", "acancel", "achat", "add_memory", "add_prompt", "alist_tools",
        "amcp_servers", "apause", "areplay", "aresume", "aresume_batch", "arun", "asteer", "batch", "batch_details",
        "batch_results", "batches", "call_tool", "cancel", "chat", "checkpoint", "checkpoints",
        "consolidate_memory", "copy_examples", "examples", "examples_folder", "export_memories",
        "export_trace", "follow_trace", "forget_memories", "import_memories", "init", "list_tools",
        "load", "mcp_servers", "memories", "memory_entry", "new_agent", "new_workflow", "pause", "prompt",
        "prompts", "prompts_folder", "read_trace", "replay", "resume", "resume_batch",
        "retention_plan", "run", "search_memory", "steer", "sweep", "task", "task_details", "tasks",
        "trace_html", "trace_log", "validate")

__all__ = [*_API, "BatchNotFoundError", "ConfigError", "MagentError", "MemoryNotFoundError", "TaskLockedError",
           "TaskNotFoundError", "TaskStateError", "UsageError", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        import magent.api

        return getattr(magent.api, name)
    raise AttributeError(f"module 'magent' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

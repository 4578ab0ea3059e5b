"""Follow-ups from Python: ``magent.chat`` / ``achat`` (``magent chat ID "..."`` calls these)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magent import paths
from magent.api.reading import PathLike
from magent.api.runs import EventHandler, StartHandler, TokenHandler, reported_result, run_options, run_sync

if TYPE_CHECKING:
    from magent.api.result import AgentResult
    from magent.llm.base import LLMClient


def chat(task_id: str, message: str | None = None, *, model: str | None = None,
         on_event: EventHandler | None = None, home: PathLike | None = None,
         llm: "LLMClient | None" = None) -> "AgentResult":
    """Send ``message`` to task ``task_id`` and wait for the ``AgentResult`` (``output`` is the reply).

    A task stopped mid-run is first continued as ``resume`` would (with no ``message``, that is
    all). Raises ``TaskNotFoundError``, ``TaskLockedError`` while another process runs the task,
    ``TaskStateError`` for a cancelled one, ``UsageError`` for an empty message."""
    return run_sync(achat(task_id, message, model=model, on_event=on_event, home=home, llm=llm), "chat")


async def achat(task_id: str, message: str | None = None, *, model: str | None = None,
                on_event: EventHandler | None = None, home: PathLike | None = None,
                llm: "LLMClient | None" = None, on_start: StartHandler | None = None,
                on_token: TokenHandler | None = None) -> "AgentResult":
    """``chat`` for asyncio (``on_start`` gets the task before it runs again)."""
    from magent.engine.conversation import check_can_follow, follow_up
    from magent.engine.session import resume_run
    from magent.errors import UsageError
    from magent.models import TaskStatus
    from magent.store.tasks import Store

    if message is not None and (not isinstance(message, str) or not message.strip()):
        raise UsageError("the follow-up message must not be empty")
    with paths.using_home(home):
        task_dir = Store().task(task_id)
        task = task_dir.load_task()
        sinks = [on_event] if on_event else []
        if task.status in (TaskStatus.pending, TaskStatus.running, TaskStatus.interrupted):
            # A run that died or was stopped: finish it first (its lock says if it is alive).
            if on_start is not None:
                on_start(task)
                on_start = None
            outcome = await resume_run(task_dir.id, options=run_options(model, llm, on_token), sinks=sinks)
            if message is None or outcome.status == TaskStatus.awaiting_human:
                return reported_result(outcome)
        elif message is None:
            check_can_follow(task)  # a cancelled task says so
            raise UsageError(f"task {task_dir.id[:8]} is {task.status.value}: give a message to continue "
                             "the conversation")
        outcome = await follow_up(task_dir.id, message, options=run_options(model, llm, on_token), sinks=sinks,
                                  on_task=on_start)
        return reported_result(outcome)

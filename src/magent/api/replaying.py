"""``magent.replay`` / ``areplay``: re-run a finished task with its recorded model replies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magent import paths
from magent.api.reading import PathLike
from magent.api.runs import EventHandler, run_sync

if TYPE_CHECKING:
    from magent.engine.replay import ReplayReport


async def areplay(task_id: str, *, on_event: EventHandler | None = None,
                  home: PathLike | None = None) -> "ReplayReport":
    """``replay`` for asyncio."""
    from magent.engine.replay import replay_task

    with paths.using_home(home):
        return await replay_task(task_id, sinks=[on_event] if on_event is not None else [])


def replay(task_id: str, *, on_event: EventHandler | None = None,
           home: PathLike | None = None) -> "ReplayReport":
    """Run a finished task again as a new task (tagged ``replay``), answering each model call with its
    recorded reply (tools run for real); the report says whether every step ``matched``."""
    return run_sync(areplay(task_id, on_event=on_event, home=home), "replay")

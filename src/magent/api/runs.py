"""``magent.run`` / ``arun`` and ``resume`` / ``aresume``. A call keeps nothing in the process:
``home=`` applies to that call only, and several ``arun`` calls may share one event loop."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping, TypeVar, Union

from magent import paths
from magent.api.definition import Definition, PathLike
from magent.errors import UsageError

if TYPE_CHECKING:
    from magent.api.result import AgentResult
    from magent.engine.context import RunOptions
    from magent.engine.runner import RunOutcome
    from magent.llm.base import LLMClient
    from magent.models import Event, Task

Target = Union[str, "os.PathLike[str]", Definition]
"""A workflow or agent file, the name of one installed in the home, or a ``magent.load`` result."""
EventHandler = Callable[["Event"], None]
"""Called with every event of the run as it happens (what ``magent run --json`` prints)."""
StartHandler = Callable[["Task"], None]
"""Called once the task exists on disk, before its first model call."""
BudgetArg = Union[Mapping[str, Any], str, None]
"""Usage limits: ``{"max_tokens": 50000, "max_cost_usd": 1}`` or ``"max_tokens=50000,max_cost_usd=1"``."""
TokenHandler = Callable[[str], None]
"""Called with each piece of the model's text as it streams."""

T = TypeVar("T")


def run(target: Target, task: str, *, set: Mapping[str, Any] | None = None, model: str | None = None,
        tags: Iterable[str] | None = None, on_event: EventHandler | None = None,
        home: PathLike | None = None, retention_days: int | None = None,
        llm: "LLMClient | None" = None, budget: "BudgetArg" = None,
        durability: str | None = None) -> "AgentResult":
    """Run a workflow (or a single agent) on ``task`` and wait for it to stop; returns the
    ``AgentResult`` (``awaiting_human``: continue with ``resume``).

    ``set``, ``model`` and ``budget`` act as ``--set``, ``--model`` and ``--budget`` do; ``llm``
    answers every model call (a ``magent.testing`` double); ``home`` is the state root for this
    call only; ``durability`` is ``sync``, ``step`` or ``exit``. Bad input raises a ``MagentError`` before anything is written."""
    return run_sync(arun(target, task, set=set, model=model, tags=tags, on_event=on_event, home=home,
                         retention_days=retention_days, llm=llm, budget=budget,
                         durability=durability), "run")


async def arun(target: Target, task: str, *, set: Mapping[str, Any] | None = None,
               model: str | None = None, tags: Iterable[str] | None = None,
               on_event: EventHandler | None = None, home: PathLike | None = None,
               retention_days: int | None = None, llm: "LLMClient | None" = None,
               on_start: StartHandler | None = None, on_token: TokenHandler | None = None,
               budget: "BudgetArg" = None, durability: str | None = None) -> "AgentResult":
    """``run`` for asyncio. Safe to await many at once; cancelling it stops the run at a
    checkpoint (the task can be resumed). ``on_start`` and ``on_token`` are for live views."""
    from magent.engine.inputs import updates_from
    from magent.engine.session import start_run

    if not isinstance(task, str) or not task.strip():
        raise UsageError("-t/--task must not be empty")
    if retention_days is not None and retention_days < 0:
        raise UsageError("--retention-days must be 0 or more")
    limits = budget_of(budget)
    with paths.using_home(home):
        definition = target if isinstance(target, Definition) else _load(target)
        initial = updates_from(set) if set is not None else {}
        outcome = await start_run(
            definition.graph, task, target=definition.target, tags=_tags(tags),
            retention_days=retention_days, initial=initial, options=run_options(model, llm, on_token, durability),
            sinks=[on_event] if on_event else [], on_task=on_start, budget=limits)
        return reported_result(outcome)


def resume(task_id: str, *, approve: bool = False, reject: bool = False,
           modify: Mapping[str, Any] | PathLike | None = None, message: str | None = None,
           set: Mapping[str, Any] | None = None, from_checkpoint: int | None = None,
           model: str | None = None, on_event: EventHandler | None = None,
           home: PathLike | None = None, llm: "LLMClient | None" = None,
           budget: "BudgetArg" = None, durability: str | None = None) -> "AgentResult":
    """Continue a paused, interrupted or crashed task, or branch a new one ``from_checkpoint=N``.

    A paused task needs one of ``approve``, ``reject`` or ``modify`` (State updates: a mapping
    or a YAML/JSON file); ``budget`` raises the limit a task stopped at. Raises ``UsageError``,
    ``TaskNotFoundError`` or ``TaskStateError``."""
    return run_sync(aresume(task_id, approve=approve, reject=reject, modify=modify, message=message,
                            set=set, from_checkpoint=from_checkpoint, model=model, on_event=on_event,
                            home=home, llm=llm, budget=budget,
                            durability=durability), "resume")


async def aresume(task_id: str, *, approve: bool = False, reject: bool = False,
                  modify: Mapping[str, Any] | PathLike | None = None, message: str | None = None,
                  set: Mapping[str, Any] | None = None, from_checkpoint: int | None = None,
                  model: str | None = None, on_event: EventHandler | None = None,
                  home: PathLike | None = None, llm: "LLMClient | None" = None,
                  on_start: StartHandler | None = None,
                  on_token: TokenHandler | None = None, budget: "BudgetArg" = None,
                  durability: str | None = None) -> "AgentResult":
    """``resume`` for asyncio (``on_start`` gets the task, or the new one of a branch)."""
    from magent.engine.inputs import updates_from
    from magent.engine.session import fork_run, resume_run
    from magent.store.tasks import Store

    decision = decision_of(approve=approve, reject=reject, modify=modify, message=message)
    if from_checkpoint is not None and from_checkpoint < 0:
        raise UsageError("--from-checkpoint must be 0 or more")
    limits = budget_of(budget)
    if limits and from_checkpoint is not None:
        raise UsageError("--budget raises the limit a task stopped at; it does not go with --from-checkpoint")
    with paths.using_home(home):
        sets = updates_from(set) if set is not None else {}
        options = run_options(model, llm, on_token, durability)
        sinks = [on_event] if on_event else []
        if from_checkpoint is not None:
            outcome = await fork_run(task_id, from_checkpoint, decision=decision, set_values=sets,
                                     options=options, sinks=sinks, on_task=on_start)
        else:
            task_dir = Store().task(task_id)
            if on_start is not None:
                on_start(task_dir.load_task())
            outcome = await resume_run(task_dir.id, decision=decision, set_values=sets, options=options,
                                       sinks=sinks, budget=limits)
        return reported_result(outcome)


def budget_of(budget: "BudgetArg") -> dict[str, Any] | None:
    """Budget limits from a mapping or ``--budget``'s text, checked (``UsageError`` naming the bad one)."""
    from magent.engine.budget import parse

    if budget is None:
        return None
    if isinstance(budget, str):
        return parse(budget)
    if not isinstance(budget, Mapping):
        raise UsageError(f"budget must be a mapping or 'max_tokens=N,...' text, not {type(budget).__name__}")
    return parse(",".join(f"{k}={v}" for k, v in budget.items()), "budget")


def decision_of(*, approve: bool = False, reject: bool = False,
                modify: Mapping[str, Any] | PathLike | None = None, message: str | None = None) -> Any:
    """A person's answer from ``resume``'s arguments: at most one of approve/reject/modify, a message
    only with one (the CLI checks its flags in its own words)."""
    from magent.engine.session import Decision

    chosen = [name for name, on in (("approve", approve), ("reject", reject),
                                    ("modify", modify is not None)) if on]
    if len(chosen) > 1:
        raise UsageError("give only one of approve=True, reject=True, modify=...")
    if message is not None and not chosen:
        raise UsageError("message= goes with approve=True, reject=True or modify=...")
    if not chosen:
        return None
    return Decision(action=chosen[0], message=message,
                    state_updates=_modify_updates(modify) if modify is not None else {})


def _modify_updates(modify: Mapping[str, Any] | PathLike) -> dict[str, Any]:
    from magent.engine.inputs import load_modify_file, modify_fields

    if isinstance(modify, Mapping):
        unknown = [k for k in modify if k not in modify_fields()]
        if unknown:
            raise UsageError(f"modify: unknown State field {unknown[0]!r} "
                             f"(fields: {', '.join(modify_fields())})")
        return dict(modify)
    return load_modify_file(Path(os.fspath(modify)))


def _load(target: Any) -> Definition:
    from magent.api.definition import load

    if not isinstance(target, (str, os.PathLike)):
        raise UsageError(f"target must be a path, an installed name or a magent.load() result, "
                         f"not {type(target).__name__}")
    return load(target)


def _tags(tags: Iterable[str] | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        return [tags]
    out = list(tags)
    for tag in out:
        if not isinstance(tag, str) or not tag:
            raise UsageError(f"tags must be non-empty strings, not {tag!r}")
    return out


def run_options(model: str | None, llm: "LLMClient | None", on_token: TokenHandler | None,
                durability: str | None = None) -> "RunOptions":
    from magent.api.result import result_of
    from magent.engine.context import RunOptions
    from magent.engine.inputs import check_model_override
    from magent.store.commit import MODES

    if durability is not None and durability not in MODES:
        raise UsageError(f"--durability must be one of {', '.join(MODES)}, not {durability!r}")
    check_model_override(model)

    factory = None
    if llm is not None:
        from magent.testing import client_factory

        factory = client_factory(llm)
    return RunOptions(model_override=model, no_input=True, llm_factory=factory, on_token=on_token,
                      durability=durability, report=result_of)


def reported_result(outcome: "RunOutcome") -> "AgentResult":
    """The run's result, read while it held the task (``RunOptions.report``): a sweep may remove a
    finished task as soon as its lock is let go."""
    result: AgentResult = outcome.report
    return result


def run_sync(call: Awaitable[T], name: str) -> T:
    """Run a coroutine to the end from synchronous code (not from inside an event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call)  # type: ignore[arg-type]
    close = getattr(call, "close", None)
    if close is not None:
        close()
    raise UsageError(f"magent.{name}() cannot be called from a running event loop; "
                     f"use `await magent.a{name}(...)`")

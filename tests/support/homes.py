"""Populating a magent home for tests, through the store's own API.

Everything here writes with ``magent.store`` (``Store.create_task``,
``EntryLog.append``, ``CheckpointLog.write``, ``TaskDir.append_event``), so a
home built here is exactly what a run would leave behind.

Typical use::

    home = HomeBuilder()                        # the test's $MAGENT_HOME
    t = home.task("summarise the report", status="completed")
    t.say("user", "summarise it")
    t.checkpoint("writer")                      # checkpoint 0, leaf = that message
    t.say("assistant", "done")
    t.checkpoint("END", reason="finish")        # checkpoint 1
    t.fork(t.entries[0])                        # next message is a second child of entry 0
    t.say("assistant", "another answer")

    before = snapshot_tree(home.root)           # ... run a read command ...
    assert snapshot_tree(home.root) == before   # nothing on disk changed

``standard_home()`` builds a small home with one task of each interesting kind
(see ``StandardHome``); ``populate()`` builds many tasks fast for benchmarks.
``snapshot_tree()`` and the ``unwritable_home`` fixture help bad-input tests.

The builder skips fsync while it writes (``HomeBuilder(durable=True)`` keeps it):
the fixture's writes are not under test, and a home builds ten times faster.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest

from magent.ids import new_id, now
from magent.models import (
    Checkpoint, Entry, Event, HumanRequest, State, Task, TaskStatus, ToolCall, Usage,
)
from magent.store.tasks import Store, TaskDir


@contextmanager
def _building(durable: bool) -> Iterator[None]:
    """Skip fsync while a fixture writes, unless ``durable``.

    The fixture's own writes are not what a test checks, and without fsync a home
    builds about ten times faster; the store code that runs is otherwise the same.
    """
    if durable:
        yield
        return
    real = os.fsync
    os.fsync = lambda fd: None  # type: ignore[assignment]
    try:
        yield
    finally:
        os.fsync = real


def _fixture_write(method):
    """Run a builder method under ``_building`` for its home's ``durable`` setting."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        home = self if isinstance(self, HomeBuilder) else self.home
        with _building(home.durable):
            return method(self, *args, **kwargs)

    return wrapper


class TaskBuilder:
    """One task being populated. Keeps the conversation leaf, checkpoints and events written."""

    def __init__(self, home: "HomeBuilder", task_dir: TaskDir, task: Task):
        self.home = home
        self.dir = task_dir
        self.task = task
        self.entries: list[Entry] = []
        self.checkpoints: list[Checkpoint] = []
        self.events: list[Event] = []
        self.leaf: str | None = None
        """Id of the entry the next ``say`` continues from (None: a new root)."""

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def path(self) -> Path:
        return self.dir.path

    # the conversation
    @_fixture_write
    def say(self, role: str, content: str = "", *, tool_calls: Iterable[ToolCall | dict] = (),
            tool_call_id: str | None = None, name: str | None = None, node: str | None = None,
            created_at: datetime | None = None) -> Entry:
        """Append a message as a child of the current leaf; it becomes the new leaf."""
        entry = Entry(id=new_id(), parent_id=self.leaf, role=role, content=content,
                      tool_calls=[c if isinstance(c, ToolCall) else ToolCall(**c) for c in tool_calls],
                      tool_call_id=tool_call_id, name=name, node=node,
                      created_at=created_at or now())
        self.dir.entries.append(entry)
        self.entries.append(entry)
        self.leaf = entry.id
        return entry

    def conversation(self, *messages: tuple[str, str]) -> list[Entry]:
        """``say`` each ``(role, content)`` in turn."""
        return [self.say(role, content) for role, content in messages]

    def fork(self, at: Entry | str | None) -> None:
        """Make the next ``say`` a child of ``at`` (an entry or its id; None for a new root)."""
        self.leaf = at.id if isinstance(at, Entry) else at

    def path_length(self, leaf: str | None = None) -> int:
        leaf = self.leaf if leaf is None else leaf
        return len(self.dir.entries.path_to(leaf)) if leaf else 0

    # checkpoints
    @_fixture_write
    def checkpoint(self, position: str = "agent", *, reason: str = "node_end",
                   state: State | dict[str, Any] | None = None, awaiting_human: bool = False,
                   human_request: HumanRequest | dict[str, Any] | None = None,
                   node_done: bool = True, leaf: str | None = None, **fields: Any) -> Checkpoint:
        """Write the next checkpoint of this task, pointing at the current leaf (or ``leaf``).

        ``state`` gives the State's other fields (messages are never stored in a
        checkpoint); ``fields`` are any other Checkpoint fields.
        """
        if isinstance(state, dict):
            state = State(**state)
        if isinstance(human_request, dict):
            human_request = HumanRequest(**human_request)
        leaf = self.leaf if leaf is None else leaf
        self.dir.sync()
        cp = Checkpoint(
            checkpoint_id=new_id(), task_id=self.id, sequence=self.dir.checkpoints.next_number(),
            parent_id=self.checkpoints[-1].checkpoint_id if self.checkpoints else None,
            position=position, reason=reason, state=state or State(), awaiting_human=awaiting_human,
            human_request=human_request, leaf_entry_id=leaf, entry_count=self.path_length(leaf),
            node_done=node_done, **fields)
        cp = self.dir.checkpoints.write(cp)
        self.checkpoints.append(cp)
        return cp

    # events
    @_fixture_write
    def event(self, type: str, node: str | None = None, **fields: Any) -> Event:
        """Append an event with the next ``seq``."""
        ev = Event(seq=len(self.events) + 1, ts=now().isoformat(), type=type, node=node, **fields)
        self.dir.append_event(ev)
        self.events.append(ev)
        return ev

    # task.json
    @_fixture_write
    def update(self, **fields: Any) -> Task:
        """Change task fields (``status="failed"``...) and rewrite task.json."""
        task = Task.model_validate({**self.task.model_dump(), **fields})
        self.task = self.dir.save_task(task)
        return self.task

    @_fixture_write
    def close(self) -> "TaskBuilder":
        """Flush and close the appenders (entries, events)."""
        self.dir.close()
        return self

    # paths of the files on disk, for tests that damage them
    def checkpoint_file(self, sequence: int) -> Path:
        return self.dir.checkpoints.path(sequence)

    @property
    def entries_file(self) -> Path:
        return self.dir.entries.path

    @property
    def events_file(self) -> Path:
        return self.dir.events_file


class HomeBuilder:
    """A magent home (default: the test's ``$MAGENT_HOME``) created through the store API."""

    def __init__(self, root: Path | None = None, *, init: bool = False, durable: bool = False):
        """``init`` also writes the default config files; ``durable`` keeps the store's fsyncs."""
        self.durable = durable
        self.store = Store(root).ensure()
        self.root = self.store.root
        self.tasks: list[TaskBuilder] = []
        if init:
            from magent.store.home import init_home

            with _building(durable):
                init_home(self.root)

    @_fixture_write
    def task(self, description: str = "a test task", *, status: str | TaskStatus = "completed",
             workflow: str = "demo", agent: str = "assistant", task_id: str | None = None,
             created_at: datetime | None = None, tags: Iterable[str] = (), **fields: Any) -> TaskBuilder:
        """Create a task directory and its task.json. ``fields`` are any other Task fields."""
        created_at = created_at or now()
        task = Task(id=task_id or new_id(), description=description, status=TaskStatus(status),
                    assigned_agent=agent, workflow=workflow, created_at=created_at,
                    tags=list(tags), **fields)
        builder = TaskBuilder(self, self.store.create_task(task), task)
        builder.task = builder.dir.load_task()
        self.tasks.append(builder)
        return builder

    def close(self) -> None:
        for t in self.tasks:
            t.close()


def validated_tasks(status: TaskStatus | None = None) -> list[Task]:
    """Every task through the full models (``TaskDir.shown_task``), newest first: what the fast
    listing must agree with."""
    store = Store()
    tasks = [TaskDir(store, task_id).shown_task() for task_id in store.task_ids()]
    tasks = [t for t in tasks if status is None or t.status == status]
    return sorted(tasks, key=lambda t: t.created_at, reverse=True)


@dataclass
class StandardHome:
    """A small home with one task of each kind the read commands must show.

    - ``completed``: a workflow that ran to the end, 3 checkpoints, a tool call, usage.
    - ``failed``: stopped with an error after one checkpoint.
    - ``paused``: awaiting a human at a ``review`` node, with the question.
    - ``forked``: a conversation tree with two children of one entry; checkpoint 1
      is on the first branch, checkpoint 2 on the second.
    - ``empty``: pending, no checkpoints, no entries.
    """

    home: HomeBuilder
    completed: TaskBuilder
    failed: TaskBuilder
    paused: TaskBuilder
    forked: TaskBuilder
    empty: TaskBuilder
    all: list[TaskBuilder] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.home.root


def standard_home(root: Path | None = None, *, init: bool = True) -> StandardHome:
    """Build the ``StandardHome`` under ``root`` (default ``$MAGENT_HOME``); oldest task first."""
    home = HomeBuilder(root, init=init)
    base = now() - timedelta(hours=5)

    completed = home.task("Summarise the quarterly report", workflow="report", agent="writer",
                          created_at=base, tags=["critical"],
                          usage=Usage(input=120, output=45, cost=0.0012, calls=3))
    completed.say("system", "You are a careful writer.")
    completed.say("user", "Summarise the quarterly report")
    completed.checkpoint("writer", reason="run_start", node_done=False,
                         state={"current_agent": "writer"})
    completed.say("assistant", "", tool_calls=[{"id": "call_1", "server": "kv", "tool": "get",
                                                 "arguments": {"key": "report"}}])
    completed.say("tool", '{"value": "revenue up 4%"}', tool_call_id="call_1", name="kv.get")
    completed.checkpoint("writer", reason="llm_turn", node_done=False,
                         state={"current_agent": "writer"})
    completed.say("assistant", "Revenue rose 4% this quarter.")
    completed.checkpoint("END", reason="finish", state={"current_agent": "writer",
                                                        "routing_key": "pass",
                                                        "metadata": {"score": 0.9}})
    completed.event("run_started")
    completed.event("run_finished", status="completed")
    completed.update(status="completed", result="Revenue rose 4% this quarter.",
                     started_at=base, completed_at=base + timedelta(minutes=1))

    failed = home.task("Fetch the weather", status="failed", created_at=base + timedelta(hours=1),
                       error="LLM call failed: rate limited [429] after 3 retries")
    failed.say("user", "Fetch the weather")
    failed.checkpoint("fetch", reason="run_start", node_done=False)

    paused = home.task("Draft a press release", status="awaiting_human", workflow="review_loop",
                       created_at=base + timedelta(hours=2))
    paused.conversation(("user", "Draft a press release"), ("assistant", "Draft: magent 1.0 is out."))
    paused.checkpoint("draft", reason="node_end")
    paused.checkpoint("review", reason="pause", awaiting_human=True, node_done=False,
                      human_request={"kind": "human_node", "node": "review",
                                     "question": "Publish this draft?",
                                     "output": "Draft: magent 1.0 is out."})

    forked = home.task("Pick a name", created_at=base + timedelta(hours=3))
    first = forked.say("user", "Pick a name for the project")
    forked.checkpoint("namer", reason="run_start", node_done=False)
    forked.say("assistant", "magent")
    forked.checkpoint("END", reason="finish")
    forked.fork(first)
    forked.say("assistant", "agentctl")
    forked.checkpoint("END", reason="finish")

    empty = home.task("Not started yet", status="pending", created_at=base + timedelta(hours=4))

    home.close()
    return StandardHome(home=home, completed=completed, failed=failed, paused=paused,
                        forked=forked, empty=empty,
                        all=[completed, failed, paused, forked, empty])


def populate(root: Path | None = None, count: int = 1000, *, checkpoints: int = 2,
             messages_per_checkpoint: int = 2, config_snapshot: dict[str, Any] | None = None,
             durable: bool = False) -> list[str]:
    """Create ``count`` tasks (statuses cycling), each with a short conversation and checkpoints.

    ``config_snapshot`` is stored in every task.json, as a run stores its frozen
    workflow and agents. For benchmarks and listing tests; returns the task ids.
    """
    home = HomeBuilder(root, durable=durable)
    statuses = ["completed", "failed", "awaiting_human", "completed", "cancelled", "pending"]
    start = now() - timedelta(days=1)
    ids: list[str] = []
    for n in range(count):
        t = home.task(f"task number {n}", status=statuses[n % len(statuses)],
                      created_at=start + timedelta(seconds=n), tags=["bench"],
                      config_snapshot=config_snapshot or {})
        for c in range(checkpoints):
            for m in range(messages_per_checkpoint):
                t.say("user" if m % 2 == 0 else "assistant", f"message {c}.{m} of task {n}")
            t.checkpoint("END" if c == checkpoints - 1 else "agent")
        t.close()
        ids.append(t.id)
    home.tasks.clear()
    return ids


def snapshot_tree(root: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every path under ``root`` → (mode, size, mtime_ns, sha256 of content; '' for dirs).

    Compare two snapshots to prove a command changed nothing on disk.
    """
    out: dict[str, tuple[int, int, int, str]] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            digest = ""
            if p.is_file() and not p.is_symlink():
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    out["."] = (root.stat().st_mode, 0, root.stat().st_mtime_ns, "")
    return out


def utc(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=timezone.utc)


@contextmanager
def unwritable(path: Path) -> Iterator[Path]:
    """Make the directory ``path`` (created if missing) unwritable for this process, then restore.

    A normal user gets mode 0500. Root ignores modes, so for root the directory is
    made immutable (``chattr +i``), which binds root too.
    """
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o500)
        try:
            yield path
        finally:
            path.chmod(mode)
        return
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        # No way to take write access away from root here (no CAP_LINUX_IMMUTABLE).
        pytest.skip(f"running as root and `chattr +i` failed: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.fixture
def unwritable_home(magent_home: Path) -> Iterator[Path]:
    """``$MAGENT_HOME`` as an existing directory this process cannot write into.

    Import it into a test module (``from support.homes import unwritable_home``).
    """
    with unwritable(magent_home) as path:
        yield path

"""Reading a task's trace as ``magent trace`` shows it: ``magent.read_trace``, ``trace_html``,
``export_trace`` and ``follow_trace``. Like every reader here they load neither litellm nor mcp."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from magent import paths

if TYPE_CHECKING:
    from magent.api.reading import PathLike
    from magent.models import Event
    from magent.store.tasks import TaskDir
    from magent.trace.load import TraceView

StyledLine = list[tuple[str, "str | None"]]
"""One line of ``magent trace``'s text as ``(text, rich style or None)`` pieces."""


@dataclass(frozen=True)
class StepRequests:
    """What the model calls of one step sent (``TraceReading.requests``)."""

    number: int
    """The step (1-based, as ``magent trace`` numbers it)."""
    calls: list[dict[str, Any]]
    """One record per model call: ``call``/``of``, ``agent``, ``rail`` (a guardrail judge's
    rail), ``session``, ``attempt``/``error`` (a failed attempt), ``answered_by``, and the
    request as sent: ``system``, ``messages``, ``tools``, ``parameters`` (or a ``note`` saying
    why it was not recorded)."""
    problems: list[str] = field(default_factory=list)
    """What could not be read on the way (a damaged requests.jsonl line...)."""

    def lines(self) -> list[StyledLine]:
        """The text ``magent trace ID --step N --request`` prints."""
        from magent.api.requestview import request_lines

        out: list[StyledLine] = request_lines(self.number, self.calls)
        return out


@dataclass(frozen=True)
class TraceReading:
    """A task's trace as ``magent trace ID`` reads it; ``notes`` says what was missing or damaged."""

    task_id: str
    """The task's full id."""
    status: str
    """The task's status as shown (a run whose process died is ``interrupted``)."""
    live: bool
    """A process is running the task right now."""
    source: str
    """Where the steps came from: ``trace.json``, ``events.jsonl`` or ``nothing``."""
    notes: list[str]
    """One line per file that was missing, stale or damaged (``magent trace`` warns with them)."""
    _view: "TraceView" = field(repr=False, compare=False)
    _home: Path = field(repr=False, compare=False)

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The numbered steps (step N is ``steps[N - 1]``), as ``magent trace ID --json`` has them."""
        return self._view.steps

    @property
    def sessions(self) -> dict[str, dict[str, Any]]:
        """The task's sub-agent sessions (branches, map items, subtasks...) by id."""
        found: dict[str, dict[str, Any]] = self._view.doc.get("sub_agent_sessions") or {}
        return found

    def tree(self, *, show_all: bool = False, session: str | None = None) -> list[StyledLine]:
        """The step tree ``magent trace ID`` prints (``show_all``: ``--all``, ``session``:
        ``--session S``, an id, its first characters or a key like ``subtask:facts#0``).
        An unknown session is a ``UsageError``."""
        from magent.trace.view import tree_lines

        out: list[StyledLine] = tree_lines(self._view, show_all=show_all, session=session)
        return out

    def text(self, *, show_all: bool = False, session: str | None = None) -> str:
        """``tree()`` as plain text, the way ``magent trace ID`` prints it into a file."""
        return "".join("".join(text for text, _ in line) + "\n"
                       for line in self.tree(show_all=show_all, session=session))

    def step(self, number: int) -> dict[str, Any]:
        """Step ``number`` whole (``--step N --json``); no such step is a ``UsageError``."""
        from magent.trace.detail import step_detail

        detail: dict[str, Any] = step_detail(self._full(), number)
        return detail

    def step_lines(self, number: int) -> list[StyledLine]:
        """The text ``magent trace ID --step N`` prints."""
        from magent.trace.detail import step_lines

        out: list[StyledLine] = step_lines(self.step(number))
        return out

    def requests(self, number: int) -> StepRequests:
        """The exact request of each model call of step ``number`` (``--step N --request``)."""
        from magent.api.requestview import step_requests

        with paths.using_home(self._home):
            calls, problems = step_requests(self._full(), number)
        return StepRequests(number=number, calls=calls, problems=problems)

    def as_dict(self, *, session: str | None = None) -> dict[str, Any]:
        """The TraceLog as ``magent trace ID --json`` prints it; with ``session``, only that session
        and those it opened (``--session S --json``)."""
        return self.log(session=session)[0]

    def log(self, *, session: str | None = None) -> tuple[dict[str, Any], str | None]:
        """``(as_dict(), None)``, or ``(the trace as it is, why it is not a valid TraceLog)``."""
        from magent.trace.load import as_tracelog

        trace_log, problem = as_tracelog(self._view)
        doc: dict[str, Any] = trace_log if isinstance(trace_log, dict) else trace_log.model_dump(mode="json")
        if session is not None:
            from magent.trace.sessionview import only_sessions

            doc = only_sessions(doc, session)
        return doc, problem

    def _full(self) -> "TraceView":
        """The view built from the events (what ``step``/``requests`` need), read once."""
        if self._view.built is not None:
            return self._view
        cached = self.__dict__.get("_events_view")
        if cached is None:
            from magent.trace.load import load_view

            with paths.using_home(self._home):
                cached = load_view(self._view.task_dir, need_events=True)
            object.__setattr__(self, "_events_view", cached)
        view: TraceView = cached
        return view


def read_trace(task_id: str, *, steps_in_full: bool = False, home: PathLike | None = None) -> TraceReading:
    """A task's trace (any id or unique prefix); ``steps_in_full`` builds it from ``events.jsonl``
    at once. An unknown id is a ``TaskNotFoundError``."""
    from magent.store.tasks import Store
    from magent.trace.load import load_view

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        view = load_view(task_dir, need_events=steps_in_full)
        return TraceReading(task_id=task_dir.id, status=view.status, live=view.live, source=view.source,
                            notes=list(view.notes), _view=view, _home=paths.home())


@dataclass(frozen=True)
class HtmlReport:
    """The page ``magent trace ID --html`` writes (``magent.trace_html``)."""

    task_id: str
    page: str
    """The whole self-contained HTML page."""
    path: Path | None
    """Where it was written (None: only returned)."""
    steps: int
    bytes: int
    notes: list[str]
    """Files that were missing or damaged on the way."""
    live: bool
    """The task is still running: the page shows its steps so far."""


def trace_html(task_id: str, path: PathLike | None = None, *, home: PathLike | None = None) -> HtmlReport:
    """The task's one-page HTML report, written atomically to ``path`` unless it is None; a task with
    nothing to show yet is a ``TaskStateError``."""
    from magent.store.tasks import Store
    from magent.trace.html import write_report

    target = None if path is None else Path(os.fspath(path))
    with paths.using_home(home):
        task_dir = Store().task(task_id)
        written = write_report(task_dir, target)
    return HtmlReport(task_id=task_dir.id, page=written.page, path=target, steps=written.steps,
                      bytes=written.bytes, notes=list(written.notes), live=written.live)


@dataclass(frozen=True)
class TraceExport:
    """What ``magent.export_trace`` sent."""

    task_id: str
    url: str
    """The OTLP/HTTP traces URL it was sent to."""
    spans: int
    trace_id: str
    """The OpenTelemetry trace id (32 hex digits)."""


def export_trace(task_id: str, url: str, *, home: PathLike | None = None) -> TraceExport:
    """Send a stopped task's trace as OpenTelemetry spans to an OTLP/HTTP endpoint. Needs the
    ``otel`` extra (else ``UsageError``); ``TaskStateError`` for a running task, ``ExportError``
    when the endpoint refuses."""
    from magent.errors import TaskStateError, UsageError
    from magent.store.tasks import Store
    from magent.trace.load import read_task
    from magent.trace.telemetry import OTLPTarget, traces_url

    target = OTLPTarget(url=traces_url(url), source="--otlp")
    with paths.using_home(home):
        task_dir = Store().task(task_id)
        task = read_task(task_dir, [])
        if task is not None and task.status == "running" and not task_dir.lock().is_free():
            raise TaskStateError(f"task {task_dir.id[:8]} is still running: export it once it stops "
                                 "(or set OTEL_EXPORTER_OTLP_ENDPOINT and runs export as they go)")
        if not task_dir.events_file.exists():
            raise TaskStateError(f"task {task_dir.id[:8]} has no events.jsonl: nothing to export")
        try:
            from magent.trace.otel import export_task
        except ImportError:
            raise UsageError("--otlp needs the OpenTelemetry SDK: pip install 'magent-runner[otel]'") from None
        sent = export_task(task_dir, target)
    return TraceExport(task_id=task_dir.id, url=target.url, spans=int(sent["spans"]), trace_id=str(sent["trace_id"]))


def follow_trace(task_id: str, on_event: Callable[["Event"], None], *,
                 on_start: Callable[[str], None] | None = None,
                 on_task: Callable[[str], None] | None = None, home: PathLike | None = None) -> str:
    """Call ``on_event`` with each event of the task as it is written, history first, until the
    run stops; ``on_task`` gets the full id, ``on_start`` the header lines. Returns why it stopped."""
    from magent.store.tasks import Store
    from magent.trace.follow import follow

    with paths.using_home(home):
        task_dir: TaskDir = Store().task(task_id)
    if on_task is not None:
        on_task(task_dir.id)
    return follow(task_dir, on_event, say=on_start)

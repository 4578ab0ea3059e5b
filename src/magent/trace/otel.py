"""Sending spans over OTLP/HTTP with the OpenTelemetry SDK (the optional ``otel`` extra).

The spans of ``trace.spans`` become the SDK's ``ReadableSpan`` and its exporter sends them,
honouring ``OTEL_EXPORTER_OTLP_*`` and retrying until ``DEFAULT_TIMEOUT``. A live run is exported
by a process of its own (``trace.otellive``), so the run never waits for the network."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from magent.trace.spans import SpanBuilder, SpanData, trace_id_of
from magent.trace.telemetry import OTLPTarget

if TYPE_CHECKING:
    from magent.store.tasks import TaskDir

BATCH = 512
CLOSE_WAIT = 3.0
"""Seconds a finishing run gives its last spans to reach a healthy endpoint."""
CLOSE_WAIT_FAILING = 0.5
"""...and to one that has already failed."""
_LOGGERS = ("opentelemetry.exporter.otlp", "opentelemetry.sdk._shared_internal", "opentelemetry.sdk.trace")


def _resource() -> Resource:
    from magent.version import __version__

    # Resource.create adds OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES when set.
    return Resource.create({"service.name": "magent", "service.version": __version__})


def _scope() -> InstrumentationScope:
    from magent.version import __version__

    return InstrumentationScope("magent", __version__)


def to_sdk(data: SpanData, trace_id: int, resource: Resource, scope: InstrumentationScope) -> ReadableSpan:
    flags = TraceFlags(TraceFlags.SAMPLED)
    context = SpanContext(trace_id, data.span_id, is_remote=False, trace_flags=flags)
    parent = SpanContext(trace_id, data.parent_id, is_remote=False, trace_flags=flags) if data.parent_id else None
    status = Status(StatusCode.ERROR, data.error[:500]) if data.error else Status(StatusCode.UNSET)
    return ReadableSpan(
        name=data.name, context=context, parent=parent, resource=resource, attributes=data.attributes,
        events=[Event(name, attributes, timestamp) for name, timestamp, attributes in data.events],
        kind=SpanKind.CLIENT if data.kind == "client" else SpanKind.INTERNAL, status=status,
        start_time=data.start_ns, end_time=data.end_ns, instrumentation_scope=scope)


class _Notes(logging.Handler):
    """Keeps what the SDK's exporter logs (instead of letting it print), to say why an export failed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a malformed record must not break an export
            self.messages.append(record.getMessage())

    def reason(self) -> str:
        """The last failure in a few words: connection refused, a timeout, an HTTP status..."""
        text = "\n".join(self.messages)
        code = re.findall(r"code: (\d{3}), reason: (.*)", text)
        if code:
            return f"HTTP {code[-1][0]} {code[-1][1]}".strip()
        found = re.findall(r"Transient error (.*?) encountered", text, re.S)
        detail = found[-1] if found else (self.messages[-1] if self.messages else "no answer")
        for pattern, said in ((r"Connection refused", "connection refused"),
                              (r"Name or service not known|nodename nor servname|getaddrinfo failed",
                               "unknown host"),
                              (r"timed out|Timeout", "timed out"),
                              (r"SSL|certificate", "TLS error")):
            if re.search(pattern, detail, re.I):
                return said
        return " ".join(detail.split())[:160]

    def tries(self) -> int:
        return 1 + sum(1 for m in self.messages if m.startswith("Transient error"))


class _Quiet:
    """Routes the SDK's log records to a ``_Notes`` instead of stderr while it is installed."""

    def __init__(self, notes: _Notes):
        self.notes = notes
        self.saved: list[tuple[logging.Logger, bool]] = []

    def __enter__(self) -> _Notes:
        for name in _LOGGERS:
            logger = logging.getLogger(name)
            self.saved.append((logger, logger.propagate))
            logger.addHandler(self.notes)
            logger.propagate = False
        return self.notes

    def __exit__(self, *exc: Any) -> None:
        for logger, propagate in self.saved:
            logger.removeHandler(self.notes)
            logger.propagate = propagate


def _exporter(target: OTLPTarget) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=target.url, headers=target.headers, timeout=target.timeout)


def export_events(task_id: str, events: Iterable[dict[str, Any]], target: OTLPTarget) -> dict[str, Any]:
    """Send the spans of a finished task's events; returns ``{"spans", "trace_id"}``, or raises
    ``ExportError`` when the endpoint does not take them."""
    from magent.errors import ExportError

    builder = SpanBuilder(task_id)
    spans: list[SpanData] = []
    for ev in events:
        spans.extend(builder.feed(ev))
    spans.extend(builder.close())
    trace_id, resource, scope = trace_id_of(task_id), _resource(), _scope()
    ready = [to_sdk(s, trace_id, resource, scope) for s in spans]
    exporter = _exporter(target)
    sent = 0
    started = time.monotonic()
    with _Quiet(_Notes()) as notes:
        try:
            for i in range(0, len(ready), BATCH):
                batch = ready[i:i + BATCH]
                if exporter.export(batch) is not SpanExportResult.SUCCESS:
                    took = time.monotonic() - started
                    already = f"; {sent} of {len(ready)} spans had been sent" if sent else "; nothing was sent"
                    raise ExportError(f"could not export task {task_id[:8]} to {target.url}: {notes.reason()} "
                                      f"(gave up after {notes.tries()} tries in {took:.1f} s){already}")
                sent += len(batch)
        finally:
            exporter.shutdown()
    return {"spans": sent, "trace_id": f"{trace_id:032x}"}


def export_task(task_dir: "TaskDir", target: OTLPTarget) -> dict[str, Any]:
    """Export a finished task (its ``events.jsonl``)."""
    from magent.store.events import unpack_all
    from magent.store.files import read_jsonl

    return export_events(task_dir.id, unpack_all(read_jsonl(task_dir.events_file)), target)


class _Counting(SpanExporter):
    """The OTLP exporter, counting what got through and keeping the last reason it did not."""

    def __init__(self, inner: OTLPSpanExporter, notes: _Notes):
        self.inner = inner
        self.notes = notes
        self.sent = 0
        self.failed = 0
        self.stopped = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # the run must never see an export problem
            self.notes.messages.append(f"{exc.__class__.__name__}: {exc}")
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        if not self.stopped:  # called by the processor, and by LiveExport.close when it runs late
            self.stopped = True
            self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class LiveExport:
    """Spans of a running task, in the exporter process (``trace.otellive``): ``feed`` turns an
    event into spans for the SDK's batch processor; ``close`` gives the last a bounded time and
    says what did not get through."""

    def __init__(self, task_id: str, target: OTLPTarget):
        self.task_id = task_id
        self.target = target
        self.builder = SpanBuilder(task_id)
        self.trace_id, self.resource, self.scope = trace_id_of(task_id), _resource(), _scope()
        self.notes = _Notes()
        self.quiet = _Quiet(self.notes)
        self.quiet.__enter__()
        self.exporter = _Counting(_exporter(target), self.notes)
        self.processor = BatchSpanProcessor(self.exporter, max_queue_size=65_536, schedule_delay_millis=1000,
                                            max_export_batch_size=BATCH)
        self.made = 0

    def feed(self, event: dict[str, Any]) -> None:
        """Take one event as it was written (masked); never raises."""
        try:
            self._send(self.builder.feed(event))
        except Exception as exc:  # telemetry never fails a run
            self.notes.messages.append(f"{exc.__class__.__name__}: {exc}")

    def _send(self, spans: list[SpanData]) -> None:
        for span in spans:
            self.processor.on_end(to_sdk(span, self.trace_id, self.resource, self.scope))
            self.made += 1

    def close(self) -> str | None:
        """Send what is left (bounded); returns the warning to give when spans were lost."""
        try:
            self._send(self.builder.close())
            # The processor's shutdown drains the queue, waiting as long as the exporter takes; it
            # runs aside so this waits at most ``wait``, then the exporter is stopped, which ends
            # its retries.
            wait = CLOSE_WAIT_FAILING if self.exporter.failed else CLOSE_WAIT
            closer = threading.Thread(target=self.processor.shutdown, name="magent-otel-close", daemon=True)
            closer.start()
            closer.join(wait)
            if closer.is_alive():
                self.exporter.shutdown()
                closer.join(0.5)
        except Exception as exc:  # telemetry never fails a run
            self.notes.messages.append(f"{exc.__class__.__name__}: {exc}")
        lost = self.made - self.exporter.sent
        if lost <= 0:
            return None
        return (f"OpenTelemetry: {lost} of {self.made} spans did not reach {self.target.url} "
                f"({self.notes.reason()}); send them again with magent trace {self.task_id[:8]} "
                f"--otlp {self.target.url}")

"""The exporter process of a live run: ``python -m magent.trace.otellive``.

The run writes one JSON line to its stdin (task, endpoint with headers, which so never reach
argv, the environment or a file; events file; last sequence before this run) and the process
follows the masked events as they are written, so a live export and ``--otlp`` give the same
spans. The run's end or death (``kill -9`` too) closes stdin: it ends the open spans, flushes
within a bound, prints ``{"made", "sent", "warning"}`` and exits."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading

POLL = 0.2
"""Seconds between reads of events.jsonl while the run goes on."""


def serve(config: dict, stdin_closed: threading.Event) -> dict:
    from magent.trace.follow import Tail
    from magent.trace.otel import LiveExport
    from magent.trace.telemetry import OTLPTarget

    target = OTLPTarget(url=config["url"], headers=config.get("headers"), timeout=float(config["timeout"]))
    export = LiveExport(config["task_id"], target)
    before = int(config.get("after_seq") or 0)
    tail = Tail(config["events_file"], events=True)
    while True:
        ended = stdin_closed.wait(POLL)
        for event in tail.read():  # after the run closed stdin, this read gets its last events
            if int(event.get("seq") or 0) <= before:
                export.builder.remember(event)
            else:
                export.feed(event)
        if ended:
            break
    warning = export.close()
    return {"made": export.made, "sent": export.exporter.sent, "warning": warning}


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the run; this ends when it does
    try:
        config = json.loads(sys.stdin.readline())
    except ValueError:  # the run died before it said what to export
        return
    stdin_closed = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stdin_closed.set()

    threading.Thread(target=wait_for_eof, name="magent-otel-stdin", daemon=True).start()
    result = serve(config, stdin_closed)
    with contextlib.suppress(OSError):  # the run is gone: nobody to tell
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

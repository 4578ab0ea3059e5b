"""A real OTLP/HTTP trace receiver on 127.0.0.1, decoding with OpenTelemetry's own protobuf definitions.

The OpenTelemetry Collector is not on the package registries, so tests run this: an
HTTP server that accepts ``POST /v1/traces`` (``application/x-protobuf``, gzip or
not), decodes each ``ExportTraceServiceRequest`` with the ``opentelemetry-proto``
package and keeps the spans as plain dicts. It can be told to answer the next N
requests with an error, to test retries.

    with Receiver() as receiver:     # receiver.url is http://127.0.0.1:PORT
        ...
        spans = receiver.spans

Run as a script (``python tests/support/otlp_receiver.py``) it prints its URL, serves
until interrupted (SIGINT), then prints how many spans it got (the benchmark uses it).
"""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def decode(body: bytes) -> list[dict[str, Any]]:
    """The spans of one ``ExportTraceServiceRequest`` as dicts."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append({
                    "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex() or None, "name": s.name,
                    "kind": KINDS.get(s.kind, str(s.kind)), "start": s.start_time_unix_nano,
                    "end": s.end_time_unix_nano, "attributes": _attrs(s.attributes),
                    "events": [{"name": e.name, "time": e.time_unix_nano, "attributes": _attrs(e.attributes)}
                               for e in s.events],
                    "status": {"code": s.status.code, "message": s.status.message},
                    "resource": resource, "scope": ss.scope.name})
    return spans


class Receiver:
    def __init__(self, fail_next: int = 0, fail_status: int = 503):
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self.fail_next = fail_next
        self.fail_status = fail_status
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.requests += 1
                    receiver.paths.append(self.path)
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    failing = receiver.fail_next > 0
                    if failing:
                        receiver.fail_next -= 1
                if failing:
                    self.send_response(receiver.fail_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver._lock:
                    receiver.spans.extend(spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


if __name__ == "__main__":
    import signal
    import time

    # Started from a background job, SIGINT arrives ignored: stopping on it is the contract here.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with Receiver() as r:
        print(r.url, flush=True)
        try:
            while True:
                time.sleep(0.2)
        except KeyboardInterrupt:
            print(f"{len(r.spans)} spans in {r.requests} requests", flush=True)

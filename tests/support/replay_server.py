"""A local HTTP server that replays real recorded provider responses (127.0.0.1 only).

Fixtures live in ``tests/fixtures/providers/NAME.json``; each is a real recording (a VCR
cassette, an API reference's example, a capture from a local server) whose structure and
field set are kept as recorded, with names and texts adapted to the test. A fixture says
where it came from::

    {
      "source": "pydantic/pydantic-ai tests/models/cassettes/test_openai/x.yaml (commit abc...)",
      "adapted": "what was changed: the tool's name and arguments, the texts, the token counts",
      "interactions": [
        {"when": {"path": "/v1/chat/completions", "has": "stored city"},
         "status": 200, "headers": {"content-type": "text/event-stream"},
         "sse": [{"id": "chatcmpl-...", "choices": [...]}, "[DONE]"]}
      ]
    }

A response is one of ``"json"`` (a JSON body), ``"sse"`` (server-sent events: a dict is one
``data:`` line, ``{"event": NAME, "data": {...}}`` a named event as Anthropic sends them, a
string is sent as is after ``data: ``), ``"ndjson"`` (one JSON object a line, as Ollama's
``/api/chat`` streams) or ``"text"`` (a raw body). ``"separator"`` overrides the blank line
between events (a recording made with ``\\r\\n\\r\\n`` keeps it). ``"status"`` defaults to 200
and ``"headers"`` to the content type of the kind.

Selecting a reply: ``server.load("openai_tool_stream")`` queues the fixture's interactions.
A request gets the first queued interaction whose ``when`` fits it (``path``: the request's
path without the query must end with it; ``has`` / ``lacks``: text the request body must or
must not contain); a served interaction leaves the queue unless it says ``"repeat": true``.
A request nothing fits gets HTTP 400 naming what arrived, which magent does not retry, so a
test that under-queues fails loudly instead of hanging.

To add a fixture: copy the recorded response into a new JSON file in the form above, keep
every field the provider sent (ids, ``usage`` blocks, ``null`` fields, event names), change
only names and texts, and say so in ``adapted``; cite the recording in ``source``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers"

_KINDS = {"json": "application/json", "sse": "text/event-stream", "ndjson": "application/x-ndjson",
          "text": "text/plain"}


def fixture(name: str) -> dict[str, Any]:
    """The fixture ``name`` (without ``.json``) as stored."""
    doc = json.loads((FIXTURES / f"{name}.json").read_text())
    assert doc.get("source"), f"fixture {name} does not cite its source"
    return doc


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    """With the query string."""
    headers: dict[str, str]
    """Names in lower case."""
    text: str

    @property
    def body(self) -> Any:
        try:
            return json.loads(self.text)
        except ValueError:
            return None


class ReplayServer:
    """Serves queued recorded interactions; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, *names: str) -> None:
        self._queue: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.received: list[Request] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        name="replay-server", daemon=True)
        for name in names:
            self.load(name)

    def load(self, name: str) -> "ReplayServer":
        """Queue the interactions of fixture ``name``."""
        return self.add(*fixture(name)["interactions"])

    def add(self, *interactions: dict[str, Any]) -> "ReplayServer":
        with self._lock:
            self._queue.extend(interactions)
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(1 for i in self._queue if not i.get("repeat"))

    def __enter__(self) -> "ReplayServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def take(self, request: Request) -> dict[str, Any] | None:
        with self._lock:
            self.received.append(request)
            for i, interaction in enumerate(self._queue):
                if _fits(interaction.get("when") or {}, request):
                    if not interaction.get("repeat"):
                        del self._queue[i]
                    return interaction
        return None


def _fits(when: dict[str, Any], request: Request) -> bool:
    path = request.path.split("?", 1)[0]
    if "path" in when and not path.endswith(when["path"]):
        return False
    if "has" in when and when["has"] not in request.text:
        return False
    return not ("lacks" in when and when["lacks"] in request.text)


def _handler_for(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._answer("")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            self._answer(self.rfile.read(length).decode("utf-8", "replace"))

        def _answer(self, text: str) -> None:
            request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, text)
            interaction = server.take(request)
            if interaction is None:
                message = f"replay server: no recorded reply fits {self.command} {self.path}"
                self._send(400, {"content-type": "application/json"},
                           json.dumps({"error": {"message": message}}).encode())
                return
            kind = next(k for k in _KINDS if k in interaction)
            headers = {"content-type": _KINDS[kind], **(interaction.get("headers") or {})}
            status = int(interaction.get("status", 200))
            if kind in ("json", "text"):
                value = interaction[kind]
                self._send(status, headers, (value if kind == "text" else json.dumps(value)).encode())
                return
            self._stream(status, headers, _pieces(kind, interaction))

        def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, status: int, headers: dict[str, str], pieces: list[bytes]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

    return Handler


def _pieces(kind: str, interaction: dict[str, Any]) -> list[bytes]:
    """The body of a streamed reply, one write per event (or line)."""
    if kind == "ndjson":
        return [(json.dumps(line) + "\n").encode() for line in interaction["ndjson"]]
    gap = interaction.get("separator", "\n\n")
    out = []
    for event in interaction["sse"]:
        if isinstance(event, str):
            out.append(f"data: {event}{gap}".encode())
        elif set(event) == {"event", "data"}:
            out.append(f"event: {event['event']}\ndata: {json.dumps(event['data'])}{gap}".encode())
        else:
            out.append(f"data: {json.dumps(event)}{gap}".encode())
    return out

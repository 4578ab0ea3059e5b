"""A local OpenAI-compatible chat completions server for tests.

A real HTTP server on 127.0.0.1 (a free port, a background thread) that answers
``POST /v1/chat/completions``, streaming (SSE ``data:`` chunks, a final usage
chunk when ``stream_options.include_usage`` is set, ``data: [DONE]``) or not.
Tests queue what each request gets, in order, and read back what was sent::

    with OpenAIStub() as stub:
        stub.text("hello")
        stub.error(429, retry_after=1)
        stub.tool_call("kv__get", {"key": "a"})
        ...  # litellm model "openai/stub-model", api_base=stub.url, api_key="sk-test"
        assert stub.requests[0]["messages"][0]["role"] == "system"

A request that finds the queue empty gets HTTP 400 ("no response queued"), which
is not retried, so a test that under-queues fails loudly instead of hanging.

``POST /v1/embeddings`` answers every text with a deterministic vector: a bag of
its words hashed into ``embedding_dim`` buckets (so texts with the same words get
the same vector), unless ``embedding_overrides[text]`` gives one. Set
``embedding_status`` to an HTTP status to make every embedding request fail.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STUB_MODEL = "openai/stub-model"
"""A litellm model string to use against the stub (with ``api_base=stub.url``)."""
STUB_KEY = "sk-stub-not-a-real-key"


@dataclass
class Behaviour:
    """What the stub does with one request."""

    kind: str
    """text | tool_calls | error | hang | garbage | cut | broken | stall"""
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"name": ..., "arguments": <raw JSON text>}`` each."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    delay: float = 0.0
    usage: tuple[int, int] = (11, 7)
    """(prompt_tokens, completion_tokens) reported to the client."""
    with_ids: bool = True
    """False: tool calls come without ids (some local servers do that)."""
    number: int = 0
    """Which request (1-based) got this behaviour; tool-call ids are ``call_stub_<number>_<i>``."""


@dataclass
class Received:
    """One request as the stub saw it."""

    path: str
    headers: dict[str, str]
    """Names in lower case."""
    body: dict[str, Any] | None
    at: float
    """``time.monotonic()`` when it arrived."""

    def __getitem__(self, key: str) -> Any:
        return (self.body or {})[key]


class OpenAIStub:
    def __init__(self) -> None:
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.received: list[Received] = []
        self.embedding_dim = 32
        self.embedding_overrides: dict[str, list[float]] = {}
        self.embedding_status: int | None = None
        """When set, every embedding request gets this HTTP status (an error)."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        name="openai-stub", daemon=True)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "OpenAIStub":
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers that are hanging on purpose
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "OpenAIStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """Base URL to give litellm as ``api_base`` (ends in ``/v1``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the requests received so far, in order."""
        return [r.body or {} for r in self.received]

    # -- queueing behaviours ----------------------------------------------------------------
    def push(self, behaviour: Behaviour) -> "OpenAIStub":
        with self._lock:
            self._queue.append(behaviour)
        return self

    def text(self, content: str, *, usage: tuple[int, int] = (11, 7), delay: float = 0) -> "OpenAIStub":
        return self.push(Behaviour("text", content=content, usage=usage, delay=delay))

    def empty(self) -> "OpenAIStub":
        """A reply with no content and no tool calls."""
        return self.push(Behaviour("text", content="", usage=(11, 0)))

    def tool_call(self, name: str, arguments: dict[str, Any] | str, *, content: str = "",
                  more: list[tuple[str, dict[str, Any] | str]] = (),  # type: ignore[assignment]
                  with_ids: bool = True) -> "OpenAIStub":
        """A reply calling ``name``; ``arguments`` as a string is sent verbatim (invalid JSON)."""
        calls = [(name, arguments), *more]
        return self.push(Behaviour("tool_calls", content=content, with_ids=with_ids, tool_calls=[
            {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)} for n, a in calls]))

    def error(self, status: int, *, retry_after: float | None = None,
              message: str = "stub error") -> "OpenAIStub":
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        body = json.dumps({"error": {"message": message, "type": "stub_error", "code": str(status)}})
        return self.push(Behaviour("error", status=status, headers=headers, body=body))

    def hang(self, seconds: float) -> "OpenAIStub":
        """Accept the request and say nothing for ``seconds`` (or until the stub closes)."""
        return self.push(Behaviour("hang", delay=seconds))

    def garbage(self, body: str = "<html>this is not JSON</html>", *,
                content_type: str = "application/json") -> "OpenAIStub":
        """HTTP 200 with ``body`` (not a completion), streaming or not."""
        return self.push(Behaviour("garbage", body=body, headers={"Content-Type": content_type}))

    def cut(self, content: str) -> "OpenAIStub":
        """Stream ``content``, then close the connection: no finish reason, no ``[DONE]``."""
        return self.push(Behaviour("cut", content=content))

    def broken(self, content: str, bad: str = '{"id": "chatcmpl-stub", "choices": [{"delta": {"cont') -> "OpenAIStub":
        """Stream ``content``, then a ``data:`` line that is not JSON (``bad``), then ``[DONE]``."""
        return self.push(Behaviour("broken", content=content, body=bad))

    def stall(self, content: str, seconds: float) -> "OpenAIStub":
        """Stream the first word of ``content``, say nothing for ``seconds`` (or until the stub
        closes), then stream the rest and finish normally."""
        return self.push(Behaviour("stall", content=content, delay=seconds))

    def _next(self) -> Behaviour | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)


def _handler_for(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            stub.received.append(Received(self.path, headers, body, time.monotonic()))
            if self.path.rstrip("/").endswith("/embeddings"):
                return self._embeddings(body or {})
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            behaviour = stub._next()
            if behaviour is None:
                return self._send(400, {"error": {"message": "openai stub: no response queued",
                                                  "type": "invalid_request_error"}})
            if behaviour.delay and behaviour.kind not in ("hang", "stall"):
                stub._closing.wait(behaviour.delay)
            if behaviour.kind == "hang":
                stub._closing.wait(behaviour.delay)
                self.close_connection = True
                return
            if behaviour.kind == "error":
                return self._send(behaviour.status, behaviour.body, behaviour.headers)
            if behaviour.kind == "garbage":
                return self._send(200, behaviour.body, behaviour.headers)
            behaviour.number = len(stub.received)  # tool-call ids differ from reply to reply
            stream = bool((body or {}).get("stream"))
            model = (body or {}).get("model", "stub-model")
            if stream:
                include_usage = bool(((body or {}).get("stream_options") or {}).get("include_usage"))
                return self._stream(behaviour, model, include_usage)
            return self._send(200, _completion(behaviour, model))

        def _embeddings(self, body: dict[str, Any]) -> None:
            if stub.embedding_status is not None:
                return self._send(stub.embedding_status, {"error": {"message": "stub embedding error",
                                                                    "type": "stub_error"}})
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else list(texts or [])
            data = [{"object": "embedding", "index": i,
                     "embedding": stub.embedding_overrides.get(t) or bag_of_words(t, stub.embedding_dim)}
                    for i, t in enumerate(texts)]
            tokens = sum(len(str(t).split()) for t in texts)
            return self._send(200, {"object": "list", "data": data, "model": body.get("model", "stub-embed"),
                                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            headers = {"Content-Type": "application/json", **(headers or {})}
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, b: Behaviour, model: str, include_usage: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            chunks = _chunks(b, model, include_usage)
            if b.kind in ("cut", "broken"):  # the text only: no finish chunk, no usage
                chunks = [c for c in chunks if c.get("choices") and not c["choices"][0]["finish_reason"]]
            try:
                for i, chunk in enumerate(chunks):
                    if b.kind == "stall" and i == 2:  # after the role chunk and the first word
                        stub._closing.wait(b.delay)
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                if b.kind == "cut":
                    return  # the connection closes: a plain EOF in the middle of the answer
                if b.kind == "broken":
                    self.wfile.write(f"data: {b.body}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (it was cancelled): nothing more to say

    return Handler


def _base(model: str) -> dict[str, Any]:
    return {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model}


def _chunks(b: Behaviour, model: str, include_usage: bool) -> list[dict[str, Any]]:
    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**_base(model), "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [choice({"role": "assistant", "content": ""})]
    words = b.content.split(" ")
    for i, word in enumerate(words if b.content else []):
        out.append(choice({"content": word if i == 0 else " " + word}))
    for i, call in enumerate(b.tool_calls):
        call_id = f"call_stub_{b.number}_{i}" if b.with_ids else None
        out.append(choice({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                           "function": {"name": call["name"], "arguments": ""}}]}))
        text = call["arguments"]
        half = len(text) // 2  # arguments arrive in pieces, as real providers send them
        for piece in (text[:half], text[half:]):
            if piece:
                out.append(choice({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(choice({}, "tool_calls" if b.tool_calls else "stop"))
    if include_usage:
        p, c = b.usage
        out.append({**_base(model), "choices": [],
                    "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})
    return out


def _completion(b: Behaviour, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": b.content or None}
    if b.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_stub_{b.number}_{i}" if b.with_ids else None, "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for i, c in enumerate(b.tool_calls)]
    p, c = b.usage
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if b.tool_calls else "stop"}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}


def bag_of_words(text: str, dim: int) -> list[float]:
    """A unit vector of ``text``'s lowercase words hashed into ``dim`` buckets."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", str(text).lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def refused_url() -> str:
    """The URL of an OpenAI-compatible endpoint on 127.0.0.1 where nothing listens."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"

"""An OpenAI-compatible model server on 127.0.0.1 with a set latency, for throughput benchmarks.

Stateless: every ``POST .../chat/completions`` is answered after ``LATENCY`` seconds from what
the request carries. While the conversation holds fewer than ``TOOL_TURNS`` tool results, the
reply calls the request's first tool whose name ends in ``set`` (magent's ``kv__set``, a
LangGraph ``kv_set``) with ``{"key": "k<n>", "value": "v"}``; after that it answers ``done``.
Streaming (SSE, with a usage chunk when ``stream_options.include_usage`` is set) and plain JSON
both work, over HTTP/1.1 keep-alive. One asyncio loop, no threads: thousands of waiting
requests cost almost nothing, so the server's CPU stays out of the way of what is measured.

    python benchmarks/model_server.py LATENCY     # prints "http://127.0.0.1:PORT/v1", serves
                                                  # until its standard input closes
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

TOOL_TURNS = 2
USAGE = {"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51}


def reply_for(body: dict) -> tuple[str, list[dict]]:
    """(text, tool calls) for a request body."""
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    names = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
    setter = next((n for n in names if n.endswith("set")), None)
    if done >= TOOL_TURNS or setter is None:
        return "done", []
    call = {"id": f"call_{done}_{time.monotonic_ns() % 10**9}", "type": "function",
            "function": {"name": setter, "arguments": json.dumps({"key": f"k{done}", "value": "v"})}}
    return "", [call]


def render(body: dict) -> tuple[bytes, str]:
    """The response body and its content type."""
    text, calls = reply_for(body)
    model = body.get("model", "stub")
    base = {"id": "chatcmpl-bench", "created": int(time.time()), "model": model}
    finish = "tool_calls" if calls else "stop"
    if not body.get("stream"):
        message = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        doc = {**base, "object": "chat.completion", "usage": USAGE,
               "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
        return json.dumps(doc).encode(), "application/json"
    chunk = {**base, "object": "chat.completion.chunk"}
    delta: dict = {"role": "assistant", "content": text}
    if calls:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
    events = [{**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append({**chunk, "choices": [], "usage": USAGE})
    lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode(), "text/event-stream"


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            path = lines[0].split(" ")[1] if " " in lines[0] else ""
            if path.split("?")[0].endswith("/chat/completions"):
                await asyncio.sleep(latency)
                payload, kind = render(json.loads(body or b"{}"))
                status = "200 OK"
            else:
                payload, kind, status = b'{"error": {"message": "not served"}}', "application/json", "404 Not Found"
            writer.write(f"HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {len(payload)}\r\n"
                         f"connection: keep-alive\r\n\r\n".encode() + payload)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main(latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: serve_connection(r, w, latency), "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the benchmark closes our stdin
    server.close()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1])))

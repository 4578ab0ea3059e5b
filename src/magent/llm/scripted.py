"""The scripted model (seed 004's stubbed provider): replies played from a YAML file.

An agent with ``llm_config: {model: scripted, script: FILE}`` gets the entries of
FILE's ``responses:`` list in order, one per call::

    responses:
      - content: "Let me look that up."
        tool_calls:
          - name: kv.get
            arguments: {key: greeting}
      - content: "The greeting is hello."
        usage: {input: 120, output: 9}

``arguments`` may be a string; one that is not a JSON object simulates a model
sending garbage (the call comes back with ``arguments=None`` and the raw text).

The position in the script is not kept here: the client reads and advances
``cursors[agent]`` in a dict the engine owns and stores in every checkpoint, so
a resumed run continues with the next response, not the first. This module
never imports litellm.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from magent.config import load_file, validate
from magent.config.yamlfile import display_path
from magent.errors import ConfigError, LLMError
from magent.llm.base import AttemptSink, LLMRequest, LLMResponse, LLMToolCall, TokenSink
from magent.models.base import Model
from magent.models.state import Message

SCRIPTED = "scripted"
"""The ``llm_config.model`` value that selects this provider."""


class ScriptUsage(Model):
    """Token counts to report for one response instead of the estimate."""

    input: int = Field(ge=0)
    output: int = Field(ge=0)


class ScriptToolCall(Model):
    """A tool call the scripted model makes."""

    name: str = Field(min_length=1)
    """Full ``server.tool`` name (an unknown name is allowed: it tests the engine)."""
    arguments: Any = Field(default_factory=dict)
    """A mapping, or a string sent verbatim (a string that is not a JSON object is garbage)."""

    @field_validator("arguments")
    @classmethod
    def _mapping_or_text(cls, value: Any) -> Any:
        if not isinstance(value, (dict, str)):
            raise ValueError(f"must be a mapping or a string, got {value!r}")
        return value


class ScriptResponse(Model):
    """One reply of the scripted model."""

    content: str | None = None
    """Assistant text (``""`` for an empty reply)."""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    usage: ScriptUsage | None = None
    """Reported tokens; by default estimated as ceil(characters / 4)."""
    when: str | None = None
    """Play this response only in a conversation whose first message contains this text (a
    sub-agent, map item or subtask starts with its instruction): one script serves many
    sessions, each seeing the responses meant for it, in order."""
    quote_results: bool = False
    """``content`` quotes the tool results that came since the model last spoke, as a model
    would read them: ``{results[0][datetime]}`` is field ``datetime`` of the first (a JSON
    result; other text is ``{results[0]}``), with ``str.format``'s specs (``:.16``)."""

    @model_validator(mode="after")
    def _says_something(self) -> "ScriptResponse":
        if self.content is None and not self.tool_calls:
            raise ValueError("a response needs content and/or tool_calls "
                             "(write content: \"\" for an empty reply)")
        return self


class Script(Model):
    """A scripted model's file: the replies to play, in order."""

    responses: list[ScriptResponse] = Field(min_length=1)
    summaries: list[ScriptResponse] = Field(default_factory=list)
    """Replies to the summaries a context budget asks for (``summarize``/``hybrid``), in order;
    none left: a stand-in summary naming the first words of each message summarized."""


_parsed: dict[tuple[Path, int, int], Script] = {}


def load_script(path: Path) -> Script:
    """Parse and validate a script file. Raises ``ConfigError`` naming file:line:col and field.

    Parsed once per process (the run's check before it starts, and every session's client,
    read the same file): parsed again only when the file changed (its size or mtime).
    """
    try:
        info = path.stat()
        key = (path.resolve(), info.st_mtime_ns, info.st_size)
    except OSError:
        key = None  # let the loader say what is wrong
    if key is not None and key in _parsed:
        return _parsed[key]
    script = validate(load_file(path, cached=True), Script)
    if key is not None:
        _parsed[key] = script
    return script


def resolve_script(script: str | None, base_dir: Path, agent: str) -> Path:
    """The script file of ``agent``, relative to its agent file's directory."""
    if not script:
        raise ConfigError(f"agent {agent!r}: model 'scripted' needs a 'script' file of responses",
                          field="llm_config.script")
    path = Path(script).expanduser()
    return path if path.is_absolute() else base_dir / path


class ScriptedClient:
    """Plays one agent's script; the cursor lives in ``cursors[agent]`` (engine-owned)."""

    def __init__(self, path: Path, *, agent: str, cursors: dict[str, int],
                 script: Script | None = None):
        self.path = path
        self.agent = agent
        self.cursors = cursors
        self.script = script if script is not None else load_script(path)
        self._counter = InputCounter()
        self._conditional = any(r.when for r in self.script.responses)

    async def complete(self, request: LLMRequest, on_token: TokenSink | None = None, *,
                       on_attempt: AttemptSink | None = None) -> LLMResponse:
        started = time.monotonic()
        if request.purpose == "summary":
            return self._summary(request, started)
        index = self.cursors.get(self.agent, 0)
        responses = self._for(request)
        if index >= len(responses):
            which = "" if len(responses) == len(self.script.responses) else " for this conversation"
            raise LLMError(f"scripted model of agent {self.agent!r} has no response #{index + 1}{which}: "
                           f"{display_path(self.path)} has {len(responses)}")
        # Advance before yielding to the loop, so a concurrent caller cannot replay this entry.
        self.cursors[self.agent] = index + 1
        entry = responses[index]
        content = _quoted(entry.content or "", request, self.path) if entry.quote_results else entry.content or ""
        calls = [tool_call(f"call_{self.agent}_{index + 1}_{i + 1}", c.name, c.arguments)
                 for i, c in enumerate(entry.tool_calls)]
        if on_token is not None and content:
            await stream_words(content, on_token)
        if entry.usage is not None:
            tokens_in, tokens_out = entry.usage.input, entry.usage.output
        else:
            tokens_in, tokens_out = estimate_tokens(request, content, calls, self._counter)
        return LLMResponse(content=content, tool_calls=calls, model=SCRIPTED, provider=SCRIPTED,
                           tokens_in=tokens_in, tokens_out=tokens_out, cost=0.0,
                           latency_ms=int((time.monotonic() - started) * 1000),
                           stop_reason="tool_calls" if calls else "stop")

    def supports_tools(self, model: str) -> bool:
        return True

    def _summary(self, request: LLMRequest, started: float) -> LLMResponse:
        """A summary for a context budget: the script's next ``summaries`` reply (its own cursor,
        ``AGENT:summary``), or a stand-in made from the text to condense."""
        key = f"{self.agent}:summary"
        index = self.cursors.get(key, 0)
        if index < len(self.script.summaries):
            self.cursors[key] = index + 1
            content = self.script.summaries[index].content or ""
        else:
            asked = request.messages[-1].content if request.messages else ""
            lines = [line for line in asked.splitlines()[1:] if line.strip()]
            content = "Earlier: " + " / ".join(" ".join(line.split()[:8]) for line in lines[-20:])
        tokens_in, tokens_out = estimate_tokens(request, content, [])
        return LLMResponse(content=content, model=SCRIPTED, provider=SCRIPTED, tokens_in=tokens_in,
                           tokens_out=tokens_out, cost=0.0, latency_ms=int((time.monotonic() - started) * 1000),
                           stop_reason="stop")

    def _for(self, request: LLMRequest) -> list[ScriptResponse]:
        """The responses this conversation plays: all but those whose ``when`` its first
        message does not contain."""
        responses = self.script.responses
        if not self._conditional:
            return responses
        first = request.messages[0].content if request.messages else ""
        return [r for r in responses if r.when is None or r.when in first]


def _quoted(template: str, request: LLMRequest, path: Path) -> str:
    """``template`` with the latest tool results filled in (``ScriptResponse.quote_results``),
    in the order of the calls that asked for them (calls run side by side land in any order)."""
    given: list[Message] = []
    asked: dict[str, int] = {}
    for message in reversed(request.messages):
        if message.role != "tool":
            asked = {call.id: n for n, call in enumerate(message.tool_calls)}
            break
        given.insert(0, message)
    given.sort(key=lambda message: asked.get(message.tool_call_id or "", len(asked)))
    results: list[Any] = []
    for message in given:
        try:
            results.append(json.loads(message.content))
        except ValueError:
            results.append(message.content)
    try:
        return template.format(results=results)
    except (LookupError, TypeError, ValueError) as exc:
        raise LLMError(f"{display_path(path)}: a quote_results reply names a result the tools did not "
                       f"give ({type(exc).__name__}: {exc})") from None


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str | None) -> LLMToolCall:
    """Build an ``LLMToolCall``; a string is parsed, and is kept raw when not a JSON object."""
    if isinstance(arguments, str):
        return LLMToolCall(id=call_id, name=name, arguments=parse_arguments(arguments),
                           raw_arguments=arguments)
    args = dict(arguments or {})
    return LLMToolCall(id=call_id, name=name, arguments=args, raw_arguments=json.dumps(args))


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """A tool call's argument text as a dict, or None when it is not a JSON object.

    Blank text counts as ``{}``: models calling a tool without parameters often send it.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


_WORDS = re.compile(r"\s*\S+\s*|\s+")


async def stream_words(content: str, on_token: TokenSink) -> None:
    """Hand ``content`` to ``on_token`` a word at a time; the pieces join back to ``content``."""
    for piece in _WORDS.findall(content):
        on_token(piece)
        await asyncio.sleep(0)


class InputCounter:
    """Characters of a conversation counted incrementally.

    The engine passes the same append-only message list on every turn, so only the
    messages added since the last call are counted: a long run's turns stay O(1)
    instead of re-reading the whole history each time.
    """

    def __init__(self) -> None:
        self._list: list | None = None
        """The list counted last, held so that no other list can take its id (a list
        compared by ``id()`` alone was once freed and another, built for the next request,
        got its address: the count went on from the old one's and came out short)."""
        self._counted = 0
        self._chars = 0

    def chars(self, messages: list) -> int:
        if messages is not self._list or len(messages) < self._counted:
            self._list, self._counted, self._chars = messages, 0, 0
        for m in messages[self._counted:]:
            self._chars += _message_chars(m)
        self._counted = len(messages)
        return self._chars


def _message_chars(m) -> int:  # type: ignore[no-untyped-def]
    return len(m.content) + sum(len(c.tool) + len(json.dumps(c.arguments)) for c in m.tool_calls)


def estimate_tokens(request: LLMRequest, content: str, calls: list[LLMToolCall],
                    counter: InputCounter | None = None) -> tuple[int, int]:
    """ceil(characters / 4) of what went in and what came out: a stand-in for a tokenizer."""
    history = counter.chars(request.messages) if counter is not None else sum(
        _message_chars(m) for m in request.messages)
    chars_in = len(request.system) + history
    chars_out = len(content) + sum(len(c.name) + len(c.raw_arguments) for c in calls)
    return math.ceil(chars_in / 4), math.ceil(chars_out / 4)

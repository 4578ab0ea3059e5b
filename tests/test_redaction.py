"""Secrets never reach disk: ``${VAR}`` values, API-key shapes, configured patterns; tool I/O left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.errors import ConfigError
from magent.redact import MASK, OMITTED_ARGS, TOOL_IO_OMITTED, Redactor, load_settings
from support.cli import invoke
from support.engine import write

SECRET = "hunter2-very-secret-value"
KEY = "sk-abcdefghijklmnopqrstuvwx"


def settings_file(home: Path, text: str) -> Path:
    path = home / "config" / "redaction.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def files_containing(root: Path, needle: str) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


def test_settings_default_when_there_is_no_file(magent_home: Path) -> None:
    settings = load_settings()
    assert settings.default_patterns and settings.trace_tool_io and settings.patterns == ()
    assert Redactor.configured().text(f"key {KEY}") == f"key {MASK}"


def test_configured_patterns_are_added_to_the_defaults_or_replace_them(magent_home: Path) -> None:
    settings_file(magent_home, "patterns:\n  - 'ACME-[0-9]{8}'\n")
    redactor = Redactor.configured({SECRET})
    assert redactor.text(f"ticket ACME-12345678, key {KEY}, {SECRET}") == f"ticket {MASK}, key {MASK}, {MASK}"
    settings_file(magent_home, "default_patterns: false\npatterns: ['ACME-[0-9]{8}']\n")
    redactor = Redactor.configured({SECRET})
    assert redactor.text(f"ACME-12345678 {KEY} {SECRET}") == f"{MASK} {KEY} {MASK}"  # env values always


def test_a_pattern_that_sets_its_own_flags_masks_in_a_run(magent_home: Path, tmp_path: Path) -> None:
    # '(?i)' applies to its own pattern only: the run used to stop with an internal error, as all
    # patterns are searched as one alternation, where re refuses flags that are not at the start.
    settings_file(magent_home, "patterns: ['(?i)acme-[0-9]{4}', '(?x) zz [0-9]{3}  # verbose']\n")
    write(tmp_path, "keeper.yaml", KEEPER)
    write(tmp_path, "keeper.script.yaml", SCRIPT)
    done = invoke("run", str(tmp_path / "keeper.yaml"), "-t", "file acme-1234, ACME-5678 and zz123", "--no-input",
                  env={"MY_SECRET": SECRET})
    assert done.code == 0, done.err
    for needle in ("acme-1234", "ACME-5678", "zz123"):
        assert files_containing(magent_home, needle) == [], needle
    assert Redactor.configured().text("Acme-0000 and ACME-1") == f"{MASK} and ACME-1"


@pytest.mark.parametrize("text, message", [
    ("patterns: ['ok', '(unclosed']\n", "redaction.yaml:1:18: patterns[1]: not a regular expression"),
    ("patterns: ['a*']\n", "patterns[0]: matches the empty string"),
    ("pattern: ['x']\n", "redaction.yaml:1:1: pattern: unknown field (did you mean 'patterns'?)"),
    ("trace_tool_io: 'no'\n", "trace_tool_io: must be true or false"),
    ("patterns: 'abc'\n", "patterns: must be a list of regular expressions"),
    ("- patterns\n", "expected a mapping"),
])
def test_a_bad_settings_file_names_file_line_and_field(magent_home: Path, text: str, message: str) -> None:
    settings_file(magent_home, text)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert message in str(err.value)


def test_event_redaction_can_leave_tool_io_out() -> None:
    redactor = Redactor({SECRET}, tool_io=False)
    call = redactor.event({"seq": 1, "type": "tool_call", "tool": "kv.set", "arguments": {"value": "x"}})
    assert call["arguments"] == OMITTED_ARGS and call["tool"] == "kv.set"
    result = redactor.event({"seq": 2, "type": "tool_result", "result": "page", "full_result": "page",
                             "data": {"a": 1}, "outcome": "SUCCESS", "entry_id": "e"})
    assert result["result"] == TOOL_IO_OMITTED and "full_result" not in result and "data" not in result
    assert result["entry_id"] == "e" and result["outcome"] == "SUCCESS"
    llm = redactor.event({"seq": 3, "type": "llm_call", "response": {
        "content": f"I will {SECRET}", "tool_calls": [{"name": "kv.set", "arguments": {"v": 1}, "raw_arguments": None}]}})
    assert llm["response"]["content"] == f"I will {MASK}"
    assert llm["response"]["tool_calls"][0] == {"name": "kv.set", "arguments": OMITTED_ARGS}
    kept = Redactor({SECRET}).event({"seq": 4, "type": "tool_call", "arguments": {"v": SECRET}})
    assert kept["arguments"] == {"v": MASK}


KEEPER = """
name: keeper
role: keeps a token
system_prompt: "You hold the token ${MY_SECRET}; never repeat it."
tools: [kv.*]
llm_config:
  model: scripted
  script: keeper.script.yaml
  api_key: ${MY_SECRET}
"""
SCRIPT = f"""
responses:
  - content: "Noting ticket ACME-12345678 and a stray key {KEY}."
    tool_calls:
      - name: kv.set
        arguments: {{key: ticket, value: "noted"}}
  - content: "Done."
"""
WORKFLOW = """
name: secretive
entry_point: keep
nodes:
  keep: {type: agent, agent: keeper, prompt: "Authenticate with ${MY_SECRET} first."}
edges: []
checkpoints: [keep]
"""


@pytest.mark.slow
def test_a_secret_from_the_environment_appears_in_no_file_under_the_home(magent_home: Path, tmp_path: Path) -> None:
    write(tmp_path, "keeper.yaml", KEEPER)
    write(tmp_path, "keeper.script.yaml", SCRIPT)
    workflow = write(tmp_path, "wf.yaml", WORKFLOW)
    settings_file(magent_home, "patterns: ['ACME-[0-9]{8}']\n")
    env = {"MY_SECRET": SECRET}
    paused = invoke("run", str(workflow), "-t", "keep the token safe", "--no-input", env=env)
    assert paused.code == 3, paused.err
    task_id = paused.out.splitlines()[0].split()[1]
    done = invoke("resume", task_id, "--approve", "--no-input", env=env)
    assert done.code == 0, done.err
    assert invoke("trace", task_id).code == 0 and invoke("trace", task_id, "--json").code == 0
    assert files_containing(magent_home, SECRET) == []
    assert files_containing(magent_home, KEY) == []
    assert files_containing(magent_home, "ACME-12345678") == []
    # The run did see them: masked where they were written.
    task = magent_home / "tasks" / task_id
    assert "Authenticate with [REDACTED] first." in (task / "entries.jsonl").read_text()
    assert "Noting ticket [REDACTED] and a stray key [REDACTED]." in (task / "trace.json").read_text()


def test_trace_tool_io_false_leaves_tool_io_out_of_the_trace(magent_home: Path) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    settings_file(magent_home, "trace_tool_io: false\n")
    result = invoke("run", str(examples / "workflows/write_review.yaml"), "-t", "copy", "--no-input")
    assert result.code == 0
    task_id = result.out.splitlines()[0].split()[1]
    trace_text = (magent_home / "tasks" / task_id / "trace.json").read_text()
    assert "Tidy" not in json.dumps(json.loads(trace_text)["steps"][1]["tool_calls"])
    assert "stored title" not in trace_text and TOOL_IO_OMITTED in trace_text
    out = invoke("trace", task_id).out
    assert "→ kv.set" in out and "stored title" not in out and "left out" in out
    # The conversation keeps the result (a resumed run needs it), masked like everything else.
    assert "stored title" in (magent_home / "tasks" / task_id / "entries.jsonl").read_text()


def test_a_secret_repeated_by_the_model_or_a_person_reaches_no_file(magent_home: Path, tmp_path: Path) -> None:
    """The model echoes the secret in a tool argument, a big tool output and its answer; the
    person pastes it into the task and a resume message. None of it is written unmasked."""
    from magent.testing import FunctionModel
    from magent.tools.function import FunctionProvider
    from support.engine import resume_with, run_with

    write(tmp_path, "keeper.yaml", KEEPER.replace("tools: [kv.*]", "tools: [kv.*, big.*]"))
    write(tmp_path, "keeper.script.yaml", SCRIPT)
    workflow = write(tmp_path, "wf.yaml", WORKFLOW)
    big = FunctionProvider("big")
    big.add("dump", lambda: ("secret: " + SECRET + " ") * 3000, "a large output")
    replies = iter([
        {"tool_calls": [{"name": "kv.set", "arguments": {"key": "token", "value": SECRET}},
                        {"name": "big.dump", "arguments": {}}]},
        f"The token is {SECRET}.",
        f"Still {SECRET}.",
    ])
    model = FunctionModel(lambda request: next(replies))
    import os

    os.environ["MY_SECRET"] = SECRET
    try:
        paused = run_with(model, workflow, f"use {SECRET} carefully", providers=[big])
        assert paused.status.value == "awaiting_human"
        done = resume_with(model, paused.task_id, "approve", f"ok, {SECRET} is fine", providers=[big])
        assert done.status.value == "completed"
    finally:
        del os.environ["MY_SECRET"]
    assert files_containing(magent_home, SECRET) == []   # kv.jsonl and artifacts/ included
    task = json.loads((magent_home / "tasks" / paused.task_id / "task.json").read_text())
    assert task["result"] == "The token is [REDACTED]." and "[REDACTED]" in task["description"]


TYPED = "sk-live-typedbyaperson0123456789"
"""A key-shaped value a person types: on the command line, in a --modify file, at the prompt."""


def _no_typed_secret(home: Path, *outputs: str) -> None:
    assert files_containing(home, TYPED) == [], "a typed secret reached the disk"
    for out in outputs:
        assert TYPED not in out, "a typed secret reached the terminal"


@pytest.mark.slow
def test_what_a_person_types_is_masked_on_disk_and_in_the_live_stream(magent_home: Path, tmp_path: Path) -> None:
    """--set on run and resume, --message, a --modify file: masked in task.json (the run's
    options), checkpoints, entries, events and the trace, and in the --json stream."""
    examples = Path(__file__).resolve().parent.parent / "examples"
    first = invoke("run", str(examples / "workflows/triage.yaml"), "-t", "the app crashes", "--json",
                   "--set", "priority=high", "--set", f"apikey={TYPED}", "--set", f"ticket=crash, key {TYPED}",
                   "--no-input")
    assert first.code == 3, first.err
    events = [json.loads(line) for line in first.out.splitlines()]
    task_id = events[-1]["task_id"]
    task = json.loads((magent_home / "tasks" / task_id / "task.json").read_text())
    assert task["config_snapshot"]["options"]["initial"]["metadata"] == {
        "priority": "high", "apikey": MASK, "ticket": f"crash, key {MASK}"}
    modify = tmp_path / "edit.yaml"
    modify.write_text(f"metadata: {{note: 'rotate {TYPED}'}}\n")
    fork = invoke("resume", task_id, "--from-checkpoint", "1", "--set", f"apikey={TYPED}", "--json", "--no-input")
    done = invoke("resume", task_id, "--modify", str(modify), "--message", f"approved, {TYPED} is revoked",
                  "--set", f"extra={TYPED}", "--json", "--no-input")
    assert done.code == 0, done.err
    assert fork.code == 3, fork.err  # the new branch stops at the same approval gate
    assert invoke("trace", task_id).code == 0
    _no_typed_secret(magent_home, first.out, fork.out, done.out, first.err, done.err)
    decision = next(json.loads(line) for line in done.out.splitlines() if '"human_decision"' in line)
    assert decision["message"] == f"approved, {MASK} is revoked"


@pytest.mark.slow
def test_inline_answers_are_masked(magent_home: Path) -> None:
    from test_inline_prompt import PUBLISH, Terminal

    # [e]dit opens the output in $EDITOR first: `true` leaves it unsaved (the output stays)
    term = Terminal("run", PUBLISH, "-t", "Announce the Friday closure", env={"EDITOR": "true", "VISUAL": ""})
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    term.type("e")
    term.expect("empty line to finish")
    term.type(f"token={TYPED}")
    term.type("")
    term.expect("message (optional): ")
    term.type(f"publish it; the key is {TYPED}")
    assert term.finish() == 0, term.seen
    _no_typed_secret(magent_home)


@pytest.mark.slow
def test_a_message_about_a_tool_call_is_masked(magent_home: Path, tmp_path: Path, toolbox_url: str) -> None:
    """The decision on a call that needs approval is kept in the checkpoint's node progress."""
    from test_engine_tools import WRITES, toolbox_flow

    flow = toolbox_flow(tmp_path, WRITES, settings={"writes": {"needs_approval": True}}, url=toolbox_url)
    paused = invoke("run", str(flow), "-t", "x", "--no-input")
    assert paused.code == 3, paused.err
    task_id = paused.out.split()[1]
    done = invoke("resume", task_id, "--approve", "--message", f"fine, {TYPED}", "--json")
    assert done.code == 0, done.err
    _no_typed_secret(magent_home, done.out)


@pytest.mark.slow
def test_the_live_stream_is_masked_like_the_trace(magent_home: Path, tmp_path: Path) -> None:
    """A model that repeats a key: every --json line (the last, the run's result, included)
    and the --quiet answer show it masked, as the trace does."""
    write(tmp_path, "echo.script.yaml", f"responses:\n  - content: 'Your key is {TYPED}.'\n")
    agent = write(tmp_path, "echo.yaml", "name: echo\nrole: repeats\nsystem_prompt: Repeat.\n"
                                         "llm_config: {model: scripted, script: echo.script.yaml}\n")
    streamed = invoke("run", str(agent), "-t", "say it", "--json")
    quiet = invoke("run", str(agent), "-t", "say it", "--quiet")
    assert streamed.code == 0 and quiet.code == 0, streamed.err + quiet.err
    lines = [json.loads(line) for line in streamed.out.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["output"] == f"Your key is {MASK}."
    assert quiet.out.strip() == f"Your key is {MASK}."
    _no_typed_secret(magent_home, streamed.out, quiet.out)


def test_a_typed_secret_as_a_routing_key_or_a_metadata_name_reaches_no_file(magent_home: Path) -> None:
    """--set routing_key=... and next_action=... are kept in the checkpoints' State, and a key
    typed as a metadata name (--set sk-...=v) in task.json and the checkpoints."""
    examples = Path(__file__).resolve().parent.parent / "examples"
    r = invoke("run", str(examples / "workflows/triage.yaml"), "-t", "the app crashes", "--set", "priority=high",
               "--set", "ticket=t", "--set", f"routing_key={TYPED}", "--set", f"next_action=call {TYPED}",
               "--set", f"{TYPED}=v", "--no-input")
    assert r.code == 3, r.err
    _no_typed_secret(magent_home, r.out, r.err)
    task_id = r.out.split()[1]
    task = json.loads((magent_home / "tasks" / task_id / "task.json").read_text())
    assert task["config_snapshot"]["options"]["initial"]["metadata"][MASK] == "v"


def test_mapping_keys_shaped_like_secrets_are_masked() -> None:
    masked = Redactor.configured().data({KEY: "v", "nested": [{f"x {KEY}": 1}], "plain": KEY})
    assert masked == {MASK: "v", "nested": [{f"x {MASK}": 1}], "plain": MASK}


SCREENED = ("ACME-[0-9]{8}", "(?i:tok)_[0-9]{4}", "a1|bcd[0-9]+", r"[Pp]in:\s*[0-9]{4}", "Z")


@pytest.mark.parametrize("text", [
    "", "Z", "short", "x" * 10_000, "x" * 9_000 + f" {KEY} " + "x" * 900, "Bearer abcdefghijklmnopqrstu",
    "bearer abcdefghijklmnopqrstu", "AKIAABCDEFGHIJKLMNOP at the end", "ghp_" + "a" * 40, "xoxb-1234567890-abc",
    "AIza" + "b" * 35, "sk-short", "ACME-1234567", "id ACME-12345678.", "TOK_1234 and tok_9999", "pin: 1234",
    "Pin:4321 bcd7 a1", "nothing to see here " * 50, "x" * 10_000 + "xoxb-1234567890-abc", "ghx_" + "a" * 40,
    "light through high " * 40 + "ghs_" + "b" * 36, "sk-" * 30, "-_" * 500 + "AKIA" + "Q" * 16])
def test_texts_the_quick_screen_lets_through_unchanged_are_those_the_patterns_do_not_match(text: str) -> None:
    """The screen that spares most texts the full search never lets a match through: what the
    redactor gives is what one search-and-replace of all the patterns gives."""
    import re

    for patterns in (Redactor().patterns_in_use, Redactor(patterns=SCREENED).patterns_in_use):
        whole = re.compile("|".join(f"(?:{p})" for p in patterns))
        assert Redactor(patterns=patterns).text(text) == whole.sub(MASK, text)
    # A secret shorter than any pattern's match is still looked for in every text.
    short = Redactor({"Z12", "ACME", "tok_"}, patterns=SCREENED)
    assert "ACME" not in short.text(text) and "tok_" not in short.text(text)


def test_a_secret_added_later_shorter_than_the_patterns_is_masked_in_short_texts() -> None:
    redactor = Redactor()
    assert redactor.text("pw=abcd") == "pw=abcd"
    redactor.add({"abcd"})
    assert redactor.text("pw=abcd") == f"pw={MASK}"
    assert redactor.data({"abcd": ["abcd", 1]}) == {MASK: [MASK, 1]}


QUOTED = 'pa"ss\\wo\nrd'
"""A secret with characters JSON escapes (a quote, a backslash, a newline)."""


@pytest.mark.parametrize("doc", [
    {"type": "tool_result", "seq": 3, "ts": "2026-01-01T00:00:00.000+00:00", "outcome": "SUCCESS"},
    {"type": "llm_call", "request": {"system": "abc", "tools": ["def"]}, "cost": 0.25, "tokens_in": 7},
    {"type": "x", "error": f"it said {KEY} and stopped", "notes": ["fine", f"auth: Bearer {'t' * 20}"]},
    {"type": "x", KEY: 1, "nested": [{f"k {KEY}": [1, 2.5, None, True]}]},
    {"type": "x", "message": f"the password is {QUOTED}!", "quoted": '"quotes" and \\ backslashes'},
    {"type": "x", "key": "AKIA" + "A" * 16, "unicode": "café ✓ \u2028 line"},
    {"type": "x", "when": __import__("datetime").datetime(2026, 1, 1), "where": Path("/tmp/x"), "n": float("nan")},
    {"type": "x", "tuple": ("a", KEY), 3: "int key", "ok": "ACME-12345678 and tok_1234"},
])
def test_an_event_line_is_what_masking_field_by_field_then_dumping_gives(doc: dict) -> None:
    """``json_line`` screens an event's JSON whole and walks its fields only when something may
    need masking: its line is always exactly the one masking every field and dumping gives."""
    from pydantic_core import to_jsonable_python

    from magent.store.files import dumps

    for redactor in (Redactor(), Redactor({QUOTED, "ssw"}), Redactor({"stopped"}, patterns=SCREENED)):
        assert redactor.json_line(doc) == dumps(to_jsonable_python(redactor.data(doc)))
    assert MASK.encode() in Redactor({QUOTED}).json_line(doc) or QUOTED not in json.dumps(doc, default=str)


@pytest.mark.parametrize("size", [100, 5_000, 20_000, 70_000])
def test_a_text_masked_before_a_secret_was_added_is_masked_again_after(size: int) -> None:
    """A secret added later is masked in a text seen before, and a text equal to one seen is
    masked alike."""
    text = "n" * (size // 2) + " tok-12345678 " + "m" * (size // 2)
    redactor = Redactor({"other-secret"}, patterns=())
    assert redactor.text(text) == text
    redactor.add({"tok-12345678"})
    assert redactor.text(text) == text.replace("tok-12345678", MASK)
    assert redactor.text("".join([text[:10], text[10:]])) == text.replace("tok-12345678", MASK)


PASTED = 'pw"Gl4ss/h0use+k&y=Z9'
"""A server's ``${MY_PW}``, with characters JSON, URLs and base64 each write their own way."""


def _forms(value: str) -> list[bytes]:
    import base64
    from urllib.parse import quote, quote_plus

    texts = {value, json.dumps(value)[1:-1], quote(value), quote(value, safe=""), quote_plus(value)}
    data = value.encode()
    return [t.encode() for t in texts] + [base64.b64encode(data), base64.urlsafe_b64encode(data)]


@pytest.mark.slow
def test_a_tool_servers_secret_typed_by_a_person_reaches_no_file(magent_home: Path, tmp_path: Path) -> None:
    """``env: {TOKEN: ${MY_PW}}`` in the workflow's MCP file, and the same value pasted into -t
    and --set: no file under the home holds it, in any encoding, from checkpoint 0 on."""
    import sys

    from servers.harness import TOOLBOX

    write(tmp_path, "servers.yaml", f"""
        servers:
          - name: tb
            transport: stdio
            config: {{command: {sys.executable}, args: ["{TOOLBOX}"], env: {{TOKEN: "${{MY_PW}}"}}}}
        """)
    write(tmp_path, "worker.yaml", "name: worker\nrole: works\nsystem_prompt: Work.\ntools: [tb.echo]\n"
          "llm_config: {model: scripted, script: worker.script.yaml}\n")
    write(tmp_path, "worker.script.yaml", """
        responses:
          - tool_calls: [{name: tb.echo, arguments: {text: hello}}]
          - content: Done.
        """)
    workflow = write(tmp_path, "wf.yaml", """
        name: served
        mcp_servers: servers.yaml
        entry_point: work
        nodes: {work: {type: agent, agent: worker}}
        edges: []
        """)
    done = invoke("run", str(workflow), "-t", f"log in with {PASTED}", "--set", f"pw={PASTED}",
                  "--json", "--no-input", env={"MY_PW": PASTED})
    assert done.code == 0, done.err
    task_id = json.loads(done.out.splitlines()[-1])["task_id"]
    assert invoke("trace", task_id).code == 0
    found = [f"{path.relative_to(magent_home)}: {form!r}" for path in magent_home.rglob("*") if path.is_file()
             for form in _forms(PASTED) if form in path.read_bytes()]
    assert found == []
    assert PASTED not in done.out
    task = json.loads((magent_home / "tasks" / task_id / "task.json").read_text())
    assert task["description"] == f"log in with {MASK}"
    assert task["config_snapshot"]["options"]["initial"]["metadata"] == {"pw": MASK}

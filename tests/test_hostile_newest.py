"""A new user's bad input across the newest commands and settings: each mistake is one line
naming what and where, exit code 2, no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.engine import agent_yaml, write


def routed_agent(folder: Path, llm_lines: str) -> Path:
    return write(folder, "routed.yaml", "name: routed\nrole: r\nsystem_prompt: s\ntools: [kv.*]\n"
                 "llm_config:\n  model: openai/big-model\n" + llm_lines)


@pytest.mark.parametrize(("lines", "said"), [
    ("  models: [openai/big-model, 3]\n",
     "routed.yaml:7:30: llm_config.models[1]: expected text or a mapping, got 3"),
    ("  models: [openai/big-model, openai/small]\n  routing: [{turn: first, model: true}]\n",
     "routed.yaml:8:27: llm_config.routing[0].model: expected a whole number or text, got True"),
    ("  models: [openai/big-model, {}]\n",
     "routed.yaml:7:30: llm_config.models[1].model: missing required field 'model'"),
    ("  models: [openai/big-model, {model: openai/small, api_key: 5}]\n",
     "routed.yaml:7:52: llm_config.models[1].api_key: expected text, got 5"),
])
def test_a_value_that_fits_no_form_of_a_setting_is_one_line(tmp_path: Path, magent_home: Path,
                                                            lines: str, said: str) -> None:
    """A model given as neither a string nor a mapping was two lines naming pydantic's members
    (``models[1].str``, ``models[1].FallbackModel``); a mapping with a bad field also said
    ``expected text, got a mapping``."""
    result = invoke("validate", str(routed_agent(tmp_path, lines)))
    assert result.code == 2
    assert result.err.splitlines() == [f"magent: error: invalid agent: {tmp_path / said}"]


def test_text_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path: Path, magent_home: Path) -> None:
    """A message, a task or a --set value with bytes that are not UTF-8 (a shell's $'\\xff') was an
    internal error (exit 1) naming a UnicodeEncodeError; a file of that name is still read."""
    write(tmp_path, "note.script.yaml", "responses:\n  - content: noted\n")
    agent = write(tmp_path, "note.yaml", agent_yaml("note").replace("note.script.yaml", str(tmp_path / "note.script.yaml")))
    first = invoke("run", str(agent), "-t", "remember milk")
    assert first.code == 0, first.err
    task_id = first.out.split()[1]
    before = sorted(p.name for p in (magent_home / "tasks" / task_id).iterdir())
    for args, number, shown in (
            (("chat", task_id[:8], "\udcff hi"), 3, r"b'\xff hi'"),
            (("run", str(agent), "-t", "caf\udce9"), 4, r"b'caf\xe9'"),
            (("run", str(agent), "-t", "hi", "--set", "tone=\udcff"), 6, r"b'tone=\xff'")):
        refused = run(*args)
        assert refused.code == 2, refused.err
        assert refused.err == f"magent: error: argument {number} ({shown}) is not UTF-8 text; magent keeps text as UTF-8\n"
    assert [p.name for p in (magent_home / "tasks").iterdir()] == [task_id]
    assert sorted(p.name for p in (magent_home / "tasks" / task_id).iterdir()) == before
    odd = tmp_path / "\udcffnote.yaml"
    odd.write_bytes(agent.read_bytes())
    shown = subprocess.run([sys.executable, "-m", "magent", "validate", str(odd)], capture_output=True)
    assert shown.returncode == 0, shown.stderr


@pytest.mark.parametrize(("config", "said"), [
    ("{url: 'http://'}", "servers[0].config.url: 'http://' names no host"),
    ("{url: 'http://a b/mcp'}", "servers[0].config.url: 'http://a b/mcp' has a space in it (write it as %20)"),
    ("{url: 'https://h:99999/mcp'}", "servers[0].config.url: 'https://h:99999/mcp' has a host or port that cannot "
                                     "be read (a port is a number up to 65535; an IPv6 host goes in [ ])"),
    ("{url: 'ftp://h/mcp'}", "servers[0].config.url: expected an http:// or https:// address, got 'ftp://h/mcp'"),
    ("{url: 'https://h/mcp', oauth: {client_metadata_url: 'http://h/c.json'}}",
     "servers[0].config.oauth.client_metadata_url: expected an https:// address with a path, got 'http://h/c.json'"),
])
def test_a_server_address_that_cannot_be_reached_is_a_config_error(tmp_path: Path, magent_home: Path,
                                                                   config: str, said: str) -> None:
    """An address with no host, a space or a bad port passed validate and failed only when a run
    connected; a scheme or client metadata URL of the wrong form was named by its regex."""
    servers = write(tmp_path, "servers.yaml", f"servers:\n  - {{name: tracker, transport: streamable_http, config: {config}}}\n")
    for command in (("validate", str(servers)), ("tools", "list", "--mcp", str(servers))):
        result = invoke(*command)
        assert result.code == 2, result.out + result.err
        (line,) = result.err.splitlines()
        assert line.startswith("magent: error: ") and f"{servers}:2:" in line and line.endswith(f": {said}")


@pytest.mark.parametrize(("kind", "text", "said"), [
    ("agent", "name: Writer\nrole: r\nsystem_prompt: s\nllm_config: {model: scripted}\n",
     "name: expected a name of lowercase letters, digits and '_' that starts with a letter, got 'Writer'"),
    ("workflow", "name: -flow\nentry_point: a\nnodes: {a: {type: agent, agent: a}}\n",
     "name: expected a name of letters, digits, '_', '.' and '-' that starts with a letter or digit, got '-flow'"),
    ("mcp_servers", "servers:\n  - {name: 1st, transport: stdio, config: {command: x}}\n",
     "servers[0].name: expected a name of letters, digits, '_' and '-' that starts with a letter, got '1st'"),
])
def test_a_name_of_the_wrong_form_says_what_form(tmp_path: Path, magent_home: Path, kind: str, text: str,
                                                 said: str) -> None:
    """It said ``string should match pattern '^[a-z][a-z0-9_]*$'``."""
    path = write(tmp_path, "file.yaml", text)
    result = invoke("validate", str(path))
    assert result.code == 2
    assert said in result.err and "pattern" not in result.err, result.err


def test_serve_on_a_port_in_use_or_an_address_not_here_is_one_line(tmp_path: Path, magent_home: Path) -> None:
    """It printed 'listening on ...', then uvicorn's own ERROR line, and exited 3 (the code of a
    pause); a --wait-seconds of nan was taken."""
    import socket

    agent = str(Path(__file__).resolve().parent.parent / "examples" / "agents" / "note_taker.yaml")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        busy = run("mcp", "serve", agent, "--transport", "streamable-http", "--port", port)
    assert busy.code == 2
    assert busy.err == f"magent: error: cannot listen on --host 127.0.0.1 --port {port}: address already in use\n"
    away = run("mcp", "serve", agent, "--transport", "streamable-http", "--host", "192.0.2.1", "--port", port)
    assert away.code == 2  # an address of no interface here (TEST-NET-1): nothing is sent anywhere
    assert away.err == f"magent: error: cannot listen on --host 192.0.2.1 --port {port}: cannot assign requested address\n"
    never = run("mcp", "serve", agent, "--wait-seconds", "nan")
    assert never.code == 2
    assert never.err == "magent: error: --wait-seconds must be a number of seconds, 0 or more, not nan\n"


def test_a_link_that_leads_back_to_itself_is_a_file_that_cannot_be_read(tmp_path: Path, magent_home: Path) -> None:
    """A config file, or a workflow's mcp_servers file, that is a symbolic link loop was an
    internal error (exit 1) naming Python's 'RuntimeError: Symlink loop'."""
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "ag.yaml", agent_yaml("ag"))
    flow = write(tmp_path, "flow.yaml", "name: flow\nmcp_servers: a.yaml\nentry_point: n\nnodes: {n: {type: agent, agent: ag}}\n")
    for args, said in ((("validate", "a.yaml"), "a.yaml: cannot read: "),
                       (("tools", "list", "--mcp", "a.yaml"), "a.yaml: cannot read: "),
                       (("validate", str(flow)), "invalid workflow: a.yaml: cannot read: "),
                       (("run", str(flow), "-t", "hi"), "a.yaml: cannot read: ")):
        result = invoke(*args, cwd=tmp_path)
        assert result.code == 2, result.err
        (line,) = result.err.splitlines()
        assert line.startswith(f"magent: error: {said}"), line
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_batch_flags_that_cannot_work_stop_it_before_any_row(tmp_path: Path, magent_home: Path) -> None:
    """An empty --tag started the batch and failed every row; --ray-address was ignored without
    --executor ray."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    agent = str(write(tmp_path, "ag.yaml", agent_yaml("ag")))
    rows = str(write(tmp_path, "rows.jsonl", '{"task": "a"}\n{"task": "b"}\n'))
    for args, said in (
            (("--tag", ""), "--tag must not be empty: every row's task would fail to start"),
            (("--ray-address", "10.0.0.5:6379"), "--ray-address is for --executor ray (a local batch runs in this process)")):
        result = invoke("batch", "run", agent, "-i", rows, *args, cwd=tmp_path)
        assert result.code == 2
        assert result.err == f"magent: error: {said}\n"
    assert not (magent_home / "batches").exists() or not any((magent_home / "batches").iterdir())
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_an_option_that_takes_a_number_names_it_in_magents_words(magent_home: Path) -> None:
    """It said pydantic's 'Invalid value for '--step': Input should be a valid integer, unable to
    parse string as an integer'."""
    many = invoke("batch", "run", "flow.yaml", "-i", "rows.jsonl", "-c", "many")
    assert (many.code, many.err) == (2, "magent: error: --concurrency: expected a whole number, got 'many' "
                                        "(see 'magent batch run --help')\n")
    wait = invoke("mcp", "serve", "--wait-seconds", "soon")
    assert (wait.code, wait.err) == (2, "magent: error: --wait-seconds: expected a number, got 'soon' "
                                        "(see 'magent mcp serve --help')\n")
    heavy = invoke("memory", "add", "the office is on floor 3", "--importance", "5")
    assert (heavy.code, heavy.err) == (2, "magent: error: --importance: expected 1.0 or less, got '5' "
                                          "(see 'magent memory add --help')\n")
    below = invoke("checkpoints", "show", "0123abcd", "-1")
    assert (below.code, below.err) == (2, "magent: error: unknown option -1 (no value here is a negative number) "
                                          "(see 'magent checkpoints show --help')\n")
    never = invoke("run", "flow.yaml", "-t", "hi", "--durability", "never")
    assert (never.code, never.err) == (2, "magent: error: --durability: 'never' is not one of 'sync', 'step', 'exit' "
                                          "(see 'magent run --help')\n")
    late = invoke("trace", "0123abcd", "--step", "last")
    assert (late.code, late.err) == (2, "magent: error: --step: expected a whole number, got 'last' "
                                        "(see 'magent trace --help')\n")


def test_a_prompt_too_big_to_read_back_is_not_stored(tmp_path: Path, magent_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """It was written, and then every prompts command failed on it: the stored file was over
    the size a config file may be; a file not in UTF-8 was named in Python's codec words."""
    monkeypatch.setenv("MAGENT_MAX_CONFIG_BYTES", "2000")
    big = write(tmp_path, "big.txt", "Answer {{ task }}. " + "x" * 3000)
    result = invoke("prompts", "add", "triage", "-v", "1", "-f", str(big))
    assert result.code == 2
    assert result.err == ("magent: error: the prompt is 3,026 bytes as stored, over the limit of 2,000 bytes for a "
                          "config file (MAGENT_MAX_CONFIG_BYTES sets the limit); nothing was stored\n")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Caf\xe9 {{ task }}".encode("latin-1"))
    result = invoke("prompts", "add", "triage", "-v", "1", "-f", str(latin))
    assert (result.code, result.err) == (2, f"magent: error: {latin}: not UTF-8 text (byte 0xe9 at offset 3; "
                                            "save the file as UTF-8)\n")
    assert not (magent_home / "prompts" / "triage").exists() or not any((magent_home / "prompts" / "triage").iterdir())
    assert invoke("prompts", "list").code == 0


def test_a_link_as_a_file_to_read_or_write_is_one_line(tmp_path: Path, magent_home: Path) -> None:
    """memory import of a link loop was an internal error (exit 1); --html or --output naming a
    link said magent never writes through a link 'under its home (... or delete the task)'."""
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    loop = invoke("memory", "import", "a.jsonl", cwd=tmp_path)
    assert (loop.code, loop.err) == (2, "magent: error: a.jsonl: cannot read it: Too many levels of symbolic links\n")
    assert invoke("memory", "add", "the office is on floor 3").code == 0
    (tmp_path / "real.jsonl").write_text("")
    (tmp_path / "out.jsonl").symlink_to(tmp_path / "real.jsonl")
    out = invoke("memory", "export", "-o", "out.jsonl", cwd=tmp_path)
    assert (out.code, out.err) == (2, "magent: error: out.jsonl is a symbolic link; name the file it leads to, or "
                                      "another file (magent writes a file whole by replacing it, which would "
                                      "replace the link)\n")
    assert (tmp_path / "out.jsonl").is_symlink() and (tmp_path / "real.jsonl").read_text() == ""


@pytest.mark.parametrize(("text", "said"), [
    ("servers: []\n", "is an MCP servers file, not a workflow or agent"),
    ("responses:\n  - content: hi\n", "is a scripted model's script, not a workflow or agent"),
    ("default_days: 30\n", "is a retention policy, not a workflow or agent"),
    ("# nothing yet\n", "the file is empty (or holds only comments)"),
])
def test_running_a_file_that_is_no_workflow_or_agent_says_what_it_is(tmp_path: Path, magent_home: Path,
                                                                     text: str, said: str) -> None:
    """It said 'is an script file', 'is an retention policy file'; an empty file, in any
    command, 'nothing to validate'."""
    path = write(tmp_path, "thing.yaml", text)
    for args in (("run", "thing.yaml", "-t", "hi"), ("chat", "thing.yaml", "hi")):
        result = invoke(*args, cwd=tmp_path)
        assert (result.code, result.err) == (2, f"magent: error: thing.yaml: {said}\n")
    assert path.read_text() == text and not (magent_home / "tasks").exists()


def test_steering_a_running_task_refuses_a_model_it_would_ignore(tmp_path: Path, magent_home: Path) -> None:
    """chat ID MESSAGE --model M to a running task queued the message and dropped --model
    without a word (exit 0); --set was refused already. Nothing is queued now."""
    from support.steerflow import make_flow, start, wait_for

    proc = start(make_flow(tmp_path, turns=3))
    try:
        task_id = wait_for(magent_home, '"tool":"shell.run"', proc)
        steered = invoke("chat", task_id[:8], "Be brief", "--model", "openai/gpt-4o-mini")
        assert (steered.code, steered.err) == (2, f"magent: error: task {task_id[:8]} is running on the models it "
                                                  "started with: --model goes with a follow-up to a stopped task "
                                                  "or a new conversation\n")
        assert not list((magent_home / "tasks" / task_id / "signals").glob("*.json"))
    finally:
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_an_empty_first_message_names_the_message_not_an_option_chat_lacks(tmp_path: Path, magent_home: Path) -> None:
    """It said '-t/--task must not be empty': chat has no -t."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "ag.yaml", agent_yaml("ag"))
    for message in ("", "   "):
        result = invoke("chat", "ag.yaml", message, cwd=tmp_path)
        assert (result.code, result.err) == (2, "magent: error: the message is empty; say what 'ag.yaml' should do\n")
    assert not (magent_home / "tasks").exists()


def test_a_key_that_is_not_one_of_the_choices_lists_them_in_magents_words(tmp_path: Path, magent_home: Path) -> None:
    """It said pydantic's 'invalid key: input should be 'pending', 'running', ...'."""
    policy = write(tmp_path, "retention.yaml", "default_days: 30\nby_status: {done: 3}\n")
    result = invoke("validate", str(policy))
    assert (result.code, result.err) == (2, f"magent: error: invalid retention_policy: {policy}:2:13: by_status.done: "
                                            "invalid key: 'done' is not one of pending, running, awaiting_human, "
                                            "interrupted, completed, failed or cancelled\n")


@pytest.mark.parametrize(("inline", "said"), [
    ("", "agents.x: expected the inline agent's fields (role, system_prompt...), got nothing"),
    ("5", "agents.x: expected a mapping of fields, got 5"),
    ("hello", "agents.x: expected a mapping of fields, got 'hello'"),
])
def test_an_inline_agent_that_is_not_a_mapping_is_one_line(tmp_path: Path, magent_home: Path, inline: str,
                                                           said: str) -> None:
    """An empty one was read as the whole workflow file (six errors: 'agents.x.nodes: unknown
    field', ...); a number was 'got a int (5)'."""
    flow = write(tmp_path, "flow.yaml", f"name: flow\nentry_point: a\nnodes:\n  a: {{type: agent, agent: x}}\n"
                                        f"agents: {{x: {inline}}}\n")
    for args in (("validate", "flow.yaml"), ("run", "flow.yaml", "-t", "hi")):
        result = invoke(*args, cwd=tmp_path)
        assert result.code == 2
        (line,) = result.err.splitlines()
        assert line.endswith(f"flow.yaml:5:10: {said}"), line
    assert flow.exists() and not (magent_home / "tasks").exists()


def test_validate_checks_the_names_deny_tools_gives(tmp_path: Path, magent_home: Path) -> None:
    """A misspelt deny_tools entry passed validate, and so denied nothing; an agent that calls
    itself as a sub-agent was listed as 'sub-agents ' with no name."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    agent = write(tmp_path, "ag.yaml", agent_yaml("ag", extra="deny_tools: [kv.delete, kv.sett, shell.run]\n"))
    result = invoke("validate", str(agent))
    assert (result.code, result.err) == (2, f"magent: error: invalid agent: {agent}:6:25: deny_tools[1]: "
                                            "unknown tool 'kv.sett' (did you mean 'kv.set'?)\n")
    write(tmp_path, "ag.yaml", agent_yaml("ag", extra="deny_tools: [kv.delete, shell.run]\nsub_agents: [ag]\n"))
    result = invoke("validate", str(agent))  # shell is off: denying it is no mistake
    assert result.code == 0, result.err
    assert "(model scripted, sub-agents ag (itself))" in result.out


def test_new_with_a_name_too_long_for_a_file_is_one_line(tmp_path: Path, magent_home: Path) -> None:
    """It was an internal error (exit 1) naming OSError [Errno 36]; a --dir that is a file too."""
    name = "a" * 300
    result = invoke("new", "agent", name, cwd=tmp_path)
    assert (result.code, result.err) == (2, f"magent: error: cannot write {name}.yaml: File name too long\n")
    write(tmp_path, "taken", "a file\n")
    result = invoke("new", "workflow", "flow", "--dir", "taken", cwd=tmp_path)
    assert result.code == 2 and result.err.startswith("magent: error: cannot write taken/flow.yaml: "), result.err
    assert not list(tmp_path.glob("*.yaml"))


def test_a_name_too_long_for_a_file_is_a_usage_error_in_any_command(tmp_path: Path, magent_home: Path) -> None:
    """prompts add/show, examples copy and run with a 300-letter name were internal errors (exit 1)
    naming OSError [Errno 36]."""
    name = "a" * 300
    text = write(tmp_path, "p.txt", "Answer {{ task }}\n")
    for args, shown in ((("prompts", "add", name, "-v", "1", "-f", str(text)), str(magent_home / "prompts" / name)),
                        (("prompts", "show", name), str(magent_home / "prompts" / name)),
                        (("run", name, "-t", "hi"), name),
                        (("examples", "copy", name), name)):
        result = invoke(*args, cwd=tmp_path)
        assert (result.code, result.err) == (2, f"magent: error: {shown[:77]}...: the name is too long for a file\n")
    assert not (magent_home / "prompts").exists() or not any((magent_home / "prompts").iterdir())


def test_login_to_a_server_that_sends_its_own_authorization_is_refused(tmp_path: Path, magent_home: Path) -> None:
    """The docs say a static Authorization header turns the login off; 'mcp login' tried to
    connect all the same (here: 'could not be reached', exit 1)."""
    servers = write(tmp_path, "servers.yaml", "servers:\n  - {name: tracker, transport: streamable_http, config: "
                                              "{url: 'http://127.0.0.1:9/mcp', headers: {Authorization: Bearer x}}}\n")
    result = invoke("mcp", "login", "tracker", "--mcp", str(servers))
    assert (result.code, result.err) == (2, "magent: error: MCP server 'tracker' sends its own Authorization header "
                                            "(config.headers): magent does not log in to it\n")
    assert not (magent_home / "auth").exists() or not any((magent_home / "auth").iterdir())


def test_a_served_tool_given_arguments_of_the_wrong_type_says_which(tmp_path: Path, magent_home: Path) -> None:
    """Over MCP: a task that is not text was refused as '-t/--task must not be empty' (an option
    of the CLI, and not what was wrong), blank text started nothing but said the same; resume's
    state_updates that are not an object were a protocol error carrying Python's TypeError, with
    a traceback on the server's stderr; a bad tasks_list status named the CLI's --status."""
    import asyncio

    from support.mcpserve import stdio_session

    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    agent = str(write(tmp_path, "ag.yaml", agent_yaml("ag")))
    done = invoke("run", agent, "-t", "hello")
    task_id = done.out.split()[1]

    async def main() -> list[tuple[bool, str]]:
        async with stdio_session(agent) as s:
            calls = [("ag", {"task": 5}), ("ag", {"task": "   "}),
                     ("resume", {"task_id": task_id, "action": "modify", "state_updates": 5}),
                     ("resume", {"task_id": task_id, "message": ["a"]}), ("tasks_list", {"status": "done"})]
            replies = [await s.call_tool(name, args) for name, args in calls]
            return [(bool(r.is_error), r.content[0].text) for r in replies]

    assert asyncio.run(main()) == [
        (True, "ag: argument 'task' is text, not 5"),
        (True, "ag: argument 'task' is required"),
        (True, "resume: state_updates is an object of State fields, not 5"),
        (True, "resume: message is text, not ['a']"),
        (True, "tasks_list: status 'done' is not one of pending, running, awaiting_human, interrupted, completed, "
               "failed, cancelled")]
    assert [p.name for p in (magent_home / "tasks").iterdir()] == [task_id]


def test_a_file_cut_short_inside_brackets_says_so(tmp_path: Path, magent_home: Path) -> None:
    """It said PyYAML's "expected the node content, but found '<stream end>'" (without even
    'YAML syntax')."""
    cut = write(tmp_path, "cut.json", '{"name": "ag",')
    result = invoke("validate", str(cut))
    assert (result.code, result.err) == (2, f"magent: error: {cut}:1:15: YAML syntax: the file ends where a value "
                                            "should follow (a '{' or '[' that is not closed, or a ',' or ':' with "
                                            "nothing after it)\n")


def test_serve_over_stdio_refuses_an_address_it_would_ignore(magent_home: Path) -> None:
    """--port and --host were taken and ignored over stdio (a client config meant for HTTP
    started a stdio server that waited on a closed stdin and exited 0)."""
    agent = str(Path(__file__).resolve().parent.parent / "examples" / "agents" / "note_taker.yaml")
    for option in (("--port", "9000"), ("--host", "0.0.0.0")):
        result = run("mcp", "serve", agent, *option)
        assert (result.code, result.err) == (2, "magent: error: --host and --port go with --transport "
                                                "streamable-http (over stdio the client starts magent itself)\n")


def test_a_budget_limit_given_twice_is_refused(tmp_path: Path, magent_home: Path) -> None:
    """'--budget max_tokens=1,max_tokens=2' ran with the last one, silently."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "ag.yaml", agent_yaml("ag"))
    result = invoke("run", "ag.yaml", "-t", "hi", "--budget", "max_tokens=100,max_tokens=50000", cwd=tmp_path)
    assert (result.code, result.err) == (2, "magent: error: --budget: max_tokens is given twice\n")
    assert not (magent_home / "tasks").exists()


def test_examples_copy_into_a_place_it_cannot_write_is_one_line(tmp_path: Path, magent_home: Path) -> None:
    """A file where a folder of the examples goes was an internal error (exit 1) naming
    FileExistsError."""
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "agents").write_text("not a folder\n")
    result = invoke("examples", "copy", str(dest))
    assert (result.code, result.err) == (2, f"magent: error: cannot write {dest / 'agents'}: File exists; "
                                            "nothing was copied\n")
    assert [p.name for p in dest.iterdir()] == ["agents"]


def test_an_always_tool_that_deny_tools_takes_away_says_so(tmp_path: Path, magent_home: Path) -> None:
    """It said "'kv.set' is not one of the agent's tools (did you mean 'kv.*'?)": kv.* does hold
    it; deny_tools took it away."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    agent = write(tmp_path, "ag.yaml", agent_yaml("ag", extra="deny_tools: [kv.set]\n"
                                                             "tool_selection: {top_k: 2, always: [kv.set]}\n"))
    for args in (("validate", str(agent)), ("run", str(agent), "-t", "hi")):
        result = invoke(*args)
        assert result.code == 2
        assert result.err.endswith(f"{agent}:7:37: tool_selection.always[0]: 'kv.set' is denied by deny_tools "
                                   "('kv.set'): it cannot always be sent\n"), result.err


def test_an_empty_list_or_text_where_one_is_needed_says_so_plainly(tmp_path: Path, magent_home: Path) -> None:
    """It said 'expected at least 1 items, got a list' and 'expected at least 1 characters, got '''."""
    write(tmp_path, "note.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "note.yaml", agent_yaml("note"))
    flow = write(tmp_path, "flow.yaml", "name: flow\nentry_point: a\nnodes:\n  a: {type: plan, agent: note, workers: []}\n")
    result = invoke("validate", str(flow))
    assert result.err == (f"magent: error: invalid workflow: {flow}:4:32: nodes.a.workers: expected at least one "
                          "item, got an empty list\n")
    agent = routed_agent(tmp_path, "  models: [openai/big-model, {model: ''}]\n")
    result = invoke("validate", str(agent))
    assert result.err == (f"magent: error: invalid agent: {agent}:7:31: llm_config.models[1].model: expected text "
                          "that is not empty, got ''\n")


def test_a_config_file_that_is_a_link_to_nowhere_is_not_taken_as_absent(tmp_path: Path, magent_home: Path) -> None:
    """config/retention_policy.yaml (or mcp_servers.yaml) as a dangling or looping link was read
    as no file at all: a sweep went on with the built-in policy and deleted tasks. It is now a
    file that cannot be read (exit 2, nothing deleted)."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "ag.yaml", agent_yaml("ag"))
    done = invoke("run", "ag.yaml", "-t", "hi", "--retention-days", "0", cwd=tmp_path)
    assert done.code == 0, done.err
    policy = magent_home / "config" / "retention_policy.yaml"
    policy.unlink(missing_ok=True)
    policy.symlink_to(tmp_path / "dotfiles" / "retention.yaml")  # moved away since
    swept = invoke("retention", "sweep")
    assert (swept.code, swept.err) == (2, f"magent: error: {policy}: file not found\n")
    assert len(list((magent_home / "tasks").iterdir())) == 1
    servers = magent_home / "config" / "mcp_servers.yaml"
    servers.unlink(missing_ok=True)
    servers.symlink_to(servers)
    listed = invoke("tools", "list")
    assert (listed.code, listed.err) == (2, f"magent: error: {servers}: cannot read: Too many levels of symbolic links\n")
    policy.unlink()
    shown = invoke("config", "show")  # it said 'not there: magent init creates it'
    assert (shown.code, shown.err) == (2, f"magent: error: {servers}: cannot read: Too many levels of symbolic links\n")


def test_a_login_whose_callback_port_is_taken_keeps_the_old_login(tmp_path: Path, magent_home: Path) -> None:
    """A fixed oauth.callback_port in use was an internal error (exit 1, OSError Errno 98), after
    the server's stored tokens had been deleted already."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        servers = write(tmp_path, "servers.yaml", "servers:\n  - {name: tracker, transport: streamable_http, config: "
                                                  f"{{url: 'http://127.0.0.1:9/mcp', oauth: {{callback_port: {port}}}}}}}\n")
        stored = magent_home / "auth" / "tracker.json"
        stored.parent.mkdir(parents=True)
        before = '{"url": "http://127.0.0.1:9/mcp", "tokens": {"access_token": "at-1", "token_type": "Bearer"}}\n'
        stored.write_text(before)
        result = invoke("mcp", "login", "tracker", "--mcp", str(servers))
    assert (result.code, result.err) == (2, f"magent: error: cannot wait for the login's answer on 127.0.0.1:{port} "
                                            "(oauth.callback_port): address already in use\n")
    assert stored.read_text() == before


def test_an_empty_model_is_refused_not_taken_as_no_model(tmp_path: Path, magent_home: Path) -> None:
    """--model '' was taken as no --model at all (the run went on with the agent's own)."""
    write(tmp_path, "ag.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "ag.yaml", agent_yaml("ag"))
    rows = write(tmp_path, "rows.jsonl", '{"task": "a"}\n')
    said = "magent: error: --model is empty: name a model (e.g. openai/gpt-4o-mini) or leave --model out\n"
    for args in (("run", "ag.yaml", "-t", "hi", "--model", ""), ("chat", "ag.yaml", "hi", "--model", " "),
                 ("batch", "run", "ag.yaml", "-i", str(rows), "--model", "")):
        result = invoke(*args, cwd=tmp_path)
        assert (result.code, result.err) == (2, said)
    assert not (magent_home / "tasks").exists() and not (magent_home / "batches").exists()

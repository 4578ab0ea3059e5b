"""Config files crafted to break magent: nesting that exhausts the stack, files too big to be
configs, bytes that are not UTF-8. Each is one line naming file:line(:col), exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.config import load_file
from magent.errors import ConfigError
from support.cli import invoke, run
from support.homes import snapshot_tree

AGENT = "name: a\nrole: tester\nsystem_prompt: hi\nllm_config: {model: scripted, script: s.yaml}\n"


def one_error_line(r) -> str:
    assert r.code == 2, (r.code, r.out, r.err)
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("magent: error: "), r.err
    return lines[0][len("magent: error: "):]


# nesting ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,line,column", [
    ("[" * 50_000, 1, 101),
    ("{a: " * 50_000, 1, 401),
    ("a:\n" + "".join(" " * n + "- \n" for n in range(1, 400)), None, None),
])
def test_deep_nesting_is_refused_naming_the_limit(tmp_path, text, line, column):
    f = tmp_path / "deep.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_file(f)
    assert "nested more than 100 levels deep" in str(exc.value)
    assert exc.value.line is not None and exc.value.column is not None
    if line is not None:
        assert (exc.value.line, exc.value.column) == (line, column)


def test_nesting_within_the_limit_loads(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text("a: " + "[" * 90 + "1" + "]" * 90 + "\n")
    data = load_file(f).data["a"]
    for _ in range(90):
        data = data[0]
    assert data == 1


def test_deep_nesting_from_the_command_line(tmp_path, magent_home):
    (tmp_path / "deep.yaml").write_text("[" * 50_000)
    (tmp_path / "deep.json").write_text('{"a": ' * 50_000)
    for name in ("deep.yaml", "deep.json"):
        message = one_error_line(run("validate", name, cwd=str(tmp_path)))
        assert message.startswith(f"{name}:1:") and "nested more than 100 levels deep" in message
    message = one_error_line(run("run", "deep.yaml", "-t", "x", cwd=str(tmp_path)))
    assert message.startswith("deep.yaml:1:101: ")
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


# size -------------------------------------------------------------------------------------------

def big_agent(path: Path, size: int) -> Path:
    padding = "# " + "x" * 98 + "\n"
    path.write_text(AGENT + padding * (size // len(padding) + 1))
    return path


def test_a_config_file_over_the_size_limit_is_refused(tmp_path, magent_home):
    big = big_agent(tmp_path / "big.yaml", 1_100_000)
    (tmp_path / "s.yaml").write_text("responses: [{content: hi}]\n")
    for args in (("validate", "big.yaml"), ("run", "big.yaml", "-t", "x")):
        message = one_error_line(invoke(*args, cwd=str(tmp_path)))
        assert message == (f"big.yaml: the file is {big.stat().st_size:,} bytes, over the limit of "
                           "1,000,000 bytes for a config file (MAGENT_MAX_CONFIG_BYTES sets the limit)")
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_the_size_limit_is_set_with_an_environment_variable(tmp_path, monkeypatch):
    big_agent(tmp_path / "big.yaml", 1_100_000)
    (tmp_path / "s.yaml").write_text("responses: [{content: hi}]\n")
    r = invoke("validate", "big.yaml", cwd=str(tmp_path), env={"MAGENT_MAX_CONFIG_BYTES": "2000000"})
    assert r.code == 0, r.err
    monkeypatch.setenv("MAGENT_MAX_CONFIG_BYTES", "2000")
    with pytest.raises(ConfigError, match="over the limit of 2,000 bytes"):
        load_file(tmp_path / "big.yaml")
    bad = one_error_line(invoke("validate", "big.yaml", cwd=str(tmp_path),
                                env={"MAGENT_MAX_CONFIG_BYTES": "lots"}))
    assert bad == "MAGENT_MAX_CONFIG_BYTES='lots' is not a number of bytes (for example 5000000)"


def test_a_device_that_never_ends_is_not_read_to_the_end(tmp_path):
    """A FIFO or /dev/zero has no size to check first: reading stops past the limit."""
    with pytest.raises(ConfigError, match="over the limit of 1,000,000 bytes"):
        load_file("/dev/zero")


# encoding ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("data,line,column,byte", [
    (b"name: a\nrole: tester\nsystem_prompt: \"caf\xe9 au lait\"\n", 3, 20, "0xe9"),
    (b"name: \xff\xfe\n", 1, 7, "0xff"),
    ("name: a\nrole: \u00e9t\u00e9 ".encode() + b"\x80\n", 2, 11, "0x80"),
])
def test_invalid_utf8_names_line_and_column(tmp_path, data, line, column, byte):
    f = tmp_path / "bad.yaml"
    f.write_bytes(data)
    with pytest.raises(ConfigError) as exc:
        load_file(f)
    assert (exc.value.line, exc.value.column) == (line, column)
    assert f"byte {byte} is not valid UTF-8" in str(exc.value)


def test_invalid_utf8_from_the_command_line(tmp_path, magent_home):
    (tmp_path / "bad.yaml").write_bytes(b"name: a\nrole: tester\nsystem_prompt: \"caf\xe9\"\n")
    before = snapshot_tree(tmp_path)
    message = one_error_line(run("validate", "bad.yaml", cwd=str(tmp_path)))
    assert message == "bad.yaml:3:20: byte 0xe9 is not valid UTF-8 (save the file as UTF-8)"
    assert snapshot_tree(tmp_path) == before

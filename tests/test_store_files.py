"""The durable file primitives: atomic replace, immutable create, JSON Lines append with torn tails."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from magent.errors import StoreError, SymlinkError
from magent.store.files import (
    JsonlWriter, _write_temp, atomic_write, create_immutable, ensure_dir, read_json, read_jsonl,
    write_json,
)

READER = textwrap.dedent("""
    import json, sys, time
    path, seconds = sys.argv[1], float(sys.argv[2])
    reads = torn = missing = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            missing += 1
            continue
        reads += 1
        try:
            doc = json.loads(data)
            assert doc["check"] == len(doc["fill"])
        except Exception:
            torn += 1
            if "--stop-at-first" in sys.argv:
                break
    print(json.dumps({"reads": reads, "torn": torn, "missing": missing}))
""")


def _doc(n: int, size: int) -> bytes:
    fill = chr(ord("a") + n % 26) * size
    return json.dumps({"n": n, "check": size, "fill": fill}).encode()


def _race(path: Path, write, seconds: float, *extra: str) -> dict:
    """Run a reader process on ``path`` while ``write(n)`` replaces it in a loop."""
    write(0)
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path), str(seconds), *extra],
                              stdout=subprocess.PIPE, text=True)
    n = 1
    while reader.poll() is None:
        write(n)
        n += 1
    out, _ = reader.communicate(timeout=30)
    result = json.loads(out)
    result["writes"] = n
    return result


def test_atomic_write_readers_never_see_a_partial_file(tmp_path):
    path = tmp_path / "doc.json"
    sizes = [50_000, 400_000, 1_000]  # alternating sizes: a torn file cannot parse as the check says
    result = _race(path, lambda n: atomic_write(path, _doc(n, sizes[n % 3])), 1.5)
    assert result["reads"] > 20 and result["writes"] > 5, result  # they did overlap
    assert result["torn"] == 0 and result["missing"] == 0, result
    assert not [p for p in tmp_path.iterdir() if p.name != "doc.json"]  # no temp files left


def test_the_race_detects_a_naive_writer(tmp_path):
    """The same harness catches a writer that truncates and rewrites in place: the test has teeth."""
    path = tmp_path / "doc.json"

    def naive(n: int) -> None:
        data = _doc(n, 400_000)
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            time.sleep(0.002)
            fh.write(data[len(data) // 2:])

    # The reader stops at its first torn read; its 120 s only bound a hang, so the verdict does
    # not depend on how often a loaded machine lets it run inside the writer's 2 ms window.
    result = _race(path, naive, 120, "--stop-at-first")
    assert result["torn"] >= 1, result


def test_atomic_write_replaces_content_and_keeps_mode_0600(tmp_path):
    path = tmp_path / "x.json"
    write_json(path, {"a": 1})
    write_json(path, {"a": 2})
    assert read_json(path) == {"a": 2}
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_temp_file_left_by_a_crash_is_not_the_real_file(tmp_path):
    path = tmp_path / "task.json"
    write_json(path, {"v": "old"})
    tmp = _write_temp(path, b'{"v": "half-writ')  # the crash came before os.replace
    assert tmp.parent == path.parent and tmp.name.startswith(".") and tmp.name.endswith(".tmp")
    assert read_json(path) == {"v": "old"}
    write_json(path, {"v": "new"})  # the next write is unaffected by the leftover
    assert read_json(path) == {"v": "new"}


def test_create_immutable_never_overwrites(tmp_path):
    path = tmp_path / "checkpoint_000.json"
    create_immutable(path, b"first")
    with pytest.raises(FileExistsError):
        create_immutable(path, b"second")
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint_000.json"]  # temp cleaned up
    assert path.stat().st_mode & 0o777 == 0o600


def test_create_immutable_concurrent_writers_one_wins(tmp_path):
    path = tmp_path / "checkpoint_001.json"
    outcomes: list[str] = []

    def attempt(n: int) -> None:
        try:
            create_immutable(path, f"writer {n}".encode())
            outcomes.append("won")
        except FileExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert path.read_bytes().startswith(b"writer ")


def test_unwritable_directory_is_a_store_error(tmp_path):
    target = tmp_path / "file-not-dir"
    target.write_text("x")
    with pytest.raises(StoreError, match="cannot write"):
        atomic_write(target / "task.json", b"{}")
    with pytest.raises(StoreError, match="not a directory"):
        ensure_dir(target)


# JSON Lines -------------------------------------------------------------------------------

def test_jsonl_appends_one_line_per_object(tmp_path):
    path = tmp_path / "events.jsonl"
    with JsonlWriter(path) as w:
        for i in range(3):
            w.append({"seq": i, "text": "line\nwith newline"})
    lines = path.read_bytes().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""
    assert [o["seq"] for o in read_jsonl(path)] == [0, 1, 2]
    assert path.stat().st_mode & 0o777 == 0o600


def test_torn_last_line_is_ignored_on_read(tmp_path):
    path = tmp_path / "entries.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3, "b": "cut sh')
    problems: list[str] = []
    assert list(read_jsonl(path, problems)) == [{"a": 1}, {"a": 2}]
    assert problems == ["entries.jsonl: torn last line ignored (a crash mid-write)"]


def test_torn_last_line_is_repaired_on_next_append(tmp_path):
    path = tmp_path / "entries.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2, "b": "cut')
    with JsonlWriter(path) as w:
        w.append({"a": 3})
    assert path.read_bytes() == b'{"a": 1}\n{"a":3}\n'
    problems: list[str] = []
    assert list(read_jsonl(path, problems)) == [{"a": 1}, {"a": 3}]
    assert problems == []


def test_a_file_that_is_only_a_torn_line_is_emptied_on_append(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"seq": 1, "ty')
    with JsonlWriter(path) as w:
        w.append({"seq": 1})
    assert path.read_bytes() == b'{"seq":1}\n'


def test_bad_line_in_the_middle_is_skipped_and_reported(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"a": 1}\nnot json\n[1, 2]\n\n{"a": 2}\n')
    problems: list[str] = []
    assert list(read_jsonl(path, problems)) == [{"a": 1}, {"a": 2}]
    assert problems == ["events.jsonl:2: not valid JSON, skipped",
                        "events.jsonl:3: not a JSON object, skipped"]


def test_missing_jsonl_file_reads_as_empty(tmp_path):
    assert list(read_jsonl(tmp_path / "nope.jsonl")) == []


def test_a_reader_during_appends_sees_only_whole_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    stop = threading.Event()
    seen_bad: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            problems: list[str] = []
            for obj in read_jsonl(path, problems):
                if obj.get("fill") != "x" * obj["size"]:
                    seen_bad.append(str(obj)[:80])
            seen_bad.extend(p for p in problems if "torn" not in p)

    t = threading.Thread(target=reader)
    t.start()
    try:
        with JsonlWriter(path) as w:
            for i in range(400):
                size = (i * 7919) % 20_000
                w.append({"i": i, "size": size, "fill": "x" * size})
    finally:
        stop.set()
        t.join()
    assert seen_bad == []
    assert len(list(read_jsonl(path))) == 400


def test_jsonl_writer_survives_a_killed_writer(tmp_path):
    """A real process appending is SIGKILLed; the file reads cleanly and the next append repairs it."""
    path = tmp_path / "events.jsonl"
    code = textwrap.dedent(f"""
        import sys
        from magent.store.files import JsonlWriter
        w = JsonlWriter(__import__("pathlib").Path({str(path)!r}))
        i = 0
        while True:
            w.append({{"i": i, "fill": "y" * 50000}})
            i += 1
            if i == 20:
                print("going", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "going"
    proc.kill()
    proc.wait(timeout=10)
    rows = list(read_jsonl(path))
    assert len(rows) >= 20 and [r["i"] for r in rows] == list(range(len(rows)))
    with JsonlWriter(path) as w:
        w.append({"i": "after"})
    again = list(read_jsonl(path))
    assert again[-1] == {"i": "after"} and len(again) == len(rows) + 1
    assert path.read_bytes().endswith(b'{"i":"after"}\n')


def _planted_link(tmp_path: Path, name: str) -> tuple[Path, Path]:
    target = tmp_path / "outside" / name
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(b'{"outside": true}\n')
    link = tmp_path / name
    link.symlink_to(target)
    return link, target


@pytest.mark.parametrize("operation", [
    lambda p: read_json(p),
    lambda p: list(read_jsonl(p)),
    lambda p: JsonlWriter(p).append({"x": 1}),
    lambda p: atomic_write(p, b"{}"),
    lambda p: write_json(p, {}),
])
def test_no_primitive_reads_or_writes_through_a_link(tmp_path, operation):
    """Even a link planted after the task directory was checked is refused at the open."""
    link, target = _planted_link(tmp_path, "events.jsonl")
    with pytest.raises(SymlinkError, match=f"{link} is a symbolic link"):
        operation(link)
    assert target.read_bytes() == b'{"outside": true}\n'
    assert link.is_symlink()


def test_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "task.json"
    os.mkfifo(fifo)
    with pytest.raises(StoreError, match="is not a regular file"):
        read_json(fifo)

def test_a_line_is_read_as_json_reads_it():
    """loads lets pydantic's parser read first (a third of json's time on a 10 KB tool result);
    what it gives must be what json gives, and what either refuses must still be refused as a
    ValueError, whatever the line holds."""
    import math
    import random
    import struct

    from magent.store.files import loads

    def same(data):
        try:
            expected = json.loads(data)
        except RecursionError:
            with pytest.raises(ValueError):
                loads(data)
            return
        except ValueError:
            with pytest.raises(ValueError):
                loads(data)
            return
        got = loads(data)
        assert repr(got) == repr(expected), data[:80]
        assert [type(v) for v in _walk(got)] == [type(v) for v in _walk(expected)], data[:80]

    rng = random.Random(11)
    numbers = ["0", "-0", "-0.0", "1e400", "-1e400", "1.7976931348623157e309", "4.9e-324",
               "2.2250738585072011e-308", "9007199254740993", "12345678901234567890123456789", "1E5",
               "1.5e+3", "NaN", "Infinity", "-Infinity", "01", "1.", ".5", "0x10", "+1"]
    for _ in range(3000):
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if math.isfinite(bits):
            numbers.append(repr(bits))
        numbers.append(f"{rng.randint(0, 99999)}.{rng.randint(0, 10 ** rng.randint(0, 18))}"
                       f"e{rng.choice(['', '-', '+'])}{rng.randint(0, 330)}")
    for text in numbers:
        same(f'{{"a":{text}}}'.encode())
    lines = [rb'{"a":"\ud800"}', rb'{"a":"\udc00x\ud83d\ude00"}', rb'{"a":"\ud83d\ude00"}', rb'{"a":"\/\b\f\u0000"}',
             '{"a":"é😀\u2028\x7f"}'.encode(), b'{"a":"\xff"}', b'{"a":"\x01"}', b'\xef\xbb\xbf{"a":1}',
             b'{"a":1,"a":2}', b'{"\\u0061":1}', b'{"a":1} x', b' {"a":1}\r\n', b'{"a":1}\x0c', b'[1,2,]',
             b'{"a":tru}', b'{"a":true,"b":null,"c":[]}', b"", b"   ", b"null", b'"x"', b"[" * 250 + b"]" * 250,
             b"[" * 5000 + b"]" * 5000, b'{"a":' * 150 + b"1" + b"}" * 150, '{"a":"\ud800"}', '{"a":1}']
    for line in lines:
        same(line)
    from magent.store import files
    assert files._from_json is not None   # pydantic is loaded here: its parser was the one compared
    alphabet = [chr(c) for c in range(0x80)] + ["é", "\u2028", "\ufeff", "中", "😀", "\U0010ffff", "\ud800"]
    for _ in range(300):
        doc = {"id": "e1", "text": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))),
               "n": rng.random(), "calls": [{"arguments": {"k": rng.randint(-10**20, 10**20)}}]}
        same(json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass"))


def _walk(value):
    yield value
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)

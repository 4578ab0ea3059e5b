"""A long scripted-model script is parsed once and its data kept under the home for later runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.config import load_file
from magent.config import parsecache
from magent.errors import ConfigError


def big_script(folder: Path, n: int = 600, extra: str = "") -> Path:
    lines = ["responses:"]
    for i in range(n):
        lines += [f"  - content: step {i}{extra}", "    tool_calls:",
                  f"      - {{name: kv.get, arguments: {{key: page, n: {i}, ratio: 0.5, flag: true}}}}"]
    path = folder / "script.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size >= parsecache.MIN_BYTES
    return path


def entries(home: Path) -> list[Path]:
    folder = home / "cache" / "parsed"
    return sorted(folder.glob("*.json")) if folder.exists() else []


@pytest.fixture
def home(magent_home: Path) -> Path:
    magent_home.mkdir()
    return magent_home


def test_a_big_file_is_kept_and_read_back_the_same(home: Path, tmp_path: Path) -> None:
    path = big_script(tmp_path)
    first = load_file(path, cached=True)
    assert len(entries(home)) == 1
    second = load_file(path, cached=True)
    assert second.raw == first.raw and second.data == first.data
    assert second.data["responses"][7]["tool_calls"][0]["arguments"] == {"key": "page", "n": 7, "ratio": 0.5, "flag": True}
    # what comes back are new objects: changing one run's data cannot leak into the next
    second.data["responses"].clear()
    assert load_file(path, cached=True).data == first.data


def test_the_entry_is_what_is_read_when_present(home: Path, tmp_path: Path) -> None:
    path = big_script(tmp_path)
    load_file(path, cached=True)
    (entry,) = entries(home)
    doc = json.loads(entry.read_text())
    doc["raw"]["responses"][0]["content"] = "from the cache"
    entry.write_text(json.dumps(doc))
    assert load_file(path, cached=True).data["responses"][0]["content"] == "from the cache"


def test_a_changed_file_is_parsed_again(home: Path, tmp_path: Path) -> None:
    path = big_script(tmp_path)
    load_file(path, cached=True)
    big_script(tmp_path, extra=" again")
    assert load_file(path, cached=True).data["responses"][0]["content"] == "step 0 again"
    assert len(entries(home)) == 2


@pytest.mark.parametrize("damage", [b"{not json", b'{"version": 999, "raw": {}}', b"[]"])
def test_a_damaged_entry_means_parsing_the_yaml(home: Path, tmp_path: Path, damage: bytes) -> None:
    path = big_script(tmp_path)
    expected = load_file(path, cached=True).data
    (entry,) = entries(home)
    entry.write_bytes(damage)
    assert load_file(path, cached=True).data == expected


def test_environment_values_are_resolved_each_time_and_never_kept(home: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = big_script(tmp_path, extra=" ${WHO}")
    monkeypatch.setenv("WHO", "s3cret-one")
    assert load_file(path, cached=True).data["responses"][0]["content"] == "step 0 s3cret-one"
    monkeypatch.setenv("WHO", "s3cret-two")
    source = load_file(path, cached=True)
    assert source.data["responses"][0]["content"] == "step 0 s3cret-two"
    assert source.raw["responses"][0]["content"] == "step 0 ${WHO}"
    assert "s3cret-two" in source.secrets  # still redacted from what the run writes
    (entry,) = entries(home)
    assert "s3cret" not in entry.read_text()


def test_data_json_cannot_hold_exactly_is_not_kept(home: Path, tmp_path: Path) -> None:
    path = big_script(tmp_path)
    path.write_text(path.read_text() + "when: 2026-11-23\n")  # a YAML date: not JSON
    assert str(load_file(path, cached=True).data["when"]) == "2026-11-23"
    assert entries(home) == []
    path.write_text(path.read_text().replace("when: 2026-11-23", "7: seven"))  # an integer key
    assert load_file(path, cached=True).data[7] == "seven"
    assert entries(home) == []


def test_small_files_and_a_missing_home_are_parsed_without_a_cache(magent_home: Path, tmp_path: Path) -> None:
    path = big_script(tmp_path)
    assert load_file(path, cached=True).data["responses"][0]["content"] == "step 0"
    assert not magent_home.exists()  # never created by reading a file
    magent_home.mkdir()
    small = tmp_path / "small.yaml"
    small.write_text("responses:\n  - content: hi\n")
    load_file(small, cached=True)
    assert entries(magent_home) == []


def test_only_the_newest_entries_are_kept(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The trimming reads KEEP when it runs; a bound of 3 checks it with 6 big parses instead of 19.
    monkeypatch.setattr(parsecache, "KEEP", 3)
    path = big_script(tmp_path)
    for i in range(parsecache.KEEP + 3):
        big_script(tmp_path, extra=f" {i}")
        load_file(path, cached=True)
    assert len(entries(home)) == parsecache.KEEP


def test_a_mistake_in_a_kept_file_still_names_its_line(home: Path, tmp_path: Path) -> None:
    from magent.llm.scripted import load_script

    path = big_script(tmp_path)
    path.write_text(path.read_text().replace("  - content: step 5\n", "  - contnet: step 5\n"))
    load_file(path, cached=True)
    assert len(entries(home)) == 1  # the YAML is fine; the script is not
    with pytest.raises(ConfigError) as err:
        load_script(path)
    assert "script.yaml:17:" in str(err.value) and "contnet" in str(err.value)

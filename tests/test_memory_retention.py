"""The retention policy's ``memory`` section, applied by ``magent retention sweep``."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

from magent import paths
from magent.ids import now
from magent.memory.service import Memory
from support.cli import invoke


def policy(text: str) -> None:
    paths.config_dir().mkdir(parents=True, exist_ok=True)
    paths.retention_policy_file().write_text(text)


def seed() -> dict[str, str]:
    """Four memories: used today, unused for 100 days, archived 40 days ago, unimportant."""
    ids = {}
    with Memory.open() as memory:
        for name, importance in (("today", 0.5), ("stale", 0.6), ("archived", 0.5), ("faint", 0.1)):
            ids[name] = memory.remember(f"memory {name}", scope="global", importance=importance).entry.id
    conn = sqlite3.connect(paths.memory_db())
    old = lambda days: (now() - timedelta(days=days)).isoformat(timespec="microseconds")  # noqa: E731
    conn.execute("UPDATE memories SET last_accessed = ? WHERE id = ?", [old(100), ids["stale"]])
    conn.execute("UPDATE memories SET status = 'archived', archived_at = ? WHERE id = ?", [old(40), ids["archived"]])
    conn.commit()
    conn.close()
    return ids


def remaining() -> set[str]:
    return {m["content"].split()[1] for m in json.loads(invoke("memory", "list", "--all", "--json").out)}


def test_without_a_memory_section_no_memory_is_removed(magent_home: Path) -> None:
    seed()
    policy("default_days: 1\n")
    r = invoke("retention", "sweep")
    assert r.code == 0 and "memory" not in r.out
    assert remaining() == {"today", "stale", "archived", "faint"}
    assert "kept until forgotten (no memory section)" in invoke("retention", "show").out


def test_each_rule_removes_what_it_names_and_a_dry_run_only_lists_it(magent_home: Path) -> None:
    ids = seed()
    policy("memory:\n  unused_days: 90\n  archived_days: 30\n  max_entries: 1\n")
    dry = invoke("retention", "sweep", "--dry-run")
    assert dry.code == 0
    lines = dry.out.splitlines()
    assert lines[0].startswith(f"would remove  memory {ids['stale'][:8]}  unused_days    last used ")
    assert lines[1].startswith(f"would remove  memory {ids['archived'][:8]}  archived_days  archived ")
    assert lines[2].startswith(f"would remove  memory {ids['faint'][:8]}  max_entries    importance 0.100")
    assert lines[3].endswith("memory: would remove 3 memories (1 by archived_days, 1 by max_entries, "
                             "1 by unused_days)")
    assert remaining() == {"today", "stale", "archived", "faint"}
    swept = invoke("retention", "sweep", "--json")
    assert swept.code == 0
    report = json.loads(swept.out)["memory"]
    assert report["removed"] == 3 and report["by_rule"] == {"unused_days": 1, "archived_days": 1, "max_entries": 1}
    assert remaining() == {"today"}
    shown = invoke("retention", "show").out
    assert "memory            unused_days 90d, archived_days 30d, max_entries 1" in shown


def test_an_unreadable_memory_database_is_reported_and_kept(magent_home: Path) -> None:
    policy("memory: {unused_days: 1}\n")
    db = paths.memory_db()
    db.parent.mkdir(parents=True)
    db.write_bytes(b"garbage" * 100)
    r = invoke("retention", "sweep")
    assert r.code == 1
    assert f"magent: warning: memory: the memory database {db} cannot be read" in r.err
    assert db.read_bytes() == b"garbage" * 100


def test_a_bad_memory_section_stops_the_sweep(magent_home: Path) -> None:
    policy("memory:\n  unused_dayz: 3\n")
    r = invoke("retention", "sweep")
    assert r.code == 2 and "memory.unused_dayz" in r.err and "did you mean 'unused_days'" in r.err
    assert invoke("validate", str(paths.retention_policy_file())).code == 2

"""Retention policy: precedence of the rules, the eligibility clock, and bad policy files."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from magent.config.files import load_retention_policy
from magent.errors import ConfigError, StoreError
from magent.ids import new_id
from magent.models import RetentionPolicy, TaskStatus
from magent.store.tasks import Store
from magent.store.retention import Retention, TaskRecord, read_record, resolve
from support.cli import invoke
from support.homes import HomeBuilder, snapshot_tree

NOW = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
POLICY = RetentionPolicy(default_days=7, by_task={"critical": 30, "debug": 3, "audit": 90},
                         by_status={TaskStatus.completed: 5, TaskStatus.failed: 14})


def record(status: str = "completed", *, tags: tuple[str, ...] = (), days: int | None = None,
           age_days: float = 0) -> TaskRecord:
    return TaskRecord(id=new_id(), status=TaskStatus(status), tags=tags, retention_days=days,
                      since=NOW - timedelta(days=age_days), since_field="completed_at",
                      forks=frozenset(), parent=None)


def judge(rec: TaskRecord, policy: RetentionPolicy = POLICY):
    return Retention(Store(), policy, clock=lambda: NOW).judge(rec)


# precedence: own days, then tags (longest wins), then status, then default
def test_own_retention_days_beat_tags_status_and_default():
    rule = resolve(POLICY, record("failed", tags=("audit",), days=1))
    assert (rule.source, rule.days) == ("task", 1)


def test_own_retention_days_may_be_longer_than_every_rule():
    rule = resolve(POLICY, record("completed", tags=("debug",), days=400))
    assert (rule.source, rule.days) == ("task", 400)


@pytest.mark.parametrize("tags", [("debug", "critical", "audit"), ("audit", "debug"), ("critical", "audit")])
def test_the_longest_tag_wins_whatever_the_order(tags):
    rule = resolve(POLICY, record(tags=tags))
    assert (rule.source, rule.days, rule.detail) == ("tag", 90, "tag audit: 90d")


def test_a_tag_beats_the_status_even_when_shorter():
    rule = resolve(POLICY, record("failed", tags=("debug", "unrelated")))
    assert (rule.source, rule.days) == ("tag", 3)


def test_tags_not_in_the_policy_fall_through_to_the_status():
    rule = resolve(POLICY, record("failed", tags=("unrelated",)))
    assert (rule.source, rule.days) == ("status", 14)


def test_the_default_applies_when_nothing_else_does():
    rule = resolve(POLICY, record("cancelled"))
    assert (rule.source, rule.days) == ("default", 7)


@pytest.mark.parametrize("status", ["running", "awaiting_human"])
def test_running_and_paused_tasks_are_never_swept_unless_named(status):
    rec = record(status, tags=("debug",), days=0, age_days=10_000)
    v = judge(rec)
    assert v.rule.source == "protected" and v.eligible_at is None
    assert (v.action, v.reason) == ("skip", status)


@pytest.mark.parametrize("status", ["running", "awaiting_human"])
def test_naming_the_status_lifts_the_protection_and_precedence_still_applies(status):
    policy = POLICY.model_copy(update={"by_status": {TaskStatus(status): 2}})
    assert judge(record(status, age_days=3), policy).action == "remove"
    assert judge(record(status, age_days=1), policy).action == "keep"
    # the task's own days still come first once the status is no longer protected
    v = judge(record(status, days=30, age_days=3), policy)
    assert (v.rule.source, v.action) == ("task", "keep")


def test_pending_tasks_are_not_protected():
    assert judge(record("pending", age_days=8)).action == "remove"


def test_eligibility_is_measured_from_the_clock_plus_the_days():
    v = judge(record("completed", age_days=4.9))  # status completed: 5 days
    assert v.action == "keep" and v.eligible_at == NOW + timedelta(days=0.1)
    assert judge(record("completed", age_days=5)).action == "remove"


def test_zero_days_means_eligible_as_soon_as_finished():
    assert judge(record("completed", days=0, age_days=0)).action == "remove"


def test_days_beyond_the_calendar_mean_never():
    v = judge(record(days=10**12))
    assert v.action == "keep" and v.eligible_at is None


# reading task.json cheaply
def test_read_record_uses_completed_at_else_updated_at(magent_home: Path):
    home = HomeBuilder()
    done = home.task(status="completed", completed_at=NOW - timedelta(days=3))
    open_ = home.task(status="pending")
    r = read_record(done.path, done.id)
    assert (r.since_field, r.since) == ("completed_at", NOW - timedelta(days=3))
    r = read_record(open_.path, open_.id)
    assert r.since_field == "updated_at" and r.since == open_.task.updated_at


@pytest.mark.parametrize("content, says", [
    (None, "task.json is missing"),
    (b'{"id": "', "unreadable"),
    (b"[1, 2]", "not a JSON object"),
    ({"status": "finished"}, "unknown status 'finished'"),
    ({"retention_days": -1}, "retention_days -1"),
    ({"completed_at": "yesterday"}, "completed_at 'yesterday' is not a timestamp"),
    ({"tags": "debug"}, "tags is not a list"),
    ({"id": "00000000-0000-4000-8000-000000000000"}, "does not match the directory name"),
])
def test_read_record_reports_what_is_wrong(magent_home: Path, content, says):
    t = HomeBuilder().task()
    f = t.path / "task.json"
    if content is None:
        f.unlink()
    elif isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(json.dumps({**json.loads(f.read_text()), **content}))
    with pytest.raises(StoreError, match=says):
        read_record(t.path, t.id)


# bad policy files: one clear line, exit 2, nothing deleted
BAD_POLICIES = [
    ("default_days: -1\n", "retention_policy.yaml:1:1: default_days: expected 0 or more"),
    ("by_task:\n  debug: -3\n", "retention_policy.yaml:2:3: by_task.debug: expected 0 or more"),
    ("by_status:\n  failed: -14\n", "retention_policy.yaml:2:3: by_status.failed"),
    ("by_status:\n  done: 3\n", "retention_policy.yaml:2:3: by_status.done"),
    ("default_days: [7\n", "retention_policy.yaml:2:1:"),
    ("- default_days: 7\n", "expected a mapping of fields"),
    ("keep_checkpoints: 0\n", "keep_checkpoints: expected more than 0"),
    ("default_days: 7\nkeep_days: 3\n", "unknown field 'keep_days'"),
]


@pytest.mark.parametrize("text, says", BAD_POLICIES)
def test_the_loader_rejects_bad_policies(tmp_path: Path, text, says):
    path = tmp_path / "retention_policy.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_retention_policy(path)
    assert says.split(":", 1)[-1].strip() in str(info.value)


@pytest.mark.parametrize("args", [("sweep",), ("sweep", "--dry-run"), ("sweep", "--json"), ("show",)])
@pytest.mark.parametrize("text, says", BAD_POLICIES[:5])
def test_a_bad_policy_is_exit_2_and_nothing_is_deleted(magent_home: Path, args, text, says):
    home = HomeBuilder(init=True)
    home.task(status="completed", completed_at=NOW - timedelta(days=400))
    (magent_home / "config" / "retention_policy.yaml").write_text(text)
    before = snapshot_tree(magent_home)
    r = invoke("retention", *args)
    assert r.code == 2
    assert says in r.err and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1
    assert r.out == ""
    assert snapshot_tree(magent_home) == before


def test_no_policy_file_means_the_built_in_defaults(magent_home: Path):
    home = HomeBuilder()  # no init: no config/retention_policy.yaml
    old = home.task(status="completed", completed_at=datetime.now(timezone.utc) - timedelta(days=8))
    young = home.task(status="completed", completed_at=datetime.now(timezone.utc) - timedelta(days=6))
    r = invoke("retention", "show")
    assert r.code == 0 and "built-in defaults" in r.out and "default_days      7d" in r.out
    r = invoke("retention", "sweep")
    assert r.code == 0 and "removed 1" in r.out
    assert not old.path.exists() and young.path.exists()


def test_task_fields_parses_the_head_but_never_misreads_a_tricky_document(magent_home: Path):
    from magent.store.retention import task_fields

    t = HomeBuilder().task(status="failed", tags=["debug"],
                           description='quote "config_snapshot": {"status": "completed"}, here',
                           config_snapshot={"status": "completed", "config_snapshot": 1})
    text = t.dir.task_file.read_text()
    assert task_fields(text)["status"] == "failed"
    assert task_fields(text)["tags"] == ["debug"]
    assert read_record(t.path, t.id).status == TaskStatus.failed
    # another field order (hand-written): a full parse, same answer
    doc = json.loads(text)
    reordered = {"config_snapshot": doc.pop("config_snapshot"), **doc}
    assert task_fields(json.dumps(reordered))["status"] == "failed"
    # a torn file is refused even though its head is intact
    with pytest.raises(ValueError, match="not closed"):
        task_fields(text[: len(text) // 2 + 200])

"""Retention: which task directories have outlived the policy, and removing them safely.

Policy (``resolve``): a task's own ``retention_days``, else the longest ``by_task``
days among its tags, else ``by_status`` for its status, else ``default_days``.
Tasks that are running or awaiting a human are never swept unless ``by_status``
names that status (the days are then decided by the same precedence). The clock
starts at ``completed_at``, or ``updated_at`` when the task never completed.

Deletion (``Retention.sweep``) is built so that no crash, race or planted link can
do harm:

- one sweep at a time: the ``retention-sweep`` lock, taken without waiting; a
  second sweep returns at once with ``busy`` set;
- each task's own lock is taken without waiting before the task is touched, so a
  live run is skipped and no run can start on a task being removed; the task is
  judged again under that lock;
- ``tasks/<id>`` is first renamed to ``tasks/.trash-<id>-<hex>`` (not a task id, so
  every lister ignores it) and only then removed, with ``shutil.rmtree``'s fd-based
  walk, which unlinks symlinks and never follows them; the next sweep finishes
  what an interrupted one left;
- every name is validated before it becomes a path, and only direct children of
  ``tasks/`` and ``locks/`` are renamed or unlinked.

``keep_checkpoints`` trims the oldest checkpoint files of the tasks that stay,
never the newest N, one a fork started from, or the pause a task is waiting on.
In tasks that stay and that no run holds, the temp files of killed writes are removed,
and so are task directories whose creation was killed half-way (``tasks/.new-*``).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

from magent.errors import StoreError, TaskLockedError
from magent.ids import is_uuid4, now
from magent.models import RetentionPolicy, TaskStatus
from magent.store.checkpoints import file_name
from magent.store.files import fsync_dir, read_bytes, remove_temp_files, temp_files
from magent.store.listing import shown_status
from magent.store.locks import Lock, clear_dead, is_held
from magent.store.taskscan import TaskRecord, lsize, read_record, task_fields, tree_size  # noqa: F401
from magent.store.tasks import Store

SWEEP_LOCK = "retention-sweep"
PROTECTED = (TaskStatus.running, TaskStatus.awaiting_human)
"""Statuses that are never swept unless ``by_status`` names them. A running (or pending) task
whose process died counts as ``interrupted``, which is not protected: it goes by the same
precedence as a failed one, counted from when it was last updated."""

_TRASH = re.compile(r"^\.(?:trash|new)-([0-9a-f-]{36})-[0-9a-f]{8}$")
"""A task directory being removed (``.trash-``), or being created (``.new-``, see
``Store.create_task``); either is left over when its process died."""
_CHECKPOINT = re.compile(r"^checkpoint_(\d{3,})\.json$")
_PAUSED = re.compile(rb'"awaiting_human"\s*:\s*true')


@dataclass(frozen=True)
class Rule:
    """The policy rule that decides a task's retention."""

    source: str
    """``task`` (its own retention_days), ``tag``, ``status``, ``default`` or ``protected``."""
    days: int | None
    """None: never swept (a protected status)."""
    detail: str


def resolve(policy: RetentionPolicy, record: TaskRecord) -> Rule:
    """Apply the precedence: own days, then tags (longest wins), then status, then default."""
    status = record.status
    if status in PROTECTED and status not in policy.by_status:
        return Rule("protected", None, f"{status.value}: never swept (by_status does not name it)")
    if record.retention_days is not None:
        return Rule("task", record.retention_days, f"own retention_days: {record.retention_days}d")
    tagged = [(policy.by_task[t], t) for t in record.tags if t in policy.by_task]
    if tagged:
        days, tag = max(tagged, key=lambda pair: pair[0])
        return Rule("tag", days, f"tag {tag}: {days}d")
    if status in policy.by_status:
        days = policy.by_status[status]
        return Rule("status", days, f"status {status.value}: {days}d")
    return Rule("default", policy.default_days, f"default_days: {policy.default_days}d")


@dataclass
class Verdict:
    """What the policy says about one entry of ``tasks/`` now, and what a sweep did with it."""

    task_id: str
    status: str | None
    """None when task.json could not be read."""
    action: str
    """``remove``, ``keep`` (not eligible yet) or ``skip``."""
    reason: str = ""
    """Why skipped: ``running``, ``awaiting_human``, ``locked``, ``unreadable`` or ``failed``."""
    detail: str = ""
    rule: Rule | None = None
    since: datetime | None = None
    since_field: str | None = None
    eligible_at: datetime | None = None
    """None: never (protected or unreadable)."""
    bytes: int = 0
    """Size of the task directory, for ``remove`` (counted with lstat, links not followed)."""
    trim: list[int] = field(default_factory=list)
    """Checkpoint numbers ``keep_checkpoints`` removes."""
    trim_bytes: int = 0
    temp: list[str] = field(default_factory=list)
    """Temp files of killed writes in the task's directory (paths relative to it), removed."""
    temp_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        iso = (lambda t: t.isoformat(timespec="seconds") if t else None)  # noqa: E731
        return {"task_id": self.task_id, "status": self.status, "action": self.action,
                "reason": self.reason or None, "detail": self.detail,
                "rule": self.rule.source if self.rule else None,
                "days": self.rule.days if self.rule else None,
                "rule_detail": self.rule.detail if self.rule else None,
                "since": iso(self.since), "since_field": self.since_field,
                "eligible_at": iso(self.eligible_at), "bytes": self.bytes,
                "checkpoints_trimmed": self.trim, "trim_bytes": self.trim_bytes,
                "temp_files": self.temp, "temp_bytes": self.temp_bytes}


@dataclass
class SweepReport:
    """The outcome of a sweep (or of a dry run: what a sweep would do)."""

    at: datetime
    dry_run: bool
    verdicts: list[Verdict] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    """Trash of interrupted sweeps (``tasks/.trash-*``) removed, or to remove."""
    leftover_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    """Removals that failed part-way (retried by the next sweep)."""
    busy: str | None = None
    """Set when another sweep holds the lock: who holds it. Nothing was done."""
    memory: Any = None
    """``memory.retention.MemorySweep`` when the policy has a ``memory`` section."""
    batches: list[str] = field(default_factory=list)
    """Batch records removed because a sweep removed all of their tasks."""

    def count(self, action: str) -> int:
        return sum(1 for v in self.verdicts if v.action == action)

    def skipped(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in self.verdicts:
            if v.action == "skip":
                out[v.reason] = out.get(v.reason, 0) + 1
        return out

    @property
    def bytes_freed(self) -> int:
        return (sum(v.bytes for v in self.verdicts if v.action == "remove")
                + sum(v.trim_bytes + v.temp_bytes for v in self.verdicts) + self.leftover_bytes)

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(timespec="seconds"), "dry_run": self.dry_run,
                "busy": self.busy, "scanned": len(self.verdicts), "removed": self.count("remove"),
                "kept": self.count("keep"), "skipped": self.skipped(),
                "bytes_freed": self.bytes_freed,
                "checkpoints_trimmed": sum(len(v.trim) for v in self.verdicts),
                "temp_files": sum(len(v.temp) for v in self.verdicts),
                "leftovers": self.leftovers, "problems": self.problems,
                "tasks": [v.as_dict() for v in self.verdicts if v.action != "keep" or v.trim or v.temp],
                "memory": self.memory.as_dict() if self.memory is not None else None}


class Retention:
    """Applies a ``RetentionPolicy`` to the tasks of a ``Store``: ``plan`` looks, ``sweep`` acts."""

    def __init__(self, store: Store, policy: RetentionPolicy, *,
                 clock: Callable[[], datetime] = now, sweep_memory: Callable[..., Any] | None = None):
        self.store = store
        self.policy = policy
        self.now = clock()
        self.sweep_memory = sweep_memory
        """What applies the policy's ``memory`` section (``memory.retention.sweep``), given by the
        caller: the store knows no memory database."""

    # looking
    def judge(self, record: TaskRecord) -> Verdict:
        """The verdict the policy alone gives (locks and checkpoints not looked at)."""
        rule = resolve(self.policy, record)
        v = Verdict(record.id, record.status.value, "keep", rule=rule, since=record.since,
                    since_field=record.since_field)
        if rule.days is None:
            v.action, v.reason, v.detail = "skip", record.status.value, rule.detail
            return v
        try:
            v.eligible_at = record.since + timedelta(days=rule.days)
        except OverflowError:  # days beyond the calendar: never
            v.detail = f"{rule.detail}: beyond the calendar, never eligible"
            return v
        what = "finished" if record.since_field == "completed_at" else "last updated"
        v.detail = f"{what} {record.since:%Y-%m-%d %H:%M} UTC; {rule.detail}"
        if self.now >= v.eligible_at:
            v.action = "remove"
        return v

    def plan(self, *, sizes: bool = True) -> SweepReport:
        """What a sweep would do now; changes nothing on disk (a dry run)."""
        report = SweepReport(at=self.now, dry_run=True)
        if not self.store.root.is_dir():
            return report
        self._check_tasks_dir()
        report.verdicts = self._scan()
        for v in report.verdicts:
            if v.action == "remove" and sizes:
                v.bytes = tree_size(self.store.tasks_dir / v.task_id)
        for name in self._leftovers():
            report.leftovers.append(name)
            report.leftover_bytes += tree_size(self.store.tasks_dir / name)
        self._memory(report)
        return report

    def _memory(self, report: SweepReport) -> None:
        """The policy's ``memory`` section, applied to the memory database (or planned)."""
        if self.policy.memory is None or self.sweep_memory is None:
            return
        from magent import paths

        report.memory = self.sweep_memory(paths.memory_db(self.store.root), self.policy.memory, self.now,
                                          dry_run=report.dry_run)
        if report.memory.problem:
            report.problems.append(f"memory: {report.memory.problem}")

    def _check_tasks_dir(self) -> None:
        for d in (self.store.tasks_dir, self.store.locks_dir):
            if d.is_symlink():
                raise StoreError(f"{d} is a symlink: retention never deletes through one "
                                 "(point MAGENT_HOME at the real directory instead)")

    def _scan(self) -> list[Verdict]:
        verdicts: list[Verdict] = []
        records: list[TaskRecord] = []
        try:
            it = os.scandir(self.store.tasks_dir)
        except FileNotFoundError:
            return verdicts
        with it:
            entries = [(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it
                       if is_uuid4(e.name)]
        tasks_dir = str(self.store.tasks_dir)
        for name, is_dir, is_link in sorted(entries):
            if not is_dir:
                what = "a symlink" if is_link else "not a directory"
                verdicts.append(Verdict(name, None, "skip", "unreadable",
                                        f"tasks/{name} is {what}; left alone"))
                continue
            try:
                records.append(_as_shown(read_record(os.path.join(tasks_dir, name), name),
                                         live=is_held(self._lock_file(name))))
            except StoreError as exc:
                verdicts.append(Verdict(name, None, "skip", "unreadable", f"{exc}; left in place"))
        forked: dict[str, set[int]] = {}
        for r in records:
            forked.setdefault(r.id, set()).update(r.forks)
            if r.parent:
                forked.setdefault(r.parent[0], set()).add(r.parent[1])
        for r in records:
            v = self.judge(r)
            if v.action == "remove" and is_held(self._lock_file(r.id)):
                v.action, v.reason = "skip", "locked"
                v.detail = f"in use by {self._task_lock(r.id).describe_holder()}"
            if v.action != "remove" and self.policy.keep_checkpoints:
                self._plan_trim(v, r, forked.get(r.id, set()))
            if v.action != "remove" and not is_held(self._lock_file(r.id)):
                task_dir = self.store.tasks_dir / r.id
                found = temp_files(task_dir)
                v.temp = [str(p.relative_to(task_dir)) for p in found]
                v.temp_bytes = sum(lsize(p) for p in found)
            verdicts.append(v)
        verdicts.sort(key=lambda v: v.task_id)
        return verdicts

    def _plan_trim(self, v: Verdict, record: TaskRecord, forked: set[int]) -> None:
        keep_n = self.policy.keep_checkpoints or 0
        task_dir = os.path.join(self.store.tasks_dir, record.id)
        try:
            numbers = sorted(int(m.group(1)) for n in os.listdir(task_dir)
                             if (m := _CHECKPOINT.fullmatch(n)))
        except OSError:
            return
        if len(numbers) <= keep_n:
            return
        keep = set(numbers[-keep_n:]) | forked
        if record.status == TaskStatus.awaiting_human:
            pause = _newest_pause(task_dir, numbers)
            if pause is not None:
                keep.add(pause)
        trim = [n for n in numbers if n not in keep]
        if trim and is_held(self._lock_file(record.id)):
            return  # a live run owns the checkpoints
        v.trim = trim
        v.trim_bytes = sum(lsize(os.path.join(task_dir, file_name(n))) for n in trim)

    def _leftovers(self) -> list[str]:
        try:
            names = os.listdir(self.store.tasks_dir)
        except FileNotFoundError:
            return []
        # A creation holds the new task's lock while its staging directory exists.
        return sorted(n for n in names if (m := _TRASH.fullmatch(n))
                      and not (n.startswith(".new-") and is_held(self._lock_file(m.group(1)))))

    def _lock_file(self, task_id: str) -> str:
        return os.path.join(self.store.locks_dir, f"{task_id}.lock")

    def _task_lock(self, task_id: str) -> Lock:
        return Lock(self.store.locks_dir, task_id, f"task {task_id}")

    # acting
    def sweep(self) -> SweepReport:
        """Remove what the policy says may go; see the module docstring for the safety rules."""
        report = SweepReport(at=self.now, dry_run=False)
        if not self.store.root.is_dir():
            return report  # no home yet: nothing to do, and nothing is created
        self._check_tasks_dir()
        sweep_lock = self.store.lock(SWEEP_LOCK, "a retention sweep")
        try:
            sweep_lock.acquire()
        except TaskLockedError:
            report.busy = sweep_lock.describe_holder()
            return report
        try:
            self._clear_leftovers(report)
            self._clear_orphan_locks()
            report.verdicts = self._scan()
            for i, v in enumerate(report.verdicts):
                if v.action == "remove":
                    report.verdicts[i] = self._remove(v, report)
                elif v.trim or v.temp:
                    self._tidy(v, report)
            self._memory(report)
            if report.count("remove"):
                from magent.store.batches import prune

                report.batches = prune()  # the records of batches whose every task is gone
        finally:
            sweep_lock.release()
        return report

    def _remove(self, v: Verdict, report: SweepReport) -> Verdict:
        tasks_dir = self.store.tasks_dir
        path = tasks_dir / v.task_id
        lock = self._task_lock(v.task_id)
        try:
            lock.acquire()
        except TaskLockedError:
            v.action, v.reason, v.detail = "skip", "locked", f"in use by {lock.describe_holder()}"
            return v
        try:
            # Judge again under the lock: the task may have been resumed since the scan.
            try:
                # We hold its lock now, so a pending or running task is a dead one.
                fresh = self.judge(_as_shown(read_record(path, v.task_id), live=False))
            except StoreError as exc:
                fresh = Verdict(v.task_id, None, "skip", "unreadable", f"{exc}; left in place")
            if fresh.action != "remove":
                return fresh
            v, trash = fresh, tasks_dir / f".trash-{v.task_id}-{secrets.token_hex(4)}"
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    raise OSError(errno.ENOTDIR, "no longer a directory")
                os.rename(path, trash)  # from here on it is not a task for anyone
            except OSError as exc:
                report.problems.append(f"task {v.task_id}: could not move it aside ({exc})")
                v.action, v.reason, v.detail = "skip", "failed", f"could not move aside: {exc}"
                return v
            fsync_dir(tasks_dir)
            self._unlink_locks(v.task_id)  # while held, so no one takes the old file
        finally:
            lock.release()
        v.bytes = tree_size(trash)
        self._rmtree(trash, report)
        return v

    def _tidy(self, v: Verdict, report: SweepReport) -> None:
        """Trim checkpoints and remove temp files of a task that stays, under its lock."""
        lock = self._task_lock(v.task_id)
        try:
            lock.acquire()
        except TaskLockedError:
            v.trim, v.trim_bytes, v.temp, v.temp_bytes = [], 0, [], 0
            return
        task_dir = self.store.tasks_dir / v.task_id
        done, freed = [], 0
        try:
            sizes = {p: lsize(p) for p in temp_files(task_dir)}
            removed = remove_temp_files(task_dir)
            v.temp = [str(p.relative_to(task_dir)) for p in removed]
            v.temp_bytes = sum(sizes.get(p, 0) for p in removed)
            for n in v.trim:
                p = task_dir / file_name(n)
                try:
                    size = lsize(p)
                    os.unlink(p)  # unlinks a symlink itself, never its target
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    report.problems.append(f"task {v.task_id}: could not remove {p.name}: {exc}")
                    continue
                done.append(n)
                freed += size
            if done:
                fsync_dir(task_dir)
        finally:
            lock.release()
        v.trim, v.trim_bytes = done, freed

    def _clear_leftovers(self, report: SweepReport) -> None:
        for name in self._leftovers():
            path = self.store.tasks_dir / name
            report.leftovers.append(name)
            report.leftover_bytes += tree_size(path)
            task_id = _TRASH.fullmatch(name).group(1)  # type: ignore[union-attr]
            if is_uuid4(task_id) and not os.path.lexists(self.store.tasks_dir / task_id):
                self._unlink_locks(task_id)
            if os.path.isdir(path) and not os.path.islink(path):
                self._rmtree(path, report)
            else:
                path.unlink(missing_ok=True)

    def _rmtree(self, path: Path, report: SweepReport) -> None:
        try:
            shutil.rmtree(path)  # fd-based on Linux: symlinks are unlinked, never followed
        except OSError as exc:
            report.problems.append(f"could not finish removing {path.name} ({exc}); "
                                   "the next sweep retries")

    def _clear_orphan_locks(self, min_age_seconds: float = 3600) -> None:
        """Lock files a killed run left (a finished run removes its own): of a task that exists,
        once nobody holds them; of one that no longer exists, only files older than
        ``min_age_seconds``: a new run takes its lock just before its directory appears, and must
        never find the sweep holding it."""
        try:
            names = os.listdir(self.store.locks_dir)
        except FileNotFoundError:
            return
        for task_id in sorted({n.split(".", 1)[0] for n in names if n.endswith((".lock", ".holder.json"))}):
            if not is_uuid4(task_id):
                continue
            if os.path.lexists(self.store.tasks_dir / task_id):
                clear_dead(self.store.locks_dir, task_id)   # its run was killed: nobody holds it
                continue
            try:
                age = self.now.timestamp() - os.lstat(self.store.locks_dir / f"{task_id}.lock").st_mtime
            except FileNotFoundError:
                age = min_age_seconds  # only a holder note: no lock to race for
            if age < min_age_seconds or is_held(self._lock_file(task_id)):
                continue
            lock = self._task_lock(task_id)
            try:
                lock.acquire()
            except TaskLockedError:
                continue
            lock.release()  # (which removes both files)

    def _unlink_locks(self, task_id: str) -> None:
        for suffix in (".lock", ".holder.json"):
            try:
                os.unlink(self.store.locks_dir / f"{task_id}{suffix}")
            except FileNotFoundError:
                pass


def _as_shown(record: TaskRecord, live: bool) -> TaskRecord:
    """The record with the status commands show (a dead pending or running task is interrupted)."""
    shown = shown_status(record.status.value, live)
    return record if shown == record.status.value else dataclass_replace(record, status=TaskStatus(shown))


def _newest_pause(task_dir: str, numbers: list[int]) -> int | None:
    """The newest checkpoint that records a pause (``awaiting_human: true``), if any: older than
    the newest file only when a newer one is corrupt. The flag is looked for in the raw bytes,
    which can only err towards keeping one checkpoint more."""
    for n in reversed(numbers):
        try:
            if _PAUSED.search(read_bytes(os.path.join(task_dir, file_name(n)))):
                return n
        except (OSError, StoreError):  # unreadable, or a link (never followed)
            continue
    return None

"""``magent.sweep`` and ``magent.retention_plan`` (``magent retention sweep`` / ``show``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magent import paths
from magent.api.reading import PathLike

if TYPE_CHECKING:
    from magent.models import RetentionPolicy
    from magent.store.retention import Retention, SweepReport


@dataclass(frozen=True)
class RetentionPlan:
    """The policy in force and when each task may go (``magent.retention_plan``)."""

    policy: "RetentionPolicy"
    """The policy read from the home (or the built-in defaults)."""
    policy_file: str | None
    """The file it came from; None when the home has none."""
    report: "SweepReport"
    """A dry run without sizes: ``report.verdicts`` holds each task's rule and ``eligible_at``."""

    def as_dict(self) -> dict[str, Any]:
        """What ``magent retention show --json`` prints."""
        return {"policy_file": self.policy_file, "policy": self.policy.model_dump(mode="json"),
                "now": self.report.at.isoformat(timespec="seconds"),
                "tasks": [v.as_dict() for v in self.report.verdicts]}


def sweep(*, dry_run: bool = False, home: PathLike | None = None) -> "SweepReport":
    """Remove task directories past their retention and trim checkpoints the policy caps.
    Paused and running tasks are never removed; ``dry_run`` only reports; ``report.busy`` says
    who runs another sweep (nothing is done)."""
    with paths.using_home(home):
        engine, _ = _retention()
        return engine.plan() if dry_run else engine.sweep()


def retention_plan(*, home: PathLike | None = None) -> RetentionPlan:
    """The retention policy and, for each task, which rule applies and when it may go."""
    with paths.using_home(home):
        engine, source = _retention()
        return RetentionPlan(policy=engine.policy, policy_file=source,
                             report=engine.plan(sizes=False))


def _retention() -> tuple["Retention", str | None]:
    from magent.config.files import load_retention_policy
    from magent.store.retention import Retention
    from magent.store.tasks import Store

    store = Store()
    path = paths.retention_policy_file(store.root)
    policy = load_retention_policy(path)  # ConfigError (exit 2) before anything is touched
    retention = Retention(store, policy)
    if policy.memory is not None:   # (the memory database's code loads only for a policy that names it)
        from magent.memory.retention import sweep

        retention.sweep_memory = sweep
    return retention, (str(path) if path.exists() else None)

"""Running a list of rails over one text, each seeing it as the ones before left it.

Pass, warn and mask go on; ``block`` and ``revise`` stop at once; a ``pause`` is remembered while
the rest run (a later block wins). A failing rail acts as its ``on_error`` says and the error is
recorded: a rail never passes silently."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from magent.guardrails.base import Rail, RailError, RailRun, Verdict

Outcome = Literal["pass", "block", "revise", "pause"]


@dataclass
class Check:
    """One rail's decision about one text, as the trace records it (never the text itself)."""

    rail: Rail
    outcome: str
    """``pass``, or the action taken: ``mask``, ``warn``, ``block``, ``revise``, ``pause``."""
    reason: str = ""
    findings: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    """Set when the rail could not decide (then ``outcome`` is its ``on_error``)."""

    def fields(self) -> dict[str, Any]:
        return {"rail": self.rail.name, "kind": self.rail.kind, "key": self.rail.key,
                "action": self.rail.action, "outcome": self.outcome, "reason": self.reason or None,
                "findings": self.findings or None, "error": self.error}


@dataclass
class Screening:
    """What the rails made of a text."""

    text: str
    """The text after every mask (what goes on when the outcome is ``pass``)."""
    outcome: Outcome = "pass"
    rail: Rail | None = None
    """The rail behind a ``block``, ``revise`` or ``pause``."""
    reason: str = ""
    stored: str = ""
    """What may be kept of a text that did not pass: masked by the deciding rail where it is a
    sensitive one that can mask, else the text as the rails before it left it."""
    checks: list[Check] = field(default_factory=list)

    @property
    def message(self) -> str:
        """What a block says: the rail's ``message`` if it has one, else what it found."""
        if self.rail is not None and self.rail.config.message:
            return self.rail.config.message
        return self.reason


async def screen(text: str, rails: list[Rail], run: RailRun, record: Callable[[Check], None]) -> Screening:
    """Run ``rails`` over ``text``; ``record`` receives every rail's decision as it is made."""
    current = text
    paused: tuple[Rail, str] | None = None
    checks: list[Check] = []
    for rail in rails:
        verdict, error = await _verdict(rail, current, run)
        outcome = (rail.config.on_error if error else rail.action) if verdict.triggered else "pass"
        check = Check(rail, outcome, verdict.reason, verdict.findings, error)
        checks.append(check)
        record(check)
        if outcome == "mask" and verdict.masked is not None:
            current = verdict.masked
        elif outcome in ("block", "revise"):
            stored = verdict.masked if rail.sensitive and verdict.masked is not None else current
            return Screening(current, outcome, rail, verdict.reason, stored, checks)  # type: ignore[arg-type]
        elif outcome == "pause" and paused is None:
            paused = (rail, verdict.reason)
    if paused is not None:
        return Screening(current, "pause", paused[0], paused[1], current, checks)
    return Screening(current, "pass", checks=checks)


async def _verdict(rail: Rail, text: str, run: RailRun) -> tuple[Verdict, str | None]:
    try:
        return await rail.check(text, run), None
    except RailError as exc:
        return Verdict(True, f"could not decide: {exc}"), str(exc)
    except Exception as exc:  # a rail's bug must not let the text through unchecked
        message = f"{type(exc).__name__}: {exc}"
        return Verdict(True, f"could not decide: {message}"), message

"""A batch's shared model rate limits (--max-rpm, --max-tpm, Retry-After) and retention of batches."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from magent.llm import limits
from support.cli import invoke
from support.engine import write

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "examples" / "workflows" / "triage.yaml"


class FakeTime:
    """The limiter's clock and sleep: sleeping moves the clock, so a minute passes at once."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    t = FakeTime()
    monkeypatch.setattr(limits, "_clock", t.clock)
    monkeypatch.setattr(limits, "_sleep", t.sleep)
    return t


def _call_times(home: Path) -> list[float]:
    """When each model call of the batch's tasks started, by the limiter's clock (recorded below)."""
    return sorted(float(x) for x in (home / "calls.txt").read_text().split())


def _record_calls(monkeypatch: pytest.MonkeyPatch, home: Path, fake: FakeTime) -> None:
    real = limits.ModelLimits.acquire

    async def acquire(self):  # type: ignore[no-untyped-def]
        await real(self)
        with (home / "calls.txt").open("a") as f:  # when the limiter let the call through
            f.write(f"{fake.now}\n")

    monkeypatch.setattr(limits.ModelLimits, "acquire", acquire)


def test_max_rpm_spaces_the_model_calls_of_all_rows(magent_home: Path, tmp_path: Path, fake_time: FakeTime,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    magent_home.mkdir(parents=True, exist_ok=True)
    _record_calls(monkeypatch, magent_home, fake_time)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"task": f"ticket {n}", "ticket": f"T{n}"}) + "\n" for n in range(5)))
    r = invoke("batch", str(TRIAGE), "--inputs", str(rows), "--concurrency", "5", "--max-rpm", "2", "--json")
    assert r.code == 0, r.err
    assert len(r.out.splitlines()) == 5
    times = _call_times(magent_home)
    assert len(times) == 5  # one model call per row (the triager)
    start = times[0]
    # two calls in each minute: 0, 0, 60, 60, 120 (five rows ready at once, concurrency 5)
    assert [round(t - start) for t in times] == [0, 0, 60, 60, 120]


def test_max_tpm_waits_for_the_tokens_of_the_last_minute(fake_time: FakeTime) -> None:
    lim = limits.ModelLimits(tpm=100)

    async def go() -> list[float]:
        out = []
        for tokens in (60, 50, 10):
            await lim.acquire()
            out.append(fake_time.now)
            lim.used(tokens)
        return out

    start = fake_time.now
    times = asyncio.run(go())
    # 60 + 50 tokens reach 100 within the minute: the third call waits until the first leaves it
    assert [t - start for t in times] == [0, 0, 60]


def test_retry_after_holds_every_rows_next_call(fake_time: FakeTime) -> None:
    from magent.llm.base import Attempt, LLMResponse

    lim = limits.ModelLimits(rpm=1000)

    class Rated:
        """A client whose first call is refused with 429 and Retry-After 7 before it succeeds."""

        calls = 0

        async def complete(self, request, on_token=None, *, on_attempt=None):  # type: ignore[no-untyped-def]
            Rated.calls += 1
            if Rated.calls == 1:
                on_attempt(Attempt(model="m", number=1, allowed=2, timeout=1,
                                   error="rate limited (HTTP 429): slow down", retry_in=7.0))
            return LLMResponse(content="ok", tokens_in=1, tokens_out=1)

    async def go() -> list[float]:
        with limits.limited(lim):
            first, second = limits.throttled(Rated()), limits.throttled(Rated())
        await first.complete(object(), on_attempt=lambda a: None)
        await second.complete(object(), on_attempt=lambda a: None)  # another row's call
        return [fake_time.now]

    start = fake_time.now
    (after,) = asyncio.run(go())
    assert after - start == pytest.approx(7.0)


def test_retention_removes_a_batch_record_with_its_tasks_and_keeps_tagged_batches(
        magent_home: Path, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"task": f"ticket {n}", "ticket": f"T{n}"}) + "\n" for n in range(2)))
    assert invoke("batch", str(TRIAGE), "--inputs", str(rows)).code == 0
    assert invoke("batch", str(TRIAGE), "--inputs", str(rows), "--tag", "eval").code == 0
    listed = json.loads(invoke("batch", "list", "--json").out)
    kept = next(b["id"] for b in listed if b["options"]["tags"] == ["eval"])
    write(magent_home / "config", "retention_policy.yaml", "default_days: 0\nby_task: {eval: 30}\n")
    swept = invoke("retention", "sweep")
    assert swept.code == 0, swept.err
    assert "removed the records of 1 batch whose tasks are all gone" in swept.out
    after = json.loads(invoke("batch", "list", "--json").out)
    assert [b["id"] for b in after] == [kept] and after[0]["counts"] == {"completed": 2}

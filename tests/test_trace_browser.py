"""The HTML report in a real headless Chromium: it draws the run, expands steps, and loads nothing.

The report is written by the real CLI (a subprocess) from real runs. Each test saves a
screenshot; with ``MAGENT_REPORT_SCREENSHOT=PATH`` the first one is also written to
PATH (that is how the README's ``docs/trace-report.png`` is made).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from magent.testing import QueueModel
from magent.tools.function import FunctionProvider
from support.browser import chromium, expect
from support.cli import invoke
from support.crashflow import only_task
from support.delegateflow import make_delegation
from support.engine import agent_yaml, run_with, write

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
pytestmark = pytest.mark.slow


def report(task_id: str, path: Path) -> Path:
    result = invoke("trace", task_id[:8], "--html", str(path))
    assert result.code == 0, result.err
    return path


class Page:
    """An opened report: the Playwright page plus what it asked the network for and any script error."""

    def __init__(self, context, path: Path):
        self.page = context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready]", timeout=15_000)
        self.url = path.as_uri()

    def text(self, selector: str) -> str:
        return self.page.inner_text(selector)

    def offline(self) -> None:
        """Nothing but the file itself was requested, and no script failed."""
        assert self.requests == [self.url], self.requests
        assert self.errors == []


def test_a_reflection_loop_in_the_browser(tmp_path: Path) -> None:
    made = invoke("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "Write one line of copy for Tidy",
                  "--no-input")
    task_id = made.out.split()[1]
    path = report(task_id, tmp_path / "report.html")
    with chromium(1100, 1280) as browser:
        page = Page(browser, path)
        header = page.text("#summary")
        assert task_id in header and "completed" in header and "Write one line of copy for Tidy" in header
        assert "model calls 5" in header and "tool calls 1" in header
        rows = page.page.locator("#steps .step")
        assert rows.count() == 7
        assert rows.nth(0).inner_text().startswith("1\n▸\nwrite")
        totals = page.text("#totals")
        (usage,) = json.loads(invoke("trace", task_id, "--json").out)["usage_by_model"].values()
        assert "Per model" in totals and f"scripted\t5\t{usage['input']}\t{usage['output']}\t$0.0000" in totals
        assert "Per agent" in totals and "critic\t2" in totals and "writer\t3" in totals
        assert page.page.locator("svg.graph .node[data-node=review] .visits").text_content() == "×2"
        bars = [page.page.locator(f".tl-track .bar.r{row}").count() for row in range(3)]
        assert bars == [4, 5, 1]  # on the timeline: 4 node visits, 5 model calls, 1 tool call

        step2 = page.page.locator("#step-2")
        assert not step2.locator(".body").is_visible()
        step2.locator(".head").click()  # expand: the model call, its reply and the tool result
        body = step2.locator(".body")
        assert body.is_visible()
        text = body.inner_text()
        assert "Let me save a working title before drafting." in text
        assert "kv.set" in text and "SUCCESS" in text and "stored title" in text and '"value": "Tidy"' in text
        assert "magent trace " + task_id[:8] + " --step 2" in text
        step2.locator("details.prompt summary").click()  # the full prompt, put together from the entries
        prompt = step2.locator("details.prompt")
        expect(prompt).to_contain_text("You write short, concrete product copy")
        expect(prompt.locator(".msg.r-user")).to_contain_text("Write one line of copy for Tidy")

        page.page.locator("#step-4 .head").click()  # the critic's verdict and what it judged
        verdict = page.text("#step-4 .body")
        assert "verdict revise" in verdict and "Output judged" in verdict
        shot = tmp_path / "report.png"  # the top of the page with step 2 open
        page.page.locator("#step-4 .head").click()
        step2.locator("details.prompt summary").click()
        page.page.evaluate("window.scrollTo(0, 0)")
        page.page.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        if os.environ.get("MAGENT_REPORT_SCREENSHOT"):
            shutil.copyfile(shot, os.environ["MAGENT_REPORT_SCREENSHOT"])
        page.offline()


def test_filters_timeline_and_graph_find_steps(tmp_path: Path) -> None:
    tools = FunctionProvider("t")
    tools.add("read", lambda page: f"page {page} text", "read a page",
              {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]})
    tools.add("broken", lambda: 1 / 0, "always fails")
    turns = [{"content": f"Reading page {i}.", "tool_calls": [{"name": "t.read", "arguments": {"page": i}}]}
             for i in range(1, 41)]
    turns.insert(20, {"content": "Trying the other tool.", "tool_calls": [{"name": "t.broken", "arguments": {}}]})
    model = QueueModel(turns + ["Read 40 pages."])
    outcome = run_with(model, write(tmp_path, "w.yaml", agent_yaml("w", "[t.*]", "max_iterations: 50\n")),
                       providers=[tools])
    path = report(outcome.task_id, tmp_path / "long.html")
    with chromium() as browser:
        page = Page(browser, path)
        rows = page.page.locator("#steps .step")
        assert rows.count() == 43  # the node, 42 turns
        page.page.check("#problems")  # only the turn whose tool failed (and its node, for context)
        shown = page.page.locator("#steps .step:not(.hidden)")
        assert shown.count() == 2 and "t.broken" in shown.nth(1).inner_text()
        assert "showing 2 of 43" in page.text("#shown")
        page.page.uncheck("#problems")
        page.page.fill("#filter", "page 33")
        assert page.page.locator("#steps .step:not(.hidden) .preview", has_text="Reading page 33.").count() == 1
        page.page.fill("#filter", "")
        bar = page.page.locator('.tl-track .bar.r2[data-n="30"]')  # a tool call's bar on the timeline
        bar.click()
        assert page.page.locator("#step-30").get_attribute("class").split().count("open") == 1
        assert "page 28 text" in page.text("#step-30 .body")  # turn 29 (step 30) read page 28
        page.page.locator('svg.graph .node[data-node="w"]').click()
        assert page.page.input_value("#filter") == "node:w"
        page.page.screenshot(path=str(tmp_path / "long.png"), full_page=True)
        page.offline()


def test_sub_agent_sessions_in_the_browser(tmp_path: Path, magent_home: Path) -> None:
    flow = make_delegation(tmp_path)  # lead delegates to worker (3 turns), then to scribe (2 turns)
    assert invoke("run", str(flow), "-t", "the lead's task", env={"LEDGER": str(tmp_path / "ledger.txt")}).code == 0
    task_id = only_task(magent_home)
    sessions = json.loads(invoke("trace", task_id, "--json").out)["sub_agent_sessions"]
    worker = next(f"worker · {sid[:8]}" for sid, info in sessions.items() if info["agent"] == "worker")
    path = report(task_id, tmp_path / "sessions.html")
    with chromium() as browser:
        page = Page(browser, path)
        lanes = page.page.locator(".tl-track .lane .lane-label")
        assert lanes.all_inner_texts() == ["main", worker, next(
            f"scribe · {sid[:8]}" for sid, info in sessions.items() if info["agent"] == "scribe")]
        assert page.page.locator(".tl-track .lane").nth(1).locator(".bar.r1").count() == 3  # the worker's model calls
        assert page.page.locator("#steps .step.sub").count() == 5  # the sub-agents' turns, indented
        assert worker in page.text("#step-3 .head")
        page.page.locator("#step-2 .head").click()  # the lead's turn that delegated
        note = page.page.locator("#step-2 .call .session-note")
        assert note.inner_text() == f"worked in session {worker} (completed) from step 3"
        note.locator("a.step-link").click()  # to where the worker starts
        body = page.page.locator("#step-3 .body")
        expect(body).to_be_visible()
        assert f"in session {worker} (agent), opened by step 2" in body.inner_text()
        body.locator("details.prompt summary").click()  # the worker saw its task, not the lead's conversation
        prompt = body.locator("details.prompt")
        expect(prompt.locator(".msg.r-user")).to_have_text(re.compile("Put a and b in the ledger, and k1 in kv."))
        assert "the lead's task" not in prompt.inner_text()
        lanes.nth(1).click()  # only that session's steps (and the node they ran in)
        assert page.page.input_value("#filter") == "session:" + worker.split(" · ")[1]
        shown = page.page.locator("#steps .step:not(.hidden)")
        assert [shown.nth(i).get_attribute("data-n") for i in range(shown.count())] == ["1", "3", "4", "5"]
        assert "showing 4 of 10" in page.text("#shown")
        assert "Per session" in page.text("#totals")
        page.page.screenshot(path=str(tmp_path / "sessions.png"), full_page=True)
        page.offline()


def test_pauses_decisions_and_texts_that_look_like_markup(tmp_path: Path) -> None:
    made = invoke("run", str(EXAMPLES / "workflows/triage.yaml"), "-t", "Checkout <b>is</b> broken", "--no-input",
                  "--set", "ticket=<img src=x onerror=\"document.body.dataset.pwned='1'\">", "--set", "priority=high")
    task_id = made.out.split()[1]
    assert invoke("resume", task_id, "--approve", "-m", "paged </script> on-call", "--no-input").code == 0
    path = report(task_id, tmp_path / "triage.html")
    with chromium() as browser:
        page = Page(browser, path)
        assert "Checkout <b>is</b> broken" in page.text("#summary")  # shown as text, not markup
        decision = page.page.locator("#steps .step.ev-human_decision")
        assert decision.inner_text().endswith("✔ a person chose approve: paged </script> on-call")
        assert page.page.locator("#steps .step.ev-awaiting_human").count() == 1
        assert page.page.locator(".tl-track .mark.awaiting_human").count() == 1
        assert page.page.locator(".tl-track .mark.human_decision").count() == 1
        page.page.locator("#steps .step.t-node .head").first.click()
        store = page.text("#steps .step.t-node .body")
        assert "<img src=x onerror=" in store  # the tool node's result, as text
        page.page.locator("#conversation summary").click()
        expect(page.page.locator("#messages .msg").first).to_contain_text("Checkout <b>is</b> broken")
        assert page.page.evaluate("document.body.dataset.pwned") is None
        assert page.page.locator("img").count() == 0
        page.page.screenshot(path=str(tmp_path / "triage.png"), full_page=True)
        page.offline()


BOXES = """(selector) => Array.from(document.querySelectorAll(selector)).map((e) => {
  const r = e.getBoundingClientRect();
  return {x: r.left, y: r.top, r: r.right, b: r.bottom, text: e.textContent,
          lane: e.closest('.lane') ? e.closest('.lane').getAttribute('data-session') : null};
})"""


def overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["r"] - 0.5 and b["x"] < a["r"] - 0.5 and a["y"] < b["b"] - 0.5 and b["y"] < a["b"] - 0.5


def test_parallel_calls_take_rows_of_their_own(tmp_path: Path, magent_home: Path) -> None:
    made = invoke("run", str(EXAMPLES / "workflows/research_brief.yaml"), "-t", "Brief on Tidy", "--no-input")
    assert made.code == 0, made.err
    path = report(made.out.split()[1], tmp_path / "brief.html")
    with chromium() as browser:
        page = Page(browser, path)
        bars = page.page.evaluate(BOXES, ".tl-track .bar")
        assert len(bars) >= 8
        clashes = [(a, b) for i, a in enumerate(bars) for b in bars[i + 1:] if overlap(a, b)]
        assert clashes == []   # the editor's two sub-agent calls ran at once: one above the other
        page.offline()


def test_graph_labels_sit_off_their_edges_and_subtitles_are_whole(tmp_path: Path, magent_home: Path) -> None:
    for flow, args in (("triage", ["--set", "ticket=T-1", "--set", "priority=low"]), ("write_review", []),
                       ("review_sections", [])):
        made = invoke("run", str(EXAMPLES / f"workflows/{flow}.yaml"), "-t", "Tidy", *args, "--no-input")
        assert made.code == 0, made.err
        with chromium() as browser:
            page = Page(browser, report(made.out.split()[1], tmp_path / f"{flow}.html"))
            labels = page.page.evaluate(BOXES, "svg.graph .edge-label")
            assert flow == "review_sections" or labels
            crossed = page.page.evaluate("""(labels) => {
              const out = [];
              document.querySelectorAll('svg.graph path.edge').forEach((path) => {
                const m = path.getScreenCTM(), len = path.getTotalLength();
                for (let d = 0; d <= len; d += 2) {
                  const p = path.getPointAtLength(d), x = m.a * p.x + m.c * p.y + m.e, y = m.b * p.x + m.d * p.y + m.f;
                  labels.forEach((l) => { if (x > l.x && x < l.r && y > l.y && y < l.b) out.push(l.text); });
                }
              });
              return out;
            }""", labels)
            assert crossed == [], f"{flow}: an edge runs through {set(crossed)}"
            svg = page.page.evaluate(BOXES, "svg.graph")[0]
            assert all(svg["x"] <= l["x"] and l["r"] <= svg["r"] for l in labels), (flow, labels, svg)
            cut = page.page.evaluate("""() => Array.from(document.querySelectorAll('svg.graph .node')).filter((g) => {
              const t = g.querySelector('text.detail'), r = g.querySelector('rect');
              return t && (t.textContent.includes('…') ||
                           t.getBoundingClientRect().right > r.getBoundingClientRect().right - 4);
            }).map((g) => g.getAttribute('data-node'))""")
            assert cut == [], f"{flow}: subtitles cut in {cut}"
            page.offline()


def test_the_axis_after_an_idle_gap_says_each_time_once(tmp_path: Path, magent_home: Path) -> None:
    paused = invoke("run", str(EXAMPLES / "workflows/publish.yaml"), "-t", "Announce the closure", "--no-input")
    assert paused.code == 3
    task_id = paused.out.split()[1]
    time.sleep(2.5)   # an idle gap the timeline squeezes
    assert invoke("resume", task_id[:8], "--approve", "--no-input").code == 0
    with chromium() as browser:
        page = Page(browser, report(task_id, tmp_path / "gap.html"))
        assert page.page.locator(".tl-track .break").count() >= 1
        ticks = page.page.evaluate(BOXES, ".axis span")
        texts = [t["text"] for t in ticks]
        assert len(texts) == len(set(texts)) >= 2, texts
        assert not [(a["text"], b["text"]) for i, a in enumerate(ticks) for b in ticks[i + 1:] if overlap(a, b)]
        gaps, marks = page.page.evaluate(BOXES, ".break span"), page.page.evaluate(BOXES, ".tl-track .mark")
        assert marks and not [g["text"] for g in gaps for m in marks if overlap(g, m)]   # the pause's marks
        page.offline()

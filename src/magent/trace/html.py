"""``magent trace ID --html``: one self-contained HTML file whose Content-Security-Policy forbids
loading anything, so it opens offline and never reaches the network."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magent.trace.graphsvg import graph_svg

if TYPE_CHECKING:
    from magent.store.tasks import TaskDir

ASSETS = Path(__file__).with_name("assets")
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="generator" content="magent {version}">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<noscript><p class="noscript">This report draws itself with JavaScript, which is turned off.
The same trace in a terminal: <code>magent trace {task_id}</code>.</p></noscript>
<header id="summary"></header>
<main>
<section class="overview" id="overview">
<div class="card" id="totals"><h2>Tokens and cost</h2></div>
<div class="card"><h2>Workflow</h2><div class="graph-wrap" id="graph">{graph}</div></div>
</section>
<section id="timeline-section"><h2>Timeline</h2><div id="timeline"></div></section>
<section id="steps-section"><h2>Steps</h2><div class="toolbar" id="toolbar"></div><div id="steps"></div></section>
<section id="conversation-section"><details class="conv" id="conversation"><summary>Conversation</summary>
<div id="messages"></div></details></section>
</main>
<footer>Written by magent {version} at {generated} from the task's {source}. Secrets were masked when the run
wrote its files and again for this page. Texts longer than {cap} characters are cut here;
<code>magent trace {short} --step N</code> shows a step whole.</footer>
<script type="application/json" id="report-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def _json_for_script(data: Any) -> str:
    # Inside <script> only "</" can end the element early; "<" as \\u003c keeps every text inert.
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def render(data: dict[str, Any]) -> str:
    """The HTML page of a report built by ``report.build_report``."""
    task = data["task"]
    visits = Counter(step["node"] for step in data["steps"] if step["type"] == "node" and step.get("node"))
    title = f"magent trace · {task.get('workflow') or 'task'} · {task['id'][:8]}"
    return PAGE.format(
        csp=CSP, version=escape(str(data.get("magent"))), title=escape(title), task_id=escape(task["id"]),
        short=escape(task["id"][:8]), css=(ASSETS / "report.css").read_text(),
        js=(ASSETS / "report.js").read_text(), graph=graph_svg(data.get("graph"), visits),
        generated=escape(str(data.get("generated_at"))), source=escape(str(data.get("source"))),
        cap=f"{data.get('text_cap', 0):,}", data=_json_for_script(data))


@dataclass
class Written:
    """What ``write_report`` made."""

    page: str
    steps: int
    bytes: int
    notes: list[str]
    live: bool


def write_report(task_dir: "TaskDir", path: Path | None) -> Written:
    """Build the report of the task in ``task_dir`` and write it to ``path`` (atomically; ``None``:
    only return it). Raises ``TaskStateError`` when there is nothing to show yet."""
    from magent.errors import TaskStateError
    from magent.trace.report import build_report

    data = build_report(task_dir)
    if not data["steps"]:
        if data["task"]["live"]:
            raise TaskStateError(f"task {task_dir.id[:8]} has no trace yet: it is running and has recorded no step; "
                                 "try again in a moment, or watch it with magent trace --follow")
        if data["source"] == "nothing":
            raise TaskStateError(f"task {task_dir.id[:8]} has no trace: " + "; ".join(data["notes"]))
    page = render(data)
    raw = page.encode()
    if path is not None:
        from magent.store.files import atomic_write

        atomic_write(path, raw)
    return Written(page=page, steps=len(data["steps"]), bytes=len(raw), notes=data["notes"],
                   live=data["task"]["live"])

"""The trace as a tree of styled ``(text, style)`` lines: what ``magent trace ID`` prints. Steps
are numbered as in ``trace.json``; long runs of uneventful turns are folded."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from magent.money import cost_phrase, money, token_note, token_parts
from magent.trace import sessionview
from magent.trace.load import TraceView
from magent.vocabulary import FOLLOW_UP, STATUS_STYLE, plural, short

Segment = tuple[str, "str | None"]
Line = list[Segment]

OUTCOME_STYLE = {"SUCCESS": "green", "FAILURE": "yellow", "ERROR": "bold red", "TIMEOUT": "bold red"}
FOLD_OVER = 12
FOLD_KEEP = 4


def duration(ms: int | float | None) -> str:
    ms = int(ms or 0)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"{minutes}m {seconds:02d}s"


def tokens(n: int) -> str:
    return f"{n:,}"




def args_text(arguments: Any, width: int) -> str:
    return short(json.dumps(arguments, ensure_ascii=False, default=str), width)


def is_node(step: dict[str, Any]) -> bool:
    return bool(step.get("kind")) and step.get("iteration") is None


def opens_exchange(step: dict[str, Any]) -> bool:
    """A follow-up's first step: the node visits before it are over."""
    return step.get("step_name") == "resumed" and str(step.get("message")).startswith(FOLLOW_UP)


def _when(ts: Any) -> str:
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return str(ts)


def totals(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Model calls, failed attempts, tokens and cost per model (from the steps: older traces too)."""
    return sessionview.usage_by(steps, lambda step, call: call.get("model") or "?")


class _Tree:
    def __init__(self, view: TraceView, show_all: bool, session: str | None = None):
        self.view = view
        self.show_all = show_all
        doc = view.partial   # the results it shows get their text at the end (``later``)
        self.sessions: dict[str, dict[str, Any]] = doc.get("sub_agent_sessions") or {}
        self.only = None if session is None else sessionview.with_descendants(
            self.sessions, sessionview.find_session(self.sessions, session))
        """With ``--session``: the sessions shown (the one asked for and those it opened)."""
        self.branch_spans = sessionview.branch_spans(self.sessions)
        """Parallel branches: each branch session's span of it and its sibling branches."""
        self.lines: list[Line] = []
        self.every_total: dict[str, dict[str, Any]] = {}
        self.later: list[tuple[Line, dict[str, Any], str]] = []
        """Tool lines whose result's text is still in entries.jsonl: (line, result, outcome)."""
        self.steps: list[dict[str, Any]] = doc.get("steps") or []
        steps = self.steps
        self.width = len(str(len(steps)))
        turns = [s for s in steps if s.get("iteration") is not None and s.get("kind") == "agent"]
        actions = doc.get("actions") or []
        self.thinking = {id(s): a.get("thinking") or "" for s, a in zip(turns, actions)} \
            if len(turns) == len(actions) else {}

    def num(self, n: int | None) -> Segment:
        return (f"{n:>{self.width}} " if n is not None else " " * (self.width + 1), "dim")

    # pieces
    def header(self) -> None:
        view, task = self.view, self.view.task
        steps = self.steps
        line: Line = [("task ", None), (view.task_dir.id, "bold")]
        if task is not None:
            line += [(f" · {task.workflow}", None), (" · ", None),
                     (view.status, STATUS_STYLE.get(view.status, "")), ]
        if view.live:
            line.append((" · live", "cyan"))
        self.lines.append(line)
        if task is not None:
            self.lines.append([("  ", None), (short(task.description, 200), "italic")])
        rows = self.every_total = totals(steps)   # (the footer's too, unless it shows one session)
        calls = sum(r["calls"] for r in rows.values())
        failed = sum(r["failed"] for r in rows.values())
        tools = sum(len(s.get("tool_calls") or []) for s in steps)
        busy = sum(int(s.get("duration_ms") or 0) for s in steps if is_node(s))
        when = _when(task.created_at) if task is not None and task.created_at else ""
        self.lines.append([(f"  {when} · " if when else "  ", "dim"),
                           (f"{plural(len(steps), 'step')} · {plural(calls, 'model call')}"
                            + (f" ({plural(calls + failed, 'attempt')}, {failed:,} failed)" if failed else "")
                            + " · "
                            f"{plural(tools, 'tool call')} · {duration(busy)} in nodes", "dim")])
        if task is not None and task.error and task.status != "completed":
            self.lines.append([("  ", None), ("✗ " + short(task.error, 300), "bold red")])
        self.lines.append([])

    def llm_line(self, call: dict[str, Any], indent: str, n: int | None = None, label: str = "") -> None:
        if call.get("error"):
            self.attempt_line(call, indent, n, label)
            return
        cost = call.get("cost", 0.0)  # trace.json leaves defaults out; null is "unknown"
        line: Line = [self.num(n), (indent, None)]
        if label:
            line.append((label + " · ", "bold"))
        line += [(call.get("model") or "?", "blue"),
                 (f" · {tokens(int(call.get('tokens_in') or 0))}→{tokens(int(call.get('tokens_out') or 0))} tokens"
                  f"{token_note(call)} · {cost_phrase(cost)} · {duration(call.get('latency_ms'))}", "dim")]
        if call.get("stop_reason") and call.get("stop_reason") not in ("stop", "tool_calls", "end_turn"):
            line.append((f" · stopped: {call['stop_reason']}", "yellow"))
        if call.get("route"):
            line.append((f" · chosen by {call['route']}", "cyan"))
        if call.get("error"):
            line.append((f" · {short(call['error'], 120)}", "bold red"))
        self.lines.append(line)

    def attempt_line(self, call: dict[str, Any], indent: str, n: int | None = None, label: str = "") -> None:
        """A failed attempt: which, how long it took, what went wrong."""
        line: Line = [self.num(n), (indent, None)]
        if label:
            line.append((label + " · ", "bold"))
        line += [("✗ ", "bold red"), (call.get("model") or "?", "blue"),
                 (f" attempt {call.get('attempt') or 1} failed after {duration(call.get('latency_ms'))}", "dim"),
                 (f": {short(call.get('error'), 160)}", "red")]
        self.lines.append(line)

    def tool_line(self, record: dict[str, Any], indent: str) -> None:
        name = f"{record.get('server')}.{record.get('tool')}" if record.get("server") else str(record.get("tool"))
        result = record.get("result")
        line: Line = [self.num(None), (indent, None), ("→ ", "magenta"), (name, "magenta"),
                      (" " + args_text(record.get("arguments") or {}, 70), None)]
        if result is None and not record.get("error"):
            line.append(("  … no result", "yellow"))
            self.lines.append(line)
            return
        outcome = record.get("outcome") or "SUCCESS"
        line += [("  ", None), (outcome, OUTCOME_STYLE.get(outcome, "")),
                 (f" {duration(record.get('duration_ms'))}", "dim")]
        if len((result or {}).get("attempts") or []) > 1:  # made again after a timeout or error
            line.append((f" (attempt {len(result['attempts'])}; earlier: "
                         + ", ".join(str(a.get("outcome")) for a in result["attempts"][:-1]) + ")", "yellow"))
        if not (outcome != "SUCCESS" and record.get("error")) and self.view.needs_text(result):
            self.later.append((line, result, outcome))
        else:
            text = record.get("error") if outcome != "SUCCESS" and record.get("error") else (result or {}).get("text")
            self.text(line, text, outcome)
        self.lines.append(line)
        if (result or {}).get("requested"):
            self.lines.append([self.num(None), (indent + "  ", None),
                               (f"(fallback for {result['requested']})", "yellow")])

    @staticmethod
    def text(line: Line, text: Any, outcome: str) -> None:
        if text:
            line.append(("  " + short(text, 90), "red" if outcome != "SUCCESS" else "dim"))

    def texts(self) -> None:
        """The results' texts the tool lines wait for, read from entries.jsonl in one go."""
        self.view.fill({result.get("entry_id") for _, result, _ in self.later})
        for line, result, outcome in self.later:
            self.text(line, result.get("text"), outcome)

    def node(self, n: int, step: dict[str, Any], live_tail: bool, waiting: bool = False) -> str | None:
        """The node's header, verdict and own calls; returns its route (printed after its children)."""
        message = str(step.get("message") or "")
        parts = [p for p in message.split(" · ") if p] if message else []
        visit = next((p for p in parts if p.startswith("visit ")), None)
        line: Line = [self.num(n), ("▸ ", "bold cyan"), (str(step.get("step_name")), "bold cyan"),
                      (f"  {step.get('kind')}", "dim")]
        if step.get("agent"):
            line.append((f" · {step['agent']}", None))
        if step.get("session") in self.sessions:
            line.append((f" · {sessionview.label(self.sessions[step['session']])}", "blue"))
        if visit:
            line.append((f" · {visit}", None))
        mode = str(step.get("tool_calling") or "")
        if mode:
            line.append((f" · tools: {mode.split(':')[0]}", "dim"))
        unfinished = "did not finish" in parts
        if unfinished and live_tail:
            line.append((" · running…", "cyan"))
        elif not unfinished:
            line.append((f" · {duration(step.get('duration_ms'))}", "dim"))
        timeline = sessionview.step_bar(step, self.branch_spans.get(str(step.get("session"))))
        if timeline:
            line.append(("  " + timeline, "cyan"))
        if step.get("status") == "error":
            line.append(("  ✗ failed", "bold red"))
        elif unfinished and waiting:
            line.append(("  ⏸ waiting for a person", "yellow"))
        elif unfinished and not live_tail:
            line.append(("  did not finish", "yellow"))
        elif step.get("status") == "warning":
            line.append(("  ⚠", "yellow"))
        self.lines.append(line)
        if mode.startswith("text:"):  # (why the agent writes Thought/Action instead of calling)
            self.lines.append([self.num(None), ("    ", None), (f"tools in the text format:{mode[5:]}", "yellow")])
        for call in step.get("llm_calls") or []:
            self.llm_line(call, "    ")
        for record in step.get("tool_calls") or []:
            self.tool_line(record, "    ")
        for part in parts:
            if part.startswith("visit ") or part.startswith("→ ") or part == "did not finish":
                continue
            style = "green" if part.startswith("verdict pass") else "yellow" if part.startswith("verdict") else "dim"
            self.lines.append([self.num(None), ("    ", None), (part, style)])
        return next((p for p in parts if p.startswith("→ ")), None)

    def turn(self, n: int, step: dict[str, Any], indent: str = "  ") -> None:
        calls = step.get("llm_calls") or []
        rails = [c for c in calls if c.get("rail")]  # a guardrail's judge, asked about this turn
        calls = [c for c in calls if not c.get("rail")]
        answers = [c for c in calls if not c.get("error")]
        label = f"turn {step.get('iteration')}"
        inner = indent + "    "
        if answers:
            self.llm_line(answers[-1], indent, n, label)
            if answers[-1].get("tools") is not None:  # (an agent's tool_selection)
                tools = answers[-1]["tools"]
                self.lines.append([self.num(None), (inner, None),
                                   (f"carried {len(tools)} tools: {short(', '.join(tools), 100)}", "dim")])
        else:
            self.lines.append([self.num(n), (indent + label, "bold")])
        for call in calls:
            if call.get("error"):
                self.attempt_line(call, inner)
        thinking = self.thinking.get(id(step), "")
        if thinking.strip():
            self.lines.append([self.num(None), (inner, None), (short(thinking, 110), "italic")])
        for record in step.get("tool_calls") or []:
            self.tool_line(record, inner)
        for call in rails:
            self.llm_line(call, inner, label=f"rail {call['rail']}")

    def event(self, n: int, step: dict[str, Any], indent: str) -> None:
        name, message = step.get("step_name"), short(step.get("message"), 200)
        icon, style = {
            "awaiting_human": ("⏸ ", "bold yellow"), "resumed": ("↻ ", "dim"), "warning": ("⚠ ", "yellow"),
            "error": ("✗ ", "bold red"), "interrupted": ("⏹ ", "yellow"), "guardrail": ("⛨ ", "yellow"),
            "memory": ("◆ ", "magenta"), "compaction": ("⇣ ", "cyan"), "llm_attempts": ("⚠ ", "yellow"),
            "operator": ("✉ ", "bold magenta"),
        }.get(str(name), ("• ", None))
        if name == "human_decision":
            action = message.split(":")[0]
            icon = "✔ "
            style = "bold red" if "reject" in action else "bold yellow" if "modify" in action else "bold green"
        line: Line = [self.num(n), (indent, None), (icon + message, style)]
        self.lines.append(line)
        for call in step.get("llm_calls") or []:
            self.llm_line(call, indent + "  ")

    def fold(self, group: list[tuple[int, dict[str, Any]]]) -> None:
        calls = sum(len(s.get("tool_calls") or []) for _, s in group)
        self.lines.append([self.num(None), ("  ", None),
                           (f"… {len(group)} uneventful turns (steps {group[0][0]}–{group[-1][0]}, "
                            f"{calls} tool calls, all successful); --all shows them", "dim")])

    def body(self) -> None:
        steps = self.steps
        if self.only is not None:  # --session: that session's steps (and its children's), alone
            self.children([(i + 1, s) for i, s in enumerate(steps) if s.get("session") in self.only],
                          top=True)
            return
        last_node = max((i for i, s in enumerate(steps) if is_node(s)), default=-1)
        owned = self.owners()
        claimed = {j for mine in owned.values() for j in mine}
        for i, step in enumerate(steps):
            if is_node(step):
                children = [(j + 1, steps[j]) for j in owned.get(i, [])]
                waiting = bool(children) and children[-1][1].get("step_name") == "awaiting_human"
                route = self.node(i + 1, step, live_tail=self.view.live and i == last_node, waiting=waiting)
                self.children(children)
                if route:
                    self.lines.append([self.num(None), ("  " + route, "dim")])
            elif i not in claimed:
                self.event(i + 1, step, "")

    def owners(self) -> dict[int, list[int]]:
        """Which node step each other step belongs to (indexes into the steps): the node
        visit before it, but a parallel branch's turns and events to that branch's own node
        (branches run at once, so their steps interleave), and none to a follow-up's opening
        (the exchange before it is over)."""
        owned: dict[int, list[int]] = {}
        last: int | None = None
        branch_node: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            sid = str(step.get("session"))
            if is_node(step):
                last = i
                if (self.sessions.get(sid) or {}).get("kind") == "branch":
                    branch_node[sid] = i
            elif opens_exchange(step):
                last = None
            elif last is not None:
                owned.setdefault(branch_node.get(sid, last), []).append(i)
        return owned

    def children(self, children: list[tuple[int, dict[str, Any]]], top: bool = False) -> None:
        """A node's steps: its own turns and events, then each child session it opened as a block
        (where its first step falls), in the order they started."""
        own = [c for c in children if c[1].get("session") not in self.sessions
               or (self.sessions[c[1]["session"]].get("kind") == "branch" and not top)]
        mine = {n for n, _ in own}
        blocks: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for n, step in children:
            if n not in mine:
                blocks.setdefault(step["session"], []).append((n, step))
        whole = sessionview.span([self.sessions[sid] for sid in blocks])
        quiet: list[str] = []
        if not self.show_all and len(blocks) > FOLD_OVER:
            quiet = [sid for sid in list(blocks)[FOLD_KEEP:-FOLD_KEEP] if self.sessions[sid].get("status") == "completed"]
        segment: list[tuple[int, dict[str, Any]]] = []
        done: set[str] = set()
        for n, step in children:
            if n in mine:
                segment.append((n, step))
                continue
            sid = step["session"]
            if sid in done:
                continue
            done.add(sid)
            self.own_steps(segment)
            segment = []
            if sid not in quiet:
                self.session_block(sid, blocks[sid], whole)
            elif sid == quiet[0]:
                self.lines.append([self.num(None), ("  ", None),
                                   (f"… {len(quiet)} more sessions, all completed, are folded; --all shows them", "dim")])
        self.own_steps(segment)

    def session_block(self, sid: str, steps: list[tuple[int, dict[str, Any]]],
                      whole: Any) -> None:
        info = self.sessions[sid]
        indent = "  " * max(int(info.get("depth") or 1), 1)
        status = str(info.get("status") or "running")
        usage = info.get("usage") or {}
        line: Line = [self.num(None), (indent, None), ("⇢ ", "bold blue"),
                      (sessionview.label(info), "bold blue"), (f"  {sid[:8]}", "dim"),
                      (f" · {status}", STATUS_STYLE.get(status, "")),
                      (f" · {plural(int(usage.get('calls') or 0), 'model call')}"
                       f" · {tokens(int(usage.get('input') or 0))}→{tokens(int(usage.get('output') or 0))} tokens", "dim")]
        timeline = sessionview.bar(info, whole)
        if timeline:
            line.append(("  " + timeline, "cyan"))
        self.lines.append(line)
        if info.get("error"):
            self.lines.append([self.num(None), (indent + "  ", None), ("✗ " + short(info["error"], 200), "red")])
        for n, step in steps:
            if step.get("iteration") is not None:
                self.turn(n, step, indent + "  ")
            else:
                self.event(n, step, indent + "  ")

    def own_steps(self, children: list[tuple[int, dict[str, Any]]]) -> None:
        turns = [c for c in children if c[1].get("iteration") is not None]
        hidden: set[int] = set()
        if not self.show_all and len(turns) > FOLD_OVER:
            middle = turns[FOLD_KEEP:-FOLD_KEEP]
            hidden = {n for n, s in middle if s.get("status", "info") == "info"}
        group: list[tuple[int, dict[str, Any]]] = []
        for n, step in children:
            if n in hidden:
                group.append((n, step))
                continue
            if group:
                self.fold(group)
                group = []
            if step.get("iteration") is not None:
                self.turn(n, step)
            else:
                self.event(n, step, "  ")
        if group:
            self.fold(group)

    def footer(self) -> None:
        rows = self.every_total if self.only is None else totals(
            [s for s in self.steps if s.get("session") in self.only])
        self.lines.append([])
        if not rows:
            self.lines.append([("no model calls", "dim")])
        else:
            width = max(len(m) for m in [*rows, "model", "all"])
            failed = any(row["failed"] for row in rows.values())
            self.lines.append([(f"{'model':<{width}}  {'calls':>6}  " + (f"{'failed':>6}  " if failed else "")
                                + f"{'tokens in':>10}  {'tokens out':>10}  {'cost':>10}", "bold")])
            everything: dict[str, Any] = {"calls": 0, "failed": 0, "input": 0, "output": 0, "cost": 0.0,
                                          "unpriced": 0, "estimated": 0}
            for model, row in sorted(rows.items()):
                self.lines.append([(self._row(model, row, width, failed), None)])
                for key in everything:
                    everything[key] += row.get(key, 0)
                if token_parts(row):
                    self.lines.append([(f"{'':<{width}}  of which {token_parts(row)}", "dim")])
            if len(rows) > 1:
                self.lines.append([(self._row("all", everything, width, failed), "bold")])
            if everything["estimated"]:
                self.lines.append([(f"~ estimated for {everything['estimated']} of "
                                    f"{plural(everything['calls'], 'call')}: the server sent no usage", "dim")])
            self.rollups()
        if self.steps:
            self.lines.append([(f"magent trace {self.view.task_dir.id[:8]} --step N shows step N whole", "dim")])

    def rollups(self) -> None:
        """Usage per agent, and per child session with what it opened (when there are any)."""
        if not self.sessions:
            return
        agents = sessionview.by_agent(self.steps if self.only is None else
                                      [s for s in self.steps if s.get("session") in self.only])
        rolled = {sid: row for sid, row in sessionview.rolled_up(self.sessions).items()
                  if self.only is None or sid in self.only}
        names = {sid: f"{sessionview.label(info)} {sid[:8]}" for sid, info in self.sessions.items()}
        width = max(len(n) for n in [*agents, *names.values(), "session"])
        self.lines.append([])
        self.lines.append([(f"{'agent':<{width}}  {'calls':>6}  {'tokens in':>10}  {'tokens out':>10}  "
                            f"{'cost':>10}", "bold")])
        for agent, row in sorted(agents.items()):
            self.lines.append([(self._row(agent, row, width), None)])
        self.lines.append([])
        self.lines.append([(f"{'session':<{width}}  {'calls':>6}  {'tokens in':>10}  {'tokens out':>10}  "
                            f"{'cost':>10}", "bold")])
        for sid, row in list(rolled.items())[:20]:
            self.lines.append([(self._row(names[sid], row, width), None)])
        if len(rolled) > 20:
            self.lines.append([(f"… {len(rolled) - 20} more sessions (magent trace ID --json has them all)", "dim")])

    @staticmethod
    def _row(name: str, row: dict[str, Any], width: int, failed: bool = False) -> str:
        mark = "~" if row.get("estimated") else ""  # (some or all of its tokens: see the note below)
        return (f"{name:<{width}}  {row['calls']:>6}  " + (f"{row['failed']:>6}  " if failed else "")
                + f"{mark + tokens(row['input']):>10}  {mark + tokens(row['output']):>10}  "
                + f"{money(row['cost'], row['unpriced']):>10}")


def tree_lines(view: TraceView, show_all: bool = False, session: str | None = None) -> list[Line]:
    """The whole trace as styled lines (with ``session``: only it and the sessions it opened)."""
    tree = _Tree(view, show_all, session)
    tree.header()
    if not tree.steps:
        tree.lines.append([("no steps recorded yet", "dim")])
    tree.body()
    tree.texts()
    tree.footer()
    return tree.lines

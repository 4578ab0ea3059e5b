"""What the HTML report shows, as plain data (``magent trace ID --html``).

Texts come from the task's files, already redacted, and are masked again with the current
patterns (tool I/O left out when ``trace_tool_io`` is false). Each text is kept once (steps point
at entries by id) and cut to ``TEXT_CAP`` with its full size kept. Each session gets its own
lane on the timeline."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from magent.redact import OMITTED_ARGS, TOOL_IO_OMITTED
from magent.trace.detail import artifact_info
from magent.trace.diagram import describe_snapshot
from magent.trace.load import TraceView, load_view
from magent.trace.timeline import timeline
from magent.trace.view import is_node

if TYPE_CHECKING:
    from magent.redact import Redactor
    from magent.store.tasks import TaskDir

TEXT_CAP = 2000
"""Characters of any one text (a reply, a tool result, a message) the report keeps."""
MASK_MARGIN = 400
"""Characters past the cut that are masked with what is kept (longer than any secret)."""
MAIN = ""
"""Session key of the task's own conversation."""


def _read_json(path: Any) -> dict[str, Any]:
    from magent.errors import StoreError
    from magent.store.files import read_json

    try:
        doc = read_json(path)  # never through a link; too deep a file is a ValueError
    except (OSError, ValueError, StoreError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _entries(task_dir: "TaskDir") -> list[dict[str, Any]]:
    """The task's entries as read, with what their lines leave out put back (``store.entries``)."""
    from magent.store.entries import restore
    from magent.store.files import read_jsonl

    seen: dict[str, dict[str, Any]] = {}
    try:
        for raw in read_jsonl(task_dir.entries.path):
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                seen[raw["id"]] = restore(raw, seen.get(raw.get("parent_id")))  # type: ignore[arg-type]
    except OSError:
        return []
    return list(seen.values())


def _session_of(step: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """The session a step belongs to: its own ``session`` (None: the main one), else that of the
    event that opened it. (Not any of its events': a turn that delegates also holds the
    ``session_started`` of the child it opened.)"""
    if "session" in step:
        return str(step["session"] or MAIN)
    return str(events[0].get("session") or MAIN) if events else MAIN


class _Report:
    def __init__(self, view: TraceView, task_doc: dict[str, Any], entries: dict[str, dict[str, Any]],
                 redactor: "Redactor", keep_tool_io: bool = True):
        self.view = view
        self.task_doc = task_doc
        self.entries = entries
        self.mask = redactor.text
        self.data = redactor.data
        self.keep_tool_io = keep_tool_io
        self.entry_step: dict[str, int] = {}
        self.steps: list[dict[str, Any]] = []

    def cap(self, text: Any) -> dict[str, Any]:
        """``{"t": text}`` masked, then cut to TEXT_CAP with its full ``"size"``; masking first, so
        a cut never leaves half a secret."""
        if text is None:
            return {}
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, default=str)
        if len(text) <= TEXT_CAP:
            return {"t": self.mask(text)}
        # Masking a window a little wider than what is kept finds a secret that straddles the cut
        # (and costs a fifth of masking a 10,000-character result whole).
        return {"t": self.mask(text[:TEXT_CAP + MASK_MARGIN])[:TEXT_CAP], "size": len(text)}

    def step_events(self, index: int) -> list[dict[str, Any]]:
        built = self.view.built
        return built.events[index] if built is not None and index < len(built.events) else []

    def build_steps(self) -> None:
        node_of: dict[tuple[str, str | None], int] = {}
        for i, step in enumerate(self.view.steps):
            n = i + 1
            events = self.step_events(i)
            session = _session_of(step, events)
            kind = "node" if is_node(step) else "turn" if step.get("iteration") is not None else "event"
            out: dict[str, Any] = {
                "n": n, "type": kind, "name": step.get("step_name") or "", "kind": step.get("kind"),
                "node": step.get("node"), "agent": step.get("agent") or "", "it": step.get("iteration"),
                "status": step.get("status") or "info", "msg": self.mask(step.get("message") or ""),
                "ts": step.get("timestamp"), "ms": int(step.get("duration_ms") or 0), "session": session,
                "llm": self.llm_calls(n, step, events), "tools": self.tool_calls(n, step, events)}
            if kind == "node":
                node_of[(session, step.get("node"))] = n
                finished = [e for e in events if e.get("type") == "node_finished"]
                if finished and finished[-1].get("output"):
                    out["output"] = self.cap(finished[-1]["output"])
                out["done"] = bool(finished) or "did not finish" not in out["msg"]
            else:
                parent = self.node_step(node_of, session, step.get("node"))
                if parent is not None and (kind == "turn" or step.get("node")):
                    out["parent"] = parent
                if kind == "event" and events:
                    out["event"] = {k: self.data(v) for k, v in events[0].items()
                                    if k not in ("seq", "type", "ts", "node", "session", "message")}
            self.steps.append(out)

    def node_step(self, node_of: dict[tuple[str, str | None], int], session: str, node: str | None) -> int | None:
        """The step of the node visit ``node`` runs in, seen from ``session``: a sub-agent's turns
        have no node step of their own and sit in the node of the session that opened them."""
        infos = self.view.doc.get("sub_agent_sessions") or {}
        seen: set[str] = set()
        while session not in seen:
            seen.add(session)
            found = node_of.get((session, node))
            if found is not None or session == MAIN:
                return found
            session = str((infos.get(session) or {}).get("parent_session") or MAIN)
        return None

    def llm_calls(self, n: int, step: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        llm_events = [e for e in events if e.get("type") == "llm_call"]
        calls = []
        for i, record in enumerate(step.get("llm_calls") or []):
            ev = llm_events[i] if i < len(llm_events) else {}
            call = {k: record.get(k) for k in ("model", "provider", "tokens_in", "tokens_out", "cost",
                                                "latency_ms", "stop_reason", "error", "attempt", "rail", "route")}
            entry_id = ev.get("entry_id")
            if entry_id and entry_id in self.entries:
                call["entry"] = entry_id
                self.entry_step.setdefault(entry_id, n)
            elif ev.get("response"):
                call["reply"] = self.cap((ev.get("response") or {}).get("content") or "")
            calls.append(call)
        return calls

    def tool_calls(self, n: int, step: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results = {e.get("call_id"): e for e in events if e.get("type") == "tool_result"}
        calls = []
        for record in step.get("tool_calls") or []:
            name = f"{record.get('server')}.{record.get('tool')}" if record.get("server") else str(record.get("tool"))
            result = record.get("result")
            call: dict[str, Any] = {"name": name, "id": record.get("call_id"),
                                    "args": self.cap(record.get("arguments") or {}),
                                    "outcome": record.get("outcome") if result is not None or record.get("error")
                                    else None,
                                    "error": record.get("error"), "ms": int(record.get("duration_ms") or 0)}
            if result is not None:
                entry_id = result.get("entry_id")
                ev = results.get(record.get("call_id"), {})
                if entry_id and entry_id in self.entries:
                    call["entry"] = entry_id
                    self.entry_step.setdefault(entry_id, n)
                elif ev.get("full_result") is not None:
                    call["result"] = self.cap(ev["full_result"])
                else:
                    call["result"] = self.cap(ev.get("result") if ev.get("result") is not None else result.get("text"))
                artifact = artifact_info(self.view.task_dir, result.get("artifact"))
                if artifact:
                    call["artifact"] = artifact
                if result.get("requested"):
                    call["requested"] = result["requested"]
            calls.append(call)
        return calls

    def entry_table(self) -> dict[str, dict[str, Any]]:
        out = {}
        for eid, raw in self.entries.items():
            content = raw.get("content") or ""
            if not self.keep_tool_io and raw.get("role") == "tool":
                content = TOOL_IO_OMITTED  # trace_tool_io: false keeps tool results out of traces
            item: dict[str, Any] = {"role": raw.get("role"), **self.cap(content)}
            for src, key in (("parent_id", "p"), ("name", "name"), ("node", "node"), ("turn_id", "turn"),
                             ("tool_call_id", "call"), ("session", "session"), ("created_at", "ts")):
                if raw.get(src):
                    item[key] = raw[src]
            if raw.get("tool_calls"):
                item["calls"] = [{"name": f"{c.get('server')}.{c.get('tool')}" if c.get("server") else c.get("tool"),
                                  "args": self.cap((c.get("arguments") or c.get("raw_arguments") or {})
                                               if self.keep_tool_io else OMITTED_ARGS)}
                                 for c in raw["tool_calls"]]
            if eid in self.entry_step:
                item["step"] = self.entry_step[eid]
            out[eid] = item
        return out

    def sessions(self) -> list[dict[str, Any]]:
        infos = self.view.doc.get("sub_agent_sessions") or {}
        seen = [MAIN]
        for step in self.steps:
            if step["session"] not in seen:
                seen.append(step["session"])
        for sid in infos:
            if sid not in seen:
                seen.append(sid)
        out = []
        for sid in seen:
            info = infos.get(sid) or {}
            agent = info.get("agent") or next((s["agent"] for s in self.steps if s["session"] == sid and s["agent"]), "")
            item = {"id": sid, "label": "main" if sid == MAIN else f"{agent or 'session'} · {sid[:8]}",
                    "agent": agent, "status": info.get("status"), "depth": int(info.get("depth") or 0)}
            opened_by = info.get("opened_by_step")
            if isinstance(opened_by, int):
                item["opened_by"] = opened_by + 1  # a step number, as the page counts them
            for src in ("kind", "key", "parent_session", "node", "error"):
                if info.get(src):
                    item[src] = self.mask(str(info[src])) if src == "error" else info[src]
            first = next((s["n"] for s in self.steps if s["session"] == sid), None)
            if first is not None:
                item["first"] = first
            out.append(item)
        return out

    def totals(self) -> dict[str, list[dict[str, Any]]]:
        by: dict[str, dict[str, dict[str, Any]]] = {"model": {}, "agent": {}, "session": {}}
        for step in self.steps:
            for call in step["llm"]:
                keys = {"model": call.get("model") or "?", "agent": step["agent"] or "?", "session": step["session"]}
                for dim, key in keys.items():
                    row = by[dim].setdefault(key, {"name": key, "calls": 0, "input": 0, "output": 0, "cost": 0.0,
                                                   "failed": 0, "unpriced": 0})
                    if call.get("error"):  # a failed attempt answered nothing: counted apart
                        row["failed"] += 1
                        continue
                    row["calls"] += 1
                    row["unpriced"] += int(call.get("cost") is None)
                    row["input"] += int(call.get("tokens_in") or 0)
                    row["output"] += int(call.get("tokens_out") or 0)
                    row["cost"] = round(row["cost"] + float(call.get("cost") or 0.0), 10)
        return {dim: sorted(rows.values(), key=lambda r: (-r["cost"], -r["input"], r["name"]))
                for dim, rows in by.items()}

    def system_prompts(self) -> dict[str, str]:
        """Each agent's system prompt as written (``${VAR}`` unresolved), from the task's snapshot."""
        snapshot = self.task_doc.get("config_snapshot") or {}
        prompts: dict[str, str] = {}
        inline = ((snapshot.get("workflow") or {}).get("raw") or {}).get("agents") or {}
        for name, raw in {**inline, **{n: (a or {}).get("raw") or {} for n, a in
                                       (snapshot.get("agents") or {}).items()}}.items():
            if isinstance(raw, dict) and isinstance(raw.get("system_prompt"), str):
                prompts[name] = self.mask(raw["system_prompt"])
        return prompts


def build_report(task_dir: "TaskDir") -> dict[str, Any]:
    """Everything the HTML report shows for the task in ``task_dir``, as JSON-ready data, every text
    masked once more with the home's current patterns."""
    from magent.version import __version__
    from magent.ids import now
    from magent.redact import Redactor, load_settings

    settings = load_settings()
    redactor = Redactor.configured()
    entries = {raw["id"]: raw for raw in _entries(task_dir)}
    view = load_view(task_dir, need_events=True, entries=entries)
    task_doc = _read_json(task_dir.task_file)
    report = _Report(view, task_doc, entries, redactor, keep_tool_io=settings.trace_tool_io)
    report.build_steps()
    notes = [redactor.text(n) for n in view.notes]
    task = view.task
    data: dict[str, Any] = {
        "task": {"id": task_dir.id, "status": view.status, "live": view.live,
                 "workflow": task.workflow if task else "",
                 "description": redactor.text(task.description) if task else "",
                 "created_at": task.created_at if task else None, "updated_at": task.updated_at if task else None,
                 "error": redactor.text(task.error) if task and task.error else None,
                 "result": report.cap(task_doc.get("result")) or None, "tags": task_doc.get("tags") or []},
        "source": view.source, "generated_at": now().isoformat(timespec="seconds"),
        "magent": __version__, "text_cap": TEXT_CAP,
        "steps": report.steps, "entries": report.entry_table(), "sessions": report.sessions(),
        "totals": report.totals(), "system": report.system_prompts(),
        "graph": report.data(describe_snapshot(task_doc.get("config_snapshot") or {})),
        "timeline": timeline(report.steps, view.built),
    }
    data["notes"] = notes
    return data

/* magent trace report: draws the page from the JSON in #report-data. Plain DOM, no library.
   Every text from the trace goes in through textContent, never as markup. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var ID8 = D.task.id.slice(0, 8);
  var byN = {};
  D.steps.forEach(function (s) { byN[s.n] = s; });
  var sessionLabel = {}, sessionOf = {}, sessionByCall = {};
  D.sessions.forEach(function (s) {
    sessionLabel[s.id] = s.label; sessionOf[s.id] = s;
    if (s.key && s.key.slice(0, 5) === "call:") sessionByCall[s.key.slice(5)] = s;
  });

  // ---- small helpers ----
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = v;
        else if (k === "cls") node.className = v;
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? "" : v);
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  function int(n) { return Number(n || 0).toLocaleString("en-US"); }
  function money(c, unpriced) {  // null: litellm could not price the call
    if (c === null || (unpriced && !Number(c))) return "unknown";
    c = Number(c || 0);
    return "$" + (c > 0 && c < 0.0001 ? c.toFixed(6) : c.toFixed(4)) + (unpriced ? " + unknown" : "");
  }
  function callCount(r) { return int(r.calls) + (r.failed ? " (+" + int(r.failed) + " failed)" : ""); }
  function dur(ms) {
    ms = Math.round(Number(ms || 0));
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    if (ms < 3600000) return Math.floor(ms / 60000) + "m " + String(Math.floor(ms / 1000) % 60).padStart(2, "0") + "s";
    var h = Math.floor(ms / 3600000);
    return h < 48 ? h + " h " + Math.floor(ms / 60000) % 60 + " m" : Math.floor(h / 24) + " days " + h % 24 + " h";
  }
  function plural(n, w) { return int(n) + " " + w + (n === 1 ? "" : "s"); }
  function short(t, n) { t = String(t || "").replace(/\s+/g, " ").trim(); return t.length > n ? t.slice(0, n - 1) + "…" : t; }
  function when(ts) { return ts ? String(ts).replace("T", " ").replace(/\.\d+/, "").replace(/(Z|\+00:00)$/, " UTC") : ""; }
  function entryText(id) { var e = D.entries[id]; return e ? e.t || "" : ""; }
  function replyOf(call) { return call.entry ? { t: entryText(call.entry), size: (D.entries[call.entry] || {}).size } : call.reply; }
  function resultOf(call) { return call.entry ? { t: entryText(call.entry), size: (D.entries[call.entry] || {}).size } : call.result; }
  function stepCmd(n) { return "magent trace " + ID8 + " --step " + n; }

  var SHOW = 800;
  /** A text block: long texts start folded; what the report left out is said, with where to find it. */
  function textBlock(obj, n) {
    var wrap = el("div", { cls: "textblock" });
    if (!obj || obj.t === undefined) { wrap.appendChild(el("div", { cls: "muted", text: "(none)" })); return wrap; }
    var t = String(obj.t);
    var pre = el("pre", { cls: "text" });
    if (t.length > SHOW) {
      pre.textContent = t.slice(0, SHOW) + "…";
      var btn = el("button", { text: "show all " + int(t.length) + " characters", onclick: function () {
        pre.textContent = t; btn.remove();
      } });
      wrap.appendChild(pre); wrap.appendChild(btn);
    } else {
      pre.textContent = t === "" ? "(empty)" : t;
      wrap.appendChild(pre);
    }
    if (obj.size && obj.size > t.length) {
      wrap.appendChild(el("div", { cls: "elided" },
        "… " + int(obj.size - t.length) + " more characters are not in this report (" + int(obj.size) + " in all): ",
        el("code", { text: n ? stepCmd(n) : "magent trace " + ID8 + " --step N" }), " shows it whole."));
    }
    return wrap;
  }
  /** JSON kept compact in the data, laid out for reading (left as it is when it was cut). */
  function pretty(obj) {
    if (!obj || obj.size) return obj;
    try { return { t: JSON.stringify(JSON.parse(obj.t), null, 2) }; } catch (e) { return obj; }
  }
  function section(label, content, cls) {
    return el("div", { cls: "section " + (cls || "") }, el("div", { cls: "label", text: label }), content);
  }
  function kv(pairs) {
    var dl = el("dl", { cls: "kv" });
    pairs.forEach(function (p) {
      if (p[1] === null || p[1] === undefined || p[1] === "") return;
      dl.appendChild(el("dt", { text: p[0] })); dl.appendChild(el("dd", { text: String(p[1]) }));
    });
    return dl;
  }

  // ---- header ----
  function totalsOf(rows) {
    var all = { calls: 0, input: 0, output: 0, cost: 0, failed: 0, unpriced: 0 };
    rows.forEach(function (r) {
      all.calls += r.calls; all.input += r.input; all.output += r.output; all.cost += r.cost;
      all.failed += r.failed || 0; all.unpriced += r.unpriced || 0;
    });
    return all;
  }
  function header() {
    var t = D.task, h = document.getElementById("summary");
    var status = el("span", { cls: "badge s-" + t.status, text: t.status + (t.live ? " · live" : "") });
    h.appendChild(el("h1", null, "magent trace · " + (t.workflow || "task") + " ", status, " ", el("span", { cls: "id", text: t.id })));
    if (t.description) h.appendChild(el("div", { cls: "desc", text: t.description }));
    var all = totalsOf(D.totals.model);
    var tools = 0, failed = 0;
    D.steps.forEach(function (s) { s.tools.forEach(function (c) { tools++; if (c.outcome && c.outcome !== "SUCCESS") failed++; }); });
    var problems = D.steps.filter(isProblem).length;
    var segs = D.timeline.segments, span = segs.length ? segs[segs.length - 1][3] : 0;
    var stats = el("div", { cls: "stats" });
    [["created", when(t.created_at)], ["steps", int(D.steps.length)], ["model calls", callCount(all)],
     ["tool calls", int(tools) + (failed ? " (" + failed + " not successful)" : "")],
     ["tokens", int(all.input) + " in · " + int(all.output) + " out"], ["cost", money(all.cost, all.unpriced)],
     ["wall time", dur(span)]].forEach(function (p) {
      stats.appendChild(el("span", { cls: "stat" }, el("span", { cls: "muted", text: p[0] + " " }), el("b", { text: p[1] })));
    });
    if (problems) {
      stats.appendChild(el("a", { cls: "step-link", text: plural(problems, "step") + " with problems", onclick: function () {
        document.getElementById("problems").checked = true; applyFilter();
        document.getElementById("steps-section").scrollIntoView();
      } }));
    }
    h.appendChild(stats);
    if (t.error && t.status !== "completed") h.appendChild(el("div", { cls: "banner err", text: "✗ " + t.error }));
    D.notes.forEach(function (n) { h.appendChild(el("div", { cls: "banner note", text: n })); });
  }

  function totalsTable(caption, rows, first) {
    var table = el("table", { cls: "totals" }, el("caption", { text: caption }));
    table.appendChild(el("tr", null, el("th", { text: first }), el("th", { text: "calls" }), el("th", { text: "tokens in" }),
      el("th", { text: "tokens out" }), el("th", { text: "cost" })));
    function row(name, r, cls) {
      table.appendChild(el("tr", { cls: cls }, el("td", { text: name }), el("td", { text: callCount(r) }),
        el("td", { text: int(r.input) }), el("td", { text: int(r.output) }), el("td", { text: money(r.cost, r.unpriced) })));
    }
    rows.forEach(function (r) { row(first === "session" ? (sessionLabel[r.name] || r.name) : r.name, r); });
    if (rows.length > 1) row("all", totalsOf(rows), "all");
    return table;
  }
  function totals() {
    var box = document.getElementById("totals");
    if (!D.totals.model.length) { box.appendChild(el("div", { cls: "muted", text: "No model calls." })); return; }
    box.appendChild(totalsTable("Per model", D.totals.model, "model"));
    box.appendChild(totalsTable("Per agent", D.totals.agent, "agent"));
    if (D.totals.session.length > 1) box.appendChild(totalsTable("Per session", D.totals.session, "session"));
    if (D.task.result && D.task.result.t !== undefined) box.appendChild(section("Result", textBlock(D.task.result)));
  }

  // ---- timeline ----
  var ROW_NAMES = ["node", "model call", "tool call"];
  function timeline() {
    var T = D.timeline, box = document.getElementById("timeline");
    if (!T.bars.length && !T.marks.length) { box.appendChild(el("div", { cls: "muted", text: "Nothing to draw yet." })); return; }
    var track = el("div", { cls: "tl-track" });
    var scroll = el("div", { cls: "tl-scroll" }, track);
    var zoom = el("input", { type: "range", min: "1", max: "40", value: "1", "aria-label": "zoom" });
    zoom.addEventListener("input", function () { track.style.width = (zoom.value * 100) + "%"; });
    box.appendChild(el("div", { cls: "tl-controls" }, el("label", null, "zoom ", zoom),
      el("div", { cls: "legend" }, el("span", null, el("i", { style: "background:var(--node)" }), "node"),
        el("span", null, el("i", { style: "background:var(--model)" }), "model call"),
        el("span", null, el("i", { style: "background:var(--tool)" }), "tool call"),
        el("span", null, el("i", { style: "background:var(--warn)" }), "pause / warning"),
        el("span", null, el("i", { style: "background:var(--ok)" }), "decision"),
        el("span", null, el("i", { style: "background:var(--err)" }), "error"))));
    box.appendChild(scroll);
    // Bars of one kind that overlap in time (parallel sub-agent or tool calls) take a row each.
    var ends = T.lanes.map(function () { return [[], [], []]; }), slot = {};
    T.bars.map(function (b, i) { return i; }).sort(function (a, c) { return T.bars[a][3] - T.bars[c][3]; }).forEach(function (i) {
      var b = T.bars[i], taken = ends[b[1]][b[2]], k = 0;
      while (k < taken.length && taken[k] > b[3] + 1e-6) k++;
      taken[k] = Math.max(b[4], b[3] + 0.002);  // (a bar is drawn at least 2px wide)
      slot[i] = k;
    });
    var rows = T.lanes.map(function (sid, li) {
      var rowsBox = el("div", { cls: "lane-rows" });
      var lane = el("div", { cls: "lane", "data-session": sid },
        el("div", { cls: "lane-label", title: (sessionLabel[sid] || sid) + ": click to show only its steps", text: sessionLabel[sid] || sid,
          onclick: function () { var f = document.getElementById("filter"); f.value = "session:" + (sid ? sid.slice(0, 8) : "main"); applyFilter(); } }), rowsBox);
      track.appendChild(lane);
      var r = [0, 1, 2].map(function (i) {
        var many = Math.max(1, ends[li][i].length), kind = [];
        for (var k = 0; k < many; k++) { var row = el("div", { cls: "tl-row", title: ROW_NAMES[i] }); rowsBox.appendChild(row); kind.push(row); }
        return kind;
      });
      T.breaks.forEach(function (b) {
        rowsBox.appendChild(el("div", { cls: "break", style: "left:" + b[0] * 100 + "%;width:3%" },
          el("span", { text: "‖ " + dur(b[1]) + " idle" })));
      });
      return r;
    });
    var frags = rows.map(function (r) { return r.map(function (kind) { return kind.map(function () { return document.createDocumentFragment(); }); }); });
    T.bars.forEach(function (b, i) {
      var s = byN[b[0]];
      var label = "step " + b[0] + " · " + (b[2] === 0 ? s.name + " (" + s.kind + ")" : b[2] === 1 ? s.name + " · model call"
        : s.name + " · tool call");
      frags[b[1]][b[2]][slot[i]].appendChild(el("div", { cls: "bar r" + b[2] + " st-" + b[5], "data-n": b[0], title: label,
        style: "left:" + (b[3] * 100) + "%;width:" + Math.max(0, (b[4] - b[3]) * 100) + "%" }));
    });
    T.marks.forEach(function (m) {
      var s = byN[m[0]];
      frags[m[1]][0][0].appendChild(el("div", { cls: "mark " + m[3], "data-n": m[0], title: "step " + m[0] + " · " + short(s.msg || s.name, 120),
        style: "left:" + (m[2] * 100) + "%" }));
    });
    rows.forEach(function (r, i) { r.forEach(function (kind, j) { kind.forEach(function (row, k) { row.appendChild(frags[i][j][k]); }); }); });
    var axis = el("div", { cls: "axis" }), ticks = [];
    for (var k = 0; k <= 5; k++) {
      var x = k / 5, text = "+" + dur(timeAt(T.segments, x)), prev = ticks[ticks.length - 1];
      if (prev && prev.text === text) continue;  // a squeezed idle gap: time barely moves there
      if (prev && k === 5 && ticks.length > 1 && x - prev.x < 0.15) ticks.pop();  // the end wins a close call
      ticks.push({ x: x, k: k, text: text });
    }
    ticks.forEach(function (t) {
      axis.appendChild(el("span", { style: "left:" + (t.x * 100) + "%" + (t.k === 0 ? ";transform:none" : t.k === 5 ? ";transform:translateX(-100%)" : ""),
        text: t.text }));
    });
    track.appendChild(axis);
    track.addEventListener("click", function (e) {
      var n = e.target.getAttribute && e.target.getAttribute("data-n");
      if (n) openStep(Number(n));
    });
  }
  function timeAt(segs, x) {
    for (var i = 0; i < segs.length; i++) {
      var s = segs[i];
      if (x <= s[1] || i === segs.length - 1) {
        var f = s[1] > s[0] ? Math.min(1, Math.max(0, (x - s[0]) / (s[1] - s[0]))) : 0;
        return s[2] + f * (s[3] - s[2]);
      }
    }
    return 0;
  }

  // ---- steps ----
  // Glyphs every system font has (the pause and stop symbols of Unicode's media block often are not).
  var ICON = { awaiting_human: "‖", human_decision: "✔", resumed: "↻", warning: "⚠", error: "✗", interrupted: "■" };
  var NOT_PROBLEMS = { awaiting_human: 1, human_decision: 1, resumed: 1 };
  function isProblem(s) {
    return (s.status !== "info" && !(s.type === "event" && NOT_PROBLEMS[s.name])) ||
      s.tools.some(function (c) { return c.outcome && c.outcome !== "SUCCESS"; });
  }
  function llmMeta(call) {
    if (call.error) return (call.rail ? "rail " + call.rail + " · " : "") + "✗ " + call.model + " attempt " +
      (call.attempt || 1) + " failed after " + dur(call.latency_ms);
    return (call.rail ? "rail " + call.rail + " · " : "") + call.model + " · " + int(call.tokens_in) + "→" + int(call.tokens_out) + " tokens · " + money(call.cost) +
      " · " + dur(call.latency_ms) + (call.route ? " · chosen by " + call.route : "");
  }
  function head(s) {
    var h = el("div", { cls: "head", tabindex: "0", role: "button", "aria-expanded": "false" },
      el("span", { cls: "num", text: String(s.n) }), el("span", { cls: "caret", text: "▸" }));
    if (s.type === "node") {
      h.appendChild(el("span", { cls: "title", text: s.name }));
      var visit = /visit (\d+)/.exec(s.msg);
      h.appendChild(el("span", { cls: "meta", text: s.kind + (s.agent ? " · " + s.agent : "") + (visit ? " · visit " + visit[1] : "") +
        (s.done ? " · " + dur(s.ms) : " · did not finish") + (s.session ? " · " + (sessionLabel[s.session] || s.session) : "") }));
      s.llm.forEach(function (c) { h.appendChild(el("span", { cls: "meta", text: "· " + llmMeta(c) })); });
      var rest = s.msg.split(" · ").filter(function (p) { return p && !/^visit \d+$/.test(p) && p !== "did not finish"; }).join(" · ");
      if (rest) h.appendChild(el("span", { cls: "preview", text: rest }));
    } else if (s.type === "turn") {
      h.appendChild(el("span", { cls: "title", text: "turn " + s.it }));
      if (s.session) h.appendChild(el("span", { cls: "sess", title: "sub-agent session " + s.session, text: sessionLabel[s.session] || s.session }));
      // the turn's answer: after any failed attempts, before any guardrail judge's call
      var answer = s.llm.filter(function (c) { return !c.error && !c.rail; })[0] || s.llm[0];
      var failedN = s.llm.filter(function (c) { return c.error && !c.rail; }).length;
      if (answer) h.appendChild(el("span", { cls: "meta", text: llmMeta(answer) + (failedN ? " · after " + failedN + " failed" : "") }));
      var reply = answer ? replyOf(answer) : null;
      var chips = el("span", null);
      s.tools.forEach(function (c) { chips.appendChild(el("span", { cls: "chip o-" + (c.outcome || "none"), text: c.name })); });
      h.appendChild(chips);
      h.appendChild(el("span", { cls: "preview", text: short(reply && reply.t, 200) || s.msg }));
    } else {
      h.appendChild(el("span", { cls: "title", text: (ICON[s.name] || "•") + " " + short(s.msg || s.name, 240) }));
      s.llm.forEach(function (c) { h.appendChild(el("span", { cls: "meta", text: llmMeta(c) })); });
    }
    if (s.status === "error") h.appendChild(el("span", { cls: "badge o-ERROR", text: "error" }));
    else if (s.status === "warning" && s.type !== "event") h.appendChild(el("span", { cls: "badge o-FAILURE", text: "warning" }));
    return h;
  }

  function promptOf(entryId, agent) {
    var chain = [], seen = {}, e = D.entries[entryId], id = e && e.p;
    while (id && D.entries[id] && !seen[id]) { seen[id] = 1; chain.push(id); id = D.entries[id].p; }
    chain.reverse();
    var box = el("div");
    if (D.system[agent] !== undefined) box.appendChild(message({ role: "system", t: D.system[agent], name: agent }));
    chain.forEach(function (cid) { box.appendChild(message(D.entries[cid], cid)); });
    return box;
  }
  function message(e, id) {
    var who = el("div", { cls: "who" }, e.role + (e.name ? " · " + e.name : "") + (e.node ? " · node " + e.node : "") +
      (e.turn ? " · turn " + e.turn : ""));
    if (e.step) { who.appendChild(document.createTextNode(" · ")); who.appendChild(stepLink(e.step)); }
    var box = el("div", { cls: "msg r-" + e.role, "data-entry": id || "" }, who);
    if (e.t !== undefined && (e.t !== "" || !e.calls)) box.appendChild(textBlock(e, e.step));
    (e.calls || []).forEach(function (c) {
      box.appendChild(el("div", { cls: "muted mono", text: "→ " + c.name + " " + short(c.args && c.args.t, 300) }));
    });
    return box;
  }
  function stepLink(n) {
    return el("a", { cls: "step-link", text: "step " + n, href: "#step-" + n, onclick: function (ev) { ev.preventDefault(); openStep(n); } });
  }
  function toolCall(c, n) {
    var box = el("div", { cls: "call" });
    box.appendChild(el("div", { cls: "call-head" }, el("b", { cls: "mono", text: c.name }),
      el("span", { cls: "o-" + (c.outcome || "none"), text: c.outcome || "no result" }),
      el("span", { cls: "muted", text: dur(c.ms) + (c.id ? " · id " + c.id : "") })));
    if (c.requested) box.appendChild(el("div", { cls: "elided", text: "fallback for " + c.requested }));
    var sub = c.id ? sessionByCall[c.id] : null;
    if (sub) box.appendChild(el("div", { cls: "muted session-note" }, "worked in session " + sub.label +
      (sub.status ? " (" + sub.status + ")" : "") + (sub.first ? " from " : ""), sub.first ? stepLink(sub.first) : null));
    box.appendChild(section("arguments", textBlock(pretty(c.args), n)));
    if (c.error) box.appendChild(section("error", textBlock({ t: c.error }, n), "o-ERROR"));
    var r = resultOf(c);
    if (r) box.appendChild(section("result", textBlock(r, n)));
    if (c.artifact) box.appendChild(el("div", { cls: "muted" }, "full output: ", el("code", { text: c.artifact.path }),
      c.artifact.exists ? " (" + int(c.artifact.bytes) + " bytes)" : " (missing)"));
    return box;
  }
  function modelCall(c, n, agent, withPrompt) {
    var box = el("div");
    box.appendChild(el("div", { cls: "muted" }, [(c.rail ? "rail " + c.rail + " · " : "") + (c.error ? "failed attempt · " : "") +
      c.model + (c.provider ? " (" + c.provider + ")" : ""), c.attempt ? "attempt " + c.attempt : "",
      int(c.tokens_in) + " tokens in", int(c.tokens_out) + " out", money(c.cost), dur(c.latency_ms),
      c.stop_reason ? "stop: " + c.stop_reason : "", c.route ? "chosen by " + c.route : ""].filter(Boolean).join(" · ")));
    if (c.error) box.appendChild(el("div", { cls: "o-ERROR", text: c.error }));
    if (withPrompt && c.entry) {
      var det = el("details", { cls: "prompt section" }, el("summary", { text: "Prompt: the system prompt and the conversation the model was sent" }));
      det.addEventListener("toggle", function () {
        if (det.open && det.childNodes.length === 1) det.appendChild(promptOf(c.entry, agent));
      });
      box.appendChild(det);
    }
    var reply = replyOf(c);
    if (reply) box.appendChild(section("Reply", textBlock(reply, n)));
    return box;
  }
  function body(s) {
    var b = el("div", { cls: "body" });
    b.appendChild(el("div", { cls: "muted" }, when(s.ts) + (s.node ? " · node " + s.node : "") + (s.agent ? " · agent " + s.agent : "") +
      " · ", el("code", { text: stepCmd(s.n) }), " shows this step in a terminal"));
    var sess = s.session ? sessionOf[s.session] : null;
    if (sess) b.appendChild(el("div", { cls: "muted session-note" }, "in session " + sess.label + (sess.kind ? " (" + sess.kind + ")" : "") +
      (sess.opened_by ? ", opened by " : ""), sess.opened_by ? stepLink(sess.opened_by) : null));
    if (s.type !== "turn" && s.msg) b.appendChild(section("What happened", el("div", { text: s.msg })));
    s.llm.forEach(function (c) { b.appendChild(section("Model call", modelCall(c, s.n, s.agent, s.type === "turn"))); });
    if (s.tools.length) {
      var calls = el("div");
      s.tools.forEach(function (c) { calls.appendChild(toolCall(c, s.n)); });
      b.appendChild(section("Tool calls (" + s.tools.length + ")", calls));
    }
    if (s.output) b.appendChild(section(s.kind === "reflection" ? "Output judged" : "Output", textBlock(s.output, s.n)));
    if (s.event && Object.keys(s.event).length) {
      var pairs = Object.keys(s.event).map(function (k) {
        var v = s.event[k]; return [k, typeof v === "string" ? v : JSON.stringify(v)];
      });
      b.appendChild(section("Details", kv(pairs)));
    }
    if (s.type === "node") {
      var inside = D.steps.filter(function (x) { return x.parent === s.n; }).length;
      if (inside) b.appendChild(el("div", { cls: "muted", text: plural(inside, "step") + " inside" }));
    }
    return b;
  }
  function toggle(row, open) {
    var s = byN[row.getAttribute("data-n")];
    var want = open === undefined ? !row.classList.contains("open") : open;
    if (want && !row._body) { row._body = body(s); row.appendChild(row._body); }
    row.classList.toggle("open", want);
    row.firstChild.setAttribute("aria-expanded", want ? "true" : "false");
  }
  var rows = {};
  function steps() {
    var box = document.getElementById("steps"), frag = document.createDocumentFragment();
    D.steps.forEach(function (s) {
      var depth = s.session && sessionOf[s.session] ? Math.min(4, sessionOf[s.session].depth || 1) : 0;
      var row = el("div", { cls: "step t-" + s.type + " st-" + s.status + (s.parent ? " child" : "") + (s.type === "event" ? " ev-" + s.name : "") +
        (depth ? " sub d" + depth : ""), id: "step-" + s.n, "data-n": s.n, "data-session": s.session || null });
      row.appendChild(head(s));
      rows[s.n] = row;
      var reply = s.llm.length ? replyOf(s.llm[0]) : null;
      s._text = [s.name, s.kind, s.agent, s.node, s.msg, sessionLabel[s.session] || "", reply ? String(reply.t).slice(0, 400) : ""]
        .concat(s.tools.map(function (c) { return c.name; })).concat(s.llm.map(function (c) { return c.model; }))
        .join(" ").toLowerCase();
      frag.appendChild(row);
    });
    if (!D.steps.length) frag.appendChild(el("div", { cls: "muted", text: "No steps recorded yet." }));
    box.appendChild(frag);
    box.addEventListener("click", function (e) {
      var h = e.target.closest && e.target.closest(".head");
      if (h && box.contains(h)) toggle(h.parentNode);
    });
    box.addEventListener("keydown", function (e) {
      if ((e.key === "Enter" || e.key === " ") && e.target.classList.contains("head")) { e.preventDefault(); toggle(e.target.parentNode); }
    });
  }
  function toolbar() {
    var bar = document.getElementById("toolbar");
    var search = el("input", { type: "search", id: "filter", placeholder: "filter steps: text, node:NAME, session:ID, agent, tool, model…" });
    search.addEventListener("input", applyFilter);
    var problems = el("input", { type: "checkbox", id: "problems" });
    problems.addEventListener("change", applyFilter);
    bar.appendChild(search);
    bar.appendChild(el("label", null, problems, " problems only"));
    bar.appendChild(el("button", { text: "expand shown", onclick: function () { eachShown(function (r) { toggle(r, true); }); } }));
    bar.appendChild(el("button", { text: "collapse all", onclick: function () { Object.keys(rows).forEach(function (n) { toggle(rows[n], false); }); } }));
    bar.appendChild(el("span", { cls: "muted", id: "shown" }));
  }
  function eachShown(fn) { Object.keys(rows).forEach(function (n) { if (!rows[n].classList.contains("hidden")) fn(rows[n]); }); }
  function applyFilter() {
    var q = document.getElementById("filter").value.trim().toLowerCase();
    var onlyProblems = document.getElementById("problems").checked;
    var node = null, m = /(^|\s)node:(\S+)/.exec(q);
    if (m) { node = m[2]; q = q.replace(m[0], " ").trim(); }
    var session = null, sm = /(^|\s)session:(\S+)/.exec(q);
    if (sm) { session = sm[2]; q = q.replace(sm[0], " ").trim(); }
    var keep = {}, count = 0;
    D.steps.forEach(function (s) {
      var inSession = session === null || (session === "main" ? !s.session : !!s.session && s.session.indexOf(session) === 0);
      var ok = (!q || s._text.indexOf(q) >= 0) && (!onlyProblems || isProblem(s)) && (!node || String(s.node).toLowerCase() === node) && inSession;
      if (ok) { keep[s.n] = 1; if (s.parent) keep[s.parent] = keep[s.parent] || 2; }
    });
    D.steps.forEach(function (s) { var show = !!keep[s.n]; if (show) count++; rows[s.n].classList.toggle("hidden", !show); });
    document.getElementById("shown").textContent = (q || onlyProblems || node || session !== null) ? "showing " + int(count) + " of " + int(D.steps.length) : "";
    document.querySelectorAll("svg.graph .node").forEach(function (g) { g.classList.toggle("selected", g.getAttribute("data-node") === node); });
  }
  function openStep(n) {
    var row = rows[n];
    if (!row) return;
    if (row.classList.contains("hidden")) { document.getElementById("filter").value = ""; document.getElementById("problems").checked = false; applyFilter(); }
    toggle(row, true);
    row.scrollIntoView({ block: "center" });
    row.classList.add("flash");
    setTimeout(function () { row.classList.remove("flash"); }, 1200);
    if (history.replaceState) history.replaceState(null, "", "#step-" + n);
  }
  function graph() {
    document.querySelectorAll("svg.graph .node[data-node]").forEach(function (g) {
      function pick() {
        var f = document.getElementById("filter"), name = g.getAttribute("data-node"), token = "node:" + name;
        f.value = f.value.indexOf(token) >= 0 ? "" : token;
        applyFilter();
        document.getElementById("steps-section").scrollIntoView();
      }
      g.addEventListener("click", pick);
      g.addEventListener("keydown", function (e) { if (e.key === "Enter") pick(); });
    });
  }

  // ---- conversation ----
  function conversation() {
    var det = document.getElementById("conversation"), box = document.getElementById("messages");
    var ids = Object.keys(D.entries);
    det.querySelector("summary").textContent = "Conversation (" + plural(ids.length, "message") +
      (D.sessions.length > 1 ? " in " + D.sessions.length + " sessions" : "") + ")";
    det.addEventListener("toggle", function () {
      if (!det.open || box.childNodes.length) return;
      var bySession = {};
      ids.forEach(function (id) { var s = D.entries[id].session || ""; (bySession[s] = bySession[s] || []).push(id); });
      D.sessions.forEach(function (sess) {
        var list = bySession[sess.id];
        if (!list) return;
        if (D.sessions.length > 1) box.appendChild(el("div", { cls: "session-head", text: "Session " + sess.label + (sess.status ? " · " + sess.status : "") }));
        var frag = document.createDocumentFragment();
        list.forEach(function (id) { frag.appendChild(message(D.entries[id], id)); });
        box.appendChild(frag);
      });
    });
  }

  header();
  totals();
  timeline();
  toolbar();
  steps();
  graph();
  conversation();
  var m = /^#step-(\d+)$/.exec(location.hash);
  if (m) openStep(Number(m[1]));
  document.body.setAttribute("data-ready", String(Math.round(performance.now())));  // ms to draw: tests wait on it
})();

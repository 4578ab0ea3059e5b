"""The workflow graph as inline SVG for the HTML report (no library, nothing fetched): layers by
distance from the entry, back edges curving round the right, ``data-node`` on each box."""

from __future__ import annotations

from collections import deque
from html import escape
from typing import Any

from magent.vocabulary import short

BOX_W, BOX_H = 168, 50
"""The narrowest box; a box is as wide as the longest subtitle of the graph needs."""
DETAIL_CHAR_W = 6.4
"""Width of a character of a node's subtitle (11px sans-serif) with room to spare."""
GAP_X, GAP_Y = 36, 64
MARGIN = 24
LOOP_SPACE = 90
"""Room on the right for edges that go back up."""


def _below(node: dict[str, Any]) -> str:
    """A node's subtitle: its kind and detail, whole (the box grows to fit it)."""
    return " ".join(" · ".join(str(p) for p in (node.get("kind"), node.get("detail")) if p).split())


def _edges(spec: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    out = []
    for edge in spec.get("edges") or []:
        targets = edge.get("to")
        for target in targets if isinstance(targets, list) else [targets]:
            out.append((str(edge.get("from")), str(target), edge.get("condition")))
    names = {n["name"] for n in spec.get("nodes") or []}
    for name in names:  # a node with no edges ends the run
        if not any(src == name for src, _, _ in out):
            out.append((name, "END", None))
    return out


def _layers(spec: dict[str, Any], edges: list[tuple[str, str, str | None]]) -> dict[str, int]:
    names = [n["name"] for n in spec.get("nodes") or []]
    layer: dict[str, int] = {}
    entry = spec.get("entry_point")
    if entry in names:
        layer[entry] = 0
        todo = deque([entry])
        while todo:
            name = todo.popleft()
            for src, dst, _ in edges:
                if src == name and dst in names and dst not in layer:
                    layer[dst] = layer[name] + 1
                    todo.append(dst)
    deepest = max(layer.values(), default=-1)
    for name in names:  # unreachable (validation refuses these; drawn anyway)
        if name not in layer:
            deepest += 1
            layer[name] = deepest
    if any(dst == "END" for _, dst, _ in edges):
        layer["END"] = max(layer.values(), default=-1) + 1
    return layer


def graph_svg(spec: dict[str, Any] | None, visits: dict[str, int] | None = None) -> str:
    """An ``<svg>`` drawing of ``spec`` (``diagram.describe``'s form); empty when there is none."""
    if not spec or not spec.get("nodes"):
        return ""
    visits = visits or {}
    nodes = {n["name"]: n for n in spec["nodes"]}
    edges = _edges(spec)
    layer = _layers(spec, edges)
    rows: dict[int, list[str]] = {}
    for name, depth in sorted(layer.items(), key=lambda kv: kv[1]):
        rows.setdefault(depth, []).append(name)
    widest = max(len(r) for r in rows.values())
    belows = {name: _below(node) for name, node in nodes.items()}
    box_w = max([BOX_W, *(20 + DETAIL_CHAR_W * len(b) for b in belows.values())])
    conditional = {src for src, _, condition in edges if condition}
    back = [condition or ("otherwise" if src in conditional else "") for src, dst, condition in edges
            if src in layer and dst in layer and layer[dst] <= layer[src]]
    label_room = max((DETAIL_CHAR_W * len(short(label, 30)) for label in back), default=0)  # right of the loops
    width = MARGIN * 2 + widest * box_w + (widest - 1) * GAP_X + LOOP_SPACE + label_room
    height = MARGIN * 2 + 18 + len(rows) * BOX_H + (len(rows) - 1) * GAP_Y
    pos: dict[str, tuple[float, float]] = {}
    inner = width - LOOP_SPACE - label_room
    for depth, names in rows.items():
        row_w = len(names) * box_w + (len(names) - 1) * GAP_X
        x0 = (inner - row_w) / 2
        for i, name in enumerate(names):
            pos[name] = (x0 + i * (box_w + GAP_X), MARGIN + 18 + depth * (BOX_H + GAP_Y))
    left = 0.0  # where the leftmost edge label begins (below 0: the drawing moves right to show it)
    out = ['<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>']
    entry = spec.get("entry_point")
    if entry in pos:
        ex, ey = pos[entry]
        out.append(f'<circle class="start" cx="{ex + box_w / 2:.0f}" cy="{ey - 26:.0f}" r="6"/>'
                   f'<line class="edge" x1="{ex + box_w / 2:.0f}" y1="{ey - 20:.0f}" x2="{ex + box_w / 2:.0f}" '
                   f'y2="{ey - 2:.0f}" marker-end="url(#arrow)"/>')
    loop = 0
    for src, dst, condition in edges:
        if src not in pos or dst not in pos:
            continue
        sx, sy = pos[src]
        dx, dy = pos[dst]
        label = condition or ("otherwise" if src in conditional else "")
        if layer[dst] > layer[src]:
            x1, y1, x2, y2 = sx + box_w / 2, sy + BOX_H, dx + box_w / 2, dy
            path = f"M{x1:.0f},{y1:.0f} L{x2:.0f},{y2:.0f}"
            # beside the line, not on it: to the right of an edge that goes down or right, else left
            lx, ly, anchor = (x1 + x2) / 2 + (8 if x2 >= x1 else -8), (y1 + y2) / 2, "start" if x2 >= x1 else "end"
        else:  # back up (or sideways): round the right-hand side
            loop += 1
            reach = inner - MARGIN + 14 * loop
            x1, y1, x2, y2 = sx + box_w, sy + BOX_H / 2 + 6, dx + box_w, dy + BOX_H / 2 - 6
            path = (f"M{x1:.0f},{y1:.0f} C{reach:.0f},{y1:.0f} {reach:.0f},{y2:.0f} {x2:.0f},{y2:.0f}")
            lx, ly, anchor = reach + 6, (y1 + y2) / 2, "start"
        cls = "edge" + (" cond" if condition else "")
        out.append(f'<path class="{cls}" d="{path}" marker-end="url(#arrow)"><title>{escape(src)} → {escape(dst)}'
                   f'{escape(": " + condition) if condition else ""}</title></path>')
        if label:
            if anchor == "end":
                left = min(left, lx - DETAIL_CHAR_W * len(short(label, 30)) - 4)
            out.append(f'<text class="edge-label" x="{lx:.0f}" y="{ly:.0f}" text-anchor="{anchor}">'
                       f'{escape(short(label, 30))}</text>')
    for name, (x, y) in pos.items():
        if name == "END":
            out.append(f'<g class="node end"><rect x="{x + box_w / 2 - 34:.0f}" y="{y + 8:.0f}" width="68" '
                       f'height="{BOX_H - 16}" rx="17"/><text x="{x + box_w / 2:.0f}" y="{y + BOX_H / 2 + 4:.0f}" '
                       'text-anchor="middle">END</text></g>')
            continue
        node = nodes[name]
        kind = str(node.get("kind") or "")
        seen = visits.get(name, 0)
        classes = f"node k-{escape(kind)}" + (" gate" if node.get("approval_gate") else "") + \
            ("" if seen else " unvisited")
        below = belows[name]
        out.append(f'<g class="{classes}" data-node="{escape(name)}" tabindex="0">'
                   f'<title>{escape(name)} ({escape(kind)}){escape(": " + node["detail"]) if node.get("detail") else ""}'
                   f'{" · approval gate" if node.get("approval_gate") else ""} · visited {seen}×</title>'
                   f'<rect x="{x:.0f}" y="{y:.0f}" width="{box_w}" height="{BOX_H}" rx="8"/>'
                   f'<text class="name" x="{x + 10:.0f}" y="{y + 20:.0f}">{escape(short(name, 18))}</text>'
                   f'<text class="detail" x="{x + 10:.0f}" y="{y + 38:.0f}">{escape(below)}</text>')
        if seen:
            out.append(f'<text class="visits" x="{x + box_w - 10:.0f}" y="{y + 20:.0f}" text-anchor="end">'
                       f'×{seen}</text>')
        out.append("</g>")
    shift = -left
    return (f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width + shift:.0f} {height:.0f}" '
            f'width="{width + shift:.0f}" height="{height:.0f}" role="img" aria-label="workflow graph">'
            f'<g transform="translate({shift:.0f},0)">' + "".join(out) + "</g></svg>")

"""Drawing IR graphs: DOT text, a self-contained SVG, and an interactive HTML page.

Everything is computed in Python (`tools.viz_layout` does a layered layout);
Graphviz is never required. When `dot` happens to be installed,
`render_with_graphviz` can turn `to_dot` output into any Graphviz format.

Nodes are coloured by the **kernel** they are fused into when kernel
information is available (from a compiled `Executable`, or from the codegen
scheduler), otherwise by **op family** (elementwise, layout, reduction, ...).
Edges are labelled with the shape and element type of the value they carry.

>>> import tensorplay as tp
>>> from tensorplay.tools.viz import graph_to_svg
>>> g = tp.make_graph(lambda x: tp.sin(x).sum(), tp.ones(3)).graph
>>> svg = graph_to_svg(g, kernels=None)
>>> svg.startswith("<svg") and svg.count('class="node op"')
2
"""
from __future__ import annotations

import html
import itertools
import json
import os
import shutil
import subprocess
from typing import Any, Iterable, Mapping

from tensorplay.ir.core import Graph, Node
from tensorplay.ir.nx import to_networkx

from .viz_layout import layered_layout

__all__ = ["to_networkx", "to_dot", "graph_to_svg", "graph_to_html", "write_graph", "op_family",
           "kernel_map", "render_with_graphviz", "FAMILY_COLOURS", "KERNEL_COLOURS", "DEAD"]

# ColorBrewer Set3 (12 pastel colours) and a few extra, cycled for kernels.
KERNEL_COLOURS = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                  "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#fdbf6f", "#cab2d6", "#b2df8a"]
FAMILY_COLOURS = {
    "input": "#ffffff", "output": "#eeeeee",
    "elementwise": "#cfe2f3", "compare": "#d0e0e3", "logical": "#c9daf8", "layout": "#fff2cc", "indexing": "#fce5cd",
    "reduction": "#f4cccc", "contraction": "#d9d2e9", "random": "#ead1dc", "constant": "#e6e6e6",
    "other": "#d9ead3",
}
DEAD = "(not computed)"  # legend entry for nodes in no kernel: dead code the backend eliminates
FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
CHAR_W = 7.3   # width of one character at 12px in the monospace stack above
SMALL_CHAR_W = 6.1
_uids = itertools.count()


# ----------------------------------------------------------------------------------------------
# What colour is a node?
# ----------------------------------------------------------------------------------------------
def op_family(prim_name: str) -> str:
    """The family of primitive `prim_name`, for colouring: ``elementwise``, ``layout``, ``reduction``, ...

    Each primitive declares its family (`Primitive.family`); unknown names are ``other``.
    """
    from tensorplay.ir.primitive import REGISTRY

    prim = REGISTRY.get(prim_name)
    return "other" if prim is None or prim.family is None else prim.family


def _kernel_entries(kernels: Any) -> Iterable[tuple[str, list]]:
    if isinstance(kernels, Mapping):
        yield from kernels.items()
        return
    for i, k in enumerate(kernels):
        if isinstance(k, Mapping):
            yield k.get("name", f"k{i}"), list(k.get("nodes", ()))
        elif isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], str):
            yield k[0], list(k[1])
        else:
            yield getattr(k, "name", f"k{i}"), list(getattr(k, "nodes", ()))


def kernel_map(graph: Graph, kernels: Any) -> dict[Node, str]:
    """Normalise kernel information to ``{node: kernel name}``.

    `kernels` may be an `Executable` (its ``.kernels`` are used), a list of
    kernel objects with ``name`` and ``nodes``, a list of ``{"name", "nodes"}``
    dicts or ``(name, nodes)`` pairs, or a ``{name: nodes}`` mapping. A
    kernel's nodes may be `ir.Node` objects, node indices or SSA names
    (``"%3"``). Nodes that cannot be matched are left out.
    """
    if kernels is None:
        return {}
    if hasattr(kernels, "kernels") and not isinstance(kernels, (list, tuple, Mapping)):
        entries = kernels.kernels
        if any(isinstance(k, Mapping) and "node_indices" not in k for k in entries):
            # Executable.kernels names each kernel's nodes by primitive only: re-run the
            # (deterministic) scheduler on this graph to know exactly which node went where
            return _auto_kernels(graph) or {}
        kernels = [{"name": k["name"], "nodes": list(k["node_indices"])} if isinstance(k, Mapping) else k
                   for k in entries]
    by_index = dict(enumerate(graph.nodes))
    by_name = {f"%{i}": n for i, n in by_index.items()}
    node_ids = {id(n): n for n in graph.nodes}
    out: dict[Node, str] = {}
    for name, nodes in _kernel_entries(kernels):
        for item in nodes:
            node = None
            if isinstance(item, Node):
                node = node_ids.get(id(item))
            elif isinstance(item, int):
                node = by_index.get(item)
            elif isinstance(item, str):
                node = by_name.get(item)
            if node is not None:
                out.setdefault(node, str(name))
    return out


def _auto_kernels(graph: Graph) -> dict[Node, str]:
    """Kernel groups from the codegen scheduler (no LLVM compilation), or {} if unavailable."""
    try:
        from tensorplay.codegen.schedule import schedule
    except Exception:  # noqa: BLE001 - codegen is optional for drawing
        return {}
    try:
        return kernel_map(graph, schedule(graph))
    except Exception:  # noqa: BLE001 - e.g. a primitive without a lowering: fall back to families
        return {}


def _colouring(graph: Graph, kernels: Any) -> tuple[dict[Node, str], dict[str, str], str]:
    """(node -> legend key, legend key -> colour, mode) where mode is 'kernel' or 'family'."""
    kmap = _auto_kernels(graph) if isinstance(kernels, str) and kernels == "auto" else kernel_map(graph, kernels)
    if kmap:
        names: list[str] = []
        for n in graph.nodes:
            k = kmap.get(n)
            if k is not None and k not in names:
                names.append(k)
        colours = {k: KERNEL_COLOURS[i % len(KERNEL_COLOURS)] for i, k in enumerate(names)}
        groups = {n: kmap.get(n, DEAD) for n in graph.nodes}
        if DEAD in groups.values():  # nodes the backend drops because no output needs them
            colours[DEAD] = "#ffffff"
        return groups, colours, "kernel"
    fam = {n: op_family(n.prim.name) for n in graph.nodes}
    used = sorted(set(fam.values()))
    return fam, {f: FAMILY_COLOURS.get(f, FAMILY_COLOURS["other"]) for f in used}, "family"


# ----------------------------------------------------------------------------------------------
# DOT
# ----------------------------------------------------------------------------------------------
def _dot_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, *, kernels: Any = "auto", clusters: bool = True, title: str | None = None) -> str:
    """Graphviz DOT text for `graph`.

    Nodes are filled with their kernel's (or op family's) colour; with kernel
    information and ``clusters=True`` each kernel becomes a dashed cluster.
    Edges carry the shape of their value as a label. `kernels` is as for
    `kernel_map`, ``"auto"`` (ask the codegen scheduler) or None (families).
    """
    G = to_networkx(graph)
    groups, colours, mode = _colouring(graph, kernels)
    lines = [f"digraph {_dot_str(graph.name)} {{",
             f"  label={_dot_str(title or '@' + graph.name)}; labelloc=t; rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=11];',
             '  edge [fontname="monospace", fontsize=9, color="#555555"];']

    def node_line(vid: str, indent: str = "  ") -> str:
        d = G.nodes[vid]
        if d["kind"] == "op":
            colour = colours.get(groups.get(d["node"]), FAMILY_COLOURS["other"])
            label = f"{d['op']}\n{vid}"
            style = ', style="rounded,filled,dashed"' if groups.get(d["node"]) == DEAD else ""
            return (f"{indent}{_dot_str(vid)} [label={_dot_str(label)}, fillcolor={_dot_str(colour)}{style}, "
                    f"tooltip={_dot_str(d['text'])}];")
        shape = "ellipse" if d["kind"] == "input" else "box"
        label = f"{d['label']}\n{d['type']}" if d["kind"] == "input" else d["label"]
        return (f"{indent}{_dot_str(vid)} [label={_dot_str(label)}, shape={shape}, "
                f"fillcolor={_dot_str(FAMILY_COLOURS[d['kind']] if d['kind'] in FAMILY_COLOURS else '#ffffff')}];")

    clustered: set[str] = set()
    if mode == "kernel" and clusters:
        for i, (k, colour) in enumerate(colours.items()):
            if k == DEAD:
                continue
            members = [vid for vid, d in G.nodes(data=True) if d["kind"] == "op" and groups.get(d["node"]) == k]
            lines.append(f"  subgraph cluster_{i} {{")
            lines.append(f'    label={_dot_str(k)}; style="dashed,rounded"; color="#888888"; fontname="monospace";')
            lines.extend(node_line(vid, "    ") for vid in members)
            lines.append("  }")
            clustered.update(members)
    lines.extend(node_line(vid) for vid in G.nodes if vid not in clustered)
    for u, v, k, d in G.edges(keys=True, data=True):
        lines.append(f"  {_dot_str(u)} -> {_dot_str(v)} [label={_dot_str(d['shape'])}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_with_graphviz(dot_text: str, fmt: str = "svg") -> bytes:
    """Run Graphviz's `dot -T<fmt>` on `dot_text` (optional: raises RuntimeError if `dot` is missing)."""
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError("Graphviz 'dot' is not installed; use graph_to_svg for a drawing without it")
    proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


# ----------------------------------------------------------------------------------------------
# SVG
# ----------------------------------------------------------------------------------------------
def _esc(s: str) -> str:
    return html.escape(str(s), quote=True)


def _node_size(d: dict) -> tuple[float, float]:
    if d["kind"] == "op":
        main, sub = d["op"], _sub_label(d)
        return max(len(main) * CHAR_W, len(sub) * SMALL_CHAR_W) + 20, 36.0
    if d["kind"] == "input":
        return max(len(d["label"]) * CHAR_W, len(str(d["type"])) * SMALL_CHAR_W) + 28, 36.0
    return len(d["label"]) * CHAR_W + 24, 26.0


def _sub_label(d: dict) -> str:
    return d["vid"] if "vid" in d else ""


def _path(points: list[tuple[float, float]]) -> str:
    """A smooth vertical spline through `points` (cubic segments with vertical tangents)."""
    (x0, y0), rest = points[0], points[1:]
    parts = [f"M{x0:.1f},{y0:.1f}"]
    px, py = x0, y0
    for x, y in rest:
        my = (py + y) / 2
        parts.append(f"C{px:.1f},{my:.1f} {x:.1f},{my:.1f} {x:.1f},{y:.1f}")
        px, py = x, y
    return " ".join(parts)


def _bezier(p: tuple[float, float], q: tuple[float, float], t: float) -> tuple[float, float]:
    """Point at `t` of the segment p -> q as `_path` draws it (vertical tangents at both ends)."""
    (px, py), (x, y) = p, q
    my = (py + y) / 2
    u = 1 - t
    bx = u ** 3 * px + 3 * u * u * t * px + 3 * u * t * t * x + t ** 3 * x
    by = u ** 3 * py + 3 * u * u * t * my + 3 * u * t * t * my + t ** 3 * y
    return bx, by


class _LabelPlacer:
    """Puts edge labels where they overlap neither nodes nor other labels (a greedy search along the edge)."""

    def __init__(self, boxes):
        self.taken = [(x, y, x + w, y + h) for x, y, w, h in boxes]

    def _free(self, r) -> bool:
        return all(r[2] <= a or r[0] >= c or r[3] <= b or r[1] >= d for a, b, c, d in self.taken)

    def place(self, points: list[tuple[float, float]], text: str) -> tuple[float, float] | None:
        w, h = len(text) * SMALL_CHAR_W + 4, 12.0
        segments = list(zip(points, points[1:]))[::-1]  # prefer the end near the consumer
        for p, q in segments:
            for t in (0.5, 0.35, 0.65, 0.2, 0.8):
                x, y = _bezier(p, q, t)
                for dx in (4.0, -w - 4.0):  # right of the edge, else left of it
                    r = (x + dx, y - h / 2, x + dx + w, y + h / 2)
                    if self._free(r):
                        self.taken.append(r)
                        return r[0] + w / 2, y
        return None


_SVG_STYLE = """
.tp-graph {{ font-family: {font}; }}
.tp-graph .node rect, .tp-graph .node ellipse {{ stroke: #444; stroke-width: 1; }}
.tp-graph .node.output rect {{ stroke-dasharray: 3 2; }}
.tp-graph .node text {{ font-size: 12px; fill: #111; text-anchor: middle; dominant-baseline: central; }}
.tp-graph .node text.sub {{ font-size: 10px; fill: #555; }}
.tp-graph .edge path {{ fill: none; stroke: #666; stroke-width: 1.1; }}
.tp-graph .edge text {{ font-size: 10px; fill: #333; text-anchor: middle; dominant-baseline: central;
  paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }}
.tp-graph .legend text {{ font-size: 11px; fill: #222; dominant-baseline: central; }}
.tp-graph .legend rect {{ stroke: #444; stroke-width: 0.8; }}
.tp-graph .title {{ font-size: 13px; font-weight: bold; fill: #222; }}
.tp-graph .dim {{ opacity: 0.2; }}
.tp-graph .hl rect, .tp-graph .hl ellipse {{ stroke: #d62728; stroke-width: 2.5; }}
.tp-graph .edge.hl path {{ stroke: #d62728; stroke-width: 2; }}
"""


def graph_to_svg(graph: Graph, *, kernels: Any = "auto", title: str | None = None, legend: bool = True,
                 uid: str | None = None) -> str:
    """A self-contained SVG drawing of `graph` (layered layout, no external program).

    Each op node is a ``<g class="node op">`` element whose ``<title>`` is
    its IR line; inputs and outputs are ``node input`` / ``node output``.
    Fill colours follow the kernel a node is fused into (``kernels``: an
    `Executable`, kernel list, ``"auto"`` to ask the codegen scheduler, or
    None) and otherwise the op family; a legend lists them.
    """
    uid = uid or f"tpg{next(_uids)}"
    G = to_networkx(graph)
    for vid, d in G.nodes(data=True):
        d["vid"] = vid
    groups, colours, mode = _colouring(graph, kernels)
    layout = layered_layout(G, lambda v: _node_size(G.nodes[v]), pinned_top=lambda v: G.nodes[v]["kind"] == "input")

    head = 30.0
    legend_items = list(colours.items())
    legend_w = (max((len(k) for k, _ in legend_items), default=0) * 6.6 + 44) if legend and legend_items else 0.0
    width = max(layout.width + legend_w, 240.0)
    height = max(layout.height + head, head + 22 * len(legend_items) + 40 if legend else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="tp-graph" id="{_esc(uid)}" '
           f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.1f} {height:.1f}" '
           f'data-graph="{_esc(graph.name)}" data-colour-by="{mode}">',
           f"<style>{_SVG_STYLE.format(font=FONT)}</style>",
           f'<defs><marker id="{uid}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker></defs>',
           f'<rect width="100%" height="100%" fill="#ffffff"/>',
           f'<text class="title" x="12" y="19">{_esc(title or "@" + graph.name)}</text>',
           f'<g transform="translate(0,{head:.0f})">',
           '<g class="edges">']
    placer = _LabelPlacer(layout.boxes.values())
    labelled: set[tuple] = set()
    for (u, v, k), pts in layout.edges.items():
        d = G.edges[u, v, k]
        label = ""
        if (u, v) not in labelled:  # parallel edges (x * x) carry one label
            labelled.add((u, v))
            spot = placer.place(pts, d["shape"])
            if spot is None:  # no free spot: put it on the edge anyway, it is the value's type
                spot = _bezier(pts[-2], pts[-1], 0.5)
            label = f'<text x="{spot[0]:.1f}" y="{spot[1]:.1f}">{_esc(d["shape"])}</text>'
        out.append(f'<g class="edge" data-from="{_esc(u)}" data-to="{_esc(v)}">'
                   f'<title>{_esc(u)} \u2192 {_esc(v)}: {_esc(d["type"])}</title>'
                   f'<path d="{_path(pts)}" marker-end="url(#{uid}-arrow)"/>{label}</g>')
    out.append("</g>")
    out.append('<g class="nodes">')
    for vid, d in G.nodes(data=True):
        x, y, w, h = layout.boxes[vid]
        cx, cy = x + w / 2, y + h / 2
        kind = d["kind"]
        if kind == "op":
            group = groups.get(d["node"])
            fill = colours.get(group, FAMILY_COLOURS["other"])
            attrs = f' data-op="{_esc(d["op"])}" data-{mode}="{_esc(group or "")}"'
            dash = ' stroke-dasharray="4 3"' if group == DEAD else ""
            body = (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6" fill="{fill}"{dash}/>'
                    f'<text x="{cx:.1f}" y="{cy - 7:.1f}">{_esc(d["op"])}</text>'
                    f'<text class="sub" x="{cx:.1f}" y="{cy + 8:.1f}">{_esc(vid)}</text>')
        elif kind == "input":
            attrs = ""
            body = (f'<ellipse cx="{cx:.1f}" cy="{cy:.1f}" rx="{w / 2:.1f}" ry="{h / 2:.1f}" fill="#ffffff"/>'
                    f'<text x="{cx:.1f}" y="{cy - 7:.1f}">{_esc(d["label"])}</text>'
                    f'<text class="sub" x="{cx:.1f}" y="{cy + 8:.1f}">{_esc(d["type"])}</text>')
        else:
            attrs = ""
            body = (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="4" '
                    f'fill="{FAMILY_COLOURS["output"]}"/>'
                    f'<text x="{cx:.1f}" y="{cy:.1f}">{_esc(d["label"])}</text>')
        out.append(f'<g class="node {kind}" data-name="{_esc(vid)}"{attrs}><title>{_esc(d["text"])}</title>'
                   f"{body}</g>")
    out.append("</g>")
    if legend and legend_items:
        lx = layout.width + 8
        out.append(f'<g class="legend" transform="translate({lx:.1f},4)">')
        out.append(f'<text x="0" y="0">{"kernels" if mode == "kernel" else "op families"}</text>')
        for i, (key, colour) in enumerate(legend_items):
            y = 20 + 20 * i
            out.append(f'<rect x="0" y="{y - 7}" width="14" height="14" rx="3" fill="{colour}"/>'
                       f'<text x="20" y="{y}">{_esc(key)}</text>')
        out.append("</g>")
    out.append("</g></svg>")
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------
_HTML_STYLE = """
#{uid} {{ font-family: {font}; border: 1px solid #ddd; border-radius: 6px; margin: 4px 0; background: #fff; }}
#{uid} .tp-bar {{ display: flex; gap: 8px; align-items: center; padding: 4px 8px; border-bottom: 1px solid #eee;
  font-size: 12px; color: #333; flex-wrap: wrap; }}
#{uid} .tp-bar button {{ font: inherit; padding: 1px 8px; cursor: pointer; }}
#{uid} .tp-main {{ display: flex; max-height: 92vh; }}
#{uid} .tp-canvas {{ flex: 1 1 auto; overflow: hidden; cursor: grab; min-height: 200px; }}
#{uid} .tp-canvas svg {{ display: block; }}
#{uid} .tp-ir {{ flex: 0 1 auto; max-width: 40%; overflow: auto; margin: 0; padding: 6px 8px; font-size: 11px;
  border-left: 1px solid #eee; background: #fafafa; white-space: pre; }}
#{uid} .tp-ir span.hl {{ background: #ffe08a; }}
#{uid} .tp-ir span[data-name] {{ cursor: pointer; }}
#{uid} .tp-info {{ color: #666; }}
"""

_HTML_SCRIPT = r"""
(function () {
  var root = document.getElementById(%(uid)s);
  if (!root) { return; }
  var svg = root.querySelector('svg.tp-graph');
  var canvas = root.querySelector('.tp-canvas');
  var info = root.querySelector('.tp-info');
  var vb = svg.getAttribute('viewBox').split(' ').map(Number);
  var full = vb.slice();
  function apply() { svg.setAttribute('viewBox', vb.join(' ')); }
  function fit() {
    vb = full.slice();
    var w = Math.min(canvas.clientWidth || full[2], full[2] * 1.5);
    var maxH = Math.max(480, Math.min(1000, (window.innerHeight || 800) - 60));
    svg.setAttribute('width', String(w));
    svg.setAttribute('height', String(Math.min(maxH, full[3] * w / full[2])));
    apply();
  }
  function zoom(factor, cx, cy) {
    var nx = cx - (cx - vb[0]) * factor, ny = cy - (cy - vb[1]) * factor;
    vb = [nx, ny, vb[2] * factor, vb[3] * factor];
    apply();
  }
  function toSvg(ev) {
    var r = svg.getBoundingClientRect();
    return [vb[0] + (ev.clientX - r.left) / r.width * vb[2], vb[1] + (ev.clientY - r.top) / r.height * vb[3]];
  }
  canvas.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var p = toSvg(ev);
    zoom(ev.deltaY > 0 ? 1.15 : 1 / 1.15, p[0], p[1]);
  }, { passive: false });
  var drag = null;
  canvas.addEventListener('mousedown', function (ev) { drag = [ev.clientX, ev.clientY, vb[0], vb[1]]; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) { return; }
    var r = svg.getBoundingClientRect();
    vb[0] = drag[2] - (ev.clientX - drag[0]) / r.width * vb[2];
    vb[1] = drag[3] - (ev.clientY - drag[1]) / r.height * vb[3];
    apply();
  });
  var edges = Array.prototype.slice.call(svg.querySelectorAll('g.edge'));
  var nodes = Array.prototype.slice.call(svg.querySelectorAll('g.node'));
  var lines = Array.prototype.slice.call(root.querySelectorAll('.tp-ir span[data-name]'));
  function reach(start, forward) {
    var seen = {}; seen[start] = true;
    var todo = [start];
    while (todo.length) {
      var cur = todo.pop();
      edges.forEach(function (e) {
        var a = e.getAttribute(forward ? 'data-from' : 'data-to');
        var b = e.getAttribute(forward ? 'data-to' : 'data-from');
        if (a === cur && !seen[b]) { seen[b] = true; todo.push(b); }
      });
    }
    return seen;
  }
  function clear() {
    nodes.concat(edges).forEach(function (el) { el.classList.remove('hl'); el.classList.remove('dim'); });
    lines.forEach(function (el) { el.classList.remove('hl'); });
    info.textContent = '';
  }
  function select(name) {
    clear();
    if (!name) { return; }
    var up = reach(name, false), down = reach(name, true);
    nodes.forEach(function (el) {
      var n = el.getAttribute('data-name');
      if (n === name) { el.classList.add('hl'); }
      else if (!up[n] && !down[n]) { el.classList.add('dim'); }
    });
    edges.forEach(function (el) {
      var a = el.getAttribute('data-from'), b = el.getAttribute('data-to');
      if ((up[a] && up[b]) || (down[a] && down[b])) { if (a === name || b === name) { el.classList.add('hl'); } }
      else { el.classList.add('dim'); }
    });
    lines.forEach(function (el) { if (el.getAttribute('data-name') === name) { el.classList.add('hl'); } });
    var t = svg.querySelector('g.node[data-name="' + name.replace(/"/g, '') + '"] title');
    info.textContent = t ? t.textContent : name;
  }
  nodes.forEach(function (el) {
    el.addEventListener('click', function (ev) { ev.stopPropagation(); select(el.getAttribute('data-name')); });
  });
  lines.forEach(function (el) {
    el.addEventListener('click', function () { select(el.getAttribute('data-name')); });
  });
  svg.addEventListener('dblclick', function () { clear(); });
  root.querySelector('.tp-fit').addEventListener('click', fit);
  root.querySelector('.tp-in').addEventListener('click', function () {
    zoom(1 / 1.25, vb[0] + vb[2] / 2, vb[1] + vb[3] / 2);
  });
  root.querySelector('.tp-out').addEventListener('click', function () {
    zoom(1.25, vb[0] + vb[2] / 2, vb[1] + vb[3] / 2);
  });
  root.querySelector('.tp-toggle').addEventListener('click', function () {
    var ir = root.querySelector('.tp-ir');
    ir.style.display = ir.style.display === 'none' ? '' : 'none';
    fit();
  });
  fit();
  root.setAttribute('data-ready', '1');
})();
"""


def _ir_listing(graph: Graph) -> str:
    from tensorplay.ir.text import graph_lines

    lines = graph_lines(graph)
    out = [_esc(lines[0])]
    for i, text in enumerate(lines[1:1 + len(graph.nodes)]):
        out.append(f'<span data-name="%{i}">{_esc(text)}</span>')
    out.extend(_esc(t) for t in lines[1 + len(graph.nodes):])
    return "\n".join(out)


def graph_to_html(graph: Graph, *, kernels: Any = "auto", title: str | None = None, full_document: bool = False,
                  stats: Mapping[str, Any] | None = None) -> str:
    """An interactive HTML view of `graph`: the SVG drawing plus its IR text, side by side.

    Wheel zooms, drag pans, clicking a node (or its IR line) highlights its
    producers and consumers, double-click clears. With ``full_document=False``
    (the default, used by Jupyter's ``_repr_html_``) the result is a fragment;
    with True a complete page. Without JavaScript it is still a static drawing.
    """
    uid = f"tpviz{next(_uids)}{os.getpid()}"
    svg = graph_to_svg(graph, kernels=kernels, title=title, uid=f"{uid}-svg")
    summary = f"@{_esc(graph.name)}: {len(graph.inputs)} inputs, {len(graph.nodes)} nodes, {len(graph.outputs)} outputs"
    if stats:
        summary += "".join(f"; {_esc(k)}: {_esc(v)}" for k, v in stats.items())
    body = (f'<div class="tp-viz" id="{uid}">'
            f"<style>{_HTML_STYLE.format(uid=uid, font=FONT)}</style>"
            f'<div class="tp-bar"><span>{summary}</span>'
            '<button class="tp-fit" type="button">fit</button><button class="tp-in" type="button">+</button>'
            '<button class="tp-out" type="button">\u2212</button>'
            '<button class="tp-toggle" type="button">IR</button><span class="tp-info"></span></div>'
            f'<div class="tp-main"><div class="tp-canvas">{svg}</div>'
            f'<pre class="tp-ir">{_ir_listing(graph)}</pre></div>'
            f"<script>{_HTML_SCRIPT % {'uid': json.dumps(uid)}}</script></div>")
    if not full_document:
        return body
    page_title = _esc(title or f"@{graph.name}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{page_title}</title></head><body style=\"margin: 8px\">\n{body}\n</body></html>\n")


# ----------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------
def write_graph(graph: Graph, path: str, *, kernels: Any = "auto", title: str | None = None,
                stats: Mapping[str, Any] | None = None) -> str:
    """Write `graph` to `path` as .svg, .html/.htm or .dot (chosen by suffix); return the format."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".svg":
        text, fmt = graph_to_svg(graph, kernels=kernels, title=title), "svg"
    elif suffix in (".html", ".htm"):
        text, fmt = graph_to_html(graph, kernels=kernels, title=title, full_document=True, stats=stats), "html"
    elif suffix in (".dot", ".gv"):
        text, fmt = to_dot(graph, kernels=kernels, title=title), "dot"
    else:
        raise ValueError(f"cannot tell the output format from {path!r}: use a .svg, .html or .dot file name")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return fmt

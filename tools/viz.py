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

import colorsys
import html
import itertools
import json
import os
import re
import shutil
import subprocess
from typing import Any, Iterable, Mapping

from tensorplay.ir.core import Graph, Node, set_display
from tensorplay.ir.nx import to_networkx

from .viz_layout import layered_layout

__all__ = ["to_networkx", "to_dot", "graph_to_svg", "graph_to_html", "kernel_view_svg", "write_graph",
           "op_family", "kernel_map", "kernel_colours", "legend_order", "render_with_graphviz", "FAMILY_COLOURS",
           "KERNEL_COLOURS", "DEAD"]
FAMILY_COLOURS = {
    "input": "#ffffff", "output": "#eeeeee",
    "elementwise": "#cfe2f3", "compare": "#d0e0e3", "logical": "#c9daf8", "layout": "#fff2cc", "indexing": "#fce5cd",
    "reduction": "#f4cccc", "contraction": "#d9d2e9", "random": "#ead1dc", "constant": "#e6e6e6",
    "control": "#e4dccf", "other": "#d9ead3",
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


def legend_order(names: Iterable[str]) -> list[str]:
    """`names` sorted as a person counts: k0, k1, k2, ..., k10 (digits compare as numbers); `DEAD` last.

    >>> legend_order(["k10_sum", "k2_exp", DEAD, "k1_dot"])
    ['k1_dot', 'k2_exp', 'k10_sum', '(not computed)']
    """
    def key(name: str):
        parts = re.split(r"(\d+)", name)
        return (name == DEAD, [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p])

    return sorted(dict.fromkeys(names), key=key)


def _srgb_to_lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def relative_luminance(hex_colour: str) -> float:
    """WCAG relative luminance of ``#rrggbb``."""
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


TEXT_COLOUR = "#111111"
GOLDEN_ANGLE = 137.50776405003785


def _candidates(levels: int) -> list[tuple[str, tuple]]:
    """Pastel HSL colours (golden-angle hues, a few lightness/saturation bands), light enough that
    the node text (#111) keeps a contrast of at least 7:1."""
    out = []
    for i in range(36 * levels):
        hue = (i * GOLDEN_ANGLE) % 360 / 360
        light = (0.80, 0.70, 0.88)[(i // 3) % 3]
        sat = (0.75, 0.50)[(i // 9) % 2]
        rgb = colorsys.hls_to_rgb(hue, light, sat)
        code = "#" + "".join(f"{round(c * 255):02x}" for c in rgb)
        if (relative_luminance(code) + 0.05) / (relative_luminance(TEXT_COLOUR) + 0.05) >= 7.0:
            out.append((code, _srgb_to_lab(rgb)))
    return out


def kernel_colours(n: int) -> list[str]:
    """`n` distinct fill colours for `n` kernels, as far apart as possible (in CIELAB).

    Farthest-point picking over golden-angle pastel hues: the first colours are the most
    distinct, every colour differs from all others, and all keep the node text readable.

    >>> cs = kernel_colours(30)
    >>> len(set(cs)) == 30
    True
    """
    if n <= 0:
        return []
    levels = 1
    pool = _candidates(levels)
    while len(pool) < 2 * n:
        levels *= 2
        pool = _candidates(levels)
    chosen = [pool[0]]
    dist = [sum((a - b) ** 2 for a, b in zip(lab, pool[0][1])) for _, lab in pool]
    while len(chosen) < n:
        j = max(range(len(pool)), key=lambda i: dist[i])
        chosen.append(pool[j])
        dist = [min(d, sum((a - b) ** 2 for a, b in zip(lab, pool[j][1]))) for d, (_, lab) in zip(dist, pool)]
    return [code for code, _ in chosen]


KERNEL_COLOURS = kernel_colours(12)  # the first few, for callers that want a fixed palette


def _colouring(graph: Graph, kernels: Any) -> tuple[dict[Node, str], dict[str, str], str]:
    """(node -> legend key, legend key -> colour, mode) where mode is 'kernel' or 'family'.

    Kernel colours are distinct for every kernel; the legend (the mapping's order) counts up."""
    kmap = _auto_kernels(graph) if isinstance(kernels, str) and kernels == "auto" else kernel_map(graph, kernels)
    if kmap:
        names = legend_order(k for k in (kmap.get(n) for n in graph.nodes) if k is not None)
        colours = dict(zip(names, kernel_colours(len(names))))
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
    legend_w = _legend_width(legend_items) if legend and legend_items else 0.0
    width = max(layout.width + legend_w, 240.0, len(title or graph.name) * 8.0 + 24)
    height = max(layout.height + head, head + 20 * len(legend_items) + 40 if legend else 0)
    out = _svg_open("tp-graph", uid, width, height, head, title or "@" + graph.name,
                    f'data-graph="{_esc(graph.name)}" data-colour-by="{mode}"')
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
        else:
            attrs = ""
            body = _terminal_body(kind, layout.boxes[vid], d)
        out.append(f'<g class="node {kind}" data-name="{_esc(vid)}"{attrs}><title>{_esc(d["text"])}</title>'
                   f"{body}</g>")
    out.append("</g>")
    if legend and legend_items:
        out.append(_svg_legend(legend_items, layout.width + 8, "kernels" if mode == "kernel" else "op families"))
    out.append("</g></svg>")
    return "\n".join(out)


def _svg_open(cls: str, uid: str, width: float, height: float, head: float, title: str, data: str) -> list[str]:
    """The opening elements of a drawing, up to the (open) group of its edges."""
    return [f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" id="{_esc(uid)}" '
            f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.1f} {height:.1f}" {data}>',
            f"<style>{_SVG_STYLE.format(font=FONT)}</style>",
            f'<defs><marker id="{uid}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker></defs>',
            '<rect width="100%" height="100%" fill="#ffffff"/>',
            f'<text class="title" x="12" y="19">{_esc(title)}</text>',
            f'<g transform="translate(0,{head:.0f})">', '<g class="edges">']


def _terminal_body(kind: str, box, d: dict) -> str:
    """An input (ellipse with its name and type) or an output (a small box) of a drawing."""
    x, y, w, h = box
    cx, cy = x + w / 2, y + h / 2
    if kind == "input":
        return (f'<ellipse cx="{cx:.1f}" cy="{cy:.1f}" rx="{w / 2:.1f}" ry="{h / 2:.1f}" fill="#ffffff"/>'
                f'<text x="{cx:.1f}" y="{cy - 7:.1f}">{_esc(d["label"])}</text>'
                f'<text class="sub" x="{cx:.1f}" y="{cy + 8:.1f}">{_esc(d["type"])}</text>')
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="4" '
            f'fill="{FAMILY_COLOURS["output"]}"/><text x="{cx:.1f}" y="{cy:.1f}">{_esc(d["label"])}</text>')


LEGEND_CHAR_W = 7.0  # an 11px monospace character, rounded up so that labels never clip


def _legend_width(items) -> float:
    return max(len(k) for k, _ in items) * LEGEND_CHAR_W + 20 + 16


def _svg_legend(items, x: float, heading: str) -> str:
    rows = [f'<g class="legend" transform="translate({x:.1f},4)">', f'<text x="0" y="0">{_esc(heading)}</text>']
    for i, (key, colour) in enumerate(items):
        y = 20 + 20 * i
        rows.append(f'<g class="legend-item" data-key="{_esc(key)}"><rect x="0" y="{y - 7}" width="14" height="14" '
                    f'rx="3" fill="{colour}"/><text x="20" y="{y}">{_esc(key)}</text></g>')
    rows.append("</g>")
    return "".join(rows)


def _html_legend(items, heading: str) -> str:
    cells = "".join(f'<li data-key="{_esc(k)}"><span class="tp-swatch" style="background:{c}"></span>{_esc(k)}</li>'
                    for k, c in items)
    return f'<div class="tp-legend"><span>{_esc(heading)}:</span><ul>{cells}</ul></div>'


# ----------------------------------------------------------------------------------------------
# Kernel-level view
# ----------------------------------------------------------------------------------------------
def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def kernel_level_graph(graph: Graph, kernels: Any = "auto"):
    """The fused kernels of `graph` as a `networkx.MultiDiGraph`: vertices are the graph's inputs,
    its kernels and its outputs; an edge is a buffer one kernel writes and another reads, with its
    type and size in bytes. Nodes in no kernel (views the backend does not compute) are looked
    through to the buffers they read. Returns None when there is no kernel information.
    """
    import networkx as nx

    from tensorplay.ir.nx import shape_label
    from tensorplay.ir.text import value_names

    kmap = _auto_kernels(graph) if isinstance(kernels, str) and kernels == "auto" else kernel_map(graph, kernels)
    if not kmap:
        return None
    names = value_names(graph)
    G = nx.MultiDiGraph(name=graph.name)
    for i, v in enumerate(graph.inputs):
        G.add_node(names[v], kind="input", label=names[v], type=str(v.type), text=f"{names[v]}: {v.type}")
    members: dict[str, list[Node]] = {}
    for n in graph.nodes:
        if n in kmap:
            members.setdefault(kmap[n], []).append(n)
    for k in legend_order(members):
        ops = " ".join(n.prim.name for n in members[k])
        G.add_node(k, kind="kernel", label=k, sub=f"{len(members[k])} node(s)", text=f"{k}: {ops}")

    def sources(v, seen=None) -> list[str]:
        """Vertices whose buffers hold value `v` (or the values a non-computed view of it reads)."""
        if v.node is None:
            return [names[v]] if v in names else []
        if v.node in kmap:
            return [kmap[v.node]]
        seen = seen if seen is not None else set()
        if v in seen:
            return []
        seen.add(v)
        return [s for u in v.node.inputs for s in sources(u, seen)]

    def buffer(src: str, dst: str, v) -> None:
        if src == dst or G.has_edge(src, dst, key=v.id):
            return
        size = v.type.dtype.itemsize * _numel(v.type.shape)
        G.add_edge(src, dst, key=v.id, shape=f"{shape_label(v)} \u00b7 {_human_bytes(size)}", type=str(v.type),
                   bytes=size)

    for k, nodes in members.items():
        inside = set(nodes)
        for n in nodes:
            for v in n.inputs:
                if v.node in inside:
                    continue
                for src in sources(v):
                    buffer(src, k, v)
    for i, v in enumerate(graph.outputs):
        vid = f"return:{i}"
        G.add_node(vid, kind="output", label=f"return {i}" if len(graph.outputs) > 1 else "return",
                   text=f"return {names.get(v, '?')}")
        for src in sources(v):
            buffer(src, vid, v)
    return G


def _numel(shape) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def kernel_view_svg(graph: Graph, *, kernels: Any = "auto", title: str | None = None, uid: str | None = None,
                    legend: bool = False) -> str | None:
    """An SVG of the kernel-level view (`kernel_level_graph`): one box per fused kernel, in its
    colour, with the buffers between kernels labelled by type and size. None without kernels.

    >>> import tensorplay as tp
    >>> g = tp.make_graph(lambda x: (tp.sin(x) * 2).sum(), tp.ones(3)).graph
    >>> svg = kernel_view_svg(g, kernels=[("k0", [0, 1]), ("k1", [2])])
    >>> svg.count('class="node kernel"'), "12 B" in svg
    (2, True)
    """
    K = kernel_level_graph(graph, kernels)
    if K is None:
        return None
    uid = uid or f"tpk{next(_uids)}"
    kernel_names = [v for v, d in K.nodes(data=True) if d["kind"] == "kernel"]
    colours = dict(zip(kernel_names, kernel_colours(len(kernel_names))))

    def size(v):
        d = K.nodes[v]
        if d["kind"] == "kernel":
            return max(len(d["label"]) * CHAR_W, len(d["sub"]) * SMALL_CHAR_W) + 24, 40.0
        if d["kind"] == "input":
            return max(len(d["label"]) * CHAR_W, len(d["type"]) * SMALL_CHAR_W) + 28, 36.0
        return len(d["label"]) * CHAR_W + 24, 26.0

    layout = layered_layout(K, size, pinned_top=lambda v: K.nodes[v]["kind"] == "input")
    head = 30.0
    items = list(colours.items())
    legend_w = _legend_width(items) if legend and items else 0.0
    width = max(layout.width + legend_w, 240.0)
    height = max(layout.height + head, head + 20 * len(items) + 40 if legend else 0)
    out = _svg_open("tp-graph tp-kernels", uid, width, height, head, title or f"@{graph.name} kernels",
                    f'data-graph="{_esc(graph.name)}" data-view="kernels"')
    placer = _LabelPlacer(layout.boxes.values())
    for (u, v, k), pts in layout.edges.items():
        d = K.edges[u, v, k]
        spot = placer.place(pts, d["shape"]) or _bezier(pts[-2], pts[-1], 0.5)
        out.append(f'<g class="edge buffer" data-from="{_esc(u)}" data-to="{_esc(v)}" data-bytes="{d["bytes"]}">'
                   f'<title>{_esc(u)} \u2192 {_esc(v)}: {_esc(d["type"])}</title>'
                   f'<path d="{_path(pts)}" marker-end="url(#{uid}-arrow)"/>'
                   f'<text x="{spot[0]:.1f}" y="{spot[1]:.1f}">{_esc(d["shape"])}</text></g>')
    out += ["</g>", '<g class="nodes">']
    for vid, d in K.nodes(data=True):
        x, y, w, h = layout.boxes[vid]
        cx, cy = x + w / 2, y + h / 2
        if d["kind"] == "kernel":
            body = (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6" fill="{colours[vid]}"/>'
                    f'<text x="{cx:.1f}" y="{cy - 8:.1f}">{_esc(d["label"])}</text>'
                    f'<text class="sub" x="{cx:.1f}" y="{cy + 9:.1f}">{_esc(d["sub"])}</text>')
        else:
            body = _terminal_body(d["kind"], layout.boxes[vid], d)
        out.append(f'<g class="node {d["kind"]}" data-name="{_esc(vid)}"><title>{_esc(d["text"])}</title>{body}</g>')
    out.append("</g>")
    if legend and items:
        out.append(_svg_legend(items, layout.width + 8, "kernels"))
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
#{uid} .tp-ir {{ flex: 0 1 36%; max-width: 40%; min-width: 16em; overflow: auto; margin: 0; padding: 6px 8px;
  font-size: 11px; border-left: 1px solid #eee; background: #fafafa; white-space: pre-wrap;
  overflow-wrap: anywhere; }}
#{uid} .tp-ir span.tp-line {{ display: block; padding-left: 4ch; text-indent: -4ch; }}
#{uid} .tp-legend {{ display: flex; gap: 6px; align-items: baseline; padding: 4px 8px; font-size: 11px;
  border-bottom: 1px solid #eee; }}
#{uid} .tp-legend ul {{ display: flex; flex-wrap: wrap; gap: 2px 12px; list-style: none; margin: 0; padding: 0; }}
#{uid} .tp-legend li {{ white-space: nowrap; cursor: pointer; }}
#{uid} .tp-legend li.hl {{ font-weight: bold; }}
#{uid} .tp-swatch {{ display: inline-block; width: 11px; height: 11px; border: 1px solid #444; border-radius: 2px;
  margin-right: 4px; vertical-align: -1px; }}
#{uid} .tp-canvas svg.tp-kernels {{ display: none; }}
#{uid}.tp-show-kernels .tp-canvas svg.tp-kernels {{ display: block; }}
#{uid}.tp-show-kernels .tp-canvas svg.tp-ops {{ display: none; }}
#{uid} .tp-ir span.hl {{ background: #ffe08a; }}
#{uid} .tp-ir span[data-name] {{ cursor: pointer; }}
#{uid} .tp-info {{ color: #666; }}
"""

_HTML_SCRIPT = r"""
(function () {
  var root = document.getElementById(%(uid)s);
  if (!root) { return; }
  var MIN_SCALE = %(min_scale)s;  // fit never shrinks text below this fraction of its size: pan instead
  var canvas = root.querySelector('.tp-canvas');
  var info = root.querySelector('.tp-info');
  var svg, vb, full;
  function use(el) {
    svg = el;
    full = svg.getAttribute('data-full-viewbox') || svg.getAttribute('viewBox');
    svg.setAttribute('data-full-viewbox', full);
    full = full.split(' ').map(Number);
    vb = full.slice();
  }
  use(root.querySelector('svg.tp-ops'));
  function apply() { svg.setAttribute('viewBox', vb.join(' ')); }
  function fit() {
    var avail = canvas.clientWidth || full[2];
    var maxH = Math.max(480, Math.min(1000, (window.innerHeight || 800) - 60));
    var scale = Math.min(avail / full[2], maxH / full[3], 1.5);
    scale = Math.max(scale, MIN_SCALE);
    var w = Math.min(avail, full[2] * scale), h = Math.min(maxH, full[3] * scale);
    svg.setAttribute('width', String(w));
    svg.setAttribute('height', String(h));
    vb = [full[0], full[1], w / scale, h / scale];
    svg.setAttribute('data-scale', String(scale));
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
  var legendItems = Array.prototype.slice.call(root.querySelectorAll('.tp-legend li'));
  legendItems.forEach(function (li) {
    li.addEventListener('click', function () {
      var key = li.getAttribute('data-key'), on = !li.classList.contains('hl');
      clear();
      legendItems.forEach(function (o) { o.classList.remove('hl'); });
      if (!on) { return; }
      li.classList.add('hl');
      nodes.forEach(function (el) {
        var k = el.getAttribute('data-kernel') || el.getAttribute('data-family');
        if (k !== key) { el.classList.add('dim'); }
      });
    });
  });
  var viewButton = root.querySelector('.tp-view');
  if (viewButton) {
    viewButton.addEventListener('click', function () {
      var kernelsShown = root.classList.toggle('tp-show-kernels');
      viewButton.textContent = kernelsShown ? 'ops' : 'kernels';
      use(root.querySelector(kernelsShown ? 'svg.tp-kernels' : 'svg.tp-ops'));
      fit();
    });
  }
  root.querySelector('.tp-toggle').addEventListener('click', function () {
    var ir = root.querySelector('.tp-ir');
    ir.style.display = ir.style.display === 'none' ? '' : 'none';
    fit();
  });
  fit();
  root.setAttribute('data-ready', '1');
})();
"""


MIN_FIT_SCALE = 0.8  # 12px labels stay >= 9.6px in the fit view; larger graphs pan


def _ir_listing(graph: Graph) -> str:
    from tensorplay.ir.text import graph_lines

    lines = graph_lines(graph)
    n = len(graph.nodes)
    # one block per line (a long line wraps with a hanging indent); the newline stays in the
    # text for copying, inside the block, so that blocks do not add blank lines
    out = [f'<span class="tp-line">{_esc(lines[0])}\n</span>']
    out += [f'<span class="tp-line" data-name="%{i}">{_esc(t)}\n</span>' for i, t in enumerate(lines[1:1 + n])]
    out += [f'<span class="tp-line">{_esc(t)}\n</span>' for t in lines[1 + n:]]
    return "".join(out)


def graph_to_html(graph: Graph, *, kernels: Any = "auto", title: str | None = None, full_document: bool = False,
                  stats: Mapping[str, Any] | None = None) -> str:
    """An interactive HTML view of `graph`: the SVG drawing plus its IR text, side by side.

    Wheel zooms, drag pans, clicking a node (or its IR line) highlights its
    producers and consumers, double-click clears. With ``full_document=False``
    (the default, used by Jupyter's ``_repr_html_``) the result is a fragment;
    with True a complete page. Without JavaScript it is still a static drawing.
    """
    uid = f"tpviz{next(_uids)}{os.getpid()}"
    if isinstance(kernels, str) and kernels == "auto":  # schedule once, for both views
        groups: dict[str, list] = {}
        for node, name in _auto_kernels(graph).items():
            groups.setdefault(name, []).append(node)
        kernels = list(groups.items()) or None
    svg = graph_to_svg(graph, kernels=kernels, title=title, uid=f"{uid}-svg", legend=False)
    svg = svg.replace('class="tp-graph"', 'class="tp-graph tp-ops"', 1)
    kernel_svg = kernel_view_svg(graph, kernels=kernels, uid=f"{uid}-k") if kernels is not None else None
    _, colours, mode = _colouring(graph, kernels)
    summary = f"@{_esc(graph.name)}: {len(graph.inputs)} inputs, {len(graph.nodes)} nodes, {len(graph.outputs)} outputs"
    if stats:
        summary += "".join(f"; {_esc(k)}: {_esc(v)}" for k, v in stats.items())
    view = '<button class="tp-view" type="button">kernels</button>' if kernel_svg else ""
    body = (f'<div class="tp-viz" id="{uid}">'
            f"<style>{_HTML_STYLE.format(uid=uid, font=FONT)}</style>"
            f'<div class="tp-bar"><span>{summary}</span>'
            '<button class="tp-fit" type="button">fit</button><button class="tp-in" type="button">+</button>'
            f'<button class="tp-out" type="button">\u2212</button>{view}'
            '<button class="tp-toggle" type="button">IR</button><span class="tp-info"></span></div>'
            + (_html_legend(list(colours.items()), "kernels" if mode == "kernel" else "op families")
               if colours else "") +
            f'<div class="tp-main"><div class="tp-canvas">{svg}{kernel_svg or ""}</div>'
            f'<pre class="tp-ir">{_ir_listing(graph)}</pre></div>'
            f"<script>{_HTML_SCRIPT % {'uid': json.dumps(uid), 'min_scale': MIN_FIT_SCALE}}</script></div>")
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


# Notebooks: every `ir.Graph` (what `.graph` and each pass return) displays as this drawing.
set_display("html", graph_to_html)
set_display("svg", graph_to_svg)

"""tools.viz and ir.nx: networkx conversion, the layered layout, SVG / HTML / DOT output."""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from tensorplay import ir
import tensorplay as tp
from tensorplay.ir import GraphBuilder, TensorType, float32
from tensorplay.ir.text import print_node, value_names
from tensorplay.tools import viz
from tensorplay.tools.viz_layout import _isotonic, count_crossings, layered_layout

SVG_NS = "{http://www.w3.org/2000/svg}"
F32 = float32


def mlp_graph() -> ir.Graph:
    def mlp(w1, b1, w2, x):
        h = tp.tanh(x @ w1 + b1)
        return tp.log_softmax(h @ w2, dim=-1).sum() + tp.exp(x).mean()

    return tp.make_graph(mlp, tp.ones(4, 8), tp.ones(8), tp.ones(8, 3), tp.ones(5, 4)).graph


def square_graph() -> ir.Graph:
    b = GraphBuilder("sq")
    x = b.add_input(TensorType((3,), F32))
    return b.build([b.mul(x, x), b.sin(x)])


# --- networkx ------------------------------------------------------------------------------------
def test_to_networkx_vertices_edges_and_attributes():
    g = mlp_graph()
    G = g.to_networkx()
    assert isinstance(G, nx.MultiDiGraph)
    kinds = [d["kind"] for _, d in G.nodes(data=True)]
    assert kinds.count("input") == len(g.inputs) and kinds.count("op") == len(g.nodes)
    assert kinds.count("output") == len(g.outputs)
    assert G.number_of_edges() == sum(len(n.inputs) for n in g.nodes) + len(g.outputs)
    assert nx.is_directed_acyclic_graph(G)
    names = value_names(g)
    for i, n in enumerate(g.nodes):
        d = G.nodes[f"%{i}"]
        assert d["op"] == n.prim.name and d["node"] is n and d["type"] == n.out.type
        assert d["text"] == print_node(n, names)
    assert g.to_networkx(outputs=False).number_of_nodes() == len(g.inputs) + len(g.nodes)


def test_to_networkx_keeps_parallel_edges():
    G = square_graph().to_networkx()
    assert G.number_of_edges("%arg0", "%0") == 2
    assert {k for _, v, k in G.edges("%arg0", keys=True) if v == "%0"} == {0, 1}
    assert G.edges["%arg0", "%0", 1]["operand"] == 1


# --- layout --------------------------------------------------------------------------------------
def test_isotonic_placement_respects_gaps_and_targets():
    xs = _isotonic([5.0, 0.0, 10.0], [1.0, 1.0, 1.0], [2.0, 2.0])
    assert xs == pytest.approx([1.5, 3.5, 10.0])  # the first two pooled around their mean, 2 apart
    assert _isotonic([5.0, 0.0], [3.0, 1.0], [2.0]) == pytest.approx([3.25, 5.25])  # weighted pooling: (3*5 + 1*(0-2)) / 4
    assert _isotonic([0.0, 10.0], [1.0, 1.0], [1.0]) == [0.0, 10.0]  # already feasible: unchanged


def test_count_crossings():
    assert count_crossings(["a", "b"], ["c", "d"], [("a", "c"), ("b", "d")]) == 0
    assert count_crossings(["a", "b"], ["c", "d"], [("a", "d"), ("b", "c")]) == 1
    assert count_crossings(["a", "b", "c"], ["x", "y", "z"], [("a", "z"), ("b", "y"), ("c", "x")]) == 3


def test_layout_rejects_cycles():
    with pytest.raises(ValueError, match="cycle"):
        layered_layout(nx.DiGraph([(1, 2), (2, 1)]), lambda v: (10, 10))


def _check_layout(G, layout):
    boxes = layout.boxes
    assert set(boxes) == set(G.nodes)
    for u, v in G.edges():  # every edge points down
        assert boxes[u][1] + boxes[u][3] <= boxes[v][1] + 1e-6
    for row in layout.layers:  # no overlaps within a layer, left to right
        for a, b in zip(row, row[1:]):
            assert boxes[a][0] + boxes[a][2] <= boxes[b][0] + 1e-6
    for key, pts in layout.edges.items():
        u, v = key[0], key[1]
        assert pts[0][1] == pytest.approx(boxes[u][1] + boxes[u][3])
        assert pts[-1][1] == pytest.approx(boxes[v][1])
        assert all(p[1] <= q[1] + 1e-6 for p, q in zip(pts, pts[1:]))


def test_layout_of_an_mlp_graph():
    G = mlp_graph().to_networkx()
    layout = layered_layout(G, lambda v: (60, 30), pinned_top=lambda v: G.nodes[v]["kind"] == "input")
    _check_layout(G, layout)
    assert {layout.layer_of[v] for v, d in G.nodes(data=True) if d["kind"] == "input"} == {0}


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 14).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))))
def test_layout_of_random_dags(case):
    n, pairs = case
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((min(a, b), max(a, b)) for a, b in pairs if a != b)
    layout = layered_layout(G, lambda v: (20 + 3 * v, 16))
    _check_layout(G, layout)


def test_barycentre_ordering_removes_avoidable_crossings():
    # two independent chains whose initial order crosses
    G = nx.DiGraph([("a", "y"), ("b", "x"), ("x", "x2"), ("y", "y2")])
    G.add_nodes_from(["a", "b"])
    layout = layered_layout(G, lambda v: (30, 20))
    assert layout.crossings == 0


# --- SVG -----------------------------------------------------------------------------------------
def test_svg_is_well_formed_with_one_element_per_node():
    g = mlp_graph()
    root = ET.fromstring(viz.graph_to_svg(g))
    assert root.tag == f"{SVG_NS}svg"
    groups = list(root.iter(f"{SVG_NS}g"))
    ops = [e for e in groups if e.get("class") == "node op"]
    assert len(ops) == len(g.nodes)
    assert len([e for e in groups if e.get("class") == "node input"]) == len(g.inputs)
    assert len([e for e in groups if e.get("class") == "node output"]) == len(g.outputs)
    assert len([e for e in groups if e.get("class") == "edge"]) == sum(len(n.inputs) for n in g.nodes) + 1
    names = value_names(g)
    titles = {e.get("data-name"): e.find(f"{SVG_NS}title").text for e in ops}
    for i, n in enumerate(g.nodes):
        assert titles[f"%{i}"] == print_node(n, names)


def test_svg_coloured_by_kernel_or_by_family():
    g = mlp_graph()
    by_kernel = ET.fromstring(viz.graph_to_svg(g, kernels="auto"))
    assert by_kernel.get("data-colour-by") == "kernel"
    ops = [e for e in by_kernel.iter(f"{SVG_NS}g") if e.get("class") == "node op"]
    kernels = {e.get("data-kernel") for e in ops}
    assert 1 < len(kernels) < len(g.nodes)  # fusion groups several nodes per kernel
    by_family = ET.fromstring(viz.graph_to_svg(g, kernels=None))
    assert by_family.get("data-colour-by") == "family"
    fams = {e.get("data-op"): e.get("data-family") for e in by_family.iter(f"{SVG_NS}g")
            if e.get("class") == "node op"}
    assert fams["tanh"] == "elementwise" and fams["dot_general"] == "contraction"
    assert fams["reduce_sum"] == "reduction" and fams["broadcast_in_dim"] == "layout"


def test_svg_kernels_from_an_executable():
    from tensorplay import codegen
    g = mlp_graph()
    exe = codegen.compile_graph(g)
    root = ET.fromstring(viz.graph_to_svg(g, kernels=exe))
    ops = [e for e in root.iter(f"{SVG_NS}g") if e.get("class") == "node op"]
    assert len({e.get("data-kernel") for e in ops}) == len(exe.kernels)


def test_svg_escapes_text():
    b = GraphBuilder('we<i>rd"&')
    x = b.add_input(TensorType((2,), F32))
    g = b.build([b.sin(x)])
    root = ET.fromstring(viz.graph_to_svg(g, title="a < b & c"))
    assert root.get("data-graph") == 'we<i>rd"&'


def test_empty_and_input_only_graphs_draw():
    b = GraphBuilder("id")
    x = b.add_input(TensorType((2,), F32))
    ET.fromstring(viz.graph_to_svg(b.build([x])))
    ET.fromstring(viz.graph_to_svg(GraphBuilder("empty").build([])))


def test_op_family_covers_every_primitive():
    for p in ir.all_primitives():
        assert viz.op_family(p.name) in viz.FAMILY_COLOURS and viz.op_family(p.name) != "other", p.name


def test_kernel_map_accepts_several_shapes():
    g = square_graph()
    n0, n1 = g.nodes
    assert viz.kernel_map(g, [{"name": "a", "nodes": [n0]}, {"name": "b", "nodes": [n1]}]) == {n0: "a", n1: "b"}
    assert viz.kernel_map(g, {"k": [0, "%1"]}) == {n0: "k", n1: "k"}
    assert viz.kernel_map(g, [("k", ["%0"])]) == {n0: "k"}
    assert viz.kernel_map(g, None) == {}


# --- DOT -----------------------------------------------------------------------------------------
def test_dot_output():
    g = mlp_graph()
    text = viz.to_dot(g, kernels="auto")
    assert text.startswith('digraph "mlp" {') and text.rstrip().endswith("}")
    assert text.count(" -> ") == sum(len(n.inputs) for n in g.nodes) + len(g.outputs)
    assert "subgraph cluster_0" in text and 'label="5x8xf32"' in text
    plain = viz.to_dot(g, kernels=None)
    assert "subgraph" not in plain


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is optional")
def test_dot_renders_with_graphviz_when_present():
    svg = viz.render_with_graphviz(viz.to_dot(square_graph()), "svg")
    ET.fromstring(svg)


# --- HTML and notebooks --------------------------------------------------------------------------
class _Tree(HTMLParser):
    """A tiny DOM as nested dicts (tag, attrs, children, text) for the node.js smoke test."""

    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = {"tag": "#root", "attrs": {}, "children": [], "text": ""}
        self.stack = [self.root]
        self.script = []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": {k: v or "" for k, v in attrs}, "children": [], "text": ""}
        self.stack[-1]["children"].append(el)
        if tag not in self.VOID and not tag in ("path", "rect", "ellipse"):
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1]["children"].append({"tag": tag, "attrs": {k: v or "" for k, v in attrs}, "children": [],
                                           "text": ""})

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self.stack[-1]["tag"] == "script":
            self.script.append(data)
        else:
            self.stack[-1]["text"] += data


_NODE_HARNESS = r"""
const tree = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const script = require('fs').readFileSync(process.argv[3], 'utf8');
function El(d, parent) {
  this.tagName = d.tag; this.attrs = Object.assign({}, d.attrs); this.parent = parent;
  this.textContent = d.text; this.style = {}; this.listeners = {}; this.clientWidth = 900;
  this.children = d.children.map(c => new El(c, this));
  const self = this;
  this.classList = {
    add(c) { const s = new Set((self.attrs['class'] || '').split(/\s+/).filter(Boolean)); s.add(c); self.attrs['class'] = [...s].join(' '); },
    remove(c) { self.attrs['class'] = (self.attrs['class'] || '').split(/\s+/).filter(x => x && x !== c).join(' '); },
    contains(c) { return (self.attrs['class'] || '').split(/\s+/).includes(c); },
    toggle(c) { if (this.contains(c)) { this.remove(c); return false; } this.add(c); return true; },
  };
}
El.prototype.getAttribute = function (k) { k = k.toLowerCase(); return k in this.attrs ? this.attrs[k] : null; };
El.prototype.setAttribute = function (k, v) { this.attrs[k.toLowerCase()] = String(v); };
El.prototype.addEventListener = function (t, f) { (this.listeners[t] = this.listeners[t] || []).push(f); };
El.prototype.getBoundingClientRect = function () { return { left: 0, top: 0, width: 900, height: 600 }; };
El.prototype.all = function () { return this.children.flatMap(c => [c, ...c.all()]); };
function matchOne(el, simple) {
  const m = simple.match(/^([a-z]*)((?:\.[\w-]+)*)((?:\[[^\]]+\])*)$/);
  if (!m) throw new Error('unsupported selector ' + simple);
  if (m[1] && el.tagName !== m[1]) return false;
  const classes = (el.attrs['class'] || '').split(/\s+/);
  for (const c of m[2].split('.').filter(Boolean)) if (!classes.includes(c)) return false;
  for (const a of (m[3].match(/\[[^\]]+\]/g) || [])) {
    const [k, v] = a.slice(1, -1).split('=');
    if (!(k in el.attrs)) return false;
    if (v !== undefined && el.attrs[k] !== v.replace(/^"|"$/g, '')) return false;
  }
  return true;
}
El.prototype.querySelectorAll = function (sel) {
  const parts = sel.trim().split(/\s+/);
  let current = [this];
  for (const p of parts) current = [...new Set(current.flatMap(c => c.all().filter(e => matchOne(e, p))))];
  return current;
};
El.prototype.querySelector = function (sel) { return this.querySelectorAll(sel)[0] || null; };
const root = new El(tree, null);
const listeners = {};
global.window = { addEventListener(t, f) { (listeners[t] = listeners[t] || []).push(f); } };
global.document = { getElementById(id) { return root.all().find(e => e.attrs.id === id) || null; } };
eval(script);
const viz = root.all().find(e => (e.attrs['class'] || '') === 'tp-viz');
if (viz.getAttribute('data-ready') !== '1') throw new Error('script did not finish');
const ev = { preventDefault() {}, stopPropagation() {}, clientX: 100, clientY: 80, deltaY: 1 };
const fire = (el, t) => (el.listeners[t] || []).forEach(f => f(ev));
for (const n of viz.querySelectorAll('g.node')) fire(n, 'click');
for (const n of viz.querySelectorAll('.tp-ir span[data-name]')) fire(n, 'click');
for (const b of viz.querySelectorAll('button')) fire(b, 'click');
const canvas = viz.querySelector('.tp-canvas');
fire(canvas, 'wheel'); fire(canvas, 'mousedown');
(listeners['mousemove'] || []).forEach(f => f(ev)); (listeners['mouseup'] || []).forEach(f => f(ev));
fire(viz.querySelector('svg.tp-graph'), 'dblclick');
console.log('ok ' + viz.querySelectorAll('g.node').length);
"""


def run_script_in_node(html: str) -> str:
    """Run the page's script against a minimal DOM in node.js, click everything; return node's stdout."""
    import tempfile

    parser = _Tree()
    parser.feed(html)
    with tempfile.TemporaryDirectory() as d:
        tree, script, harness = (os.path.join(d, n) for n in ("tree.json", "script.js", "harness.js"))
        with open(tree, "w") as f:
            json.dump(parser.root, f)
        with open(script, "w") as f:
            f.write("".join(parser.script))
        with open(harness, "w") as f:
            f.write(_NODE_HARNESS)
        p = subprocess.run(["node", harness, tree, script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok "), p.stdout
    return p.stdout


def test_html_fragment_and_document():
    g = mlp_graph()
    frag = viz.graph_to_html(g)
    assert frag.startswith('<div class="tp-viz"') and "<svg" in frag and "<!DOCTYPE" not in frag
    doc = viz.graph_to_html(g, full_document=True, title="mlp")
    assert doc.startswith("<!DOCTYPE html>") and "<title>mlp</title>" in doc
    # two drawings in one notebook do not share element ids
    a, b = viz.graph_to_html(g), viz.graph_to_html(g)
    assert a.split('id="', 1)[1].split('"')[0] != b.split('id="', 1)[1].split('"')[0]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_html_script_runs_without_errors():
    g = mlp_graph()
    kernels = viz.kernel_level_graph(g)
    out = run_script_in_node(viz.graph_to_html(g, full_document=True))
    assert out.strip() == f"ok {len(g.nodes) + 4 + 1 + kernels.number_of_nodes()}"


def test_closed_graph_reprs_for_jupyter():
    closed = tp.make_graph(lambda x: tp.sin(x).sum(), tp.ones(3))
    html = closed._repr_html_()
    assert html is not None and "<svg" in html
    if hasattr(closed, "_repr_svg_"):
        ET.fromstring(closed._repr_svg_())


def test_write_graph_by_suffix(tmp_path):
    g = square_graph()
    assert viz.write_graph(g, str(tmp_path / "a.svg")) == "svg"
    assert viz.write_graph(g, str(tmp_path / "a.html")) == "html"
    assert viz.write_graph(g, str(tmp_path / "a.dot")) == "dot"
    with pytest.raises(ValueError, match="output format"):
        viz.write_graph(g, str(tmp_path / "a.png"))


def test_nodes_in_no_kernel_are_marked_not_computed():
    g = square_graph()
    n0, n1 = g.nodes
    root = ET.fromstring(viz.graph_to_svg(g, kernels=[{"name": "k0_mul", "nodes": [n0]}]))
    ops = {e.get("data-name"): e for e in root.iter(f"{SVG_NS}g") if e.get("class") == "node op"}
    assert ops["%0"].get("data-kernel") == "k0_mul"
    assert ops["%1"].get("data-kernel") == viz.DEAD
    legend = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert viz.DEAD in legend
    assert "dashed" in viz.to_dot(g, kernels=[{"name": "k0_mul", "nodes": [n0]}])


# --- kernel colours, legend order, kernel-level view -------------------------------------------
def test_kernel_colours_are_distinct_and_readable():
    import itertools

    for n in (1, 12, 25, 40):
        cs = viz.kernel_colours(n)
        assert len(cs) == n and len(set(cs)) == n
        text = viz.relative_luminance(viz.TEXT_COLOUR)
        assert all((viz.relative_luminance(c) + 0.05) / (text + 0.05) >= 7.0 for c in cs)
    lab = lambda h: viz._srgb_to_lab(tuple(int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)))  # noqa: E731
    cs = viz.kernel_colours(25)
    closest = min(sum((a - b) ** 2 for a, b in zip(lab(x), lab(y))) ** 0.5 for x, y in itertools.combinations(cs, 2))
    assert closest > 10  # CIELAB distance: clearly different to the eye


def test_legend_counts_up_and_every_kernel_has_its_own_colour():
    g = mlp_graph()
    names = [f"k{i}_op" for i in range(len(g.nodes))]
    kernels = [(name, [i]) for i, name in enumerate(names)]
    svg = viz.graph_to_svg(g, kernels=kernels)
    keys = [e.get("data-key") for e in ET.fromstring(svg).iter(f"{SVG_NS}g") if e.get("data-key")]
    assert keys == names  # k0, k1, ..., k9, k10, ... (not k1, k10, k2)
    fills = {r.get("fill") for e in ET.fromstring(svg).iter(f"{SVG_NS}g") if e.get("data-key")
             for r in e.iter(f"{SVG_NS}rect")}
    assert len(fills) == len(names)
    assert viz.legend_order(["k10", viz.DEAD, "k2", "k1"]) == ["k1", "k2", "k10", viz.DEAD]


def test_legend_is_wide_enough_for_its_longest_label():
    g = mlp_graph()
    long = "k0_" + "x" * 60
    svg = viz.graph_to_svg(g, kernels=[(long, list(range(len(g.nodes))))])
    width = float(ET.fromstring(svg).get("width"))
    legend_x = float(re.search(r'class="legend" transform="translate\(([\d.]+)', svg).group(1))
    assert legend_x + 20 + len(long) * 6.7 <= width  # 11px monospace is ~6.6px per character


def test_kernel_level_view_has_one_box_per_kernel_and_sized_buffers():
    g = mlp_graph()
    K = viz.kernel_level_graph(g)
    kmap = viz._auto_kernels(g)
    assert {v for v, d in K.nodes(data=True) if d["kind"] == "kernel"} == set(kmap.values())
    for u, v, d in K.edges(data=True):
        assert d["bytes"] >= 0 and ("B" in d["shape"])
    # each buffer between kernels is a value computed in one kernel and read in another
    crossing = {(kmap[n.inputs[i].node], kmap[n]) for n in g.nodes for i in range(len(n.inputs))
                if n in kmap and n.inputs[i].node in kmap and kmap[n.inputs[i].node] != kmap[n]}
    assert crossing <= {(u, v) for u, v in K.edges()}
    svg = viz.kernel_view_svg(g)
    ET.fromstring(svg)
    assert svg.count('class="node kernel"') == len(set(kmap.values()))
    assert viz.kernel_view_svg(g, kernels=None) is None


def test_html_has_the_kernel_view_an_html_legend_and_wrapping_ir():
    html = viz.graph_to_html(mlp_graph())
    assert 'class="tp-view"' in html and "tp-kernels" in html and 'class="tp-legend"' in html
    assert "pre-wrap" in html


def test_every_ir_graph_displays_in_notebooks():
    from tensorplay.ir.passes.simplify import dce

    g = dce(tp.make_graph(lambda x: tp.sin(x).sum(), tp.ones(3)).graph)
    assert isinstance(g, ir.Graph)
    assert g._repr_html_().startswith('<div class="tp-viz"')
    ET.fromstring(g._repr_svg_())


def test_ir_does_not_import_the_drawing_code():
    code = ("import sys, tensorplay.ir as ir; "
            "assert not [m for m in sys.modules if m.startswith('tensorplay.tools')], 'ir imported tools'; "
            "b = ir.GraphBuilder('f'); x = b.add_input(ir.TensorType((2,), ir.float32)); "
            "g = b.build([b.sin(x)]); assert g._repr_svg_().startswith('<svg'); print('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "ok", p.stderr

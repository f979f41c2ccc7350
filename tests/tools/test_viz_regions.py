"""Graphs with regions in the pictures (SVG, HTML, DOT) and through the `tensorplay-ir` CLI: region nodes
are nested boxes holding their regions' drawings (a scan's body, a cond's two branches), to any depth."""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from tensorplay import ir
from tensorplay.ir import GraphBuilder, Region, TensorType, float32
from tensorplay.ir.printer import print_node, value_names
from tensorplay.ir.text import parse_graph
from tensorplay.tools import viz

from tensorplay.tools.cli import main as cli_main
from test_viz_drawing import run_script_in_node  # noqa: E402  (tests/tools is on sys.path)

SVG_NS = "{http://www.w3.org/2000/svg}"
T4 = TensorType((4,), float32)


def branch(name: str, op: str) -> Region:
    b = GraphBuilder(name)
    x = b.add_input(T4)
    return Region(b.build([getattr(b, op)(x)]))


def scan_with_cond() -> ir.Graph:
    """A scan whose body holds a cond: regions two deep."""
    body = GraphBuilder("body")
    a, c, x = body.add_input(T4), body.add_input(T4), body.add_input(T4)
    s = body.add(body.mul(a, c), x)
    total = body.reduce_sum(s, axes=(0,))
    taken = body.cond(body.gt(total, total), s, true=branch("t", "sin"), false=branch("f", "neg"))
    region = Region(body.build([body.tuple_get(taken, index=0), body.cos(s)]))
    b = GraphBuilder("f")
    a0, init, xs = b.add_input(T4), b.add_input(T4), b.add_input(TensorType((10, 4), float32))
    t = b.scan(a0, init, xs, body=region, num_consts=1, num_carry=1, length=10, reverse=False)
    return b.build([b.exp(b.tuple_get(t, index=0)), b.reduce_sum(b.tuple_get(t, index=1), axes=(0,))])


def children(el, cls: str):
    """Direct `<g>` children of `el` whose class list holds `cls`."""
    return [c for c in el if c.tag == SVG_NS + "g" and cls in c.get("class", "").split()]


def drawing_of(panel):
    """The translated drawing inside a region panel."""
    (g,) = [c for c in panel if c.tag == SVG_NS + "g" and c.get("transform")]
    return g


def region_nodes(root):
    return [g for g in root.iter(SVG_NS + "g") if g.get("class") == "node op region"]


def level_nodes(group):
    """The op nodes of one drawing level: `group` holds its edges and nodes groups."""
    nodes = children(group, "nodes")
    assert len(nodes) == 1
    return children(nodes[0], "node")


def rect(el):
    r = el.find(SVG_NS + "rect")
    return tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))


def inside(inner, outer, dx=0.0, dy=0.0) -> bool:
    x, y, w, h = inner
    X, Y, W, H = outer
    return X - 0.01 <= x + dx and x + dx + w <= X + W + 0.01 and Y - 0.01 <= y + dy and y + dy + h <= Y + H + 0.01


def translation(el):
    m = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", el.get("transform"))
    return float(m.group(1)), float(m.group(2))


def test_svg_nests_region_nodes_as_boxes_holding_their_regions():
    g = scan_with_cond()
    root = ET.fromstring(viz.graph_to_svg(g, kernels=None))
    scan_box, cond_box = region_nodes(root)
    assert scan_box.get("data-op") == "scan" and scan_box.get("data-name") == "%0"
    assert cond_box.get("data-op") == "cond" and cond_box.get("data-name") == "%0^body/%body.4"
    # the scan box holds one panel, the body, whose drawing has every node of the body region
    (panel,) = children(scan_box, "region")
    assert panel.get("data-region") == "body"
    inner = drawing_of(panel)
    body = g.nodes[0].attrs["body"].graph
    ops = [n for n in level_nodes(inner) if n.get("class").startswith("node op")]
    assert [n.get("data-op") for n in ops] == [n.prim.name for n in body.nodes]
    kinds = [n.get("class") for n in level_nodes(inner)]
    assert kinds.count("node input") == len(body.inputs) and kinds.count("node output") == len(body.outputs)
    # the cond inside it has two panels, false and true, each with its branch
    panels = children(cond_box, "region")
    assert [p.get("data-region") for p in panels] == ["false", "true"]
    for p, op in zip(panels, ("neg", "sin")):
        drawing = drawing_of(p)
        assert [n.get("data-op") for n in level_nodes(drawing) if n.get("data-op")] == [op]


def test_svg_region_boxes_contain_their_panels_and_nodes():
    root = ET.fromstring(viz.graph_to_svg(scan_with_cond(), kernels=None))
    for box in region_nodes(root):
        outer = rect(box)
        for panel in children(box, "region"):
            panel_rect = rect(panel)
            assert inside(panel_rect, outer)
            drawing = drawing_of(panel)
            dx, dy = translation(drawing)
            for node in level_nodes(drawing):
                shape = node.find(SVG_NS + "rect")
                if shape is None:  # an input: an ellipse
                    e = node.find(SVG_NS + "ellipse")
                    cx, cy, rx, ry = (float(e.get(k)) for k in ("cx", "cy", "rx", "ry"))
                    box_of = (cx - rx, cy - ry, 2 * rx, 2 * ry)
                else:
                    box_of = rect(node)
                assert inside(box_of, panel_rect, dx, dy), node.get("data-name")
        # panels side by side, never overlapping
        xs = [rect(p) for p in children(box, "region")]
        for a, b in zip(xs, xs[1:]):
            assert a[0] + a[2] <= b[0]


def test_svg_names_and_tooltips_inside_regions_are_the_printers():
    g = scan_with_cond()
    root = ET.fromstring(viz.graph_to_svg(g, kernels=None))
    body = g.nodes[0].attrs["body"].graph
    names = value_names(body, "body.")
    by_name = {el.get("data-name"): el for el in root.iter(SVG_NS + "g") if el.get("data-name")}
    for n in body.nodes:
        el = by_name["%0^body/" + names[n.out]]
        assert el.find(SVG_NS + "title").text == print_node(n, names)
    assert by_name["%0^body/%body.arg2"].find(SVG_NS + "title").text == "%body.arg2: tensor<4xf32>"
    true_graph = body.nodes[4].attrs["true"].graph
    tnames = value_names(true_graph, "true.")
    assert by_name["%0^body/%body.4^true/%true.0"].find(SVG_NS + "title").text == \
        print_node(true_graph.nodes[0], tnames)
    # every name is unique in the document, and every edge joins two drawn vertices of one level
    all_names = [el.get("data-name") for el in root.iter(SVG_NS + "g") if el.get("data-name")]
    assert len(all_names) == len(set(all_names))
    for e in root.iter(SVG_NS + "g"):
        if e.get("class") == "edge":
            src, dst = e.get("data-from"), e.get("data-to")
            assert src in by_name and dst in by_name
            assert src.rpartition("/")[0] == dst.rpartition("/")[0]
    # the tuple a control-flow node returns labels its edges with its elements
    assert "(4xf32, 10x4xf32)" in {t.text for t in root.iter(SVG_NS + "text")}


def test_legend_lists_the_families_used_inside_regions():
    root = ET.fromstring(viz.graph_to_svg(scan_with_cond(), kernels=None))
    keys = {el.get("data-key") for el in root.iter(SVG_NS + "g") if el.get("class") == "legend-item"}
    assert {"control", "elementwise", "reduction", "compare"} <= keys


def test_kernel_colours_outside_family_colours_inside():
    g = scan_with_cond()
    root = ET.fromstring(viz.graph_to_svg(g, kernels=[("k0_scan", [0]), ("k1_exp", [1, 3]), ("k2_sum", [2, 4])]))
    assert root.get("data-colour-by") == "kernel"
    (scan_box,) = [b for b in region_nodes(root) if b.get("data-name") == "%0"]
    assert scan_box.get("data-kernel") == "k0_scan"
    inner = [el for el in scan_box.iter(SVG_NS + "g") if el.get("data-op") == "mul"]
    assert inner[0].get("data-family") == "elementwise"
    assert inner[0].find(SVG_NS + "rect").get("fill") == viz.FAMILY_COLOURS["elementwise"]


def test_dot_nests_clusters_for_regions():
    text = viz.to_dot(scan_with_cond(), kernels=None)
    stack, parents = [], {}
    for line in text.splitlines():
        m = re.match(r'\s*subgraph "([^"]+)" \{', line)
        if m:
            parents[m.group(1)] = stack[-1] if stack else None
            stack.append(m.group(1))
        elif line.strip() == "}" and stack:
            stack.pop()
    assert parents == {"cluster_%0": None, "cluster_%0^body": "cluster_%0",
                       "cluster_%0^body/%body.4": "cluster_%0^body",
                       "cluster_%0^body/%body.4^false": "cluster_%0^body/%body.4",
                       "cluster_%0^body/%body.4^true": "cluster_%0^body/%body.4"}
    assert '"%0^body/%body.4^true/%true.arg0" -> "%0^body/%body.4^true/%true.0" [label="4xf32"];' in text
    assert '"%arg2" -> "%0" [label="10x4xf32"];' in text
    if shutil.which("dot"):
        assert viz.render_with_graphviz(text, "svg").startswith(b"<?xml")


def test_html_view_of_regions_runs_its_script():
    if shutil.which("node") is None:
        pytest.skip("node.js is not installed")
    page = viz.graph_to_html(scan_with_cond(), kernels=None, full_document=True)
    assert page.count('class="node op region"') == 2
    assert run_script_in_node(page).startswith("ok ")


def test_kernel_view_sizes_a_tuple_buffer_by_its_elements():
    K = viz.kernel_level_graph(scan_with_cond(), [("k0", [0]), ("k1", [1, 2, 3, 4])])
    # the scan's tuple (4 + 40 float32) flows from k0 to k1
    (edge,) = [d for _, _, d in K.edges("k0", data=True)]
    assert edge["bytes"] == 4 * (4 + 40) and edge["type"] == "tuple<4xf32, 10x4xf32>"


# --- the CLI (in this process: test_cli_end_to_end covers the console script) -----------------------
class Run:
    def __init__(self, status: int, out: str, err: str):
        self.returncode, self.stdout, self.stderr = status, out, err


@pytest.fixture
def cli(capsys):
    def run(*args: str) -> Run:
        status = cli_main(list(args))
        captured = capsys.readouterr()
        return Run(status, captured.out, captured.err)

    return run


@pytest.fixture
def region_ir(tmp_path):
    path = tmp_path / "scan.tpir"
    path.write_text(str(scan_with_cond()))
    return path


def test_cli_dump_prints_regions_nested_and_the_text_parses_back(region_ir, cli):
    p = cli("dump", str(region_ir))
    assert p.returncode == 0, p.stderr
    text = p.stdout.split("//----- //\n", 1)[1]
    lines = text.splitlines()
    indent = {ln.strip().split(" ")[0]: len(ln) - len(ln.lstrip()) for ln in lines if ln.strip().startswith("%")}
    assert indent["%0"] == 2 and indent["%body.0"] == 6 and indent["%true.0"] == 10
    assert "^body(%body.arg0: tensor<4xf32>" in text and "^false(" in text and "^true(" in text
    assert str(parse_graph(text)) == str(scan_with_cond())


def test_cli_verify_opt_and_viz_accept_regions(region_ir, tmp_path, cli):
    p = cli("verify", str(region_ir))
    assert p.returncode == 0 and "ok: @f" in p.stdout, p.stderr
    p = cli("opt", str(region_ir), "--pass", "simplify")
    assert p.returncode == 0, p.stderr
    assert "tp.scan" in p.stdout and "tp.cond" in p.stdout
    out = tmp_path / "scan.svg"
    p = cli("viz", str(region_ir), "-o", str(out))
    assert p.returncode == 0, p.stderr
    root = ET.parse(out).getroot()
    assert len(region_nodes(root)) == 2


TRACED = '''
import tensorplay as tp


def cumulative(xs):
    def step(c, x):
        c = tp.tanh(c + x)
        return c, c * 2.0
    c, ys = tp.scan(step, tp.zeros(3), xs)
    return ys.sum() + c.sum()
'''


def test_cli_dump_of_a_traced_scan_and_its_gradient(tmp_path, cli):
    module = tmp_path / "scanmod.py"
    module.write_text(TRACED)
    p = cli("dump", f"{module}:cumulative", "--arg", "f32[5,3]", "--transform", "grad")
    assert p.returncode == 0, p.stderr
    traced, after_grad = p.stdout.split("// -----// stage 1: after grad //----- //")
    assert traced.count("tp.scan") == 1 and "reverse = false" in traced
    assert after_grad.count("tp.scan") == 2 and "reverse = true" in after_grad  # the backward pass is a loop
    assert "    ^body(%body.arg0: tensor<3xf32>" in after_grad and "      %body.0 = " in after_grad
    p = cli("run", f"{module}:cumulative", "--arg", "f32[5,3]")  # compiled (real loops) vs interpreter
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok" in p.stdout
    out = tmp_path / "grad.svg"
    p = cli("viz", f"{module}:cumulative", "--arg", "f32[5,3]", "--transform", "grad", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert [b.get("data-op") for b in region_nodes(ET.parse(out).getroot())] == ["scan", "scan"]

"""The verifier accepts every well-formed graph and rejects broken ones, showing the IR around the bad node."""
import pytest
from hypothesis import given

from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Graph, Node
from tensorplay.ir.text import print_graph
from tensorplay.ir.types import TensorType
from tensorplay.ir.verify import VerificationError, verify, verify_text
from tests.ir.strategies import graphs, single_node_graph
from tests.prim_samples import ALL_SAMPLES, sample_id

V3 = TensorType((3,), dt.float32)
V4 = TensorType((4,), dt.float32)
SIN, COS, ADD = (ir.get_primitive(n) for n in ("sin", "cos", "add"))


@pytest.mark.parametrize("s", ALL_SAMPLES, ids=sample_id)
def test_accepts_every_sample_graph(s):
    verify(single_node_graph(s))


@given(graphs())
def test_accepts_random_graphs(g):
    verify(g)


def chain():
    """x -> sin -> cos -> add(sin, cos): four lines of body to break in different ways."""
    b = ir.GraphBuilder("f")
    x = b.add_input(V3)
    s = b.sin(x)
    c = b.cos(s)
    a = b.add(s, c)
    return b.build([a]), x, s, c, a


def test_accepts_chain_and_its_text():
    g = chain()[0]
    verify(g)
    assert verify_text(print_graph(g)) == []


def _rejects(g: Graph, *fragments: str, line: str | None = None) -> VerificationError:
    with pytest.raises(VerificationError) as info:
        verify(g)
    e = info.value
    assert isinstance(e, ValueError)
    text = str(e)
    for f in fragments:
        assert f in text, text
    if line is not None:  # the marked line of the excerpt
        marked = [ln for ln in text.splitlines() if ln.startswith("--> ")]
        assert marked == ["--> " + line], text
    return e


def test_use_before_definition():
    g, x, s, c, a = chain()
    broken = Graph(g.inputs, [s.node, a.node, c.node], g.outputs)
    e = _rejects(broken, "node 1 (%1 = tp.add)", "operand 1 (%2) is used before it is defined (by node 2)",
                 line="  %1 = tp.add %0, %2 : tensor<3xf32>")
    assert e.node is a.node and e.node_index == 1


def test_operand_not_in_graph():
    g, x, s, c, a = chain()
    stranger = ir.GraphBuilder().add_input(V3)
    node = Node(SIN, (stranger,), {}, V3)
    _rejects(Graph(g.inputs, [s.node, node], [node.out]), "node 1 (%1 = tp.sin)",
             "operand 0 (tensor<3xf32>) is not defined in the graph", line="  %1 = tp.sin %undef0 : tensor<3xf32>")


def test_wrong_result_type():
    g, x, s, c, a = chain()
    bad = Node(COS, (s,), {}, V4)
    add = Node(ADD, (s, bad.out), {}, V3)
    _rejects(Graph(g.inputs, [s.node, bad, add], [add.out]), "node 1 (%1 = tp.cos)",
             "result type tensor<4xf32> is recorded, but tp.cos derives tensor<3xf32>",
             line="  %1 = tp.cos %0 : tensor<4xf32>")


def test_wrong_arity():
    g, x, s, c, a = chain()
    bad = Node(SIN, (x, s), {}, V3)
    _rejects(Graph(g.inputs, [s.node, bad], [bad.out]), "node 1 (%1 = tp.sin)", "tp.sin takes 1 operand(s), got 2",
             line="  %1 = tp.sin %arg0, %0 : tensor<3xf32>")
    bad = Node(ADD, (x,), {}, V3)
    _rejects(Graph(g.inputs, [bad], [bad.out]), "node 0 (%0 = tp.add)", "tp.add takes 2 operand(s), got 1")


def test_shape_rule_raising():
    b = ir.GraphBuilder()
    x, y = b.add_input(V3), b.add_input(V4)
    bad = Node(ADD, (x, y), {}, V3)
    _rejects(Graph([x, y], [bad], [bad.out]), "node 0 (%0 = tp.add)", "shape rule of tp.add rejects",
             "(3,)", "(4,)")


def test_missing_attribute_and_unhashable_attribute():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((2, 3), dt.float32))
    bad = Node(ir.get_primitive("reduce_sum"), (x,), {}, TensorType((), dt.float32))
    _rejects(Graph([x], [bad], [bad.out]), "tp.reduce_sum rejects", "axes")
    bad = Node(ir.get_primitive("reshape"), (x,), {"shape": [6]}, TensorType((6,), dt.float32))
    _rejects(Graph([x], [bad], [bad.out]), "attribute shape = [6] is not hashable")


def test_undefined_output():
    g, x, s, c, a = chain()
    stray = Node(SIN, (x,), {}, V3)
    _rejects(Graph(g.inputs, g.nodes, [a, stray.out]), "output 1", "is not defined in the graph",
             line="  return %2, %undef0")


def test_value_defined_twice_and_input_listed_twice():
    g, x, s, c, a = chain()
    _rejects(Graph(g.inputs, [s.node, s.node, c.node, a.node], g.outputs), "node 1 (%0 = tp.sin)",
             "defined twice (already by node 0)")
    _rejects(Graph([x, x], g.nodes, g.outputs), "input 1 is the same value as input 0")


def test_excerpt_is_elided_around_the_bad_node():
    b = ir.GraphBuilder("long")
    v = b.add_input(V3)
    for _ in range(12):
        v = b.sin(v)
    g = b.build([v])
    bad = Node(COS, (g.nodes[5].out,), {}, V4)
    nodes = g.nodes[:6] + [bad] + g.nodes[6:]
    text = str(_rejects(Graph(g.inputs, nodes, g.outputs), "node 6 (%6 = tp.cos)"))
    excerpt = text.split("\n\n", 1)[1].splitlines()
    assert excerpt[0] == "    ..." and excerpt[-1] == "    ..."
    assert len(excerpt) == 2 + 7  # three lines either side of the marked one


# --- verify_text ----------------------------------------------------------------------------------
def test_verify_text_reports_every_type_error_with_positions():
    text = """func @f(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
  %0 = tp.add %a, %b : tensor<3xf32>
  %1 = tp.sin %0 : tensor<5xf32>
  %2 = tp.cos %1, %1 : tensor<3xf32>
  return %2
}"""
    errors = verify_text(text)
    assert [(e.line, e.column) for e in errors] == [(2, 8), (3, 20), (4, 8)]
    assert "(3,)" in errors[0].message and "(4,)" in errors[0].message
    assert "tensor<5xf32> does not match the type tensor<3xf32>" in errors[1].message
    assert "takes 1 operand(s), got 2" in errors[2].message


def test_verify_text_stops_at_a_syntax_error():
    text = "func @f(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = tp.sin %a : tensor<4xf32>\n  return %9\n}"
    errors = verify_text(text)
    assert [(e.line, e.column) for e in errors] == [(2, 20), (3, 10)]  # the type error, then the fatal one
    assert "undefined value %9" in errors[-1].message
    assert [(e.line, e.column) for e in verify_text("func @f(\n  %a tensor<3xf32>")] == [(2, 6)]
    assert verify_text("?")[0].message == "unexpected character '?'"


def test_non_values_are_reported_not_crashed_on():
    g, x, s, c, a = chain()
    _rejects(Graph(g.inputs, g.nodes, [a, "oops"]), "output 1 is a str, not an IR Value", line="  return %2, <str>")
    _rejects(Graph([x, 3], g.nodes, g.outputs), "input 1 is a int")
    bad = Node(SIN, ([x],), {}, V3)
    _rejects(Graph(g.inputs, [bad], [bad.out]), "operand 0 is a list, not an IR Value")

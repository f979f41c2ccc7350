"""Control flow in the IR: TupleType and Region, the text format of nested regions, the verifier,
the type rules' errors, the batching rules on graphs, and simplify's control-flow rules."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import ir
from tensorplay.ir import GraphBuilder, Region, TensorType, TupleType, dtypes as dt
from tensorplay.ir.passes.batching import batch_graph
from tensorplay.ir.passes.simplify import simplify
from tensorplay.ir.text import ParseError, parse_graph, parse_type, print_graph
from tensorplay.ir.verify import VerificationError, verify, verify_text

F3 = TensorType((3,), dt.float32)
F = TensorType((), dt.float32)
B = TensorType((), dt.bool_)
I = TensorType((), dt.int32)


def region(name, in_types, body):
    b = GraphBuilder(name)
    return Region(b.build(body(b, *[b.add_input(t) for t in in_types])))


def nested_graph():
    """A scan whose body holds a cond whose true branch holds a while loop."""
    count = region("cond", (I, F3), lambda b, i, x: [b.lt(i, b.const(2, (), dt.int32))])
    step = region("body", (I, F3), lambda b, i, x: [b.add(i, b.const(1, (), dt.int32)), b.mul(x, x)])

    def true(b, x):
        t = b.while_loop(b.const(0, (), dt.int32), x, cond=count, body=step, num_cond_consts=0, num_body_consts=0)
        return [b.tuple_get(t, index=1)]

    branches = {"true": region("true", (F3,), true), "false": region("false", (F3,), lambda b, x: [b.neg(x)])}

    def body(b, p, c, x):
        y = b.tuple_get(b.cond(p, c, **branches), index=0)
        return [b.add(y, x), b.reduce_sum(y, axes=(0,))]

    g = GraphBuilder("nested")
    p, init, xs = g.add_input(B), g.add_input(F3), g.add_input(TensorType((4, 3), dt.float32))
    t = g.scan(p, init, xs, body=region("body", (B, F3, F3), body), num_consts=1, num_carry=1, length=4,
               reverse=False)
    return g.build(g.results(t))


def reference(p, init, xs):
    c, ys = init, []
    for x in xs:
        y = c ** 4 if p else -c
        c, _ = y + x, ys.append(y.sum())
    return c, np.array(ys, np.float32)


ARGS = [np.array(True), np.array([0.5, -0.3, 0.9], np.float32), np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)]


# --- types and regions -----------------------------------------------------------------------------
def test_tuple_type_prints_parses_and_compares():
    t = TupleType((TensorType((3, 4), dt.float32), I))
    assert str(t) == "tuple<3x4xf32, i32>"
    assert parse_type(str(t)) == t and hash(parse_type(str(t))) == hash(t)
    assert parse_type("tuple<>") == TupleType(())
    with pytest.raises(TypeError):
        TupleType((t,))


def test_region_equality_is_structural_and_regions_are_immutable():
    a = region("a", (F3,), lambda b, x: [b.sin(x)])
    b = region("other_name", (F3,), lambda b, x: [b.sin(x)])
    c = region("a", (F3,), lambda b, x: [b.cos(x)])
    assert a == b and hash(a) == hash(b) and a != c
    assert a.in_types == [F3] and a.out_types == [F3]
    with pytest.raises(AttributeError):
        a.graph = None
    with pytest.raises(TypeError, match="tuple"):
        Region(_tuple_output_graph())


def _tuple_output_graph():
    b = GraphBuilder()
    x = b.add_input(F3)
    return b.build([b.make_tuple(x, x)])


def test_structural_key_sees_region_contents():
    g1, g2 = nested_graph(), nested_graph()
    assert g1.structural_key() == g2.structural_key()
    other = print_graph(g1).replace("tp.neg", "tp.sin")
    assert parse_graph(other).structural_key() != g1.structural_key()


# --- interpreter, text format, verifier ---------------------------------------------------------------
def test_interpreter_runs_nested_regions():
    for p in (True, False):
        args = [np.array(p)] + ARGS[1:]
        got = ir.interpret(nested_graph(), args)
        want = reference(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_nested_regions_round_trip_through_text():
    g = nested_graph()
    text = print_graph(g)
    assert "^body(" in text and "^true(" in text and "^cond(" in text
    g2 = parse_graph(text)
    assert print_graph(g2) == text
    assert g2.structural_key() == g.structural_key()
    verify(g2)
    for a, b in zip(ir.interpret(g2, ARGS), ir.interpret(g, ARGS)):
        np.testing.assert_array_equal(a, b)


def test_printed_form_nests_in_mlir_style():
    text = print_graph(simple_scan())
    assert text.splitlines()[1:5] == [
        "  %0 = tp.scan %arg0, %arg1 {length = 4, num_carry = 1, num_consts = 0, reverse = false} "
        ": tuple<f32, 4xf32> {",
        "    ^body(%body.arg0: tensor<f32>, %body.arg1: tensor<f32>) -> (tensor<f32>, tensor<f32>):",
        "      %body.0 = tp.add %body.arg0, %body.arg1 : tensor<f32>",
        "      return %body.0, %body.arg0",
    ]


def simple_scan():
    body = region("body", (F, F), lambda b, c, x: [b.add(c, x), c])
    g = GraphBuilder("running_sum")
    t = g.scan(g.add_input(F), g.add_input(TensorType((4,), dt.float32)), body=body, num_consts=0, num_carry=1,
               length=4, reverse=False)
    return g.build(g.results(t))


PARSE_ERRORS = [
    ("%body.arg1: tensor<f32>) -> (tensor<f32>, tensor<f32>):\n      %body.0 = tp.add %body.arg0, %body.arg1",
     "%body.arg1: tensor<f64>) -> (tensor<f32>, tensor<f32>):\n      %body.0 = tp.add %body.arg0, %body.arg0",
     "scan: the body region takes"),
    ("      return %body.0, %body.arg0", "      return %body.0", "return has 1 values but the signature declares 2"),
    ("      %body.0 = tp.add %body.arg0, %body.arg1", "      %body.0 = tp.add %body.arg0, %arg1",
     "use of undefined value %arg1"),  # regions are closed: outer values are not in scope
    ("    ^body(", "    body(", "expected a region"),
]


@pytest.mark.parametrize("old,new,message", PARSE_ERRORS)
def test_parse_errors_in_regions(old, new, message):
    text = print_graph(simple_scan())
    assert old in text
    with pytest.raises(ParseError, match=message):
        parse_graph(text.replace(old, new))
    assert verify_text(text) == []


def test_verifier_checks_region_signatures_against_operands():
    g = simple_scan()
    node = g.nodes[0]
    node.attrs["body"] = region("body", (F, TensorType((), dt.float64)),
                                lambda b, c, x: [b.add(c, b.convert_element_type(x, dtype=dt.float32)), c])
    with pytest.raises(VerificationError, match=r"scan: the body region takes \(tensor<f32>, tensor<f64>\), but it "
                                                r"is given \(tensor<f32>, tensor<f32>\)"):
        verify(g)


def test_verifier_recurses_into_regions_and_shows_both_levels():
    g = nested_graph()
    inner = g.nodes[0].attrs["body"].graph
    inner.nodes[0], inner.nodes[1] = inner.nodes[1], inner.nodes[0]  # a use before its definition, inside
    with pytest.raises(VerificationError) as e:
        verify(g)
    assert "in its region ^body" in e.value.reason
    assert "used before it is defined" in str(e.value)
    assert "--> " in str(e.value) and "in the region ^body of" in str(e.value)


def test_verifier_rejects_tuple_graph_outputs():
    with pytest.raises(VerificationError, match="never tuples"):
        verify(_tuple_output_graph())


# --- type rules: errors naming the op and both types ------------------------------------------------
def types_error(prim, *types, **attrs):
    with pytest.raises((TypeError, ValueError)) as e:
        ir.get_primitive(prim).abstract_eval(*types, **attrs)
    return str(e.value)


def test_type_rule_errors():
    same = region("r", (F3,), lambda b, x: [x])
    other = region("r", (F3,), lambda b, x: [b.reduce_sum(x, axes=(0,))])
    msg = types_error("cond", B, F3, true=same, false=other)
    assert msg.startswith("cond:") and "tensor<3xf32>" in msg and "tensor<f32>" in msg
    assert "0-d bool" in types_error("cond", TensorType((2,), dt.bool_), F3, true=same, false=same)
    assert "0-d bool" in types_error("cond", F, F3, true=same, false=same)
    changes = region("body", (F3,), lambda b, x: [b.reduce_sum(x, axes=(0,))])
    test = region("cond", (F3,), lambda b, x: [b.gt(b.reduce_sum(x, axes=(0,)), b.const(1.0))])
    msg = types_error("while_loop", F3, cond=test, body=changes, num_cond_consts=0, num_body_consts=0)
    assert msg.startswith("while_loop: the body changes the carry type") and "tensor<f32>" in msg
    msg = types_error("while_loop", F3, cond=same, body=same, num_cond_consts=0, num_body_consts=0)
    assert "cond region must return one 0-d bool" in msg
    body = region("body", (F3, F3), lambda b, c, x: [c, x])
    msg = types_error("scan", F3, TensorType((5, 3), dt.float32), body=body, num_consts=0, num_carry=1, length=4,
                      reverse=False)
    assert msg.startswith("scan: xs[0] of type tensor<5x3xf32>") and "length 4" in msg
    assert "tuple" in types_error("tuple_get", F3, index=0)
    assert "out of range" in types_error("tuple_get", TupleType((F3,)), index=1)


# --- batching rules on graphs ------------------------------------------------------------------------
def test_batch_graph_of_nested_regions_matches_a_loop():
    g = nested_graph()
    rng = np.random.default_rng(0)
    ps = np.array([True, False, True])
    inits = rng.standard_normal((3, 3)).astype(np.float32) * 0.5
    bg = batch_graph(g, [0, 0, None], axis_size=3)
    verify(bg)
    got = ir.interpret(bg, [ps, inits, ARGS[2]])
    for i in range(3):
        want = reference(ps[i], inits[i], ARGS[2])
        np.testing.assert_allclose(got[0][i], want[0], rtol=1e-5)
        np.testing.assert_allclose(got[1][i], want[1], rtol=1e-5)


def test_batched_predicate_masks_each_sample_of_a_while_loop():
    test = region("cond", (F, I), lambda b, limit, n: [b.lt(b.convert_element_type(n, dtype=dt.float32), limit)])
    body = region("body", (I,), lambda b, n: [b.add(n, b.const(1, (), dt.int32))])
    g = GraphBuilder("count_to")
    limit, n0 = g.add_input(F), g.add_input(I)
    t = g.while_loop(limit, n0, cond=test, body=body, num_cond_consts=1, num_body_consts=0)
    bg = batch_graph(g.build(g.results(t)), [0, None], axis_size=4)
    verify(bg)
    (got,) = ir.interpret(bg, [np.array([0.5, 3.0, -1.0, 2.5], np.float32), np.array(0, np.int32)])
    np.testing.assert_array_equal(got, [1, 3, 0, 3])


# --- simplify --------------------------------------------------------------------------------------
def names(g):
    return [n.prim.name for n in g.nodes]


def test_constant_predicate_inlines_the_branch():
    g = GraphBuilder()
    x = g.add_input(F3)
    t = g.cond(g.const(False, (), dt.bool_), x, true=region("t", (F3,), lambda b, x: [b.sin(x)]),
               false=region("f", (F3,), lambda b, x: [b.cos(x)]))
    s = simplify(g.build(g.results(t)))
    assert names(s) == ["cos"]


def test_equal_branches_drop_the_cond():
    g = GraphBuilder()
    p, x = g.add_input(B), g.add_input(F3)
    r = region("r", (F3,), lambda b, x: [b.exp(x)])
    assert names(simplify(g.build(g.results(g.cond(p, x, true=r, false=r))))) == ["exp"]


def test_tuple_get_of_make_tuple_folds():
    g = GraphBuilder()
    x, y = g.add_input(F3), g.add_input(F)
    out = g.tuple_get(g.make_tuple(x, y), index=1)
    s = simplify(g.build([out]))
    assert s.nodes == [] and s.outputs[0] is s.inputs[1]


def test_dead_carries_outputs_and_body_nodes_are_dropped_and_invariants_hoisted():
    def body(b, w, c, unused, x):
        w2 = b.exp(w)                                  # loop-invariant
        _ = b.sin(c)                                   # dead
        return [b.add(b.mul(c, w2), x), b.add(unused, c), b.cos(x)]

    g = GraphBuilder()
    w, c, u, xs = g.add_input(F3), g.add_input(F3), g.add_input(F3), g.add_input(TensorType((4, 3), dt.float32))
    t = g.scan(w, c, u, xs, body=region("body", (F3, F3, F3, F3), body), num_consts=1, num_carry=2, length=4,
               reverse=False)
    graph = g.build([g.tuple_get(t, index=0)])
    s = simplify(graph)
    verify(s)
    assert names(s) == ["exp", "scan", "tuple_get"]
    new_body = s.nodes[1].attrs["body"].graph
    assert names(new_body) == ["mul", "add"]
    assert s.nodes[1].attrs["num_carry"] == 1 and len(s.nodes[1].out.type.elements) == 1
    args = [np.full(3, 0.1, np.float32), np.ones(3, np.float32), np.ones(3, np.float32),
            np.arange(12, dtype=np.float32).reshape(4, 3)]
    np.testing.assert_allclose(ir.interpret(s, args)[0], ir.interpret(graph, args)[0], rtol=1e-6)
    assert print_graph(simplify(s)) == print_graph(s)  # a fixed point


def test_while_loop_simplification_keeps_what_the_test_reads():
    test = region("cond", (I, F3, F3), lambda b, i, x, y: [b.lt(i, b.const(3, (), dt.int32))])
    body = region("body", (F3, I, F3, F3), lambda b, w, i, x, y: [
        b.add(i, b.const(1, (), dt.int32)), b.mul(x, b.exp(w)), b.add(y, x)])
    g = GraphBuilder()
    w, i, x, y = g.add_input(F3), g.add_input(I), g.add_input(F3), g.add_input(F3)
    t = g.while_loop(w, i, x, y, cond=test, body=body, num_cond_consts=0, num_body_consts=1)
    graph = g.build([g.tuple_get(t, index=1)])
    s = simplify(graph)
    verify(s)
    loop = next(n for n in s.nodes if n.prim.name == "while_loop")
    assert len(loop.out.type.elements) == 2  # the counter (read by the test) and x; y is gone
    assert "exp" in names(s) and "exp" not in names(loop.attrs["body"].graph)  # hoisted
    args = [np.full(3, 0.5, np.float32), np.array(0, np.int32), np.ones(3, np.float32), np.ones(3, np.float32)]
    np.testing.assert_allclose(ir.interpret(s, args)[0], ir.interpret(graph, args)[0], rtol=1e-6)


def test_zero_length_scan_and_never_taken_loop_fold_away():
    g = simple_scan()
    g0 = GraphBuilder()
    t = g0.scan(g0.add_input(F), g0.add_input(TensorType((0,), dt.float32)), body=g.nodes[0].attrs["body"],
                num_consts=0, num_carry=1, length=0, reverse=False)
    s = simplify(g0.build(g0.results(t)))
    assert "scan" not in names(s)
    test = region("cond", (F,), lambda b, x: [b.const(False, (), dt.bool_)])
    g1 = GraphBuilder()
    t = g1.while_loop(g1.add_input(F), cond=test, body=region("body", (F,), lambda b, x: [b.exp(x)]),
                      num_cond_consts=0, num_body_consts=0)
    s = simplify(g1.build(g1.results(t)))
    assert s.nodes == [] and s.outputs[0] is s.inputs[0]


def test_cse_merges_equal_loops():
    g = GraphBuilder()
    x, xs = g.add_input(F), g.add_input(TensorType((4,), dt.float32))
    body = simple_scan().nodes[0].attrs["body"]
    outs = [g.tuple_get(g.scan(x, xs, body=region("body", (F, F), lambda b, c, a: [b.add(c, a), c]) if k else body,
                               num_consts=0, num_carry=1, length=4, reverse=False), index=0) for k in range(2)]
    s = simplify(g.build([g.add(*outs)]))
    assert names(s).count("scan") == 1

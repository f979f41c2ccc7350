"""Constants in the IR: DenseElements, their text form, bind_constants, and every backend."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorplay as tp
from tensorplay import codegen, ir
from tensorplay.ir.constants import ELIDE_ABOVE, DenseElements, resources
from tensorplay.ir.interpreter import interpret
from tensorplay.ir.text import ParseError, parse_graph, print_graph
from tensorplay.ir.verify import verify

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def _graph_of(array: np.ndarray) -> ir.Graph:
    """@f(x) -> (x + c, c) with c the constant `array` (x of the same type)."""
    b = ir.GraphBuilder()
    x = b.add_input(DenseElements(array).type)
    c = b.emit("constant", value=DenseElements(array))
    s = b.emit("or" if array.dtype == np.bool_ else "add", x, c)
    return b.build([s, c])


arrays = st.sampled_from(DTYPES).flatmap(lambda d: hnp.arrays(
    d, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False) if np.dtype(d).kind == "f" else None))


@settings(max_examples=40, deadline=None)
@given(arrays)
def test_text_round_trip_keeps_every_element(a):
    g = _graph_of(a)
    text = print_graph(g)
    back = parse_graph(text, resources([g]))
    assert print_graph(back) == text
    np.testing.assert_array_equal(back.nodes[0].attrs["value"].array, a)
    verify(back)


def test_special_floats_and_splats_print_exactly():
    c = DenseElements(np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], np.float32))
    g = _graph_of(c.array)
    back = parse_graph(print_graph(g)).nodes[0].attrs["value"].array
    assert back.tobytes() == c.array.tobytes()  # -0.0 and the subnormal survive bit for bit
    splat = DenseElements(np.full((500,), 0.25, np.float32))
    assert "dense<0.25> : tensor<500xf32>" in print_graph(_graph_of(splat.array))


def test_equal_constants_are_equal_attributes():
    a, b = DenseElements(np.arange(4.0)), DenseElements([0.0, 1.0, 2.0, 3.0], ir.float64)
    assert a == b and hash(a) == hash(b) and a != DenseElements(np.arange(4, dtype=np.float32))
    assert _graph_of(a.array).structural_key() == _graph_of(b.array).structural_key()
    assert _graph_of(a.array).structural_key() != _graph_of(a.array + 1).structural_key()
    with pytest.raises(ValueError):
        a.array[0] = 5.0  # the graph's elements are read-only


def test_large_constants_are_elided_and_need_their_side_file():
    a = np.arange(ELIDE_ABOVE + 1, dtype=np.float64)
    g = _graph_of(a)
    text = print_graph(g)
    assert "dense_resource<c_" in text and str(ELIDE_ABOVE) not in text.split("dense_resource")[1].split(">")[0]
    with pytest.raises(ParseError, match="side file"):
        parse_graph(text)
    table = resources([g])
    np.testing.assert_array_equal(parse_graph(text, table).nodes[0].attrs["value"].array, a)
    (name,) = table
    with pytest.raises(ParseError, match="content hash"):
        parse_graph(text, {name: a + 1})
    with pytest.raises(ParseError, match="declares"):
        parse_graph(text, {name: a.astype(np.float32)})


def test_malformed_literals_are_parse_errors():
    ok = "func @f() -> tensor<2xf32> {\n  %0 = tp.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>\n  return %0\n}"
    parse_graph(ok)
    for bad, match in [("[1.0, 2.0, 3.0]", "shape"), ("[1.0, x]", "not a number"), ("[1.0, 2.0", "expected")]:
        with pytest.raises(ParseError, match=match):
            parse_graph(ok.replace("[1.0, 2.0]", bad, 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_code_reads_the_elements(dtype):
    rng = np.random.default_rng(1)
    for shape in [(), (1,), (3, 4), (0, 2), (ELIDE_ABOVE + 3,)]:
        a = np.asarray((rng.standard_normal(shape) * 5).astype(dtype))
        g = _graph_of(a)
        x = np.asarray((rng.standard_normal(shape) * 5).astype(dtype))
        want = interpret(g, [x])
        got = codegen.compile_graph(g)(x)
        for w, o in zip(want, got):
            np.testing.assert_array_equal(o, w)
        np.testing.assert_array_equal(got[1], a)


def test_bind_constants_and_self_contained_traces():
    w = tp.tensor(np.linspace(-1, 1, 100).astype(np.float32))

    def f(x):
        return tp.tanh(x * w + tp.eye(100)[3]).sum()

    x = tp.tensor(np.linspace(0, 1, 100).astype(np.float32))
    closed = tp.make_graph(f, x)
    assert len(closed.graph.inputs) > 1  # the captures are inputs: new values never recompile
    g = closed.self_contained_graph()
    assert len(g.inputs) == 1 and "tp.constant" in str(closed)
    got = interpret(parse_graph(print_graph(g), resources([g])), [x.numpy()])[0]
    np.testing.assert_allclose(got, f(x).numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="bind_constants"):
        ir.bind_constants(closed.graph, {0: np.zeros(3, np.float32)})


def test_constants_under_transforms():
    """A graph with constants goes through vmap, grad and simplify like any other."""
    from tensorplay.ir.passes.batching import batch_graph
    from tensorplay.ir.passes.reverse import vjp
    from tensorplay.ir.passes.simplify import simplify

    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = ir.GraphBuilder()
    x = b.add_input(ir.TensorType((3,), ir.float32))
    c = b.emit("constant", value=DenseElements(a))
    g = b.build([b.mul(b.sin(x), c)])
    xs = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    batched = batch_graph(g, in_dims=(0,), axis_size=2)
    np.testing.assert_allclose(interpret(batched, [xs])[0], np.sin(xs) * a, rtol=1e-6)
    back = vjp(g, [True])
    ct = np.ones(3, np.float32)
    residuals = interpret(back.forward, [xs[0]])[1:]
    (cotangent,) = interpret(back.backward, residuals + [ct])
    np.testing.assert_allclose(cotangent, np.cos(xs[0]) * a, rtol=1e-6)
    np.testing.assert_allclose(interpret(simplify(g), [xs[0]])[0], np.sin(xs[0]) * a, rtol=1e-6)

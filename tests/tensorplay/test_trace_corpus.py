"""Trace -> interpret equals eager for the corpus; traced graphs verify and round-trip through text."""
import numpy as np
import pytest

from tensorplay import ir
import tensorplay as tp
from tensorplay.ir.interpreter import interpret

from corpus import CORPUS

IDS = [c[0] for c in CORPUS]


def _flat(out):
    leaves, _ = tp._pytree.tree_flatten(out)
    return [np.asarray(leaf) for leaf in leaves]


def _run_traced(fn, args):
    closed = tp.make_graph(fn, *args)
    inputs = [np.asarray(a) for a in args] + [np.asarray(c) for c in closed.capture_tensors()]
    return closed, interpret(closed.graph, inputs)


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("name,fn,make", CORPUS, ids=IDS)
def test_trace_interpret_equals_eager(name, fn, make):
    args = make(np.random.default_rng(0))
    eager = _flat(fn(*args))
    closed, traced = _run_traced(fn, args)
    assert len(eager) == len(traced)
    for e, t in zip(eager, traced):
        assert e.shape == t.shape and e.dtype == t.dtype
        np.testing.assert_allclose(t, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,fn,make", CORPUS, ids=IDS)
def test_traced_graph_verifies_and_round_trips(name, fn, make):
    import tensorplay.ir.text as text_mod
    import tensorplay.ir.verify as verify_mod

    args = make(np.random.default_rng(0))
    closed = tp.make_graph(fn, *args)
    verify_mod.verify(closed.graph)
    printed = text_mod.print_graph(closed.graph)
    reparsed = text_mod.parse_graph(printed)
    assert text_mod.print_graph(reparsed) == printed
    verify_mod.verify(reparsed)


@pytest.mark.parametrize("name,fn,make", CORPUS, ids=IDS)
def test_compiled_equals_eager(name, fn, make):
    args = make(np.random.default_rng(1))
    eager = _flat(fn(*args))
    compiled = _flat(tp.compile(fn)(*args))
    for e, c in zip(eager, compiled):
        assert e.shape == c.shape and e.dtype == c.dtype
        np.testing.assert_allclose(c, e, rtol=2e-5, atol=2e-6)


def test_captured_tensors_are_read_at_call_time():
    w = tp.ones(3)
    f = tp.compile(lambda x: x * w)
    np.testing.assert_array_equal(f(tp.ones(3)).numpy(), np.ones(3))
    w.mul_(3)  # in-place update of the captured tensor
    np.testing.assert_array_equal(f(tp.ones(3)).numpy(), 3 * np.ones(3))
    assert f.trace_count == 1
    closed = tp.make_graph(lambda x: x * w, tp.ones(3))
    assert len(closed.graph.inputs) == 2 and closed.num_args == 1


def test_compile_retraces_on_new_signature():
    f = tp.compile(lambda x, n: x * n)
    f(tp.ones(3), 2)
    f(tp.ones(3), 2)
    assert f.trace_count == 1
    f(tp.ones(4), 2)
    f(tp.ones(3), 3)
    f(tp.ones(3, dtype=tp.float64), 2)
    assert f.trace_count == 4


def test_data_dependent_control_flow_raises():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(tp.TracingError, match="tp.where"):
        tp.make_graph(f, tp.ones(3))
    for conv in (float, int, lambda t: t.item(), lambda t: t.numpy()):
        with pytest.raises(tp.TracingError, match="make_graph"):
            tp.make_graph(lambda x: conv(x.sum()), tp.ones(3))


def test_pytree_arguments_and_outputs():
    def f(d, pair):
        a, b = pair
        return {"s": d["x"] * a, "t": [b + 1, d["y"].sum()]}

    d = {"x": tp.ones(2), "y": tp.arange(3.0)}
    pair = (tp.tensor(2.0), tp.zeros(2))
    eager = f(d, pair)
    compiled = tp.compile(f)(d, pair)
    assert set(compiled) == {"s", "t"}
    np.testing.assert_allclose(compiled["s"].numpy(), eager["s"].numpy())
    np.testing.assert_allclose(compiled["t"][1].numpy(), eager["t"][1].numpy())


def test_make_graph_text():
    g = tp.make_graph(lambda x: tp.sin(x).sum(), tp.ones(3))
    text = str(g)
    assert "tp.sin" in text and "tp.reduce_sum" in text and "tensor<3xf32>" in text


def test_leaked_tracer_is_an_error():
    leaked = []
    tp.make_graph(lambda x: leaked.append(x) or x, tp.ones(2))
    with pytest.raises(tp.TracingError, match="escaped"):
        leaked[0] + 1

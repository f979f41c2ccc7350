"""The lazy graph of `trace_function` (`Trace.finish(lazy=True)`, `_trace._traced`): when every node
was taped, a trace builds no `Graph` and runs no liveness walk; its key is the tape of all its nodes
(dead ones included) and the graph of the live nodes is built on first use (a pipeline-cache miss).

Checked: the built graph equals the eagerly built one (dead nodes dropped, links restored), the
key is read without building the graph, traces that differ only in a dead node or in the operand
order of a node get different keys, replacing the graph drops the tape key, and plain transforms
with dead code give their oracle's values and stop compiling after the first call."""
import numpy as np

import tensorplay as tp
from tensorplay import _trace, codegen
from tensorplay.func import grad, jacrev

RNG = np.random.default_rng(11)
V = RNG.standard_normal(5).astype(np.float32)
W = RNG.standard_normal((5, 5)).astype(np.float32)


def _with_dead(x):
    _ = tp.exp(x)  # dead: never returned
    return (tp.tanh(x) * x).sum()


def _without_dead(x):
    return (tp.tanh(x) * x).sum()


def test_the_key_is_read_without_building_the_graph_and_the_graph_drops_dead_nodes():
    x = tp.from_numpy(V)
    closed = _trace.trace_function(_with_dead, (x,), transform="grad")
    assert closed.__dict__["_graph"] is None and closed.__dict__["_lazy"] is not None
    key = closed.structural_key()
    assert key[0].__class__ is int                      # the tape key
    assert closed.__dict__["_graph"] is None             # ... read without a graph
    g = closed.graph
    assert [n.prim.name for n in g.nodes] == ["tanh", "mul", "reduce_sum"]
    assert all(n.out.node is n for n in g.nodes)
    assert closed.structural_key() == key and closed.graph is g
    assert closed.sigs is None  # the signatures described the dead node too
    ref = _trace.trace_function(_without_dead, (x,), transform="grad")
    assert ref.structural_key() != key                   # the dead exp is part of the tape key
    assert g.structural_key() == ref.graph.structural_key()
    assert ref.sigs is not None and ref.sigs[0] is ref.graph
    out = _trace.call_graph(g, [x] + closed.capture_tensors())[0]
    np.testing.assert_allclose(out.numpy(), (np.tanh(V) * V).sum(), rtol=1e-5)


def test_operand_order_and_repeated_operands_are_part_of_the_key():
    x, y = tp.from_numpy(V), tp.from_numpy(V[::-1].copy())
    fns = [lambda a, b: (a - b).sum(), lambda a, b: (b - a).sum(), lambda a, b: (a - a).sum()]
    keys = [_trace.trace_function(f, (x, y), transform="grad").structural_key() for f in fns]
    assert len(set(keys)) == 3
    again = [_trace.trace_function(f, (x, y), transform="grad").structural_key() for f in fns]
    assert keys == again


def test_replacing_the_graph_drops_the_tape_key():
    x = tp.from_numpy(V)
    closed = _trace.trace_function(_without_dead, (x,), transform="grad")
    other = _trace.trace_function(lambda x: (x * x).sum(), (x,), transform="grad")
    key = closed.structural_key()
    closed.graph = other.graph
    assert closed.structural_key() != key
    assert closed.structural_key() == ("struct", other.graph.structural_key())


def test_plain_transforms_with_dead_code_match_the_oracle_and_compile_once():
    w = tp.from_numpy(W)

    def f(x):
        h = tp.tanh(w @ x)
        _ = h * 3.0  # dead
        return (h * h).sum()

    def want_grad(v):
        h = np.tanh(W.astype(np.float64) @ v)
        return W.T.astype(np.float64) @ (2 * h * (1 - h * h))

    for v in (V, -V, np.zeros(5, np.float32)):
        np.testing.assert_allclose(grad(f)(tp.from_numpy(v)).numpy(), want_grad(v.astype(np.float64)),
                                   rtol=1e-4, atol=1e-5)
    c0 = codegen.compile_count()
    for _ in range(5):
        jacrev(f)(tp.from_numpy(V))
    c1 = codegen.compile_count()
    for _ in range(20):
        j = jacrev(f)(tp.from_numpy(V)).numpy()
    assert codegen.compile_count() == c1 >= c0
    np.testing.assert_allclose(j, want_grad(V.astype(np.float64)), rtol=1e-4, atol=1e-5)


def test_a_captured_tensor_updated_in_place_is_seen_and_a_different_capture_is_not_shared():
    a, b = tp.from_numpy(W.copy()), tp.from_numpy(2 * W)
    ga = grad(lambda x: (a @ x).sum())
    gb = grad(lambda x: (b @ x).sum())
    x = tp.from_numpy(V)
    for _ in range(2):
        np.testing.assert_allclose(ga(x).numpy(), a.numpy().sum(0), rtol=1e-5)
        np.testing.assert_allclose(gb(x).numpy(), 2 * W.sum(0), rtol=1e-5)
    a.mul_(3.0)
    np.testing.assert_allclose(ga(x).numpy(), 3 * W.sum(0), rtol=1e-5)

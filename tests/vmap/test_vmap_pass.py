"""The batching pass on raw graphs: every primitive, many in_dims, against the loop-and-stack oracle."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import ir
from tensorplay.ir.passes.batching import BatchingError, batch_graph, batched_outputs
from tensorplay.ir.types import TensorType
from prim_samples import ALL_SAMPLES, sample_id, samples
from vmap_testutil import assert_same, loop_and_stack, per_sample_graph, stack_at, vary, verify

F32 = ir.float32


def in_dims_combos(args: list[np.ndarray]):
    """Batch axis at 0, last, negative, middle, one operand at a time, and mixed positions."""
    n = len(args)
    seen = []

    def add(c):
        c = list(c)
        if c not in seen and any(d is not None for d in c):
            seen.append(c)

    add([0] * n)
    add([a.ndim for a in args])
    add([-1] * n)
    for i, a in enumerate(args):
        add([None] * i + [(a.ndim + 1) // 2] + [None] * (n - i - 1))
    add([(i + 1) % (a.ndim + 1) for i, a in enumerate(args)])
    add([None if i % 2 else a.ndim for i, a in enumerate(args)])
    return seen


def run_case(graph: ir.Graph, args: list[np.ndarray], in_dims, size: int, out_dim, randomness="error"):
    batched_args = []
    for a, d in zip(args, in_dims):
        dd = None if d is None else d % (a.ndim + 1)
        batched_args.append(stack_at([vary(a, b) for b in range(size)], dd, a))
    norm_dims = [None if d is None else d % (a.ndim + 1) for a, d in zip(args, in_dims)]
    bg = batch_graph(graph, in_dims, size, out_dims=out_dim, randomness=randomness)
    verify(bg)
    expected = loop_and_stack(graph, batched_args, norm_dims, size, out_dim)
    actual = ir.interpret(bg, batched_args)
    for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, f"output {k}, in_dims={in_dims} size={size} out_dim={out_dim}\n{bg}")
    return bg


@pytest.mark.parametrize("s", [s for s in ALL_SAMPLES if s.args], ids=sample_id)
def test_batching_rule_matches_loop_and_stack(s):
    graph = per_sample_graph(s.prim, list(s.args), s.attrs)
    for k, dims in enumerate(in_dims_combos(list(s.args))):
        out_dim = 0 if k % 2 == 0 else -1
        run_case(graph, list(s.args), dims, 3, out_dim)
        if k == 0:
            run_case(graph, list(s.args), dims, 1, -1)
            run_case(graph, list(s.args), dims, 0, 0)


@pytest.mark.parametrize("s", [s for s in ALL_SAMPLES if not s.args], ids=sample_id)
def test_operand_free_primitives_stay_unbatched(s):
    """iota/full under a batched graph: copied unchanged, broadcast only when an int out dim asks for it."""
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((2,), F32))
    c = b.emit(s.prim, **s.attrs)
    graph = b.build([c, b.sin(x)])
    bg = batch_graph(graph, [0], 4, out_dims=[None, 0])
    verify(bg)
    assert [n.prim.name for n in bg.nodes] == [s.prim, "sin"]
    out = ir.interpret(bg, [np.ones((4, 2), np.float32)])
    assert_same(out[0], ir.interpret(graph, [np.ones(2, np.float32)])[0])
    bg = batch_graph(graph, [0], 4, out_dims=[1 if c.ndim else 0, 0])
    assert_same(ir.interpret(bg, [np.ones((4, 2), np.float32)])[0],
                np.stack([ir.interpret(graph, [np.ones(2, np.float32)])[0]] * 4, axis=1 if c.ndim else 0))
    assert ir.get_primitive(s.prim).batch is not None


def test_every_primitive_has_a_batching_rule_and_samples():
    for p in ir.all_primitives():
        assert p.batch is not None, f"{p.name} has no batching rule"
        assert samples(p.name), f"{p.name} has no samples"


# --- structure: unbatched values stay unbatched, no needless broadcasts or moves ---------------
def _graph(build, *types):
    b = ir.GraphBuilder()
    vals = [b.add_input(t) for t in types]
    return b.build([build(b, *vals)])


def _prims(g):
    return [n.prim.name for n in g.nodes]


def test_unbatched_subgraph_is_copied_unchanged():
    t = TensorType((3,), F32)
    g = _graph(lambda b, x, w: b.mul(b.sin(x), b.exp(w)), t, t)
    bg = batch_graph(g, [0, None], 5)
    assert _prims(bg) == ["sin", "exp", "broadcast_in_dim", "mul"]
    assert bg.nodes[1].out.shape == (3,)  # exp(w) stays per-sample: computed once, not 5 times


def test_elementwise_with_equal_bdims_adds_nothing():
    t = TensorType((3, 4), F32)
    g = _graph(lambda b, x, y: b.add(x, y), t, t)
    assert _prims(batch_graph(g, [1, 1], 2, out_dims=1)) == ["add"]
    assert _prims(batch_graph(g, [2, 0], 2, out_dims=2)) == ["transpose", "add"]


def test_dot_general_does_not_broadcast():
    a, v = TensorType((3, 4), F32), TensorType((4,), F32)
    mv = _graph(lambda b, m, x: b.dot_general(m, x, contract=((1,), (0,)), batch=((), ())), a, v)
    for dims in ([0, None], [None, 0], [1, 0], [2, None], [None, None]):
        if dims == [None, None]:
            continue
        bg = batch_graph(mv, dims, 6, out_dims=-1)
        assert "broadcast_in_dim" not in _prims(bg), bg
        verify(bg)
    bg = batch_graph(mv, [0, 0], 6)
    assert bg.nodes[0].attrs["batch"] == ((0,), (0,))


def test_batched_outputs_and_out_dims_none():
    t = TensorType((3,), F32)
    b = ir.GraphBuilder()
    x, w = b.add_input(t), b.add_input(t)
    g = b.build([b.sin(x), b.cos(w), w])
    assert batched_outputs(g, [True, False]) == [True, False, False]
    bg = batch_graph(g, [0, None], 2, out_dims=[0, None, None])
    assert [v.shape for v in bg.outputs] == [(2, 3), (3,), (3,)]
    bg = batch_graph(g, [0, None], 2, out_dims=[1, 0, 1])  # int out dims broadcast unbatched outputs
    assert [v.shape for v in bg.outputs] == [(3, 2), (2, 3), (3, 2)]
    with pytest.raises(BatchingError, match=r"out_dims\[0\] is None, but output 0"):
        batch_graph(g, [0, None], 2, out_dims=[None, None, None])
    with pytest.raises(BatchingError, match="out of range"):
        batch_graph(g, [0, None], 2, out_dims=[2, 0, 0])
    with pytest.raises(BatchingError, match="in_dims"):
        batch_graph(g, [0], 2)
    with pytest.raises(BatchingError, match=r"in_dims\[0\] = 3 is out of range"):
        batch_graph(g, [3, None], 2)


def test_random_with_unbatched_key_follows_randomness():
    g = _graph(lambda b, k: b.random_uniform(k, shape=(3,), dtype=F32), TensorType((2,), ir.int64))
    key = np.array([7, 11], np.int64)
    with pytest.raises(BatchingError, match="randomness='error'"):
        batch_graph(g, [None], 4)
    with pytest.raises(BatchingError, match="batched key"):
        batch_graph(g, [None], 4, randomness="different")
    bg = batch_graph(g, [None], 4, randomness="same")
    out = ir.interpret(bg, [key])[0]
    assert out.shape == (4, 3) and (out == out[0]).all()
    bg = batch_graph(g, [None], 4, out_dims=None, randomness="same")
    assert ir.interpret(bg, [key])[0].shape == (3,)


@pytest.mark.parametrize("kd", [0, 1])
def test_random_with_batched_key_is_a_batch_of_keys(kd):
    g = _graph(lambda b, k: b.random_normal(k, shape=(2, 3), dtype=ir.float64), TensorType((2,), ir.int64))
    keys = np.array([[1, 0], [1, 6], [2, 0]], np.int64)
    bg = batch_graph(g, [kd], 3)
    out = ir.interpret(bg, [keys if kd == 0 else keys.T.copy()])[0]
    for i in range(3):
        np.testing.assert_array_equal(out[i], ir.interpret(g, [keys[i]])[0])


def test_missing_rule_is_a_clear_error():
    prim = ir.get_primitive("sin")
    saved, prim.batch = prim.batch, None
    try:
        g = _graph(lambda b, x: b.sin(x), TensorType((3,), F32))
        with pytest.raises(NotImplementedError, match="'sin' has no batching rule"):
            batch_graph(g, [0], 2)
    finally:
        prim.batch = saved


def test_nested_batching_of_a_batched_graph():
    """Batching a batched graph again is vmap(vmap(f)) at the IR level."""
    a, v = TensorType((3, 4), F32), TensorType((4,), F32)
    g = _graph(lambda b, m, x: b.reduce_max(b.dot_general(m, b.sin(x), contract=((1,), (0,)), batch=((), ())),
                                            axes=(0,)), a, v)
    inner = batch_graph(g, [None, 0], 5)       # x: (5, 4)
    outer = batch_graph(inner, [0, 1], 2)       # m: (2, 3, 4), x: (5, 2, 4)
    verify(outer)
    rng = np.random.default_rng(0)
    m, x = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(5, 2, 4)).astype(np.float32)
    out = ir.interpret(outer, [m, x])[0]
    expected = np.array([[ir.interpret(g, [m[i], x[j, i]])[0] for j in range(5)] for i in range(2)])
    assert_same(out, expected)

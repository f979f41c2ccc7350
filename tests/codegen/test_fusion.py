"""Fused graphs: random chains of elementwise, layout, reduction and dot ops,
compiled == interpreter; plus checks that fusion actually happens."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorplay import codegen
from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

FLOAT_UNARY = ["sin", "cos", "tanh", "logistic", "neg", "abs", "erf", "floor", "exp"]
FLOAT_BINARY = ["add", "sub", "mul", "max", "min", "atan2"]
INT_UNARY = ["neg", "abs", "sign", "logical_not"]
INT_BINARY = ["add", "sub", "mul", "max", "min", "rem", "div", "and", "or", "xor"]


def _full_rank_ops(b: ir.GraphBuilder, draw, x: ir.Value, pool: list, dtype: dt.DType) -> ir.Value:
    """One random op from `x` (and maybe another pool value) back to `x`'s shape."""
    shape = x.shape
    nd = len(shape)
    kind = draw(st.sampled_from(["unary", "binary", "binary", "layout", "reduce", "select", "dot"]))
    is_float = dtype.is_floating_point
    if kind == "unary":
        name = draw(st.sampled_from(FLOAT_UNARY if is_float else INT_UNARY))
        if name == "exp":
            return b.exp(b.tanh(x))  # keep magnitudes bounded
        return b.emit(name, x)
    if kind == "binary":
        y = draw(st.sampled_from(pool))
        return b.emit(draw(st.sampled_from(FLOAT_BINARY if is_float else INT_BINARY)), x, y)
    if kind == "select":
        y = draw(st.sampled_from(pool))
        return b.select(b.lt(x, y), y, x)
    if kind == "reduce":
        axes = tuple(sorted(draw(st.sets(st.integers(0, nd - 1), min_size=1))))
        red = draw(st.sampled_from(["reduce_sum", "reduce_max", "reduce_min"]))
        r = b.emit(red, x, axes=axes)
        if is_float and red == "reduce_sum":
            r = b.tanh(r)
        kept = tuple(i for i in range(nd) if i not in axes)
        return b.broadcast_in_dim(r, shape=shape, broadcast_dimensions=kept)
    if kind == "dot":
        if not is_float or nd < 1:
            return b.neg(x)
        n = shape[-1]
        w = b.emit("iota", shape=(n, n), dtype=dtype, dimension=draw(st.integers(0, 1)))
        w = b.sin(w)
        return b.dot_general(x, w, contract=((nd - 1,), (0,)), batch=((), ()))
    layout = draw(st.sampled_from(["transpose2", "rev", "reshape", "slice_pad", "concat", "take", "bcast"]))
    if layout == "transpose2":  # transpose there and back, via an elementwise op in between
        perm = tuple(draw(st.permutations(range(nd))))
        inv = tuple(int(i) for i in np.argsort(perm))
        t = b.transpose(x, permutation=perm)
        t = b.add(t, t)
        return b.transpose(t, permutation=inv)
    if layout == "rev":
        return b.rev(x, axes=tuple(sorted(draw(st.sets(st.integers(0, nd - 1))))))
    if layout == "reshape":
        flat = b.reshape(x, shape=(int(np.prod(shape)),))
        return b.reshape(b.mul(flat, flat), shape=shape)
    if layout == "slice_pad":
        ax = draw(st.integers(0, nd - 1))
        if shape[ax] < 2:
            return b.neg(x)
        start = [0] * nd
        limit = list(shape)
        start[ax] = 1
        s = b.slice(x, start_indices=tuple(start), limit_indices=tuple(limit), strides=(1,) * nd)
        low = [0] * nd
        low[ax] = 1
        return b.pad(s, low=tuple(low), high=(0,) * nd, interior=(0,) * nd, value=0 if not is_float else 0.5)
    if layout == "concat":
        ax = draw(st.integers(0, nd - 1))
        k = shape[ax] // 2
        lo, hi = [0] * nd, list(shape)
        hi[ax] = k
        first = b.slice(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=(1,) * nd)
        lo2 = [0] * nd
        lo2[ax] = k
        second = b.slice(x, start_indices=tuple(lo2), limit_indices=tuple(shape), strides=(1,) * nd)
        return b.concatenate(b.rev(second, axes=(ax,)), first, axis=ax)
    if layout == "take":
        ax = draw(st.integers(0, nd - 1))
        n = shape[ax]
        idx = b.emit("iota", shape=(n,), dtype=dt.int32, dimension=0)
        idx = b.sub(b.const(n - 1, (n,), dt.int32), idx)  # n-1 .. 0
        return b.take(x, idx, axis=ax)
    # bcast: reduce-free broadcast of a slice of size 1
    ax = draw(st.integers(0, nd - 1))
    start = [0] * nd
    limit = list(shape)
    limit[ax] = 1
    s = b.slice(x, start_indices=tuple(start), limit_indices=tuple(limit), strides=(1,) * nd)
    return b.broadcast_in_dim(s, shape=shape, broadcast_dimensions=tuple(range(nd)))


@st.composite
def random_graphs(draw):
    dtype = draw(st.sampled_from([dt.float32, dt.float64, dt.int32]))
    shape = draw(st.sampled_from([(7,), (3, 5), (2, 3, 4), (1, 6), (4, 1, 3), (17, 9)]))
    b = ir.GraphBuilder("fused")
    n_in = draw(st.integers(1, 3))
    pool = [b.add_input(TensorType(shape, dtype)) for _ in range(n_in)]
    for _ in range(draw(st.integers(1, 8))):
        x = draw(st.sampled_from(pool))
        pool.append(_full_rank_ops(b, draw, x, pool, dtype))
    outs = draw(st.lists(st.sampled_from(pool[n_in:]), min_size=1, max_size=3))
    g = b.build(outs)
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    if dtype.is_floating_point:
        args = [rng.uniform(-2, 2, shape).astype(dtype.np) for _ in range(n_in)]
    else:
        args = [rng.integers(-50, 50, shape).astype(dtype.np) for _ in range(n_in)]
    return g, args


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_random_fused_graphs_match_interpreter(case):
    g, args = case
    want = ir.interpret(g, args)
    exe = codegen.compile_graph(g)
    got = exe(*args)
    for w, o in zip(want, got):
        w = np.asarray(w)
        assert o.shape == w.shape and o.dtype == w.dtype
        if w.dtype.kind == "f":
            tol = 1e-4 if w.dtype == np.float32 else 1e-10
            np.testing.assert_allclose(o, w, rtol=tol, atol=tol, err_msg=str(exe.kernels))
        else:
            np.testing.assert_array_equal(o, w, err_msg=str(exe.kernels))


def _graph(build, *types):
    b = ir.GraphBuilder("g")
    xs = [b.add_input(t) for t in types]
    return b.build(build(b, *xs))


F32 = lambda *shape: TensorType(shape, dt.float32)  # noqa: E731


def test_elementwise_chain_is_one_flat_kernel():
    g = _graph(lambda b, x, y: [b.add(b.mul(b.sin(x), b.exp(b.neg(b.mul(x, x)))), b.tanh(y))], F32(8, 16), F32(8, 16))
    exe = codegen.compile_graph(g)
    assert len(exe.kernels) == 1 and exe.kernels[0]["flat"]
    assert exe.stats["arena_bytes"] == 0


def test_layout_chain_fuses_into_one_loop():
    def build(b, x):
        t = b.transpose(x, permutation=(1, 0))
        r = b.reshape(b.rev(t, axes=(0,)), shape=(4, 3))
        p = b.pad(r, low=(1, 0), high=(0, 1), interior=(0, 0), value=0.0)
        return [b.sin(b.slice(p, start_indices=(0, 0), limit_indices=(5, 4), strides=(2, 1)))]
    exe = codegen.compile_graph(_graph(build, F32(3, 4)))
    assert len(exe.kernels) == 1


def test_reduction_fuses_its_producers():
    g = _graph(lambda b, x: [b.reduce_sum(b.exp(b.sin(x)), axes=(1,))], F32(5, 7))
    exe = codegen.compile_graph(g)
    assert [k["kind"] for k in exe.kernels] == ["reduce_sum"]
    assert exe.kernels[0]["nodes"] == ["sin", "exp", "reduce_sum"]


def test_shared_expensive_value_is_materialised_once():
    def build(b, x):
        e = b.exp(x)
        return [b.add(b.slice(e, start_indices=(0,), limit_indices=(4,), strides=(1,)),
                      b.rev(b.slice(e, start_indices=(4,), limit_indices=(8,), strides=(1,)), axes=(0,)))]
    exe = codegen.compile_graph(_graph(build, F32(8)))
    assert len(exe.kernels) == 2  # exp once, then the layout kernel reading it twice


def test_outputs_of_one_loop_are_stored_together():
    def build(b, x):
        s = b.sin(x)
        return [s, b.mul(s, x)]
    g = _graph(build, F32(10))
    exe = codegen.compile_graph(g)
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    s, m = exe(x)
    np.testing.assert_allclose(m, s * x, rtol=1e-6)
    assert len(exe.kernels) == 1


def test_softmax_graph():
    def build(b, x):
        m = b.reduce_max(x, axes=(1,))
        e = b.exp(b.sub(x, b.broadcast_in_dim(m, shape=(4, 33), broadcast_dimensions=(0,))))
        s = b.reduce_sum(e, axes=(1,))
        return [b.div(e, b.broadcast_in_dim(s, shape=(4, 33), broadcast_dimensions=(0,)))]
    g = _graph(build, F32(4, 33))
    x = np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32) * 5
    got = codegen.compile_graph(g)(x)[0]
    np.testing.assert_allclose(got, ir.interpret(g, [x])[0], rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-5)


def test_column_and_full_reductions():
    x = np.random.default_rng(1).standard_normal((37, 19, 5)).astype(np.float64)
    for axes in [(0,), (1,), (2,), (0, 2), (0, 1, 2), (1, 2), ()]:
        for prim in ("reduce_sum", "reduce_max", "reduce_prod"):
            g = _graph(lambda b, v: [b.emit(prim, v, axes=axes)], TensorType(x.shape, dt.float64))
            np.testing.assert_allclose(codegen.compile_graph(g)(x)[0], ir.interpret(g, [x])[0], rtol=1e-12,
                                       err_msg=f"{prim} {axes}")


def test_dead_nodes_are_not_computed():
    def build(b, x):
        b.exp(b.sin(x))  # unused
        b.reduce_sum(x, axes=(0,))  # unused
        return [b.neg(x)]
    exe = codegen.compile_graph(_graph(build, F32(6)))
    assert [k["nodes"] for k in exe.kernels] == [["neg"]]


def test_layout_ops_on_empty_tensors():
    def build(b, x):
        r = b.reshape(x, shape=(3, 0))
        t = b.transpose(b.sin(r), permutation=(1, 0))
        return [b.reshape(t, shape=(0, 3)), b.reduce_sum(r, axes=(1,)), b.pad(r, low=(0, 1), high=(0, 1),
                                                                             interior=(0, 0), value=2.0)]
    g = _graph(build, F32(0, 3))
    x = np.zeros((0, 3), np.float32)
    for got, want in zip(codegen.compile_graph(g)(x), ir.interpret(g, [x])):
        np.testing.assert_array_equal(got, want)

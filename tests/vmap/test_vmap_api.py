"""tensorplay.func.vmap / chunk_vmap: the public API against loop-and-stack, every primitive, pytrees,
in_dims/out_dims, chunking, randomness, nesting and captures."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import ir
import tensorplay as tp
from tensorplay._trace import bind, call_graph
from tensorplay.func import chunk_vmap, vmap
from prim_samples import ALL_SAMPLES, node_graph, result_types, sample_id
from vmap_testutil import assert_same, stack_at, vary


def T(a) -> tp.Tensor:
    return tp.from_numpy(np.array(a, copy=True))


def loop_stack(fn, args, in_dims, size, out_dim=0, **kwargs):
    """Oracle at the API level: call `fn` per sample (eagerly) and stack the numpy results."""
    outs = []
    for i in range(size):
        sample = [a if d is None else a.select(d, i) for a, d in zip(args, in_dims)]
        outs.append(fn(*sample, **kwargs).numpy())
    return np.stack(outs, axis=out_dim)


# --- every primitive through the public API ---------------------------------------------------------
def _api_combos(args):
    n = len(args)
    combos = [[0] * n, [-1] * n]
    if n > 1:
        combos.append([None] * (n - 1) + [args[-1].ndim // 2])
    return combos


def _sample_fn(s):
    """The sample's primitive as a function of tensors, and whether it returns a tuple of them (a tuple
    operand or result: the sample's graph, packed and projected, run through `call_graph`)."""
    graph = node_graph(s.prim, list(s.args), s.attrs)
    if len(graph.nodes) == 1:
        return (lambda *xs: bind(s.prim, *xs, **s.attrs)), False
    return (lambda *xs: tuple(call_graph(graph, xs))), True


@pytest.mark.parametrize("s", [s for s in ALL_SAMPLES if s.args], ids=sample_id)
def test_vmap_of_every_primitive_matches_loop(s):
    f, several = _sample_fn(s)
    size = 3
    out_types = result_types(s.prim, list(s.args), s.attrs)
    for k, dims in enumerate(_api_combos(list(s.args))):
        args = [T(stack_at([vary(a, b) for b in range(size)], None if d is None else d % (a.ndim + 1), a))
                for a, d in zip(s.args, dims)]
        out_dims = [min(k % 2, t.ndim) for t in out_types]
        randomness = "different" if ir.get_primitive(s.prim).random else "error"
        in_dims = [None if d is None else d % (a.ndim + 1) for a, d in zip(s.args, dims)]
        if not several:
            actual = vmap(f, in_dims=tuple(dims), out_dims=out_dims[0], randomness=randomness)(*args)
            assert_same(actual.numpy(), loop_stack(f, args, in_dims, size, out_dims[0]), f"{s.prim} in_dims={dims}")
            continue
        actual = vmap(f, in_dims=tuple(dims), out_dims=tuple(out_dims), randomness=randomness)(*args)
        for j, d in enumerate(out_dims):
            expected = loop_stack(lambda *xs: f(*xs)[j], args, in_dims, size, d)
            assert_same(actual[j].numpy(), expected, f"{s.prim} output {j} in_dims={dims}")


# --- composite functions ----------------------------------------------------------------------------
def _rng(seed=0):
    return np.random.default_rng(seed)


COMPOSITES = {
    "softmax": (lambda x: tp.softmax(x, dim=-1), [(4, 5)]),
    "matmul": (lambda a, b: a @ b, [(3, 4), (4, 2)]),
    "mv": (lambda a, v: tp.mv(a, v), [(3, 4), (4,)]),
    "norm_and_where": (lambda x: tp.where(x > 0, x, -x).sum() / (x * x).sum().sqrt(), [(6,)]),
    "index_select": (lambda x, i: tp.index_select(x, 0, i), [(5, 3), "idx"]),
    "getitem": (lambda x: x[1:, ::2] * 2 + x[0, 0], [(4, 5)]),
    "logsumexp": (lambda x: tp.logsumexp(x, dim=0), [(3, 2)]),
    "cat_stack": (lambda x, y: tp.cat([x, tp.stack([y, y])], 0), [(2, 3), (3,)]),
    "reshape_permute": (lambda x: x.reshape(3, 2, 2).permute(2, 0, 1).flatten(), [(2, 6)]),
    "reductions": (lambda x: x.max(dim=1).values + x.argmin(dim=0).float().sum() + x.mean(), [(3, 4)]),
}


def _composite_args(specs, size, dims, rng):
    args = []
    for spec, d in zip(specs, dims):
        if spec == "idx":
            per = (2,)
            data = rng.integers(0, 5, size=(size,) + per) if d is not None else rng.integers(0, 5, size=per)
            args.append(T(np.moveaxis(data, 0, d) if d is not None else data))
            continue
        shape = spec if d is None else spec[:d] + (size,) + spec[d:]
        args.append(T(rng.normal(size=shape).astype(np.float32)))
    return args


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_functions(name):
    fn, specs = COMPOSITES[name]
    rng = _rng(1)
    combos = [[0] * len(specs), [len(s) if s != "idx" else 1 for s in specs]]
    if len(specs) > 1:
        combos += [[0] + [None] * (len(specs) - 1), [None] * (len(specs) - 1) + [0]]
    for dims in combos:
        args = _composite_args(specs, 4, dims, rng)
        actual = vmap(fn, in_dims=tuple(dims))(*args)
        assert_same(actual.numpy(), loop_stack(fn, args, dims, 4), f"{name} {dims}")


# --- in_dims -------------------------------------------------------------------------------------------
def test_in_dims_int_none_negative():
    rng = _rng()
    x = T(rng.normal(size=(3, 4, 5)).astype(np.float32))
    for d in (0, 1, 2, -1, -2, -3):
        dd = d % 3
        y = T(rng.normal(size=(x.shape[2 if dd != 2 else 1],)).astype(np.float32))

        def f(a, b):
            return (a * b).sum(0)

        assert_same(vmap(f, in_dims=(d, None))(x, y).numpy(), loop_stack(f, [x, y], [dd, None], x.shape[dd]))
        assert_same(vmap(f, in_dims=[d, None])(x, y).numpy(), loop_stack(f, [x, y], [dd, None], x.shape[dd]))
    z = T(rng.normal(size=(4, 3, 5)).astype(np.float32))
    g = lambda a, b: a * b  # noqa: E731
    assert_same(vmap(g, in_dims=1)(x, z.permute(1, 0, 2)).numpy(), loop_stack(g, [x, z.permute(1, 0, 2)], [1, 1], 4))


def test_nested_in_dims_and_pytree_outputs():
    rng = _rng(3)
    params = {"w": T(rng.normal(size=(4, 3, 2)).astype(np.float32)), "b": T(rng.normal(size=(2,)).astype(np.float32))}
    xs = [T(rng.normal(size=(3, 4)).astype(np.float32)), T(rng.normal(size=(4,)).astype(np.float32))]

    def f(p, pair, scale=1.0):
        x, s = pair
        y = (x @ p["w"] + p["b"]) * s * scale
        return {"y": y, "stats": (y.sum(), y.max())}

    out = vmap(f, in_dims=({"w": 0, "b": None}, (1, 0)))(params, xs, scale=2.0)
    assert set(out) == {"y", "stats"} and isinstance(out["stats"], tuple)
    for i in range(4):
        ref = f({"w": params["w"][i], "b": params["b"]}, (xs[0][:, i], xs[1][i]), scale=2.0)
        assert_same(out["y"][i].numpy(), ref["y"].numpy())
        assert_same(out["stats"][1][i].numpy(), ref["stats"][1].numpy())


def test_kwargs_and_non_tensor_arguments_pass_through():
    x = T(np.arange(6.0, dtype=np.float32).reshape(3, 2))
    w = T(np.array([10.0, 20.0], np.float32))
    seen = []

    def f(a, n, *, weight, mode="add"):
        seen.append((n, mode, tuple(weight.shape), weight.is_traced))
        return a * n + weight if mode == "add" else a - weight

    out = vmap(f, in_dims=(0, None))(x, 3, weight=w, mode="add")
    assert_same(out.numpy(), x.numpy() * 3 + w.numpy())
    assert seen == [(3, "add", (2,), False)]  # kwargs reach f whole and concrete, traced once
    out = vmap(f, in_dims=(0, None))(x, 2, weight=w, mode="sub")
    assert_same(out.numpy(), x.numpy() - w.numpy())


def test_unbatched_arguments_allow_python_control_flow():
    x = T(np.ones((3, 2), np.float32))
    flag = T(np.array(True))
    out = vmap(lambda a, c: a * 2 if bool(c) else a, in_dims=(0, None))(x, flag)
    assert_same(out.numpy(), 2 * np.ones((3, 2), np.float32))


# --- out_dims ---------------------------------------------------------------------------------------
def test_out_dims_per_output_negative_and_none():
    x = T(_rng(4).normal(size=(5, 3)).astype(np.float32))
    w = T(_rng(5).normal(size=(3,)).astype(np.float32))

    def f(a):
        return a * 2, a.sum(), w * 3

    o1, o2, o3 = vmap(f, out_dims=(1, 0, None))(x)
    assert_same(o1.numpy(), (x.numpy() * 2).T)
    assert o2.shape == (5,)
    assert_same(o3.numpy(), w.numpy() * 3)  # unbatched output, passed through
    o1, _, o3 = vmap(f, out_dims=-1)(x)
    assert o1.shape == (3, 5) and o3.shape == (3, 5)  # an unbatched output with an int out dim is broadcast
    assert_same(o3.numpy(), np.stack([w.numpy() * 3] * 5, axis=-1))
    assert vmap(lambda a: a, out_dims=(1,))(x).shape == (3, 5)
    nested = vmap(lambda a: {"p": (a, a.sum())}, out_dims={"p": (1, 0)})(x)
    assert nested["p"][0].shape == (3, 5) and nested["p"][1].shape == (5,)


def test_identity_and_capture_outputs():
    x = T(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    c = T(np.array([1.0, 2.0], np.float32))
    assert_same(vmap(lambda a: a, in_dims=1, out_dims=1)(x).numpy(), x.numpy())
    assert_same(vmap(lambda a: c)(x).numpy(), np.stack([c.numpy()] * 2))
    assert_same(vmap(lambda a: tp.zeros(2))(x).numpy(), np.zeros((2, 2), np.float32))


def test_none_outputs_and_static_outputs_with_out_dims_none():
    x = T(np.ones((2, 3), np.float32))
    a, b = vmap(lambda t: (t + 1, None))(x)
    assert b is None and a.shape == (2, 3)
    a, n = vmap(lambda t: (t + 1, "tag"), out_dims=(0, None))(x)
    assert n == "tag"


# --- chunking ---------------------------------------------------------------------------------------
def _chunk_fn(x, y, w):
    return {"a": tp.softmax(x @ w, dim=-1) * y.sum(), "b": (x.max(), w.sum())}


@pytest.mark.parametrize("size", [1, 5, 7])
def test_chunk_size_and_chunk_vmap_equal_unchunked(size):
    rng = _rng(size)
    x = T(rng.normal(size=(size, 3, 4)).astype(np.float32))
    y = T(rng.normal(size=(2, size)).astype(np.float32))
    w = T(rng.normal(size=(4, 2)).astype(np.float32))
    in_dims, out_dims = (0, 1, None), {"a": 2, "b": (0, None)}
    full = vmap(_chunk_fn, in_dims, out_dims)(x, y, w)
    for cs in range(1, size + 2):
        part = vmap(_chunk_fn, in_dims, out_dims, chunk_size=cs)(x, y, w)
        np.testing.assert_array_equal(part["a"].numpy(), full["a"].numpy())
        np.testing.assert_array_equal(part["b"][0].numpy(), full["b"][0].numpy())
        np.testing.assert_array_equal(part["b"][1].numpy(), full["b"][1].numpy())
    for chunks in range(1, size + 3):
        part = chunk_vmap(_chunk_fn, in_dims, out_dims, chunks=chunks)(x, y, w)
        np.testing.assert_array_equal(part["a"].numpy(), full["a"].numpy())


def test_chunking_an_empty_batch():
    x = T(np.zeros((0, 3), np.float32))
    assert vmap(lambda a: a.sum(), chunk_size=2)(x).shape == (0,)
    assert chunk_vmap(lambda a: a * 2, chunks=3)(x).shape == (0, 3)


@pytest.mark.parametrize("cs", [1, 2, 3, 4, 6])
def test_chunked_random_different_equals_unchunked(cs):
    x = T(np.zeros((6, 2), np.float32))

    def f(a):
        return a + tp.randn(2) + tp.rand(3).sum()

    tp.manual_seed(7)
    full = vmap(f, randomness="different")(x).numpy()
    after_full = tp.get_rng_state()
    tp.manual_seed(7)
    part = vmap(f, randomness="different", chunk_size=cs)(x).numpy()
    assert tp.get_rng_state() == after_full
    np.testing.assert_array_equal(part, full)
    tp.manual_seed(7)
    np.testing.assert_array_equal(chunk_vmap(f, randomness="different", chunks=cs)(x).numpy(), full)
    assert len({tuple(r) for r in full}) == 6  # every sample got its own draw


# --- randomness -------------------------------------------------------------------------------------
def test_randomness_modes():
    x = T(np.zeros((4, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"vmap\(.*randomness='error'"):
        vmap(lambda a: a + tp.randn(3))(x)
    same = vmap(lambda a: a + tp.randn(3), randomness="same")(x).numpy()
    assert (same == same[0]).all()
    diff = vmap(lambda a: a + tp.randn(3), randomness="different")(x).numpy()
    assert len({tuple(r) for r in diff}) == 4
    # 'different': sample i uses counters i*n .. i*n+n-1 of one key for n*B elements
    tp.manual_seed(11)
    diff = vmap(lambda a: a + tp.rand(3), randomness="different")(x).numpy()
    tp.manual_seed(11)
    np.testing.assert_array_equal(diff.reshape(-1), tp.rand(12).numpy())


def test_randomness_same_matches_unbatched_draw_and_advances_generator():
    x = T(np.zeros((3, 2), np.float32))
    tp.manual_seed(5)
    out = vmap(lambda a: a + tp.rand(2), randomness="same")(x).numpy()
    tp.manual_seed(5)
    np.testing.assert_array_equal(out[1], tp.rand(2).numpy())
    out2 = vmap(lambda a: a + tp.rand(2), randomness="same")(x).numpy()
    assert not np.array_equal(out, out2)  # a fresh key on every call


def test_nested_randomness():
    x = T(np.zeros((2, 3, 1), np.float32))
    inner_same = vmap(vmap(lambda a: a + tp.rand(1), randomness="same"), randomness="different")(x).numpy()
    assert (inner_same == inner_same[:, :1]).all() and inner_same[0, 0, 0] != inner_same[1, 0, 0]
    both = vmap(vmap(lambda a: a + tp.rand(1), randomness="different"), randomness="different")(x).numpy()
    assert len(set(both.reshape(-1).tolist())) == 6
    with pytest.raises(RuntimeError, match="randomness='error'"):
        vmap(vmap(lambda a: a + tp.rand(1), randomness="different"))(x)


# --- nesting and captures -----------------------------------------------------------------------------
def test_nested_vmap_matches_double_loop():
    rng = _rng(9)
    a = T(rng.normal(size=(2, 3, 4)).astype(np.float32))
    b = T(rng.normal(size=(4, 2)).astype(np.float32))

    def f(x, y):
        return (tp.sin(x) * y).sum()

    out = vmap(vmap(f, in_dims=(0, None)), in_dims=(0, 1))(a, b)
    expected = np.array([[f(a[i, j], b[:, i]).numpy() for j in range(3)] for i in range(2)])
    assert_same(out.numpy(), expected)
    out = vmap(vmap(f, in_dims=(None, 1)), in_dims=(0, None))(a, b)  # all pairs (a[i], b[:, j])
    assert_same(out.numpy(), np.array([[f(a[i], b[:, j]).numpy() for j in range(2)] for i in range(2)]))
    triple = vmap(vmap(vmap(lambda s: s * 2)))(a)
    assert_same(triple.numpy(), a.numpy() * 2)


def test_captured_tensors_are_read_at_every_call():
    w = T(np.ones(3, np.float32))
    f = vmap(lambda x: (x * w).sum())
    x = T(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert_same(f(x).numpy(), np.array([3.0, 12.0], np.float32))
    w.mul_(2)  # in place, outside the transform
    assert_same(f(x).numpy(), np.array([6.0, 24.0], np.float32))


def test_vmap_inside_compile():
    f = tp.compile(vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)))
    x = T(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    y = T(np.ones(3, np.float32))
    assert_same(f(x, y).numpy(), np.array([3.0, 12.0], np.float32))


def test_vmap_of_module():
    import tensorplay.nn as nn
    lin = nn.Linear(3, 2)
    x = T(_rng(4).normal(size=(5, 3)).astype(np.float32))
    assert_same(vmap(lin)(x).numpy(), lin(x).numpy())


def test_batched_graph_is_verified_and_lean():
    from tensorplay.ir.passes.batching import batch_graph
    from tensorplay._trace import trace_function
    from vmap_testutil import verify

    w = T(np.ones((4, 3), np.float32))
    closed = trace_function(lambda x: tp.tanh(w @ x), (T(np.ones(3, np.float32)),))
    bg = batch_graph(closed.graph, [0, None], 8)
    verify(bg)
    assert "broadcast_in_dim" not in [n.prim.name for n in bg.nodes]
    assert ir.interpret(bg, [np.ones((8, 3), np.float32), np.ones((4, 3), np.float32)])[0].shape == (8, 4)


def test_inner_vmap_captures_outer_batched_value():
    rng = _rng(12)
    xs = T(rng.normal(size=(3, 2)).astype(np.float32))
    ys = T(rng.normal(size=(4, 2)).astype(np.float32))
    out = vmap(lambda x: vmap(lambda y: (x * y).sum())(ys))(xs)  # x is captured by the inner function
    assert_same(out.numpy(), xs.numpy() @ ys.numpy().T)
    out = vmap(lambda x: vmap(lambda y: x, out_dims=1)(ys))(xs)  # a captured output is broadcast
    assert_same(out.numpy(), np.stack([xs.numpy()] * 4, axis=2))


def test_namedtuple_and_list_arguments():
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    p = Pair(T(np.ones((2, 3), np.float32)), T(np.arange(3.0, dtype=np.float32)))
    out = vmap(lambda q, l: q.a * q.b + l[0], in_dims=(Pair(0, None), [1]))(p, [T(np.ones((3, 2), np.float32))])
    assert_same(out.numpy(), np.ones((2, 3), np.float32) * np.arange(3.0, dtype=np.float32) + 1)
    res = vmap(lambda x: Pair(x, x.sum()))(p.a)
    assert isinstance(res, Pair) and res.b.shape == (2,)


# --- in-place writes -------------------------------------------------------------------------------
@pytest.mark.parametrize("chunk_size", [None, 2])
def test_inplace_writes_into_batched_arguments_reach_the_caller(chunk_size):
    x = T(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    before = x.numpy().copy()
    out = vmap(lambda r: r.mul_(2).sum(), in_dims=1, chunk_size=chunk_size)(x)  # like torch: x is written
    assert_same(out.numpy(), 2 * before.sum(0))
    assert_same(x.numpy(), 2 * before)
    y = T(np.zeros((2, 3), np.float32))
    vmap(lambda r: r.fill_(5), chunk_size=chunk_size)(y)  # an unbatched value written into a batched argument
    assert_same(y.numpy(), np.full((2, 3), 5, np.float32))
    z = T(np.zeros((4, 3), np.float32))
    vmap(lambda row, v: row[1:].copy_(v), in_dims=(0, 0), chunk_size=chunk_size)(z, T(np.ones((4, 2), np.float32)))
    assert_same(z.numpy(), np.concatenate([np.zeros((4, 1)), np.ones((4, 2))], 1).astype(np.float32))


def test_inplace_write_of_an_unbatched_value_into_a_shared_tensor_happens_once():
    counter = T(np.zeros((), np.float32))
    x = T(np.ones((5, 2), np.float32))
    out = vmap(lambda r: (counter.add_(1), r * 2)[1], chunk_size=2)(x)
    assert_same(out.numpy(), 2 * x.numpy())
    assert counter.item() == 1.0  # the function ran once, on the whole batch (as torch's vmap does)


def test_inplace_writes_under_nested_vmap():
    x = T(np.ones((2, 3, 4), np.float32))
    vmap(vmap(lambda v: v.add_(v.sum())))(x)
    assert_same(x.numpy(), np.full((2, 3, 4), 5.0, np.float32))

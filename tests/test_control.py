"""tp.cond / tp.while_loop / tp.fori_loop / tp.scan: eager, traced (interpreter), vmap, and every bad input.

Oracles: numpy by hand, loop-and-stack for vmap, and jax.lax on the same numbers where jax is installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay import ir
from tensorplay._trace import trace_function
from tensorplay.func import vmap
from tensorplay.ir.verify import verify


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    """Compiled code for regions is the codegen's (tested there): traced graphs run on the interpreter."""
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")


def T(a, dtype=np.float32):
    return tp.tensor(np.asarray(a, dtype))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(a, b, tol=1e-5):
    """Equal up to float32 rounding, relative to the largest magnitude (sums and products reorder)."""
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


def graph_of(fn, *args):
    g = trace_function(fn, args, transform="make_graph").graph
    verify(g)
    return g


# --- numpy references ------------------------------------------------------------------------------
def np_scan(f, init, xs, reverse=False):
    carry, ys = init, []
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in order:
        carry, y = f(carry, xs[i])
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, np.stack(ys)


# --- eager and traced values -------------------------------------------------------------------------
@pytest.mark.parametrize("p", [True, False])
def test_cond_eager_and_traced(p):
    x, w = rand(3), rand(3, seed=1)
    W = T(w)

    def f(x, flag):
        return tp.cond(flag, lambda a: (a * W).sin(), lambda a: a.cos() - W, (x,))

    want = np.sin(x * w) if p else np.cos(x) - w
    close(f(T(x), tp.tensor(p)), want)
    g = graph_of(f, T(x), tp.tensor(p))
    assert [n.prim.name for n in g.nodes].count("cond") == 1
    close(tp.compile(f)(T(x), tp.tensor(p)), want)  # one graph: both branches traced, the right one runs
    close(tp.compile(f)(T(x), tp.tensor(not p)), np.cos(x) - w if p else np.sin(x * w))


def test_cond_python_bool_pytrees_and_several_operands():
    a, b = T([1.0, 2.0]), T([3.0])
    out = tp.cond(False, lambda a, b: {"s": a.sum() + b, "p": (a * 2, b)},
                  lambda a, b: {"s": b - a.sum(), "p": (a, b * 3)}, [a, b])
    close(out["s"], [0.0])
    close(out["p"][0], [1.0, 2.0])
    close(out["p"][1], [9.0])


def test_while_loop_eager_and_traced():
    def f(x):
        return tp.while_loop(lambda i, x: x.sum() < 100, lambda i, x: (i + 1, x * 3), (tp.tensor(0), x))

    i, y = f(T([1.0, 2.0]))
    assert i.item() == 4 and i.dtype is tp.int64
    close(y, [81.0, 162.0])
    i, y = tp.compile(f)(T([1.0, 2.0]))
    assert i.item() == 4
    close(y, [81.0, 162.0])


def test_while_loop_runs_zero_times_and_returns_a_tuple():
    out = tp.while_loop(lambda x: x > 5, lambda x: x * 2, [T(1.0)])
    assert isinstance(out, tuple) and len(out) == 1
    close(out[0], 1.0)


def test_scan_matches_numpy_forward_and_reverse():
    w, h0, xs = rand(3, 3), rand(3, seed=1), rand(6, 3, seed=2)
    W = T(w)

    def cell(h, x):
        h = (h @ W + x).tanh()
        return h, h.sum()

    for reverse in (False, True):
        c, ys = tp.scan(cell, T(h0), T(xs), reverse=reverse)
        want_c, want_ys = np_scan(lambda h, x: (np.tanh(h @ w + x),) * 2, h0, xs, reverse)
        close(c, want_c)
        close(ys, want_ys.sum(-1))
        c2, ys2 = tp.compile(lambda h, xs: tp.scan(cell, h, xs, reverse=reverse))(T(h0), T(xs))
        close(c2, want_c)
        close(ys2, want_ys.sum(-1))


def test_scan_pytrees_none_xs_and_none_ys():
    carry, ys = tp.scan(lambda c, _: ({"a": c["a"] * 2, "b": c["b"] + 1}, None),
                        {"a": T(1.0), "b": tp.tensor(0)}, None, length=4)
    close(carry["a"], 16.0)
    assert carry["b"].item() == 4 and ys is None
    (c, ys) = tp.scan(lambda c, x: (c + x["u"] * x["v"], (x["u"], c)), T(0.0),
                      {"u": T([1.0, 2.0, 3.0]), "v": T([4.0, 5.0, 6.0])})
    close(c, 32.0)
    close(ys[0], [1.0, 2.0, 3.0])
    close(ys[1], [0.0, 4.0, 14.0])


def test_scan_of_length_zero_returns_init_and_empty_ys():
    c, ys = tp.scan(lambda c, x: (c + x, c * x), T([1.0, 2.0]), tp.zeros(0, 2))
    close(c, [1.0, 2.0])
    assert tuple(ys.shape) == (0, 2)


def test_fori_loop_static_bounds_is_a_scan_and_tensor_bounds_a_while():
    def body(i, x):
        return x * 0.5 + i

    g = graph_of(lambda x: tp.fori_loop(2, 6, body, x), T(1.0))
    assert "scan" in [n.prim.name for n in g.nodes]
    g = graph_of(lambda x, n: tp.fori_loop(tp.tensor(2), n, body, x), T(1.0), tp.tensor(6))
    assert "while_loop" in [n.prim.name for n in g.nodes]
    want = 1.0
    for i in range(2, 6):
        want = want * 0.5 + i
    close(tp.fori_loop(2, 6, body, T(1.0)), want)
    close(tp.fori_loop(tp.tensor(2), tp.tensor(6), body, T(1.0)), want)
    close(tp.fori_loop(5, 2, body, T(1.0)), 1.0)  # an empty range runs no iteration


def test_nested_regions_and_captured_parameters():
    W = T(rand(2, 2))

    def f(x):
        def outer(c, xi):
            inner = tp.cond(xi.sum() > 0, lambda c: tp.fori_loop(0, 2, lambda i, v: v @ W, c),
                            lambda c: c - 1, (c,))
            return inner, inner.sum()
        return tp.scan(outer, x, T(rand(3, 2, seed=3)))

    want = f(T([0.1, 0.2]))
    g = graph_of(f, T([0.1, 0.2]))
    got = ir.interpret(g, [np.array([0.1, 0.2], np.float32)] + [c.numpy() for c in
                                                                  trace_function(f, (T([0.1, 0.2]),),
                                                                                 transform="make_graph").captures])
    close(got[0], want[0])
    close(got[1], want[1])


def test_in_place_writes_to_region_arguments_are_local():
    x = T([1.0, 2.0])

    def body(c, xi):
        c = c.clone()
        c.add_(xi)
        return c, c * 1

    c, ys = tp.scan(body, x, T([[1.0, 1.0], [2.0, 2.0]]))
    close(c, [4.0, 5.0])
    close(x, [1.0, 2.0])
    out = tp.cond(tp.tensor(True), lambda a: a.mul_(2), lambda a: a, (x,))
    close(out, [2.0, 4.0])
    close(x, [1.0, 2.0])  # the caller's operand is not written


def test_eager_node_is_recorded_on_the_tape():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = tp.cond(tp.tensor(True), lambda a: a * 3, lambda a: a, (x,))
    assert y.requires_grad and y.grad_fn.name() == "TupleGetBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "CondBackward0"
    with tp.no_grad():
        z = tp.cond(tp.tensor(True), lambda a: a * 3, lambda a: a, (x,))
    assert not z.requires_grad


def test_compile_of_a_region_names_the_op_until_codegen_lowers_it(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_BACKEND", "compiled")
    from tensorplay import codegen

    if "scan" in codegen.LOWERINGS:
        pytest.skip("codegen lowers control flow")
    with pytest.raises(NotImplementedError, match="codegen: primitive '(scan|tuple_get)'"):
        tp.compile(lambda x: tp.scan(lambda c, a: (c + a, c), T(0.0), x))(T([1.0, 2.0]))


# --- vmap against loop-and-stack ---------------------------------------------------------------------
def vmap_vs_loop(f, *args, in_dims=0):
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    got = vmap(f, in_dims=dims)(*args)
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    per = [f(*[a if d is None else a.select(d, i) for a, d in zip(args, dims)]) for i in range(size)]
    got_l = got if isinstance(got, tuple) else (got,)
    for k, g in enumerate(got_l):
        want = [p[k] if isinstance(p, tuple) else p for p in per]
        want = np.stack([w.numpy() for w in want]) if want else np.zeros(tuple(g.shape), g.dtype.np)
        close(g, want)


def f_cond_batched_pred(x):
    return tp.cond(x.sum() > 0, lambda a: a.sin() * 2, lambda a: a.cos(), (x,))


W3 = T(rand(3, 3, seed=7))


def f_cond_unbatched_pred(x):
    return tp.cond(W3.sum() > 0, lambda a: a @ W3, lambda a: a * 0 + W3[0], (x,))


def f_cond_mixed_outputs(x):
    return tp.cond(x[0] > 0, lambda a: (a.sum(), W3[1]), lambda a: (a.prod(), W3[2]), (x,))


def f_while_batched_pred(x):
    return tp.while_loop(lambda i, y: y.abs().sum() < 20, lambda i, y: (i + 1, y * 1.5 + 0.1), (tp.tensor(0), x))


def f_while_batched_consts(x):
    return tp.while_loop(lambda i, y: i < (x.abs().sum() * 3).to(tp.int64), lambda i, y: (i + 1, y + x),
                         (tp.tensor(0), tp.zeros(3)))


def f_while_carry_made_batched(x):
    return tp.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * 0.5 + x), (tp.tensor(0), tp.zeros(3)))[1]


def f_scan_batched_xs(x):
    return tp.scan(lambda c, xi: (c * 0.9 + xi, (c * xi).sum()), tp.zeros(()), x)


def f_scan_batched_const_and_carry(x):
    return tp.scan(lambda c, xi: (c @ W3 * x.sum() + xi, c), x, T(rand(4, 3, seed=8)), reverse=True)


def f_fori_traced(x):
    return tp.fori_loop(tp.tensor(0), (x.abs().sum() * 2).to(tp.int64), lambda i, v: v * 0.5 + i, x)


def f_cond_batched_pred_unbatched_operands(x):
    return tp.cond(x.sum() > 0, lambda a: a * 2, lambda a: a + 1, (W3[0],))


VMAP_CASES = [f_cond_batched_pred, f_cond_batched_pred_unbatched_operands, f_cond_unbatched_pred, f_cond_mixed_outputs, f_while_batched_pred,
              f_while_batched_consts, f_while_carry_made_batched, f_scan_batched_xs, f_scan_batched_const_and_carry,
              f_fori_traced]


@pytest.mark.parametrize("f", VMAP_CASES, ids=lambda f: f.__name__)
def test_vmap_matches_loop(f):
    vmap_vs_loop(f, T(rand(5, 3, seed=4)))


@pytest.mark.parametrize("f", VMAP_CASES, ids=lambda f: f.__name__)
def test_vmap_of_size_one_and_empty_batches(f):
    vmap_vs_loop(f, T(rand(1, 3, seed=5)))
    out = vmap(f)(tp.zeros(0, 3))
    for o in (out if isinstance(out, tuple) else (out,)):
        assert o.shape[0] == 0


def test_vmap_in_dim_one_and_nested_vmap():
    x = T(rand(3, 4, 2, seed=6))
    vmap_vs_loop(f_scan_batched_xs, T(rand(4, 5, seed=2)), in_dims=1)
    got = vmap(vmap(f_cond_batched_pred))(x)
    want = np.stack([np.stack([f_cond_batched_pred(x[i, j]).numpy() for j in range(4)]) for i in range(3)])
    close(got, want)


def test_nested_vmap_of_a_masked_while_loop():
    x = T(rand(2, 3, 3, seed=11))
    got = vmap(vmap(f_while_batched_pred))(x)
    for i in range(2):
        for j in range(3):
            want = f_while_batched_pred(x[i, j])
            assert got[0][i, j].item() == want[0].item()
            close(got[1][i, j], want[1])


def test_non_contiguous_operands():
    base = rand(3, 5, seed=12)
    xs = T(base).T  # (5, 3), strided
    c, ys = tp.scan(lambda c, x: (c + x, c * x), tp.zeros(3), xs)
    want_c, want_ys = np_scan(lambda c, x: (c + x, c * x), np.zeros(3, np.float32), base.T)
    close(c, want_c)
    close(ys, want_ys)
    c2, ys2 = tp.compile(lambda xs: tp.scan(lambda c, x: (c + x, c * x), tp.zeros(3), xs))(xs)
    close(c2, want_c)
    close(ys2, want_ys)


def test_vmap_of_a_batched_predicate_selects_per_sample():
    x = T([[1.0, 2.0], [-1.0, -2.0]])
    close(vmap(f_cond_batched_pred)(x), [np.sin([1.0, 2.0]) * 2, np.cos([-1.0, -2.0])])
    g = trace_function(lambda x: vmap(f_cond_batched_pred)(x), (x,), transform="make_graph").graph
    names = [n.prim.name for n in g.nodes]
    assert "select" in names and "cond" not in names  # both branches run, then a select


def test_vmap_with_an_unbatched_predicate_keeps_the_cond():
    x = T(rand(4, 3))
    g = trace_function(lambda x: vmap(f_cond_unbatched_pred)(x), (x,), transform="make_graph").graph
    assert "cond" in [n.prim.name for n in g.nodes]


# --- hypothesis: shapes ---------------------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple), length=st.integers(0, 4),
       reverse=st.booleans())
def test_scan_shapes_match_numpy(shape, length, reverse):
    rng = np.random.default_rng(len(shape) * 7 + length)
    init = rng.standard_normal(shape).astype(np.float32)
    xs = rng.standard_normal((length, *shape)).astype(np.float32)
    c, ys = tp.scan(lambda c, x: (c * 0.5 + x, c - x), T(init), T(xs), reverse=reverse)
    carry, want = init, np.zeros_like(xs)
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        want[i] = carry - xs[i]
        carry = carry * 0.5 + xs[i]
    close(c, carry)
    close(ys, want)


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple), batch=st.integers(0, 3), p=st.booleans())
def test_cond_and_while_shapes_under_vmap(shape, batch, p):
    x = T(np.random.default_rng(batch).standard_normal((batch, *shape)))

    def f(a):
        y = tp.cond(a.sum() > 0 if p else tp.tensor(False), lambda a: a * 2, lambda a: a - 1, (a,))
        return tp.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * 3), (tp.tensor(0), y))[1]

    got = vmap(f)(x)
    assert tuple(got.shape) == (batch, *shape)
    if batch:
        close(got, np.stack([f(x[i]).numpy() for i in range(batch)]))


# --- against jax.lax on the same numbers ------------------------------------------------------------------
def test_against_jax_lax():
    """(Its time is jax's import, shared with the other jax oracle tests of the suite.)"""
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax
    w, h0, xs = rand(3, 3), rand(3, seed=1), rand(5, 3, seed=2)
    with jax.disable_jit():  # the same semantics, without compiling every oracle
        _against_jax(jax, jnp, lax, w, h0, xs)


def _against_jax(jax, jnp, lax, w, h0, xs):

    c, ys = tp.scan(lambda h, x: ((h @ T(w) + x).tanh(), h.sum()), T(h0), T(xs), reverse=True)
    jc, jys = lax.scan(lambda h, x: (jnp.tanh(h @ w + x), h.sum()), h0, xs, reverse=True)
    close(c, jc)
    close(ys, jys)

    for p in (True, False):
        got = tp.cond(tp.tensor(p), lambda a: a.sin(), lambda a: a.exp(), (T(h0),))
        close(got, lax.cond(p, jnp.sin, jnp.exp, h0))

    got = tp.while_loop(lambda i, x: x.sum() < 50, lambda i, x: (i + 1, x * 2), (tp.tensor(0), T([1.0, 2.0])))
    want = lax.while_loop(lambda c: c[1].sum() < 50, lambda c: (c[0] + 1, c[1] * 2), (0, jnp.array([1.0, 2.0])))
    assert got[0].item() == int(want[0])
    close(got[1], want[1])

    body = lambda i, x: x * 0.5 + i  # noqa: E731
    close(tp.fori_loop(1, 7, body, T(h0)), lax.fori_loop(1, 7, body, h0))

    xb = rand(4, 3, seed=9)
    got = vmap(f_while_batched_pred)(T(xb))
    jf = jax.vmap(lambda x: lax.while_loop(lambda c: jnp.abs(c[1]).sum() < 20,
                                           lambda c: (c[0] + 1, c[1] * 1.5 + 0.1), (0, x)))
    want = jf(xb)
    np.testing.assert_array_equal(got[0].numpy(), np.asarray(want[0]))
    close(got[1], want[1])
    got = vmap(f_cond_batched_pred)(T(xb))
    want = jax.vmap(lambda x: lax.cond(x.sum() > 0, lambda a: jnp.sin(a) * 2, jnp.cos, x))(xb)
    close(got, want)


# --- bad input: a clear error naming the op and both types -------------------------------------------
X = T([1.0, 2.0, 3.0])
BAD = [
    (lambda: tp.cond(tp.tensor(True), lambda a: (a, a), lambda a: a, (X,)), TypeError,
     r"tp.cond: true_fn and false_fn return different structures"),
    (lambda: tp.cond(tp.tensor(True), lambda a: a, lambda a: a.sum(), (X,)), TypeError,
     r"tp.cond: .* true_fn returns tensor<3xf32>, false_fn returns tensor<f32>"),
    (lambda: tp.cond(tp.tensor(True), lambda a: a, lambda a: a.double(), (X,)), TypeError,
     r"true_fn returns tensor<3xf32>, false_fn returns tensor<3xf64>"),
    (lambda: tp.cond(X > 0, lambda a: a, lambda a: a, (X,)), TypeError,
     r"tp.cond: pred must be a bool tensor with one element \(tensor<i1>\), got tensor<3xi1>"),
    (lambda: tp.cond(tp.tensor(1.0), lambda a: a, lambda a: a, (X,)), TypeError, r"got tensor<f32>"),
    (lambda: tp.cond(tp.tensor(True), lambda a: a, lambda a: a, X), TypeError, r"operands must be a tuple"),
    (lambda: tp.cond(tp.tensor(True), lambda a: "no", lambda a: a, (X,)), TypeError, r"must return tensors"),
    (lambda: tp.while_loop(lambda a: a.sum() < 9, lambda a: (a.double(),), (X,)), TypeError,
     r"tp.while_loop: body_fn changes .* carried_inputs\[0\] is tensor<3xf32>, but body_fn returns tensor<3xf64>"),
    (lambda: tp.while_loop(lambda a: a, lambda a: a, (X,)), TypeError,
     r"tp.while_loop: cond_fn's result must be a bool tensor .* got tensor<3xf32>"),
    (lambda: tp.while_loop(lambda a: a.sum() < 9, lambda a: (a, a), (X,)), TypeError, r"structure"),
    (lambda: tp.while_loop(lambda a: a.sum() < 9, lambda a: a, X), TypeError, r"carried_inputs must be a tuple"),
    (lambda: tp.scan(lambda c, a: (c.double(), a), X, tp.ones(4, 3)), TypeError,
     r"tp.scan: f changes the carry type: init is tensor<3xf32>, but f returns tensor<3xf64>"),
    (lambda: tp.scan(lambda c, a: (c, a), X, (tp.ones(4, 3), tp.ones(5))), ValueError,
     r"tp.scan: xs have different leading lengths: xs\[0\] is tensor<4x3xf32>, xs\[1\] is tensor<5xf32>"),
    (lambda: tp.scan(lambda c, a: (c, a), X, tp.ones(4, 3), length=3), ValueError, r"length = 3"),
    (lambda: tp.scan(lambda c, a: (c, a), X, None), ValueError, r"length is required"),
    (lambda: tp.scan(lambda c, a: (c, a), X, tp.tensor(1.0)), ValueError, r"0-d"),
    (lambda: tp.scan(lambda c, a: c, X, tp.ones(4, 3)), TypeError, r"must return a pair"),
    (lambda: tp.scan(lambda c, a: ((c, c), a), X, tp.ones(4, 3)), TypeError, r"structure of init"),
    (lambda: tp.scan(lambda c, a: (c, a), X, tp.ones(4, 3), reverse=1), TypeError, r"reverse must be a bool"),
    (lambda: tp.fori_loop(0, 3, lambda i, v: v.sum(), X), TypeError,
     r"tp.fori_loop: body_fun changes the carry type: init_val is tensor<3xf32>, but body_fun returns tensor<f32>"),
    (lambda: tp.fori_loop(0.5, 3, lambda i, v: v, X), TypeError, r"lower must be an int"),
    (lambda: tp.fori_loop(tp.tensor(0), tp.tensor(3, dtype=tp.int32), lambda i, v: v, X), TypeError, r"one dtype"),
    (lambda: tp.cond(tp.tensor(True), lambda a: X.add_(1), lambda a: a, (X,)), RuntimeError,
     r"writes a captured tensor in place"),
    (lambda: tp.scan(lambda c, a: (c + tp.rand(3), a), X, tp.ones(4, 3)), NotImplementedError, r"random draws"),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_input_is_a_clear_error(k):
    call, exc, match = BAD[k]
    before = X.numpy().copy()
    with pytest.raises(exc, match=match):
        call()
    np.testing.assert_array_equal(X.numpy(), before)  # the caller's tensor is unchanged


def test_bad_input_under_vmap_names_the_op():
    with pytest.raises(TypeError, match="tp.cond: the branches return different types"):
        vmap(lambda a: tp.cond(a.sum() > 0, lambda a: a, lambda a: a.double(), (a,)))(tp.ones(2, 3))


def test_vmap_out_dims_none_for_a_carry_the_batch_never_reaches():
    def f(x):
        (c, k), _ = tp.scan(lambda c, xi: ((c[0] + xi, c[1] + 1), xi * 2), (tp.zeros(()), tp.tensor(0)), x)
        return c, k

    c, k = vmap(f, out_dims=(0, None))(tp.ones(3, 4))
    close(c, [4.0, 4.0, 4.0])
    assert k.shape == () and k.item() == 4
    with pytest.raises(ValueError, match="depends on the batched inputs"):
        vmap(f, out_dims=(None, None))(tp.ones(3, 4))

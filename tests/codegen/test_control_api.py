"""tp.scan / tp.cond / tp.while_loop / tp.fori_loop under `tp.compile` against eager mode (which
runs the interpreter's impls) and, where installed, against jax.lax on the same numbers."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp

RNG = np.random.default_rng(0)
W = RNG.standard_normal((6, 6)).astype(np.float32) * 0.4
XS = RNG.standard_normal((9, 3, 6)).astype(np.float32)
H0 = RNG.standard_normal((3, 6)).astype(np.float32)


def _close(got, want, rtol=1e-5):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g.numpy() if hasattr(g, "numpy") else g), np.asarray(w),
                                   rtol=rtol, atol=rtol)


def rnn(w, h, xs, reverse=False):
    def cell(h, x):
        h = tp.tanh(h @ w + x)
        return h, (h * h).sum(1)
    return tp.scan(cell, h, xs, reverse=reverse)


@pytest.mark.parametrize("reverse", [False, True])
def test_compiled_rnn_scan_matches_eager(reverse):
    args = (tp.tensor(W), tp.tensor(H0), tp.tensor(XS))
    _close(tp.compile(rnn)(*args, reverse=reverse), rnn(*args, reverse=reverse))


def test_compiled_fori_loop_and_while_loop_match_eager():
    def rk(x):  # explicit midpoint steps of dx/dt = -x^3, a fixed number of them
        def step(i, x):
            k = -(x ** 3)
            return x + 0.05 * -((x + 0.025 * k) ** 3)
        return tp.fori_loop(0, 40, step, x)

    def collatz(n):
        return tp.while_loop(lambda n, k: n != 1, lambda n, k: (tp.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1),
                             (n, tp.tensor(0)))
    x = tp.tensor(RNG.standard_normal(5).astype(np.float32))
    _close([tp.compile(rk)(x)], [rk(x)])
    for n in (1, 6, 27):
        got, want = tp.compile(collatz)(tp.tensor(n)), collatz(tp.tensor(n))
        assert [int(g) for g in got] == [int(w) for w in want]


def test_compiled_cond_matches_eager_on_both_branches():
    def f(x):
        return tp.cond(x.sum() > 0, lambda x: (tp.exp(x), x.sum()), lambda x: (-x, x.max()), (x,))
    cf = tp.compile(f)
    for sign in (1, -1):
        x = tp.tensor(np.abs(XS[0]) * sign)
        _close(cf(x), f(x))


def test_compiled_scan_in_cond_in_scan_matches_eager():
    def f(xs, h):
        def outer(h, x):
            def inner(c, y):
                return c * 0.5 + y, c
            h = tp.cond(x.sum() > 0, lambda h, x: tp.scan(inner, h, x.unsqueeze(0).expand(4, 6))[0],
                        lambda h, x: h - x, (h, x))
            return h, h.sum()
        return tp.scan(outer, h, xs)
    args = (tp.tensor(XS[:, 0]), tp.tensor(H0[0]))
    _close(tp.compile(f)(*args), f(*args))


def test_an_index_error_inside_a_compiled_scan_raises():
    def f(table, idx):
        return tp.scan(lambda c, i: (c + table[i], c), tp.tensor(0.0), idx)
    table = tp.tensor(np.arange(4, dtype=np.float32))
    cf = tp.compile(f)
    _close(cf(table, tp.tensor([1, 3, 0])), f(table, tp.tensor([1, 3, 0])))
    with pytest.raises(IndexError):
        cf(table, tp.tensor([1, 4, 0]))


# --- against jax.lax ------------------------------------------------------------------------------
def test_compiled_scan_matches_jax_lax_scan():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def cell(h, x):
        h = jnp.tanh(h @ W + x)
        return h, (h * h).sum(1)
    for reverse in (False, True):
        want = jax.lax.scan(cell, H0, XS, reverse=reverse)
        got = tp.compile(rnn)(tp.tensor(W), tp.tensor(H0), tp.tensor(XS), reverse=reverse)
        _close(got, [np.asarray(w) for w in want], rtol=2e-5)


def test_compiled_while_and_cond_match_jax_lax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x0 = RNG.standard_normal(4).astype(np.float32)

    def tp_f(x):
        i, x = tp.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, tp.sin(x) * 2.0), (tp.tensor(0), x))
        return tp.cond(x.sum() > 0, lambda x: x * 3.0, lambda x: x - 1.0, (x,))

    def jax_f(x):
        i, x = jax.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, jnp.sin(c[1]) * 2.0), (0, x))
        return jax.lax.cond(x.sum() > 0, lambda x: x * 3.0, lambda x: x - 1.0, x)
    for s in (1.0, -1.0):
        _close([tp.compile(tp_f)(tp.tensor(x0 * s))], [np.asarray(jax_f(x0 * s))], rtol=2e-5)


# --- custom rules and checkpoint: compiled by inlining their primal function -------------------
def _custom_fns():
    from tensorplay.func import checkpoint, custom_jvp, custom_vjp

    @custom_jvp
    def softplus(x):
        return tp.log(1 + tp.exp(x))

    @softplus.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * tp.sigmoid(x)

    @custom_vjp
    def scale_gradient(x):
        return x * 1.0

    def fwd(x):
        return scale_gradient(x), tp.cos(x)

    def bwd(res, g):  # linear in g, so forward mode can transpose it
        return (g * res * 0.5,)
    scale_gradient.defvjp(fwd, bwd)
    heavy = checkpoint(lambda x: tp.sin(tp.sin(x)) * x)
    return softplus, scale_gradient, heavy


def test_compiled_custom_rules_and_checkpoint_match_eager():
    from tensorplay.codegen.schedule import normalize
    from tensorplay.func import grad, jvp

    softplus, scale_gradient, heavy = _custom_fns()

    def f(x):
        return (3.0 * scale_gradient(softplus(heavy(x)))).sum()
    x = tp.tensor(RNG.standard_normal(5).astype(np.float32))
    _close([tp.compile(f)(x)], [f(x)])
    _close([tp.compile(grad(f))(x)], [grad(f)(x)])
    forward = tp.compile(lambda x, t: jvp(f, (x,), (t,)))  # forward mode: custom_vjp_lin, inlined
    _close(forward(x, tp.ones(5)), jvp(f, (x,), (tp.ones(5),)))
    graph = tp.compile(f).get_graph(x).graph
    custom = {"custom_jvp_call", "custom_vjp_call", "checkpoint"}
    assert custom <= {n.prim.name for n in graph.nodes}
    assert not {n.prim.name for n in normalize(graph).nodes} & custom  # inlined: fused with the rest


def test_compiled_gradient_of_a_scan_matches_eager():
    from tensorplay.func import grad

    def loss(w, h, xs):
        h, ys = rnn(w, h, xs)
        return (ys.sum() + (h * h).sum())
    args = (tp.tensor(W), tp.tensor(H0), tp.tensor(XS))
    _close([tp.compile(grad(loss))(*args)], [grad(loss)(*args)], rtol=1e-4)

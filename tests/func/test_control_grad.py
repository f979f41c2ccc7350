"""Derivatives of tp.cond / tp.scan / tp.fori_loop / tp.while_loop through every transform.

Oracles: jax (jax.grad / jax.jvp / jax.vmap of lax.cond / lax.scan / lax.fori_loop on the same
numbers) when installed, float64 central finite differences and the VJP/JVP dot-product identity
always, and loop-and-stack for vmap.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

EPS = 1e-6


@pytest.fixture(autouse=True)
def on_the_interpreter(monkeypatch):
    """These tests check differentiation, on the reference interpreter; compiled control flow is
    tested against the interpreter by the codegen suite (tests/codegen)."""
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")


def t64(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


def npy(t):
    return np.asarray(t.numpy())


def fd_grad(f, x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += EPS
        lo[idx] -= EPS
        out[idx] = (float(f(t64(hi))) - float(f(t64(lo)))) / (2 * EPS)
    return out


# --- the functions (tensorplay and jax spellings of the same maths) -------------------------------
def rnn(w, h0, xs):
    """An RNN-like scan: h' = tanh(w * h + x), y = h' * h'; loss = sum(h_final) + sum(ys)."""
    def cell(h, x):
        h = tp.tanh(w * h + x)
        return h, h * h
    h, ys = tp.scan(cell, h0, xs)
    return h.sum() + ys.sum()


def rnn_jax(jnp, lax, w, h0, xs):
    def cell(h, x):
        h = jnp.tanh(w * h + x)
        return h, h * h
    h, ys = lax.scan(cell, h0, xs)
    return jnp.sum(h) + jnp.sum(ys)


def branchy(x, w):
    return tp.cond(x.sum() > 0, lambda x, w: (tp.sin(x) * w).sum(), lambda x, w: (x * x * tp.cos(w)).sum(), (x, w))


def branchy_jax(jnp, lax, x, w):
    return lax.cond(jnp.sum(x) > 0, lambda x, w: jnp.sum(jnp.sin(x) * w), lambda x, w: jnp.sum(x * x * jnp.cos(w)),
                    x, w)


def power_loop(x, w):
    """fori_loop with static bounds (a scan): x <- sin(x) * w + i, 4 times."""
    return tp.fori_loop(0, 4, lambda i, x: tp.sin(x) * w + i.to(x.dtype), x).sum()


def power_loop_jax(jnp, lax, x, w):
    return jnp.sum(lax.fori_loop(0, 4, lambda i, x: jnp.sin(x) * w + i, x))


RNG = np.random.default_rng(0)
W, H0, XS = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=(5, 3))
X, WB = RNG.normal(size=3), RNG.normal(size=3)


@pytest.fixture
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


# --- grad against jax and finite differences -------------------------------------------------------
def test_scan_grad_matches_jax_and_finite_differences(jax):
    got = grad(rnn, argnums=(0, 1, 2))(t64(W), t64(H0), t64(XS))
    want = jax.grad(lambda *a: rnn_jax(jax.numpy, jax.lax, *a), argnums=(0, 1, 2))(W, H0, XS)
    for g, e in zip(got, want):
        np.testing.assert_allclose(npy(g), np.asarray(e), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(got[0]), fd_grad(lambda w: rnn(w, t64(H0), t64(XS)), W), atol=1e-6)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_grad_matches_jax_and_finite_differences(jax, sign):
    x = sign * np.abs(X)
    got = grad(branchy, argnums=(0, 1))(t64(x), t64(WB))
    want = jax.grad(lambda *a: branchy_jax(jax.numpy, jax.lax, *a), argnums=(0, 1))(x, WB)
    for g, e in zip(got, want):
        np.testing.assert_allclose(npy(g), np.asarray(e), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(got[1]), fd_grad(lambda w: branchy(t64(x), w), WB), atol=1e-6)


def test_fori_loop_static_bounds_grad_matches_jax(jax):
    got = grad(power_loop, argnums=(0, 1))(t64(X), t64(WB))
    want = jax.grad(lambda *a: power_loop_jax(jax.numpy, jax.lax, *a), argnums=(0, 1))(X, WB)
    for g, e in zip(got, want):
        np.testing.assert_allclose(npy(g), np.asarray(e), rtol=1e-10, atol=1e-12)


def test_scan_grad_without_jax_by_finite_differences():
    g = grad(rnn)(t64(W), t64(H0), t64(XS))
    np.testing.assert_allclose(npy(g), fd_grad(lambda w: rnn(w, t64(H0), t64(XS)), W), atol=1e-6)
    g = grad(power_loop, argnums=1)(t64(X), t64(WB))
    np.testing.assert_allclose(npy(g), fd_grad(lambda w: power_loop(t64(X), w), WB), atol=1e-6)


# --- jvp, vjp, Jacobians, Hessians ---------------------------------------------------------------
def scan_vec(w, xs):
    """A vector-valued scan: the final carry of h' = sin(w * h + x)."""
    h, _ = tp.scan(lambda h, x: (tp.sin(w * h + x), None), tp.zeros_like(w), xs)
    return h


def test_scan_jvp_and_vjp_dot_product_identity():
    w, xs = t64(W), t64(XS)
    tw, txs = t64(RNG.normal(size=3)), t64(RNG.normal(size=(5, 3)))
    out, tout = jvp(scan_vec, (w, xs), (tw, txs))
    ct = t64(RNG.normal(size=3))
    _, pull = vjp(scan_vec, w, xs)
    gw, gxs = pull(ct)
    lhs = float((ct * tout).sum())
    rhs = float((gw * tw).sum() + (gxs * txs).sum())
    assert lhs == pytest.approx(rhs, rel=1e-10)
    hi = npy(scan_vec(t64(W + EPS * npy(tw)), t64(XS + EPS * npy(txs))))
    lo = npy(scan_vec(t64(W - EPS * npy(tw)), t64(XS - EPS * npy(txs))))
    np.testing.assert_allclose(npy(tout), (hi - lo) / (2 * EPS), atol=1e-6)


def test_scan_jacrev_equals_jacfwd_and_matches_jax(jax):
    jr = npy(jacrev(scan_vec)(t64(W), t64(XS)))
    jf = npy(jacfwd(scan_vec)(t64(W), t64(XS)))
    np.testing.assert_allclose(jr, jf, rtol=1e-10, atol=1e-12)

    def ref(w, xs):
        return jax.lax.scan(lambda h, x: (jax.numpy.sin(w * h + x), None), jax.numpy.zeros_like(w), xs)[0]
    np.testing.assert_allclose(jr, np.asarray(jax.jacrev(ref)(W, XS)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn,args", [(rnn, (W, H0, XS)), (branchy, (np.abs(X), WB)), (power_loop, (X, WB))])
def test_hessian_is_symmetric_and_matches_finite_differences_of_grad(fn, args):
    tens = [t64(a) for a in args]
    h = npy(hessian(fn)(*tens))
    np.testing.assert_allclose(h, h.T, atol=1e-8)
    num = np.stack([(npy(grad(fn)(t64(args[0] + EPS * e), *tens[1:])) -
                     npy(grad(fn)(t64(args[0] - EPS * e), *tens[1:]))) / (2 * EPS)
                    for e in np.eye(args[0].size).reshape((-1,) + args[0].shape)])
    np.testing.assert_allclose(h, num.reshape(h.shape), atol=1e-5)


def test_vmap_of_grad_matches_the_loop_and_jax(jax):
    ws = RNG.normal(size=(4, 3))
    got = npy(vmap(grad(rnn), in_dims=(0, None, None))(t64(ws), t64(H0), t64(XS)))
    loop = np.stack([npy(grad(rnn)(t64(w), t64(H0), t64(XS))) for w in ws])
    np.testing.assert_allclose(got, loop, rtol=1e-12)
    want = jax.vmap(jax.grad(lambda *a: rnn_jax(jax.numpy, jax.lax, *a)), in_axes=(0, None, None))(ws, H0, XS)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10)


def test_vmap_of_grad_of_cond_with_a_batched_predicate():
    xs = np.stack([np.abs(X), -np.abs(X), X])
    got = npy(vmap(grad(branchy), in_dims=(0, None))(t64(xs), t64(WB)))
    loop = np.stack([npy(grad(branchy)(t64(x), t64(WB))) for x in xs])
    np.testing.assert_allclose(got, loop, rtol=1e-12)


def test_grad_of_vmap_of_scan():
    ws = RNG.normal(size=(4, 3))
    g = npy(grad(lambda ws: vmap(rnn, in_dims=(0, None, None))(ws, t64(H0), t64(XS)).sum())(t64(ws)))
    loop = np.stack([npy(grad(rnn)(t64(w), t64(H0), t64(XS))) for w in ws])
    np.testing.assert_allclose(g, loop, rtol=1e-10)


@settings(max_examples=10, deadline=None)
@given(length=st.sampled_from([0, 1, 4]), shape=st.sampled_from([(), (1,), (2, 3)]), reverse=st.booleans())
def test_scan_grad_shapes(length, shape, reverse):
    rng = np.random.default_rng(length * 7 + len(shape))
    w, xs = rng.normal(size=shape), rng.normal(size=(length,) + shape)

    def f(w):
        h, ys = tp.scan(lambda h, x: (tp.sin(w * h + x), h * x), tp.ones_like(w), t64(xs), reverse=reverse)
        return h.sum() + ys.sum()

    np.testing.assert_allclose(npy(grad(f)(t64(w))), fd_grad(f, w), atol=1e-6)


# --- while_loop ----------------------------------------------------------------------------------
def traced_bound_loop(x, n):
    return tp.fori_loop(tp.tensor(0), n, lambda i, x: tp.sin(x) * 1.5, x).sum()


def test_while_loop_forward_mode_works():
    x, t = t64(X), t64(np.ones(3))
    _, tout = jvp(lambda x: traced_bound_loop(x, tp.tensor(3)), (x,), (t,))
    f = lambda x: traced_bound_loop(x, tp.tensor(3))  # noqa: E731
    num = (float(f(t64(X + EPS))) - float(f(t64(X - EPS)))) / (2 * EPS)
    assert float(tout) == pytest.approx(num, rel=1e-6)
    jf = npy(jacfwd(lambda x: tp.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tp.sin(x)),
                                            (tp.tensor(0), x))[1])(x))
    np.testing.assert_allclose(jf, np.diag(np.cos(np.sin(np.sin(X))) * np.cos(np.sin(X)) * np.cos(X)), rtol=1e-10)


@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev", "backward"])
def test_reverse_mode_through_while_loop_is_a_clear_error(transform):
    n = tp.tensor(3)
    f = lambda x: traced_bound_loop(x, n)  # noqa: E731
    with pytest.raises(ValueError, match=r"while_loop.*fori_loop with Python int bounds, or tp\.scan"):
        if transform == "grad":
            grad(f)(t64(X))
        elif transform == "vjp":
            vjp(f, t64(X))[1](t64(1.0))
        elif transform == "jacrev":
            jacrev(f)(t64(X))
        else:
            x = t64(X).requires_grad_()
            f(x).backward()


# --- eager autograd ------------------------------------------------------------------------------
def test_backward_through_eager_scan_and_cond():
    w = t64(W).requires_grad_()
    rnn(w, t64(H0), t64(XS)).backward()
    np.testing.assert_allclose(npy(w.grad), npy(grad(rnn)(t64(W), t64(H0), t64(XS))), rtol=1e-12)
    x = t64(-np.abs(X)).requires_grad_()
    branchy(x, t64(WB)).backward()
    np.testing.assert_allclose(npy(x.grad), npy(grad(branchy)(t64(-np.abs(X)), t64(WB))), rtol=1e-12)


def test_grad_under_compile():
    g = tp.compile(grad(rnn))
    np.testing.assert_allclose(npy(g(t64(W), t64(H0), t64(XS))), npy(grad(rnn)(t64(W), t64(H0), t64(XS))),
                               rtol=1e-12)

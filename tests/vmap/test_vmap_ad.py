"""vmap composed with the differentiation transforms: per-sample gradients, grad through vmap, Jacobians."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.func as func
from tensorplay.func import vmap
from vmap_testutil import assert_same

grad = func.grad


def T(a) -> tp.Tensor:
    return tp.from_numpy(np.array(a, copy=True))


def _rng(seed=0):
    return np.random.default_rng(seed)


def close(actual, expected, tol=1e-5):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def test_vmap_of_grad_is_per_sample_gradients():
    x = T(_rng().normal(size=(5, 3)))

    def f(v):
        return (tp.sin(v) * v).sum()

    out = vmap(grad(f))(x)
    xn = x.numpy()
    close(out.numpy(), np.cos(xn) * xn + np.sin(xn), 1e-10)
    for i in range(5):
        close(out[i].numpy(), grad(f)(x[i]).numpy(), 1e-12)


def test_per_sample_gradients_of_a_loss_wrt_shared_weights():
    rng = _rng(1)
    w = T(rng.normal(size=(3, 2)))
    xs = T(rng.normal(size=(6, 3)))
    ys = T(rng.normal(size=(6, 2)))

    def loss(w, x, y):
        return ((tp.tanh(x @ w) - y) ** 2).mean()

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(w, xs, ys)
    assert per_sample.shape == (6, 3, 2)
    for i in range(6):
        close(per_sample[i].numpy(), grad(loss)(w, xs[i], ys[i]).numpy(), 1e-10)


def test_grad_of_a_function_that_calls_vmap():
    rng = _rng(2)
    w = T(rng.normal(size=(3, 2)))
    xs = T(rng.normal(size=(4, 3)))

    def total(w):
        return vmap(lambda x: tp.sin(x @ w).sum())(xs).sum()

    g = grad(total)(w)
    xn, wn = xs.numpy(), w.numpy()
    expected = sum(np.outer(xn[i], np.cos(xn[i] @ wn)) for i in range(4))
    close(g.numpy(), expected, 1e-10)


def test_grad_through_vmap_with_batched_argument_and_chunking():
    xs = T(_rng(3).normal(size=(7, 2)))

    def total(xs):
        return vmap(lambda x: (x * x).sum() * x[0], chunk_size=3)(xs).sum()

    g = grad(total)(xs).numpy()
    xn = xs.numpy()
    expected = 2 * xn * xn[:, :1]
    expected[:, 0] += (xn * xn).sum(1)
    close(g, expected, 1e-10)


def test_vmap_of_vmap_of_grad():
    x = T(_rng(4).normal(size=(2, 3, 4)))
    out = vmap(vmap(grad(lambda v: (v ** 3).sum())))(x)
    close(out.numpy(), 3 * x.numpy() ** 2, 1e-10)


def test_vmap_of_jacobians():
    jacrev, jacfwd = func.jacrev, func.jacfwd
    x = T(_rng(5).normal(size=(3, 4)))

    def f(v):
        return tp.sin(v) * v.sum()

    for jac in (jacrev, jacfwd):
        out = vmap(jac(f))(x)
        assert out.shape == (3, 4, 4)
        for i in range(3):
            close(out[i].numpy(), jac(f)(x[i]).numpy(), 1e-10)


def test_per_sample_gradients_of_module_parameters():
    import tensorplay.nn as nn

    functional_call = func.functional_call
    model = nn.Linear(3, 2)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = T(_rng(6).normal(size=(5, 3)).astype(np.float32))

    def loss(p, x):
        return functional_call(model, p, (x,)).sum()

    grads = vmap(grad(loss), in_dims=(None, 0))(params, xs)
    assert grads["weight"].shape == (5, 2, 3) and grads["bias"].shape == (5, 2)
    for i in range(5):
        assert_same(grads["weight"][i].numpy(), np.stack([xs[i].numpy()] * 2))

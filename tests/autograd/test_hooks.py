"""Tensor.register_hook on leaves, against torch: replacing and observing hooks, order, removal,
backward and autograd.grad; non-leaf hooks are a clear error."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


def run(lib):
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    seen = []
    h1 = w.register_hook(lambda g: g * 2)
    w.register_hook(lambda g: seen.append(g.detach().numpy().copy()))  # observes the doubled gradient
    (w * w).sum().backward()
    first = w.grad.detach().numpy().copy()
    h1.remove()
    h1.remove()  # twice: a no-op
    (w ** 3).sum().backward()  # accumulates the un-doubled gradient
    second = w.grad.detach().numpy().copy()
    v = lib.tensor([0.5, 1.5], requires_grad=True)
    v.register_hook(lambda g: g + 1)
    (ag,) = lib.autograd.grad((v * v).sum(), v)
    return first, second, np.stack(seen), ag.detach().numpy()


def test_leaf_hooks_by_hand():
    first, second, seen, ag = run(tp)
    np.testing.assert_allclose(first, [4.0, -8.0, 12.0])
    np.testing.assert_allclose(second, first + 3 * np.array([1.0, 4.0, 9.0]))
    np.testing.assert_allclose(seen, [[4.0, -8.0, 12.0], [3.0, 12.0, 27.0]])
    np.testing.assert_allclose(ag, [2.0, 4.0])


def test_leaf_hooks_match_torch():
    torch = pytest.importorskip("torch")
    for a, b in zip(run(tp), run(torch)):
        np.testing.assert_allclose(a, b)


def test_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tp.ones(2).register_hook(lambda g: g)
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="non-leaf"):
        (x * 2).register_hook(lambda g: g)
    x.register_hook(lambda g: tp.ones(3))
    with pytest.raises(RuntimeError, match="expected a tensor of shape"):
        (x * x).sum().backward()

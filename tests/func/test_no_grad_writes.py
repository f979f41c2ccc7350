"""In-place writes under `no_grad` inside a transform change values, not derivatives (torch.func)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, jacrev, jvp


def update_param(w):
    with tp.no_grad():
        w.sub_(0.1 * w)           # an optimizer-style step: w's derivative stays the identity
    return (w * w).sum()


def overwrite_part(w):
    v = w * 1
    with tp.no_grad():
        v[0] = 5.0                # only the value changes: dv/dw stays the identity
        v.mul_(3)
    return (v * w).sum()


def fill_view(w):
    v = w * 2
    with tp.no_grad():
        v[1:].fill_(-1.0)
    return (v * w).sum()


def analytic(fn, x):
    """d/dw of sum(v * w) where v's derivative is the identity times the factor before no_grad."""
    if fn is update_param:
        return 2 * (0.9 * x)      # loss = sum(w'^2) with dw'/dw = 1
    if fn is overwrite_part:
        v = 3 * np.where(np.arange(x.size) == 0, 5.0, x)
        return v + x
    v = 2 * x
    v[1:] = -1.0
    return v + 2 * x


@pytest.mark.parametrize("fn", [update_param, overwrite_part, fill_view])
def test_grad_matches_the_analytic_derivative(fn):
    x = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(grad(fn)(tp.tensor(x)).numpy(), analytic(fn, x), rtol=1e-12)


@pytest.mark.parametrize("fn", [update_param, overwrite_part, fill_view])
def test_against_torch_func(fn):
    torch = pytest.importorskip("torch")
    import torch.func

    def torch_version(w):
        if fn is update_param:
            with torch.no_grad():
                w.sub_(0.1 * w)
            return (w * w).sum()
        if fn is overwrite_part:
            v = w * 1
            with torch.no_grad():
                v[0] = 5.0
                v.mul_(3)
            return (v * w).sum()
        v = w * 2
        with torch.no_grad():
            v[1:].fill_(-1.0)
        return (v * w).sum()

    x = np.array([1.0, 2.0, -0.5])
    want = torch.func.grad(torch_version)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(grad(fn)(tp.tensor(x)).numpy(), want, rtol=1e-12)


def test_forward_mode_and_jacobians_agree():
    x = tp.tensor([1.0, 2.0, -0.5])
    t = tp.tensor([0.3, -1.0, 2.0])
    _, tangent = jvp(overwrite_part, (x,), (t,))
    g = grad(overwrite_part)(x)
    np.testing.assert_allclose(tangent.item(), float((g * t).sum()), rtol=1e-12)
    np.testing.assert_allclose(jacrev(overwrite_part)(x).numpy(), g.numpy(), rtol=1e-12)


def test_the_caller_sees_the_write():
    w = tp.tensor([1.0, 2.0])
    grad(update_param)(w)
    np.testing.assert_allclose(w.numpy(), [0.9, 1.8], rtol=1e-6)

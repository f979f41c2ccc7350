"""autograd.Function subclasses, written once, run with tensorplay and torch: backward, autograd.grad,
non-tensor arguments, ctx attributes, several outputs, a backward that is not the true derivative;
and the same rule under tensorplay's transforms."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


def functions(lib):
    F = lib.autograd.Function

    class ScaledExp(F):
        @staticmethod
        def forward(ctx, x, scale):
            y = x.exp() * scale
            ctx.save_for_backward(y)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y, None

    class ClipGrad(F):  # identity forward, a clipped gradient: not the true derivative
        @staticmethod
        def forward(ctx, x, bound):
            ctx.bound = bound
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.clamp(-ctx.bound, ctx.bound), None

    class MulAdd(F):  # two tensor inputs, two outputs
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            return g_prod * b + g_sum, g_prod * a + g_sum

    return ScaledExp, ClipGrad, MulAdd


def run(lib):
    ScaledExp, ClipGrad, MulAdd = functions(lib)
    x = lib.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    (ScaledExp.apply(x, 3.0) ** 2).sum().backward()
    g1 = x.grad.detach().numpy().copy()
    x.grad = None
    (10 * ClipGrad.apply(x, 1.5)).sum().backward()
    g2 = x.grad.detach().numpy().copy()
    a = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = lib.tensor(np.array([3.0, -1.0]), requires_grad=True)
    p, s = MulAdd.apply(a, b)
    ga, gb = lib.autograd.grad((p * p).sum() + (s * 3).sum(), (a, b))
    return g1, g2, ga.detach().numpy(), gb.detach().numpy()


def test_function_by_hand():
    g1, g2, ga, gb = run(tp)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(g1, 2 * (3 * np.exp(x)) ** 2)
    np.testing.assert_allclose(g2, [1.5, 1.5, 1.5])
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    np.testing.assert_allclose(ga, 2 * a * b * b + 3)
    np.testing.assert_allclose(gb, 2 * a * b * a + 3)


def test_function_matches_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(run(tp), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_function_rule_holds_under_transforms():
    from tensorplay.func import grad, vmap

    _, ClipGrad, _ = functions(tp)
    g = grad(lambda x: (10 * ClipGrad.apply(x, 2.0)).sum())(tp.tensor([1.0, -3.0]))
    assert g.tolist() == [2.0, 2.0]
    per = vmap(grad(lambda x: (x * ClipGrad.apply(x, 0.5)).sum()))(tp.tensor([[1.0, 2.0], [0.1, -4.0]]))
    # d/dx [x * c(x)] = c(x) + clip(x): the custom factor passes its cotangent x through the clip
    np.testing.assert_allclose(per.numpy(), [[1.5, 2.5], [0.2, -4.5]], rtol=1e-6)


def test_function_errors():
    class Wrong(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g  # one gradient for two arguments

    x = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Wrong.apply(x, 2.0).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward"):
        tp.autograd.FunctionCtx().save_for_backward(3.0)

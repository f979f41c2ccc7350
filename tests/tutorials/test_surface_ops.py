"""The ops added for the probe's missing APIs, against torch (skipped without it): values on ordinary,
0-d, empty and non-contiguous inputs; gradients; vmap against loop-and-stack; tp.compile."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, vmap

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def sample(shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape)


UNIT = dict(lo=-0.95, hi=0.95)
POS = dict(lo=0.1, hi=3.0)
PROB = dict(lo=0.05, hi=0.95)

# name -> (domain of the float inputs, number of tensor inputs, extra kwargs)
UNARY = {"asin": UNIT, "acos": UNIT, "atan": {}, "arcsin": UNIT, "arccos": UNIT, "arctan": {}, "sinh": {},
         "cosh": {}, "log2": POS, "log10": POS, "exp2": {}, "trunc": {}, "fix": {}, "frac": {}, "erfc": {},
         "sgn": {}, "logit": PROB}
DIFFERENTIABLE = ["asin", "acos", "atan", "sinh", "cosh", "log2", "log10", "exp2", "erfc", "logit"]
BINARY = {"logaddexp": {}, "xlogy": POS, "fmax": {}, "fmin": {}}


def shapes():
    return [(), (0,), (3, 4)]


def check(ours, theirs, rtol=1e-6, atol=1e-7):
    if isinstance(theirs, torch.Tensor):
        theirs = theirs.numpy()
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", shapes())
def test_unary_matches_torch(name, shape):
    a = sample(shape, **UNARY[name])
    check(getattr(tp, name)(tp.tensor(a)), getattr(torch, name)(torch.tensor(a)))
    a32 = a.astype(np.float32)
    check(getattr(tp, name)(tp.tensor(a32)), getattr(torch, name)(torch.tensor(a32)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_on_non_contiguous_input_and_method_forms(name):
    a = sample((4, 6), **UNARY[name])
    x, tx = tp.tensor(a).t()[::2], torch.tensor(a).t()[::2]
    check(getattr(tp, name)(x), getattr(torch, name)(tx))
    check(getattr(x, name)(), getattr(tx, name)())
    y, ty = x.clone(), tx.clone()
    getattr(y, name + "_")()
    getattr(ty, name + "_")()
    check(y, ty)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_unary_grad_matches_torch(name):
    a = sample((5,), **UNARY[name])
    x = torch.tensor(a, requires_grad=True)
    getattr(torch, name)(x).sum().backward()
    check(grad(lambda t: getattr(tp, name)(t).sum())(tp.tensor(a)), x.grad, rtol=1e-9)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_vmap_and_compile_match_eager(name):
    a = tp.tensor(sample((3, 4), **UNARY[name]))
    f = getattr(tp, name)
    check(vmap(f)(a), tp.stack([f(a[i]) for i in range(3)]).numpy(), rtol=1e-12)
    check(tp.compile(f)(a), f(a).numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shape", shapes())
def test_binary_matches_torch(name, shape):
    a, b = sample(shape, **BINARY[name]), sample(shape, **BINARY[name])
    check(getattr(tp, name)(tp.tensor(a), tp.tensor(b)), getattr(torch, name)(torch.tensor(a), torch.tensor(b)))


def test_special_values_match_torch():
    vals = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5, -2.5])
    t, tt = tp.tensor(vals), torch.tensor(vals)
    for name in ("signbit", "isinf", "isposinf", "isneginf", "trunc", "sgn", "nan_to_num", "atan", "sinh",
                 "cosh", "exp2", "erfc"):
        np.testing.assert_allclose(getattr(tp, name)(t).numpy(), getattr(torch, name)(tt).numpy(), rtol=1e-12,
                                   err_msg=name)
    np.testing.assert_array_equal(tp.nan_to_num(t, nan=1.0, posinf=2.0, neginf=-2.0).numpy(),
                                  torch.nan_to_num(tt, nan=1.0, posinf=2.0, neginf=-2.0).numpy())
    for name in ("logaddexp", "fmax", "fmin", "xlogy"):
        a, b = np.meshgrid(vals, vals)
        np.testing.assert_allclose(getattr(tp, name)(tp.tensor(a), tp.tensor(b)).numpy(),
                                   getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy(), err_msg=name)
    h = np.array([-1.0, 0.0, 3.0])
    v = np.array([0.5, 0.25, 9.0])
    check(tp.heaviside(tp.tensor(h), tp.tensor(v)), torch.heaviside(torch.tensor(h), torch.tensor(v)))
    ints = np.array([0, 3, -2])
    np.testing.assert_array_equal(tp.logical_xor(tp.tensor(ints), tp.tensor([1, 0, -2])).numpy(),
                                  torch.logical_xor(torch.tensor(ints), torch.tensor([1, 0, -2])).numpy())
    assert tp.trunc(tp.tensor(ints)).dtype is tp.int64 and tp.isinf(tp.tensor(ints)).tolist() == [False] * 3
    assert tp.logit(tp.tensor([0.0, 1.0]), eps=1e-3).tolist() == pytest.approx(
        torch.logit(torch.tensor([0.0, 1.0]), eps=1e-3).tolist())


def test_bad_inputs_are_clear_errors():
    with pytest.raises(TypeError, match="heaviside"):
        tp.heaviside(tp.ones(2), tp.tensor(1, dtype=tp.int64))
    with pytest.raises(TypeError, match="frac"):
        tp.frac(tp.tensor([1, 2]))

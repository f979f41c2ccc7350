"""Eager results follow PyTorch where they used to differ (issue 11 item 3), against numpy by hand and torch."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, vmap

try:
    import torch
except ImportError:  # the torch checks skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


@pytest.mark.parametrize("shape, new", [((0,), (0, 1, 3)), ((0, 4), (-1, 2)), ((2, 0), (0, 5, 7))])
def test_views_of_empty_tensors(shape, new):
    v = tp.zeros(*shape).view(*new)
    assert tuple(v.shape) == np.empty(shape).reshape(new).shape
    assert tuple(tp.zeros(*shape).T.view(*new).shape) == tuple(v.shape)


def test_addcmul_promotes_before_multiplying():
    big = tp.tensor([2 ** 20], dtype=tp.int32)
    assert tp.addcmul(tp.zeros(1), big, big).tolist() == [float(2 ** 40)]
    out = tp.addcmul(big, big, big)  # all int32: the product wraps, as torch's
    assert out.dtype is tp.int32 and out.tolist() == [2 ** 20]
    ints = tp.addcmul(tp.tensor([1, 2]), tp.tensor([1, 2]), tp.tensor([3, 4]), value=0.5)
    assert ints.dtype is tp.int64 and ints.tolist() == [1, 2]  # value cast to int64 (0)
    mixed = tp.addcmul(tp.tensor([1, 2]), tp.tensor([1.0, 2.0]), tp.tensor([3, 4]), value=2)
    assert mixed.dtype is tp.float32 and mixed.tolist() == [7.0, 18.0]


def test_addcmul_under_transforms():
    x = tp.tensor([1.0, -2.0, 0.5])
    g = grad(lambda v: tp.addcmul(v, v, v, value=3.0).sum())(x)
    np.testing.assert_allclose(g.numpy(), 1 + 6 * x.numpy(), rtol=1e-6)
    y = vmap(lambda v: tp.addcmul(v, v, tp.tensor([2.0, 2.0, 2.0])))(tp.ones(4, 3))
    np.testing.assert_array_equal(y.numpy(), np.full((4, 3), 3.0))


def test_sign_of_nan_is_zero_eager_traced_and_compiled():
    x = tp.tensor([float("nan"), -0.0, 0.0, -2.0, 3.0])
    want = [0.0, 0.0, 0.0, -1.0, 1.0]
    assert tp.sign(x).tolist() == want
    assert tp.compile(tp.sign)(x).tolist() == want
    assert vmap(tp.sign)(x).tolist() == want
    assert not np.signbit(tp.sign(x).numpy()[1])
    assert grad(lambda v: (tp.sign(v) * v).sum())(tp.tensor([2.0, -3.0])).tolist() == [1.0, -1.0]


@needs_torch
@pytest.mark.parametrize("dtypes", [("int32", "int32", "int32"), ("float32", "int32", "int32"),
                                    ("int64", "float32", "int64"), ("float64", "float32", "int32"),
                                    ("int64", "int64", "int64")])
@pytest.mark.parametrize("value", [1, 0.5, -3, 2.5])
def test_addcmul_matches_torch(dtypes, value):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-2 ** 12, 2 ** 12, size=5).astype(d) for d in dtypes]
    arrays[1][0] = arrays[2][0] = 2 ** 20 if "int32" in dtypes else 7
    expected = torch.addcmul(*(torch.from_numpy(a) for a in arrays), value=value)
    got = tp.addcmul(*(tp.from_numpy(a) for a in arrays), value=value)
    assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


@needs_torch
def test_sign_matches_torch():
    vals = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1e-30, -5.0], dtype=np.float32)
    np.testing.assert_array_equal(tp.sign(tp.from_numpy(vals)).numpy(), torch.sign(torch.from_numpy(vals)).numpy())

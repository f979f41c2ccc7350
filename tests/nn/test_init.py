"""nn.init: bounds, moments and PyTorch's default initialisations."""
import math

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay.nn import init


def test_uniform_and_normal_moments():
    tp.manual_seed(0)
    w = tp.empty(200, 300)
    assert init.uniform_(w, -2.0, 3.0) is w
    a = w.numpy()
    assert a.min() >= -2.0 and a.max() < 3.0
    assert abs(a.mean() - 0.5) < 0.03 and abs(a.var() - 25 / 12) < 0.05
    init.normal_(w, 1.0, 0.5)
    a = w.numpy()
    assert abs(a.mean() - 1.0) < 0.01 and abs(a.std() - 0.5) < 0.01


def test_constant_fills():
    w = tp.empty(3, 4)
    assert init.ones_(w).numpy().tolist() == np.ones((3, 4)).tolist()
    assert (init.zeros_(w).numpy() == 0).all()
    assert (init.constant_(w, 2.5).numpy() == 2.5).all()
    np.testing.assert_array_equal(init.eye_(w).numpy(), np.eye(3, 4))
    d = init.dirac_(tp.empty(2, 2, 3, 3))
    x = tp.randn(1, 2, 5, 5)
    np.testing.assert_allclose(nn.functional.conv2d(x, d, padding=1).numpy(), x.numpy(), atol=1e-6)


def test_fans_and_gain():
    assert init._calculate_fan_in_and_fan_out(tp.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(tp.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(tp.empty(3))
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(2 / 6))
    assert init.calculate_gain("conv2d") == 1.0
    with pytest.raises(ValueError):
        init.calculate_gain("nope")


@pytest.mark.parametrize("fn,bound", [
    (lambda w: init.xavier_uniform_(w), math.sqrt(6 / (100 + 200))),
    (lambda w: init.kaiming_uniform_(w, nonlinearity="relu"), math.sqrt(2) * math.sqrt(3 / 200)),
    (lambda w: init.kaiming_uniform_(w, a=math.sqrt(5)), 1 / math.sqrt(200)),
    (lambda w: init.kaiming_uniform_(w, mode="fan_out", nonlinearity="linear"), math.sqrt(3 / 100)),
])
def test_uniform_families(fn, bound):
    tp.manual_seed(3)
    w = fn(tp.empty(100, 200)).numpy()
    assert np.abs(w).max() <= bound + 1e-7
    assert np.abs(w).max() > 0.98 * bound
    assert abs(w.var() - bound ** 2 / 3) < 0.05 * bound ** 2


@pytest.mark.parametrize("fn,std", [
    (lambda w: init.xavier_normal_(w, gain=2.0), 2 * math.sqrt(2 / 300)),
    (lambda w: init.kaiming_normal_(w, nonlinearity="relu"), math.sqrt(2 / 200)),
])
def test_normal_families(fn, std):
    tp.manual_seed(4)
    w = fn(tp.empty(100, 200)).numpy()
    assert abs(w.std() - std) < 0.03 * std and abs(w.mean()) < 0.03 * std


def test_trunc_normal_and_orthogonal():
    tp.manual_seed(5)
    w = init.trunc_normal_(tp.empty(50, 50), std=1.0, a=-0.5, b=0.5).numpy()
    assert w.min() >= -0.5 and w.max() <= 0.5 and w.std() > 0.2
    q = init.orthogonal_(tp.empty(4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)


def test_default_init_linear_and_conv():
    tp.manual_seed(6)
    lin = nn.Linear(50, 400)
    k = 1 / math.sqrt(50)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert np.abs(w).max() <= k and np.abs(w).max() > 0.99 * k
    assert np.abs(b).max() <= k and abs(w.var() - k * k / 3) < 0.05 * k * k
    conv = nn.Conv2d(6, 64, 3, groups=2)
    k = 1 / math.sqrt(3 * 9)
    assert np.abs(conv.weight.numpy()).max() <= k and np.abs(conv.weight.numpy()).max() > 0.95 * k
    assert np.abs(conv.bias.numpy()).max() <= k
    emb = nn.Embedding(300, 100)
    assert abs(emb.weight.numpy().std() - 1.0) < 0.02


def test_init_is_seeded():
    tp.manual_seed(42)
    a = nn.Linear(3, 3).weight.numpy().copy()
    tp.manual_seed(42)
    np.testing.assert_array_equal(a, nn.Linear(3, 3).weight.numpy())

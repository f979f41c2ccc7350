"""repeat, tile and repeat_interleave return fresh tensors under a trace, as eagerly: writing
into the result never reaches the input (compile, vmap, grad), and never hits the overlap check."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, vmap

OPS = {
    "repeat": lambda x: x.repeat(1, 1),
    "repeat2": lambda x: x.repeat(2, 1),
    "tile": lambda x: x.tile((1,)),
    "tile2": lambda x: x.tile((2,)),
    "repeat_interleave": lambda x: x.repeat_interleave(1),
    "repeat_interleave_dim": lambda x: x.repeat_interleave(2, dim=0),
}


def _numpy(name, a):
    return {"repeat": lambda: np.tile(a, (1, 1)), "repeat2": lambda: np.tile(a, (2, 1)),
            "tile": lambda: np.tile(a, 1), "tile2": lambda: np.tile(a, 2),
            "repeat_interleave": lambda: np.repeat(a, 1), "repeat_interleave_dim": lambda: np.repeat(a, 2, axis=0)}[name]()


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("write", ["mul_", "add_"])
def test_fresh_under_compile(name, write):
    op = OPS[name]
    x = tp.arange(1.0, 4.0)
    before = x.numpy().copy()
    out = tp.compile(lambda t: getattr(op(t), write)(0 if write == "mul_" else 1))(x)
    want = _numpy(name, before) * 0 if write == "mul_" else _numpy(name, before) + 1
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(x.numpy(), before)
    eager = getattr(op(x), write)(0 if write == "mul_" else 1)  # eager agrees
    np.testing.assert_array_equal(eager.numpy(), want)
    np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("name", sorted(OPS))
def test_fresh_under_vmap(name):
    op = OPS[name]
    xs = tp.arange(6.0).reshape(2, 3)
    before = xs.numpy().copy()
    out = vmap(lambda t: op(t).add_(1))(xs)
    want = np.stack([_numpy(name, r) + 1 for r in before])
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(xs.numpy(), before)


@pytest.mark.parametrize("name", sorted(OPS))
def test_fresh_under_grad(name):
    op = OPS[name]
    x = tp.tensor([1.0, 2.0, 3.0], dtype=tp.float64)
    before = x.numpy().copy()

    def f(t):
        y = op(t)
        y.mul_(0)              # does not reach t: the loss below is sum(t * t)
        return (t * t).sum() + y.sum()

    np.testing.assert_allclose(grad(f)(x).numpy(), 2 * before)
    np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("name", sorted(OPS))
def test_fresh_from_an_empty_expanded_tensor(name):
    """An empty result shares no memory with its source, yet may be a read-only view of it
    (found by the fuzzer: tile of an expanded (2, 0) tensor, then add_)."""
    x = tp.zeros(1, 0).expand(2, 0)
    y = OPS[name](x)
    y.add_(1)  # a fresh, writeable tensor, eager as under a trace
    assert y.numel() == 0
    y2 = tp.compile(lambda t: OPS[name](t).add_(1))(x)
    assert y2.numel() == 0

"""diagflat and cov against torch (and numpy), under transforms (issue 16 item 11)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, jacrev, vmap

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 2), (2, 1, 3)])
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diagflat_matches_numpy(shape, offset):
    a = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = tp.diagflat(tp.tensor(a), offset)
    np.testing.assert_array_equal(got.numpy(), np.diagflat(a, offset))
    assert got.dtype is tp.float32
    np.testing.assert_array_equal(tp.tensor(a).diagflat(offset).numpy(), np.diagflat(a, offset))


@needs_torch
def test_diagflat_matches_torch_including_integers_and_non_contiguous():
    a = np.arange(12).reshape(3, 4)
    t = tp.tensor(a).T[1:]
    np.testing.assert_array_equal(tp.diagflat(t, 2).numpy(), torch.diagflat(torch.tensor(a).T[1:], 2).numpy())


def test_diagflat_under_transforms():
    x = tp.tensor([1.0, -2.0, float("inf")])
    assert tp.diagflat(x)[2, 2].item() == float("inf") and tp.diagflat(x)[0, 2].item() == 0.0  # no inf * 0
    out = vmap(lambda v: tp.diagflat(v, 1))(tp.ones(4, 2))
    np.testing.assert_array_equal(out.numpy(), np.stack([np.diagflat(np.ones(2), 1)] * 4))
    g = grad(lambda v: (tp.diagflat(v) * tp.arange(9.0).reshape(3, 3)).sum())(tp.ones(3))
    assert g.tolist() == [0.0, 4.0, 8.0]
    assert tp.compile(lambda v: tp.diagflat(v, -1))(tp.ones(2)).tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]


COV_CASES = [
    dict(), dict(correction=0), dict(correction=2), dict(fweights=True), dict(aweights=True),
    dict(fweights=True, aweights=True), dict(fweights=True, aweights=True, correction=0),
]


@needs_torch
@pytest.mark.parametrize("kw", COV_CASES, ids=range(len(COV_CASES)))
@pytest.mark.parametrize("shape", [(3, 6), (6,), (1, 4), (2, 2)])
def test_cov_matches_torch(kw, shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    n = shape[-1]
    args, targs = {}, {}
    if "correction" in kw:
        args["correction"] = targs["correction"] = kw["correction"]
    if kw.get("fweights"):
        f = rng.integers(0, 4, n)
        args["fweights"], targs["fweights"] = tp.tensor(f), torch.tensor(f)
    if kw.get("aweights"):
        w = rng.random(n)
        args["aweights"], targs["aweights"] = tp.tensor(w), torch.tensor(w)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tp.cov(tp.tensor(a), **args)
        want = torch.cov(torch.tensor(a), **targs)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_cov_against_numpy_integer_input_and_errors():
    a = np.array([[1, 2, 4, 7], [0, 1, 1, 0]])
    np.testing.assert_allclose(tp.cov(tp.tensor(a)).numpy(), np.cov(a), rtol=1e-6)
    assert tp.cov(tp.tensor(a)).dtype is tp.float32
    with pytest.raises(ValueError, match="two or fewer"):
        tp.cov(tp.ones(2, 2, 2))
    with pytest.raises(ValueError, match="fweights"):
        tp.cov(tp.ones(2, 3), fweights=tp.ones(3))
    with pytest.raises(ValueError, match="negative"):
        tp.cov(tp.ones(2, 3), aweights=tp.tensor([1.0, -1.0, 1.0]))


def test_cov_under_transforms():
    x = tp.tensor(np.random.default_rng(2).standard_normal((2, 5)))
    batched = vmap(tp.cov)(tp.stack([x, x * 2]))
    np.testing.assert_allclose(batched.numpy(), np.stack([np.cov(x.numpy()), np.cov(2 * x.numpy())]), rtol=1e-10)
    # d/dx of sum(cov(x)) by finite differences
    f = lambda v: tp.cov(v).sum()  # noqa: E731
    g = grad(f)(x).numpy()
    eps = 1e-6
    num = np.zeros_like(g)
    for idx in np.ndindex(*g.shape):
        d = np.zeros_like(g)
        d[idx] = eps
        num[idx] = (f(tp.tensor(x.numpy() + d)).item() - f(tp.tensor(x.numpy() - d)).item()) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)
    assert tuple(jacrev(tp.cov)(x).shape) == (2, 2, 2, 5)


def test_squeeze_and_unsqueeze_in_place_keep_storage_and_views():
    base = tp.zeros(2, 1, 3)
    v = base[1]
    assert v.squeeze_() is v and tuple(v.shape) == (3,)
    v.add_(1.0)
    assert base[1].tolist() == [[1.0, 1.0, 1.0]] and base[0].tolist() == [[0.0, 0.0, 0.0]]
    assert v.unsqueeze_(0) is v and tuple(v.shape) == (1, 3)
    v[0, 0] = 5.0
    assert base[1, 0].tolist() == [5.0, 1.0, 1.0]
    assert tp.compile(lambda t: t.sum())(v).item() == 7.0  # the view is still read through its base
    root = tp.ones(1, 2, 1)
    assert tuple(root.squeeze_(-1).shape) == (1, 2) and tuple(root.squeeze_((0,)).shape) == (2,)
    assert tuple(root.unsqueeze_(-1).shape) == (2, 1) and root.tolist() == [[1.0], [1.0]]
    with pytest.raises(NotImplementedError, match="squeeze_: changing a tensor's shape in place"):
        tp.compile(lambda t: t.squeeze_())(tp.zeros(1, 2))
    with pytest.raises(NotImplementedError, match="unsqueeze_"):
        vmap(lambda t: t.unsqueeze_(0))(tp.zeros(3, 2))


@needs_torch
@pytest.mark.parametrize("shape, op, arg", [((1, 3, 1), "squeeze_", None), ((1, 3, 1), "squeeze_", 2),
                                            ((2, 3), "squeeze_", 0), ((2, 3), "unsqueeze_", -1),
                                            ((), "unsqueeze_", 0), ((1,), "squeeze_", None)])
def test_squeeze_unsqueeze_in_place_shapes_match_torch(shape, op, arg):
    args = () if arg is None else (arg,)
    t, tt = tp.zeros(*shape), torch.zeros(shape)
    assert tuple(getattr(t, op)(*args).shape) == tuple(getattr(tt, op)(*args).shape)

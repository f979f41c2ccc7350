"""Shape/combination ops, order-statistic reductions and the extra Tensor methods, against torch (float64):
ordinary, 0-d, empty and non-contiguous inputs; gradients; vmap vs loop-and-stack."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, vmap

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(1)


def arr(*shape):
    return RNG.standard_normal(shape)


def same(ours, theirs, tol=1e-12):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            same(o, t, tol)
        return
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]


SHAPE_CASES = [
    ("ravel", lambda m: (m.tensor(A).t(),), {}),
    ("fliplr", lambda m: (m.tensor(A),), {}),
    ("flipud", lambda m: (m.tensor(A),), {}),
    ("rot90", lambda m: (m.tensor(A),), {}),
    ("rot90", lambda m: (m.tensor(B),), dict(k=3, dims=(2, 0))),
    ("rot90", lambda m: (m.tensor(B),), dict(k=-2, dims=(1, 2))),
    ("rot90", lambda m: (m.tensor(A),), dict(k=4)),
    ("diff", lambda m: (m.tensor(A),), {}),
    ("diff", lambda m: (m.tensor(B),), dict(n=2, dim=1)),
    ("diff", lambda m: (m.tensor(A[0]),), dict(prepend=None, append=None)),
    ("dstack", lambda m: ([m.tensor(A[0]), m.tensor(A[1])],), {}),
    ("column_stack", lambda m: ([m.tensor(A[0]), m.tensor(A[1])],), {}),
    ("column_stack", lambda m: ([m.tensor(A.T), m.tensor(A[1])],), {}),
    ("kron", lambda m: (m.tensor(A), m.tensor(A[:2, :2])), {}),
    ("kron", lambda m: (m.tensor(A[0]), m.tensor(B)), {}),
    ("block_diag", lambda m: (m.tensor(A), m.tensor(A[0]), m.tensor(2.0)), {}),
    ("cartesian_prod", lambda m: (m.tensor(A[0]), m.tensor(A[1, :2])), {}),
    ("vander", lambda m: (m.tensor(A[0]),), dict(N=4)),
    ("vander", lambda m: (m.tensor(A[0]),), dict(increasing=True)),
    ("take_along_dim", lambda m: (m.tensor(A), m.argsort(m.tensor(A), dim=1)), dict(dim=1)),
    ("take_along_dim", lambda m: (m.tensor(A), m.tensor([[0], [2]])), dict(dim=1)),
    ("take_along_dim", lambda m: (m.tensor(A), m.tensor([3, 0, 1]),), {}),
]
A = RNG.standard_normal((2, 5))
B = RNG.standard_normal((3, 4, 2))


@pytest.mark.parametrize("name, args, kw", SHAPE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SHAPE_CASES)])
def test_shape_ops_match_torch(name, args, kw):
    same(getattr(tp, name)(*args(tp), **kw), getattr(torch, name)(*args(torch), **kw))


def test_diff_with_prepend_append_and_bools():
    x = arr(3, 4)
    same(tp.diff(tp.tensor(x), dim=0, prepend=tp.tensor(x[:1]), append=tp.tensor(x[:2])),
         torch.diff(torch.tensor(x), dim=0, prepend=torch.tensor(x[:1]), append=torch.tensor(x[:2])))
    b = np.array([True, False, False, True])
    assert tp.diff(tp.tensor(b)).tolist() == torch.diff(torch.tensor(b)).tolist()
    assert tp.diff(tp.tensor(x), n=5).shape == torch.diff(torch.tensor(x), n=5).shape


def test_meshgrid_atleast_and_indices_match_torch():
    a, b = arr(3), arr(2)
    for indexing in ("ij", "xy"):
        same(tp.meshgrid(tp.tensor(a), tp.tensor(b), indexing=indexing),
             torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing))
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for x in (np.float64(2.0), arr(3), arr(2, 3)):
            same(getattr(tp, name)(tp.tensor(x)), getattr(torch, name)(torch.tensor(x)))
        same(getattr(tp, name)(tp.tensor(a), tp.tensor(3.0)), getattr(torch, name)(torch.tensor(a), torch.tensor(3.0)))
    for args in ((3, 3), (4, 2, 1), (3, 5, -1), (0, 0)):
        assert tp.tril_indices(*args).tolist() == torch.tril_indices(*args).tolist()
        assert tp.triu_indices(*args).tolist() == torch.triu_indices(*args).tolist()


def test_shape_op_grads_and_vmap():
    x = arr(3, 4)
    for f, tf in ((lambda t: (tp.rot90(t) * tp.tensor(np.arange(12.0).reshape(4, 3))).sum(),
                   lambda t: (torch.rot90(t) * torch.arange(12.0, dtype=torch.float64).reshape(4, 3)).sum()),
                  (lambda t: (tp.diff(t, n=2) ** 2).sum(), lambda t: (torch.diff(t, n=2) ** 2).sum()),
                  (lambda t: (tp.kron(t, t[:2, :2]) ** 2).sum(), lambda t: (torch.kron(t, t[:2, :2]) ** 2).sum())):
        tx = torch.tensor(x, requires_grad=True)
        tf(tx).backward()
        same(grad(f)(tp.tensor(x)), tx.grad, 1e-10)
    xs = tp.tensor(arr(4, 3, 5))
    for f in (tp.rot90, tp.fliplr, tp.diff, lambda t: tp.kron(t, t[:1])):
        np.testing.assert_allclose(vmap(f)(xs).numpy(), tp.stack([f(xs[i]) for i in range(4)]).numpy())


def test_shape_op_errors():
    with pytest.raises(ValueError, match="fliplr"):
        tp.fliplr(tp.ones(3))
    with pytest.raises(ValueError, match="rot90"):
        tp.rot90(tp.ones(2, 2), dims=(0, 0))
    with pytest.raises(ValueError, match="diff"):
        tp.diff(tp.tensor(1.0))
    with pytest.raises(ValueError, match="vander"):
        tp.vander(tp.ones(2, 2))


NAN = np.array([[1.0, np.nan, 3.0, 0.5], [2.0, 4.0, -1.0, 8.0], [np.nan, np.nan, np.nan, np.nan]])
PLAIN = RNG.standard_normal((3, 5))


@pytest.mark.parametrize("x", [PLAIN, NAN, PLAIN[:, ::2].T, np.float64(2.5)], ids=["plain", "nan", "strided", "0d"])
def test_nan_reductions_and_medians_match_torch(x):
    t, tt = tp.tensor(x), torch.tensor(x)
    if x.ndim:
        t, tt = (t.t(), tt.t()) if x.shape == PLAIN[:, ::2].T.shape else (t, tt)
    for name in ("nansum", "nanmean", "median", "nanmedian", "count_nonzero"):
        same(getattr(tp, name)(t), getattr(torch, name)(tt))
    if x.ndim:
        for name in ("nansum", "nanmean"):
            same(getattr(tp, name)(t, 1, keepdim=True), getattr(torch, name)(tt, 1, keepdim=True))
        for name in ("median", "nanmedian"):
            ours, theirs = getattr(tp, name)(t, 1), getattr(torch, name)(tt, 1)
            same(ours.values, theirs.values)
            finite = ~np.isnan(theirs.values.numpy())  # torch's index for an all-NaN row is unspecified
            np.testing.assert_array_equal(ours.indices.numpy()[finite], theirs.indices.numpy()[finite])
            same(getattr(tp, name)(t, 0, keepdim=True).values, getattr(torch, name)(tt, 0, keepdim=True).values)
        same(tp.count_nonzero(t, dim=0), torch.count_nonzero(tt, dim=0))
    else:
        same(tp.median(t, 0).values, torch.median(tt, 0).values)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantiles_match_torch(interpolation):
    q = np.array([0.0, 0.1, 0.5, 0.75, 1.0])
    for x in (PLAIN, NAN):
        t, tt = tp.tensor(x), torch.tensor(x)
        for name in ("quantile", "nanquantile"):
            fn, tfn = getattr(tp, name), getattr(torch, name)
            kw = dict(interpolation=interpolation)
            same(fn(t, 0.3, **kw), tfn(tt, 0.3, **kw))
            same(fn(t, tp.tensor(q), dim=1, **kw), tfn(tt, torch.tensor(q), dim=1, **kw))
            same(fn(t, tp.tensor(q), dim=0, keepdim=True, **kw), tfn(tt, torch.tensor(q), dim=0, keepdim=True, **kw))
            same(fn(t, 0.5, dim=1, keepdim=True, **kw), tfn(tt, 0.5, dim=1, keepdim=True, **kw))
            same(fn(t, tp.tensor(q), keepdim=True, **kw), tfn(tt, torch.tensor(q), keepdim=True, **kw))


def test_var_std_mean_and_grads():
    x = arr(3, 4)
    same(tp.var_mean(tp.tensor(x), 1), torch.var_mean(torch.tensor(x), 1))
    same(tp.std_mean(tp.tensor(x), dim=0, correction=0, keepdim=True),
         torch.std_mean(torch.tensor(x), dim=0, correction=0, keepdim=True))
    for f, tf in ((lambda t: tp.median(t, 1).values.sum(), lambda t: torch.median(t, 1).values.sum()),
                  (lambda t: tp.quantile(t, 0.3, dim=0).sum(), lambda t: torch.quantile(t, 0.3, dim=0).sum()),
                  (lambda t: tp.nanmean(t), lambda t: torch.nanmean(t))):
        tx = torch.tensor(x, requires_grad=True)
        tf(tx).backward()
        same(grad(f)(tp.tensor(x)), tx.grad, 1e-10)
    xs = tp.tensor(arr(4, 3, 5))
    for f in (lambda t: tp.median(t, 1).values, lambda t: tp.quantile(t, 0.6, dim=0), tp.nanmedian):
        np.testing.assert_allclose(vmap(f)(xs).numpy(), tp.stack([f(xs[i]) for i in range(4)]).numpy())


def test_reduction_errors():
    with pytest.raises(ValueError, match="range"):
        tp.quantile(tp.ones(3), 1.5)
    with pytest.raises(TypeError, match="float"):
        tp.quantile(tp.tensor([1, 2]), 0.5)
    with pytest.raises(IndexError, match="non-empty"):
        tp.median(tp.zeros(0))
    with pytest.raises(TypeError, match="nanmean"):
        tp.nanmean(tp.tensor([1, 2]))


def test_tensor_method_extras_match_torch():
    x = arr(3, 4)
    t, tt = tp.tensor(x), torch.tensor(x)
    assert t.type_as(tp.tensor([1])).dtype is tp.int64 and t.type_as(t) is t
    assert t.stride() == tt.stride() and t.t().stride() == tt.t().stride() and t[:, ::2].stride(1) == 2
    assert tp.zeros(2, 3)[1:].stride() == (3, 1)
    same(t.sum_to_size(1, 4), tt.sum_to_size(1, 4))
    same(t.sum_to_size(3, 1), tt.sum_to_size(3, 1))
    same(t.sum_to_size(4), tt.sum_to_size(4))
    with pytest.raises(RuntimeError, match="expandable"):
        t.sum_to_size(2, 4)
    assert t.is_cuda is False and t.is_cpu is True
    y = tp.tensor(x, requires_grad=True) * 2
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None
    z = tp.tensor(x, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="views"):
        z[0].detach_()


def test_multinomial_distribution_and_errors():
    tp.manual_seed(0)
    w = tp.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 0.0]])
    draws = tp.multinomial(w, 4000, replacement=True).numpy()
    assert draws.shape == (2, 4000) and draws.dtype == np.int64
    freq = np.stack([np.bincount(r, minlength=4) / 4000 for r in draws])
    np.testing.assert_allclose(freq, w.numpy() / w.numpy().sum(1, keepdims=True), atol=0.03)
    assert not (draws[0] == 1).any() and not (draws[1] >= 2).any()  # zero weights are never drawn
    no_rep = tp.multinomial(w, 2).numpy()
    assert all(len(set(r)) == 2 for r in no_rep) and set(no_rep[1]) == {0, 1} and 1 not in no_rep[0]
    tp.manual_seed(5)
    a = tp.multinomial(tp.tensor([1.0, 2.0, 3.0]), 2)
    tp.manual_seed(5)
    assert a.tolist() == tp.multinomial(tp.tensor([1.0, 2.0, 3.0]), 2).tolist()
    with pytest.raises(RuntimeError, match="without replacement"):
        tp.multinomial(tp.tensor([1.0, 1.0]), 3)
    with pytest.raises(RuntimeError, match="element < 0"):
        tp.multinomial(tp.tensor([1.0, -1.0]), 1)

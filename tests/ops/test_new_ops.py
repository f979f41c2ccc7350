"""The sorting, scan, matrix-structure, scatter and data-dependent ops (issue 16, item 2).

Each op is checked against PyTorch where it is installed (numpy by hand where not),
on 0-d, empty, non-contiguous and several dtypes; gradients against float64
central differences; vmap against a loop; tp.compile against eager.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, jacfwd, vmap

try:
    import torch
except ImportError:  # the numpy oracles below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
RNG = np.random.default_rng(16)


def _ties(shape, dtype=np.float64):
    """Values with ties and (for floats) a NaN: the cases where sorting conventions differ."""
    x = RNG.integers(-3, 4, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.floating) and x.size > 2:
        x.flat[2] = np.nan
    return x


def _noncontig(a: np.ndarray) -> tp.Tensor:
    """`a` as a transposed (non-contiguous) tensor view."""
    return tp.tensor(np.ascontiguousarray(a.T)).T if a.ndim >= 2 else tp.tensor(a)


def _np(out):
    if isinstance(out, (tuple, list)):
        return [_np(o) for o in out]
    return out.numpy() if hasattr(out, "numpy") else np.asarray(out)


def _assert_same(got, want):
    got, want = _np(got), _np(want)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12, equal_nan=True)


# (id, call(lib, x), inputs): `lib` is tensorplay or torch; the call uses only the API both share.
FLOAT_CASES = [
    ("sort", lambda m, x: m.sort(x, -1), [(5,), (3, 4), (0, 3), ()]),
    ("sort_desc_dim0", lambda m, x: m.sort(x, dim=0, descending=True, stable=True), [(5,), (4, 3)]),
    ("argsort", lambda m, x: m.argsort(x, dim=-1, stable=True), [(6,), (2, 5)]),
    ("argsort_desc", lambda m, x: m.argsort(x, descending=True, stable=True), [(7,), (3, 4)]),
    ("msort", lambda m, x: m.msort(x), [(4, 3), (5,)]),
    ("cumsum", lambda m, x: m.cumsum(x, -1), [(5,), (3, 4), (0,), ()]),
    ("cumprod", lambda m, x: m.cumprod(x, 0), [(5,), (4, 3), (0, 2), ()]),
    ("cummax", lambda m, x: m.cummax(x, -1), [(8,), (3, 5), ()]),
    ("cummin", lambda m, x: m.cummin(x, 0), [(8,), (5, 3)]),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, -1), [(7,), (3, 4), ()]),
    ("tril", lambda m, x: m.tril(x), [(3, 4), (2, 3, 3), (0, 2)]),
    ("triu_k", lambda m, x: m.triu(x, -1), [(4, 3), (2, 2, 5)]),
    ("tril_k", lambda m, x: m.tril(x, 2), [(4, 4)]),
    ("diag_vec", lambda m, x: m.diag(x, 1), [(3,), (0,)]),
    ("diag_mat", lambda m, x: m.diag(x, -1), [(3, 4), (4, 2)]),
    ("diag_embed", lambda m, x: m.diag_embed(x, 1, 0, 2), [(2, 3)]),
    ("diag_embed_last", lambda m, x: m.diag_embed(x, -2), [(2, 3), (4,)]),
    ("trace", lambda m, x: m.trace(x), [(3, 3), (2, 4), (0, 0)]),
    ("clamp_min", lambda m, x: m.clamp_min(x, 0.5), [(5,), ()]),
    ("clamp_max", lambda m, x: x.clamp_max(-0.5), [(2, 3)]),
]


def _case_params(cases, dtypes):
    return [pytest.param(call, shape, d, id=f"{name}-{'x'.join(map(str, shape))}-{np.dtype(d).name}")
            for name, call, shapes in cases for shape in shapes for d in dtypes]


@needs_torch
@pytest.mark.parametrize("call,shape,dtype", _case_params(FLOAT_CASES, (np.float32, np.float64)))
def test_against_torch(call, shape, dtype):
    x = _ties(shape, dtype)
    _assert_same(call(tp, tp.tensor(x)), call(torch, torch.tensor(x)))
    if x.ndim >= 2:  # non-contiguous input
        _assert_same(call(tp, _noncontig(x)), call(torch, torch.tensor(x)))


INT_CASES = [c for c in FLOAT_CASES if c[0] not in ("logcumsumexp",)]


@needs_torch
@pytest.mark.parametrize("call,shape,dtype", _case_params(INT_CASES, (np.int64, np.int32)))
def test_integers_against_torch(call, shape, dtype):
    x = _ties(shape, dtype)
    _assert_same(call(tp, tp.tensor(x)), call(torch, torch.tensor(x)))


def test_sort_by_hand():
    x = np.array([[2.0, np.nan, 1.0, 2.0], [0.0, -1.0, 0.0, 5.0]])
    v, i = tp.sort(tp.tensor(x), descending=True)
    assert i.dtype == tp.int64 and i.tolist() == [[1, 0, 3, 2], [3, 0, 2, 1]]
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, i.numpy(), 1))
    v, i = tp.topk(tp.tensor([1.0, 5.0, 3.0, 4.0]), 3, largest=False)
    assert v.tolist() == [1.0, 3.0, 4.0] and i.tolist() == [0, 2, 3]
    v, i = tp.kthvalue(tp.tensor([[3.0, 1.0, 2.0]]), 3, dim=1, keepdim=True)
    assert v.tolist() == [[3.0]] and i.tolist() == [[0]]
    assert tp.argsort(tp.tensor([True, False, True])).tolist() == [1, 0, 2]


@needs_torch
def test_topk_kthvalue_against_torch():
    x = RNG.standard_normal((4, 6))  # distinct values: torch leaves tie order unspecified
    for k in (0, 1, 3, 6):
        _assert_same(tp.topk(tp.tensor(x), k), torch.topk(torch.tensor(x), k))
        _assert_same(tp.topk(tp.tensor(x), k, dim=0 if k < 5 else 1, largest=False),
                     torch.topk(torch.tensor(x), k, dim=0 if k < 5 else 1, largest=False))
    for k in (1, 4):
        _assert_same(tp.kthvalue(tp.tensor(x), k, 0), torch.kthvalue(torch.tensor(x), k, 0))
    with pytest.raises(RuntimeError, match="topk"):
        tp.topk(tp.tensor(x), 7)
    with pytest.raises(RuntimeError, match="kthvalue"):
        tp.kthvalue(tp.tensor(x), 0)


@needs_torch
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize_against_torch(right):
    seq = np.array([1.0, 2.0, 2.0, 4.0])  # (torch's binary search is undefined with NaN in the sequence)
    vals = np.array([[np.nan, 2.0, 0.0], [4.0, 5.0, 1.5]])
    _assert_same(tp.searchsorted(tp.tensor(seq), tp.tensor(vals), right=right),
                 torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right))
    seq2 = np.sort(RNG.integers(0, 5, size=(2, 6)), axis=1)
    v2 = RNG.integers(-1, 6, size=(2, 4))
    _assert_same(tp.searchsorted(tp.tensor(seq2), tp.tensor(v2), side="right" if right else "left", out_int32=True),
                 torch.searchsorted(torch.tensor(seq2), torch.tensor(v2), right=right, out_int32=True))
    _assert_same(tp.searchsorted(tp.tensor(seq), 2.0, right=right),
                 torch.searchsorted(torch.tensor(seq), 2.0, right=right))
    b = np.array([1.0, 3.0, 5.0])
    _assert_same(tp.bucketize(tp.tensor(vals), tp.tensor(b), right=right),
                 torch.bucketize(torch.tensor(vals), torch.tensor(b), right=right))
    perm = np.array([3, 0, 2, 1])
    shuffled = np.array([1.0, 2.0, 4.0, 2.0])[np.argsort(perm)]
    sorter = np.argsort(shuffled, kind="stable")
    _assert_same(tp.searchsorted(tp.tensor(shuffled), tp.tensor([2.0, 3.0]), sorter=tp.tensor(sorter), right=right),
                 torch.searchsorted(torch.tensor(shuffled), torch.tensor([2.0, 3.0]), sorter=torch.tensor(sorter),
                                    right=right))


def test_scans_by_hand():
    x = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 5.0])
    v, i = tp.cummax(tp.tensor(x), 0)
    assert i.tolist() == [0, 1, 2, 2, 4, 4]
    np.testing.assert_array_equal(v.numpy(), [1, 3, 3, 3, np.nan, np.nan])
    assert tp.cumprod(tp.tensor([True, True, False]), 0).tolist() == [1, 1, 0]
    assert tp.cumsum(tp.tensor([1, 2], dtype=tp.int32), 0).dtype == tp.int64
    big = np.array([-1000.0, 0.0, -np.inf, 1000.0])
    np.testing.assert_allclose(tp.logcumsumexp(tp.tensor(big), 0).numpy(),
                               [-1000.0, 0.0, 0.0, 1000.0], rtol=1e-12)
    x = RNG.standard_normal(37)
    np.testing.assert_allclose(tp.cumprod(tp.tensor(x), 0).numpy(), np.cumprod(x), rtol=1e-12)
    np.testing.assert_allclose(tp.logcumsumexp(tp.tensor(x), 0).numpy(), np.logaddexp.accumulate(x), rtol=1e-12)


# --- scatter -------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_against_torch(reduce, include_self):
    for dim, ishape in ((0, (2, 3)), (1, (3, 2)), (-1, (1, 4))):
        x = RNG.integers(-3, 4, size=(3, 4)).astype(np.float64)
        src = RNG.integers(-3, 4, size=(3, 5)).astype(np.float64)
        idx = RNG.integers(0, 3 if dim == 0 else 4, size=ishape)
        want = torch.tensor(x).scatter_reduce(dim, torch.tensor(idx), torch.tensor(src), reduce,
                                              include_self=include_self)
        _assert_same(tp.tensor(x).scatter_reduce(dim, tp.tensor(idx), tp.tensor(src), reduce,
                                                 include_self=include_self), want)
    xi, si = np.array([[1, 2], [3, 4]]), np.array([[5, 8]])
    _assert_same(tp.scatter_reduce(tp.tensor(xi), 0, tp.tensor([[0, 0]]), tp.tensor(si), reduce,
                                   include_self=include_self),
                 torch.scatter_reduce(torch.tensor(xi), 0, torch.tensor([[0, 0]]), torch.tensor(si), reduce,
                                      include_self=include_self))


@needs_torch
def test_scatter_against_torch():
    x = RNG.standard_normal((3, 4))
    idx = np.array([[2, 0, 1, 1], [0, 1, 2, 0]])  # no repeats within a column: torch is deterministic
    src = RNG.standard_normal((2, 5))
    _assert_same(tp.scatter(tp.tensor(x), 0, tp.tensor(idx), tp.tensor(src)),
                 torch.scatter(torch.tensor(x), 0, torch.tensor(idx), torch.tensor(src)))
    _assert_same(tp.tensor(x).scatter(1, tp.tensor(idx[:, :2]), value=2.5),
                 torch.tensor(x).scatter(1, torch.tensor(idx[:, :2]), 2.5))
    for reduce in ("add", "multiply"):
        _assert_same(tp.scatter(tp.tensor(x), 0, tp.tensor(idx), tp.tensor(src), reduce=reduce),
                     torch.scatter(torch.tensor(x), 0, torch.tensor(idx), torch.tensor(src), reduce=reduce))
    _assert_same(tp.scatter(tp.tensor(3.0), 0, tp.tensor(0), tp.tensor(5.0)),
                 torch.scatter(torch.tensor(3.0), 0, torch.tensor(0), torch.tensor(5.0)))
    t = tp.zeros(2, 3)
    t.scatter_(1, tp.tensor([[2], [0]]), tp.tensor([[1.0], [2.0]]))
    assert t.tolist() == [[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]]


def test_scatter_last_writer_wins_and_errors():
    out = tp.scatter(tp.zeros(3), 0, tp.tensor([2, 0, 2, 2]), tp.tensor([1.0, 2.0, 3.0, 4.0]))
    assert out.tolist() == [2.0, 0.0, 4.0]
    with pytest.raises(IndexError):
        tp.scatter(tp.zeros(3), 0, tp.tensor([3]), tp.tensor([1.0]))
    with pytest.raises(RuntimeError, match="scatter_reduce"):
        tp.scatter_reduce(tp.zeros(3), 0, tp.tensor([0]), tp.tensor([1.0]), "median")
    with pytest.raises(RuntimeError, match="as many dims"):
        tp.scatter(tp.zeros(3, 2), 0, tp.tensor([0]), tp.tensor([1.0]))


# --- data-dependent shapes ----------------------------------------------------------------------
def test_nonzero_family_by_hand():
    a = np.array([[0, 1.5, 0], [2, 0, -1.0]])
    assert tp.nonzero(tp.tensor(a)).tolist() == np.argwhere(a).tolist()
    assert [t.tolist() for t in tp.nonzero(tp.tensor(a), as_tuple=True)] == [r.tolist() for r in np.nonzero(a)]
    assert tp.argwhere(tp.tensor(a)).dtype == tp.int64
    assert tuple(tp.nonzero(tp.tensor(3.0)).shape) == (1, 0) and tuple(tp.nonzero(tp.zeros(0, 2)).shape) == (0, 2)
    assert tp.nonzero(tp.tensor(a), size=4).tolist() == [[0, 1], [1, 0], [1, 2], [-1, -1]]
    assert tp.nonzero(tp.tensor(a), size=2, fill_value=0).tolist() == [[0, 1], [1, 0]]
    m = a > 0
    assert tp.masked_select(tp.tensor(a), tp.tensor(m)).tolist() == a[m].tolist()
    assert tp.masked_select(tp.tensor(a), tp.tensor([True, False, True])).tolist() == [0.0, 0.0, 2.0, -1.0]
    assert tp.masked_select(tp.tensor(a), tp.tensor(m), size=3, fill_value=7.0).tolist() == [1.5, 2.0, 7.0]
    out, inv, cnt = tp.unique(tp.tensor([3, 1, 3, 2]), return_inverse=True, return_counts=True)
    assert (out.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 3], [2, 0, 2, 1], [1, 1, 2])
    assert tp.unique(tp.tensor([[1, 2], [1, 2], [0, 1]]), dim=0).tolist() == [[0, 1], [1, 2]]


@needs_torch
def test_unique_against_torch():
    x = RNG.integers(0, 4, size=(3, 5))
    for dim in (None, 0, 1):
        _assert_same(tp.unique(tp.tensor(x), return_inverse=True, return_counts=True, dim=dim),
                     torch.unique(torch.tensor(x), return_inverse=True, return_counts=True, dim=dim))


@pytest.mark.parametrize("fn", [tp.nonzero, tp.argwhere, tp.unique, lambda v: tp.masked_select(v, v > 0)])
def test_data_dependent_shapes_name_the_op_and_transform(fn):
    x = tp.tensor([[0.0, 1.0], [2.0, 0.0]])
    with pytest.raises(tp.TracingError, match=r"(nonzero|unique|masked_select).*vmap"):
        vmap(fn)(x)
    with pytest.raises(tp.TracingError, match=r"(nonzero|unique|masked_select).*compile"):
        tp.compile(fn)(x)


def test_static_size_traces_under_every_transform():
    a = tp.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    loop = tp.stack([tp.nonzero(r, size=2) for r in a])
    assert vmap(lambda r: tp.nonzero(r, size=2))(a).tolist() == loop.tolist()
    f = tp.compile(lambda v: tp.masked_select(v, v > 0, size=3))
    assert f(a).tolist() == [1.5, 2.0, 0.0]
    g = grad(lambda v: (tp.masked_select(v, v > 0, size=1) * 3).sum())(a)
    assert g.tolist() == [[0.0, 3.0, 0.0], [0.0, 0.0, 0.0]]
    assert grad(lambda v: tp.masked_select(v, v > 0).sum())(a).tolist() == [[0, 1, 0], [1, 0, 0]]


# --- transforms ---------------------------------------------------------------------------------
DIFF = [  # (id, f: tensor -> tensor, input shape); inputs are distinct, so sort-based ops are smooth
    ("sort", lambda x: tp.sort(x, -1).values, (3, 4)),
    ("sort_desc", lambda x: tp.sort(x, 0, descending=True).values, (4, 2)),
    ("topk", lambda x: tp.topk(x, 2).values, (3, 5)),
    ("kthvalue", lambda x: tp.kthvalue(x, 2, 0).values, (4, 3)),
    ("msort", tp.msort, (3, 2)),
    ("cumsum", lambda x: tp.cumsum(x, 1), (2, 5)),
    ("cumprod", lambda x: tp.cumprod(x, -1), (2, 6)),
    ("cummax", lambda x: tp.cummax(x, 1).values, (2, 5)),
    ("cummin", lambda x: tp.cummin(x, 0).values, (5, 2)),
    ("logcumsumexp", lambda x: tp.logcumsumexp(x, 1), (2, 5)),
    ("tril", lambda x: tp.tril(x, -1), (3, 3)),
    ("triu", lambda x: tp.triu(x), (2, 3, 4)),
    ("diag", lambda x: tp.diag(x, 1), (4,)),
    ("diag_embed", lambda x: tp.diag_embed(x, 0, 0, 2), (2, 3)),
    ("trace", tp.trace, (3, 4)),
    ("clamp_min", lambda x: tp.clamp_min(x, 0.1), (5,)),
    ("scatter", lambda x: tp.scatter(x, 0, tp.tensor([[1, 0, 1]]), x[1:2] * 2), (2, 3)),
    ("scatter_sum", lambda x: tp.scatter_reduce(x, 1, tp.tensor([[0, 0], [1, 0]]), x * x, "sum"), (2, 3)),
    ("scatter_prod", lambda x: tp.scatter_reduce(x, 0, tp.tensor([0, 0, 2]), x.flip(0), "prod"), (4,)),
    ("scatter_mean", lambda x: tp.scatter_reduce(x, 0, tp.tensor([1, 1]), x[:2], "mean", include_self=False), (3,)),
    ("scatter_amax", lambda x: tp.scatter_reduce(x, 0, tp.tensor([0, 0, 2]), x.flip(0) * 1.5, "amax"), (3,)),
    ("masked_select", lambda x: tp.masked_select(x, tp.tensor([[True, False, True]]), size=3), (2, 3)),
]


def _distinct(shape) -> np.ndarray:
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 + 0.5 + RNG.uniform(0, 0.05, n)).reshape(shape)


def _numeric_grad(f, x: np.ndarray, w: np.ndarray, eps=1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = ((f(tp.tensor(hi)).numpy() * w).sum() - (f(tp.tensor(lo)).numpy() * w).sum()) / (2 * eps)
    return g


@pytest.mark.parametrize("name,f,shape", DIFF, ids=[c[0] for c in DIFF])
def test_grad_against_finite_differences(name, f, shape):
    x = _distinct(shape)
    w = RNG.standard_normal(f(tp.tensor(x)).shape)
    got = grad(lambda v: (f(v) * tp.tensor(w)).sum())(tp.tensor(x)).numpy()
    np.testing.assert_allclose(got, _numeric_grad(f, x, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,f,shape", DIFF, ids=[c[0] for c in DIFF])
def test_jvp_matches_vjp(name, f, shape):
    """The dot-product identity <J t, w> == <t, J^T w>, with J from jacfwd and from grad."""
    x = tp.tensor(_distinct(shape))
    jac = jacfwd(f)(x).numpy()
    out_shape = f(x).shape
    w = RNG.standard_normal(out_shape)
    vjp = grad(lambda v: (f(v) * tp.tensor(w)).sum())(x).numpy()
    np.testing.assert_allclose(np.tensordot(w, jac, axes=w.ndim), vjp, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,f,shape", DIFF, ids=[c[0] for c in DIFF])
def test_vmap_and_compile(name, f, shape):
    xs = tp.tensor(np.stack([_distinct(shape) for _ in range(3)]))
    loop = tp.stack([f(x) for x in xs])
    np.testing.assert_allclose(vmap(f)(xs).numpy(), loop.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tp.compile(f)(xs[0]).numpy(), f(xs[0]).numpy(), rtol=1e-12)


INDEX_OUTPUTS = [
    ("argsort", lambda x: tp.argsort(x, descending=True)),
    ("sort_indices", lambda x: tp.sort(x, 0).indices),
    ("cummax_indices", lambda x: tp.cummax(x, -1).indices),
    ("searchsorted", lambda x: tp.searchsorted(tp.tensor([0.0, 1.0, 2.0]), x, right=True)),
    ("bucketize", lambda x: tp.bucketize(x, tp.tensor([0.5, 1.0]))),
    ("nonzero_sized", lambda x: tp.nonzero(x > 1.0, size=3)),
]


@pytest.mark.parametrize("name,f", INDEX_OUTPUTS, ids=[c[0] for c in INDEX_OUTPUTS])
def test_integer_results_under_vmap_and_compile(name, f):
    xs = tp.tensor(_ties((3, 2, 5)))
    loop = tp.stack([f(x) for x in xs])
    assert vmap(f)(xs).tolist() == loop.tolist()
    assert tp.compile(f)(xs[1]).tolist() == f(xs[1]).tolist()
    assert vmap(f, in_dims=2)(xs.permute(1, 2, 0)).tolist() == loop.tolist()  # batch axis last


def test_compiled_sort_is_a_merge_sort_over_long_rows():
    x = RNG.integers(0, 50, size=(3, 1000)).astype(np.float32)
    x[1, ::7] = np.nan
    got = tp.compile(lambda v: tp.sort(v, -1, descending=True).indices)(tp.tensor(x)).numpy()
    n = x.shape[1]
    want = (n - 1) - np.flip(np.argsort(np.flip(x, 1), axis=1, kind="stable"), 1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["tensorplay.ops.sorting", "tensorplay.ops.cumulative", "tensorplay.ops.matrix",
                                  "tensorplay.ops.scattering", "tensorplay.ops.selection", "tensorplay.ir.prims.sort"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0

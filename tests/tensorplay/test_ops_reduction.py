"""Reductions, scans and normalised exponentials against numpy: dim=None / int / negative /
tuple / empty tuple, keepdim, 0-d and empty inputs, non-contiguous layouts, result dtypes."""
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplay as tp

from test_ops_support import NP, check, dtypes, float_dtypes, is_float, quiet, shapes, tensors


@st.composite
def reduce_args(draw, dtype=None, nonempty_axes=False, **kw):
    """(tensor, array, dim, axes): dim is None, an int (maybe negative), a tuple or an empty tuple."""
    t, arr = draw(tensors(dtype=dtypes if dtype is None else dtype, **kw))
    nd = arr.ndim
    kinds = ["none", "empty"] + (["int", "tuple"] if nd else ["zero"])
    kind = draw(st.sampled_from(kinds))
    if kind in ("none", "empty"):
        dim, axes = (None if kind == "none" else ()), tuple(range(nd))
    elif kind == "zero":  # 0-d tensors accept dim 0 / -1
        dim, axes = draw(st.sampled_from([0, -1])), ()
    elif kind == "int":
        a = draw(st.integers(0, nd - 1))
        dim, axes = (a - nd if draw(st.booleans()) else a), (a,)
    else:
        axes = tuple(sorted(draw(st.sets(st.integers(0, nd - 1), min_size=1))))
        dim = tuple(a - nd if draw(st.booleans()) else a for a in axes)
    if nonempty_axes and any(arr.shape[a] == 0 for a in axes):
        from hypothesis import assume

        assume(False)
    return t, arr, dim, axes


def _keep(expected, arr, axes, keepdim):
    expected = np.asarray(expected)
    if keepdim and arr.ndim:
        expected = expected.reshape([1 if i in axes else d for i, d in enumerate(arr.shape)])
    return expected


@given(args=reduce_args(), keepdim=st.booleans())
def test_sum_prod(args, keepdim):
    t, arr, dim, axes = args
    acc = t.dtype if is_float(t.dtype) else tp.int64  # bool and int accumulate in int64
    a = arr.astype(NP[acc])
    check(tp.sum(t, dim, keepdim), _keep(np.sum(a, axis=axes), arr, axes, keepdim), acc)
    check(t.sum(dim=dim, keepdim=keepdim), _keep(np.sum(a, axis=axes), arr, axes, keepdim), acc)
    check(tp.prod(t, dim, keepdim), _keep(np.prod(a, axis=axes), arr, axes, keepdim), acc, rtol=1e-4)
    check(tp.sum(t, dim, keepdim, dtype=tp.float64), _keep(np.sum(arr.astype(np.float64), axis=axes), arr, axes,
                                                            keepdim), tp.float64)


@given(args=reduce_args(), keepdim=st.booleans())
def test_mean(args, keepdim):
    t, arr, dim, axes = args
    if not is_float(t.dtype):
        with pytest.raises(TypeError, match="mean"):
            tp.mean(t, dim, keepdim)
        check(tp.mean(t, dim, keepdim, dtype=tp.float64),
              _keep(_np_mean(arr.astype(np.float64), axes), arr, axes, keepdim), tp.float64)
        return
    check(tp.mean(t, dim, keepdim), _keep(_np_mean(arr, axes), arr, axes, keepdim), t.dtype, rtol=1e-5, atol=1e-5)


def _np_mean(a, axes):
    with quiet():
        return np.mean(a, axis=axes)  # NaN over no elements, as in PyTorch


@given(args=reduce_args(), keepdim=st.booleans())
def test_amax_amin(args, keepdim):
    t, arr, dim, axes = args
    if any(arr.shape[a] == 0 for a in axes) or (arr.size == 0 and not axes):
        with pytest.raises(IndexError, match="amax"):
            tp.amax(t, dim, keepdim)
        return
    check(tp.amax(t, dim, keepdim), _keep(np.max(arr, axis=axes), arr, axes, keepdim), t.dtype)
    check(tp.amin(t, dim, keepdim), _keep(np.min(arr, axis=axes), arr, axes, keepdim), t.dtype)


@given(data=tensors(), keepdim=st.booleans(), data2=st.data())
def test_max_min_with_indices_and_argmax(data, keepdim, data2):
    t, arr = data
    if t.dtype is tp.bool:
        with pytest.raises(TypeError, match="argmax.*bool"):
            tp.argmax(t)
        t, arr = t.long(), arr.astype(np.int64)
    if arr.size == 0:
        with pytest.raises(ValueError, match="max"):
            tp.max(t)
        with pytest.raises(IndexError, match="argmax"):
            tp.argmax(t)
    else:
        check(tp.max(t), np.max(arr), t.dtype)
        check(tp.min(t), np.min(arr), t.dtype)
        check(tp.argmax(t), np.argmax(arr), tp.int64)  # of the flattened tensor, first occurrence
        check(tp.argmin(t), np.argmin(arr), tp.int64)
        check(tp.argmax(t, keepdim=True), np.argmax(arr).reshape((1,) * arr.ndim), tp.int64)
    if arr.ndim == 0:
        values, indices = tp.max(t, 0, keepdim)
        check(values, arr, t.dtype)
        check(indices, np.int64(0), tp.int64)
        return
    d = data2.draw(st.integers(-arr.ndim, arr.ndim - 1))
    if arr.shape[d] == 0:
        with pytest.raises(IndexError):
            tp.max(t, d)
        return
    values, indices = tp.max(t, d, keepdim)
    check(values, _keep(np.max(arr, axis=d), arr, (d % arr.ndim,), keepdim), t.dtype)
    check(indices, _keep(np.argmax(arr, axis=d), arr, (d % arr.ndim,), keepdim), tp.int64)
    out = t.min(dim=d, keepdim=keepdim)
    check(out.values, _keep(np.min(arr, axis=d), arr, (d % arr.ndim,), keepdim), t.dtype)
    check(out.indices, _keep(np.argmin(arr, axis=d), arr, (d % arr.ndim,), keepdim), tp.int64)
    check(tp.argmax(t, d, keepdim), _keep(np.argmax(arr, axis=d), arr, (d % arr.ndim,), keepdim), tp.int64)
    check(tp.argmin(t, d, keepdim), _keep(np.argmin(arr, axis=d), arr, (d % arr.ndim,), keepdim), tp.int64)


@given(args=reduce_args(), keepdim=st.booleans())
def test_all_any(args, keepdim):
    t, arr, dim, axes = args
    check(tp.all(t, dim, keepdim), _keep(np.all(arr, axis=axes), arr, axes, keepdim), tp.bool)
    check(tp.any(t, dim, keepdim), _keep(np.any(arr, axis=axes), arr, axes, keepdim), tp.bool)


@given(args=reduce_args(dtype=float_dtypes), keepdim=st.booleans(),
       correction=st.sampled_from([0, 1, 2, 5]))
def test_var_std(args, keepdim, correction):
    t, arr, dim, axes = args
    with quiet():
        a = arr.astype(np.float64)
        expected = np.var(a, axis=axes, ddof=correction)  # divisor max(0, N - correction), as in PyTorch
    expected = _keep(expected, arr, axes, keepdim)
    check(tp.var(t, dim, keepdim=keepdim, correction=correction), expected, t.dtype, rtol=1e-4, atol=1e-5)
    with quiet():
        check(tp.std(t, dim, keepdim=keepdim, correction=correction), np.sqrt(expected), t.dtype, rtol=1e-4,
              atol=1e-5)
    if correction in (0, 1):
        check(t.var(dim, unbiased=bool(correction), keepdim=keepdim), expected, t.dtype, rtol=1e-4, atol=1e-5)


@given(data=tensors(dtype=tp.float64))
def test_var_defaults_and_int_error(data):
    t, arr = data
    with quiet():
        check(tp.var(t), np.var(arr, ddof=1), tp.float64, rtol=1e-9)
        check(tp.var(t, False), np.var(arr, ddof=0), tp.float64, rtol=1e-9)  # the legacy `unbiased` overload
    with pytest.raises(TypeError, match="var"):
        tp.var(t.long())


@given(args=reduce_args(dtype=tp.float32, special=True), keepdim=st.booleans())
def test_logsumexp(args, keepdim):
    t, arr, dim, axes = args
    with quiet():
        a = arr.astype(np.float64)
        if a.ndim == 0:
            expected = a
        else:
            m = np.max(a, axis=axes, keepdims=True, initial=-np.inf)
            m = np.where(np.isfinite(m), m, 0.0)
            expected = np.log(np.sum(np.exp(a - m), axis=axes, keepdims=True)) + m
            expected = expected if keepdim else np.squeeze(expected, axis=axes)
    check(tp.logsumexp(t, dim, keepdim), expected, tp.float32, rtol=1e-5, atol=1e-5)


def test_logsumexp_large_and_empty():
    x = tp.tensor([1000.0, 1000.0])
    check(tp.logsumexp(x, 0), np.float32(1000 + np.log(2)), tp.float32)
    check(tp.logsumexp(tp.zeros(3, 0), 1), np.full(3, -np.inf), tp.float32)
    check(tp.logsumexp(tp.tensor([1, 2]), 0), np.log(np.exp(1) + np.exp(2)), tp.float32)  # ints -> float


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, 0, float("inf"), float("-inf"), "fro"])
@given(args=reduce_args(dtype=tp.float64, nonempty_axes=True), keepdim=st.booleans())
def test_norm(p, args, keepdim):
    t, arr, dim, axes = args
    a = np.abs(arr)
    with quiet():
        if p in (2, "fro"):
            expected = np.sqrt(np.sum(a * a, axis=axes))
        elif p == 0:
            expected = np.sum(a != 0, axis=axes).astype(np.float64)
        elif p == float("inf"):
            expected = np.max(a, axis=axes, initial=0) if a.size else np.max(a, axis=axes)
        elif p == float("-inf"):
            expected = np.min(a, axis=axes)
        else:
            expected = np.sum(a ** p, axis=axes) ** (1.0 / p)
    check(tp.norm(t, p, dim, keepdim), _keep(expected, arr, axes, keepdim), tp.float64, rtol=1e-7)


@given(data=tensors(special=True), data2=st.data())
def test_cumsum(data, data2):
    t, arr = data
    acc = t.dtype if is_float(t.dtype) else tp.int64
    if arr.ndim == 0:
        check(tp.cumsum(t, 0), arr.astype(NP[acc]), acc)
        return
    d = data2.draw(st.integers(-arr.ndim, arr.ndim - 1))
    with quiet():
        expected = np.cumsum(arr.astype(NP[acc]), axis=d)
    check(tp.cumsum(t, d), expected, acc, rtol=1e-5, atol=1e-5)
    check(t.cumsum(d), expected, acc, rtol=1e-5, atol=1e-5)


def test_cumsum_infinities():
    check(tp.cumsum(tp.tensor([1.0, float("inf"), 2.0, float("-inf")]), 0), [1, np.inf, np.inf, np.nan], tp.float32)
    check(tp.cumsum(tp.tensor([True, True, False]), 0), [1, 2, 2], tp.int64)
    check(tp.cumsum(tp.tensor([1, 2], dtype=tp.int32), 0, dtype=tp.float64), [1.0, 3.0], tp.float64)


@pytest.mark.parametrize("fn_name", ["softmax", "log_softmax"])
@given(data=tensors(dtype=st.sampled_from([tp.float32, tp.float64, tp.int64])),
       data2=st.data())
def test_softmax_log_softmax(fn_name, data, data2):
    t, arr = data
    out_dtype = t.dtype
    if not is_float(t.dtype):  # PyTorch wants floating point input, or dtype=
        with pytest.raises(TypeError, match=fn_name):
            getattr(tp, fn_name)(t, 0)
        t, out_dtype = t.float(), tp.float32
    d = data2.draw(st.integers(-max(arr.ndim, 1), max(arr.ndim, 1) - 1))
    a = arr.astype(np.float64)
    if a.ndim:
        with quiet():
            m = np.max(a, axis=d, keepdims=True, initial=-np.inf)
            e = np.exp(a - m)
            s = np.sum(e, axis=d, keepdims=True)
            expected = e / s if fn_name == "softmax" else (a - m) - np.log(s)
    else:
        expected = np.float64(1.0) if fn_name == "softmax" else np.float64(0.0)
    out = getattr(tp, fn_name)(t, d)
    check(out, expected, out_dtype, rtol=1e-5, atol=1e-6)
    check(getattr(t, fn_name)(d), expected, out_dtype, rtol=1e-5, atol=1e-6)
    check(getattr(tp, fn_name)(t, d, dtype=tp.float64), expected, tp.float64, rtol=1e-6, atol=1e-9)


def test_softmax_extremes():
    x = tp.tensor([[1000.0, 0.0], [-1000.0, -1000.0]])
    check(tp.softmax(x, 1), [[1.0, 0.0], [0.5, 0.5]], tp.float32)
    check(tp.log_softmax(x, 1), [[0.0, -1000.0], [np.log(0.5), np.log(0.5)]], tp.float32, rtol=1e-6)
    check(tp.softmax(tp.zeros(3, 0), 1), np.zeros((3, 0)), tp.float32)


def test_zero_dim_reductions_are_new_tensors():
    x = tp.tensor(3.0)
    for fn in (tp.sum, tp.amax, lambda v: tp.logsumexp(v, 0), lambda v: tp.cumsum(v, 0)):
        y = fn(x)
        assert y.shape == () and y.item() == 3.0
        assert not np.shares_memory(y.numpy(), x.numpy())


def test_empty_reductions():
    e = tp.zeros(0, 3)
    check(e.sum(0), np.zeros(3), tp.float32)
    check(e.prod(0), np.ones(3), tp.float32)
    check(e.mean(0), np.full(3, np.nan), tp.float32)
    check(e.all(0), np.ones(3, bool), tp.bool)
    check(e.any(0), np.zeros(3, bool), tp.bool)
    check(e.all(1), np.ones(0, bool), tp.bool)
    check(e.all(), np.bool_(True), tp.bool)
    check(tp.zeros(3, 0).any(1, keepdim=True), np.zeros((3, 1), bool), tp.bool)
    check(tp.zeros(0, dtype=tp.int32).sum(), np.int64(0), tp.int64)
    with pytest.raises(IndexError, match="amax"):
        tp.amax(e, 0)


@given(shape=shapes(min_dims=1), dtype=dtypes)
def test_reduction_dim_errors(shape, dtype):
    t = tp.zeros(shape, dtype=dtype)
    with pytest.raises(IndexError, match="sum.*range"):
        tp.sum(t, len(shape))
    with pytest.raises(ValueError, match="sum.*multiple"):
        tp.sum(t, (0, -len(shape)))
    with pytest.raises(TypeError, match="dim must be an int"):
        tp.sum(t, 0.5)


@given(st.data())
def test_reduce_shapes_broadcast_back(data):
    """keepdim results broadcast against the input, which is what they are for."""
    (shape,), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=1, max_dims=3, min_side=1))
    t, arr = data.draw(tensors(dtype=tp.float64, shape=shape))
    centered = t - t.mean(-1, keepdim=True)
    check(centered, arr - arr.mean(-1, keepdims=True), tp.float64)

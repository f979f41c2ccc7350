"""More reductions: nansum, nanmean, median, nanmedian, quantile, nanquantile, var_mean, std_mean,
count_nonzero. Order statistics go through `sort` (NaN sorts last), then a `gather` at the wanted
rank, so gradients reach the elements picked and every transform applies.

>>> import tensorplay as tp
>>> tp.median(tp.tensor([3.0, 1.0, 2.0, 4.0])).item()  # the lower of the two middle values, as torch
2.0
>>> tp.quantile(tp.tensor([0.0, 10.0]), 0.25).item()
2.5
"""
from __future__ import annotations

from collections import namedtuple

from tensorplay.ir import dtypes

from .._tensor import Tensor
from . import elementwise as ew
from . import reduction as red
from . import shape as sh
from ._common import as_tensor_operand, convert, normalize_dim
from ._table import op

values_indices = namedtuple("values_indices", ["values", "indices"])


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _zero_nans(x: Tensor) -> Tensor:
    return ew.where(ew.isnan(x), 0.0, x) if x.dtype.is_floating_point else x


def nansum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The sum treating NaN as zero.

    >>> import tensorplay as tp
    >>> tp.nansum(tp.tensor([1.0, float("nan"), 2.0])).item()
    3.0
    """
    return red.sum(_zero_nans(_t(input)), dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the non-NaN elements (NaN where there are none).

    >>> import tensorplay as tp
    >>> tp.nanmean(tp.tensor([1.0, float("nan"), 2.0])).item()
    1.5
    """
    x = _t(input)
    if not x.dtype.is_floating_point:
        raise TypeError(f"nanmean(): expected input to have floating point dtype but got {x.dtype.name}")
    count = red.sum(convert(ew.logical_not(ew.isnan(x)), x.dtype), dim, keepdim)
    return ew.div(nansum(x, dim, keepdim, dtype=dtype), count)


def count_nonzero(input, dim=None) -> Tensor:
    """The number of nonzero elements (int64), over `dim` (an int or a tuple) or all.

    >>> import tensorplay as tp
    >>> tp.count_nonzero(tp.tensor([[0, 1], [2, 0]]), dim=0).tolist()
    [1, 1]
    """
    return red.sum(convert(ew.ne(_t(input), 0), dtypes.int64), dim)


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over `dim` (as `var`'s arguments).

    >>> import tensorplay as tp
    >>> [t.item() for t in tp.var_mean(tp.tensor([1.0, 2.0, 3.0]))]
    [1.0, 2.0]
    """
    x = _t(input)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (red.var(x, dim, unbiased, keepdim, correction=correction), red.mean(x, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over `dim` (as `std`'s arguments).

    >>> import tensorplay as tp
    >>> [t.item() for t in tp.std_mean(tp.tensor([1.0, 3.0]), correction=0)]
    [1.0, 2.0]
    """
    x = _t(input)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (red.std(x, dim, unbiased, keepdim, correction=correction), red.mean(x, dim, keepdim))


def _sorted_along(x: Tensor, dim):
    """(sorted values, permutation, dim) with NaN last; `dim` None flattens."""
    from .sorting import sort

    if dim is None:
        x = sh.reshape(x, (-1,))
        d = 0
    else:
        d = normalize_dim(dim, max(x.ndim, 1), "median")
        if x.ndim == 0:
            x = sh.reshape(x, (1,))
    v, i = sort(x, d)
    return v, i, d


def _median(input, dim, keepdim: bool, ignore_nan: bool, name: str):
    from .indexing import gather

    x = _t(input)
    zero_d = x.ndim == 0
    if (x.numel() == 0 if dim is None else x.ndim and x.shape[normalize_dim(dim, x.ndim, name)] == 0):
        raise IndexError(f"{name}(): expected a non-empty input along the reduced dim, got shape {tuple(x.shape)}")
    v, i, d = _sorted_along(x, dim)
    n = v.shape[d]
    if x.dtype.is_floating_point:
        nan = convert(ew.isnan(v), dtypes.int64)
        valid = ew.sub(n, red.sum(nan, d, keepdim=True))  # NaN sort last
        if ignore_nan:
            rank = ew.floor_divide(ew.clamp(ew.sub(valid, 1), min=0), 2)
        else:  # any NaN: the result is NaN (its position is the last one)
            rank = ew.where(ew.lt(valid, n), n - 1, (n - 1) // 2)
    else:
        shape = list(v.shape)
        shape[d] = 1
        from .creation import full

        rank = full(tuple(shape), (n - 1) // 2, dtype=dtypes.int64)
    values, indices = gather(v, d, rank), gather(i, d, rank)
    if dim is None:
        return sh.reshape(values, ())
    if not keepdim or zero_d:
        values, indices = sh.squeeze(values, d), sh.squeeze(indices, d)
    return values_indices(values, indices)


def median(input, dim=None, keepdim: bool = False):
    """The median (the lower of the two middle values for an even count; NaN if any is NaN). Without `dim`
    a 0-d tensor; with `dim` the ``(values, indices)`` pair.

    >>> import tensorplay as tp
    >>> tp.median(tp.tensor([[1.0, 5.0, 2.0]]), dim=1).values.tolist()
    [2.0]
    """
    return _median(input, dim, keepdim, False, "median")


def nanmedian(input, dim=None, keepdim: bool = False):
    """The median of the non-NaN elements (as `median`; NaN only where all are NaN).

    >>> import tensorplay as tp
    >>> tp.nanmedian(tp.tensor([float("nan"), 1.0, 3.0])).item()
    1.0
    """
    return _median(input, dim, keepdim, True, "nanmedian")


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool, name: str) -> Tensor:
    from .indexing import gather

    x = _t(input)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name}() input tensor must be either float or double dtype, got {x.dtype.name}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}() interpolation must be one of {', '.join(_INTERPOLATIONS)}, got {interpolation!r}")
    qt = q if isinstance(q, Tensor) else as_tensor_operand(q, x.dtype)
    if qt.ndim > 1:
        raise ValueError(f"{name}() q must be a scalar or 1D tensor, got shape {tuple(qt.shape)}")
    if not qt.is_traced and qt.numel() and (bool((qt < 0).any()) or bool((qt > 1).any())):
        raise ValueError(f"{name}() q values must be in the range [0, 1]")
    if x.numel() == 0:
        raise IndexError(f"{name}() input tensor must be non-empty")
    qt = convert(qt, x.dtype)
    scalar_q = qt.ndim == 0
    v, _, d = _sorted_along(x, dim)
    n = v.shape[d]
    valid = ew.sub(float(n), red.sum(convert(ew.isnan(v), x.dtype), d, keepdim=True))
    if ignore_nan:
        last = ew.clamp(ew.sub(valid, 1.0), min=0.0)
    else:
        last = ew.where(ew.lt(valid, float(n)), float("nan"), float(n - 1))
    # ranks: one per q, on a new leading dim
    qv = sh.reshape(qt, (-1,) + (1,) * v.ndim)
    rank = ew.mul(qv, sh.unsqueeze(last, 0))                      # (Q, ..., 1, ...)
    lo = ew.floor(rank)
    hi = ew.ceil(rank)
    if interpolation == "lower":
        pos, w = lo, None
    elif interpolation == "higher":
        pos, w = hi, None
    elif interpolation == "nearest":
        pos, w = ew.round(rank), None
    else:
        pos, w = None, ew.sub(rank, lo) if interpolation == "linear" else 0.5
    vb = sh.expand(sh.unsqueeze(v, 0), (qv.shape[0],) + tuple(v.shape))

    def at(p):
        idx = convert(ew.where(ew.isnan(p), float(n - 1), p), dtypes.int64)
        shape = list(vb.shape)
        shape[d + 1] = 1
        return gather(vb, d + 1, sh.expand(idx, tuple(shape)))

    if pos is not None:
        out = at(pos)
    else:
        a, b = at(lo), at(hi)
        out = ew.add(a, ew.mul(ew.sub(b, a), w)) if interpolation == "linear" else ew.mul(ew.add(a, b), 0.5)
        out = ew.where(ew.eq(lo, hi), a, out)
    out = ew.where(ew.isnan(rank), float("nan"), out)
    if dim is None:
        out = sh.reshape(out, (qv.shape[0],) + ((1,) * x.ndim if keepdim else ()))
    else:
        out = sh.squeeze(out, d + 1) if not keepdim else out
        if x.ndim == 0 and keepdim:
            out = sh.reshape(out, (qv.shape[0],))
    return sh.squeeze(out, 0) if scalar_q else out


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """The `q`-quantiles (a number or a 1-d tensor in [0, 1]) over `dim` or all elements; NaN if any is NaN.
    A 1-d `q` adds a leading dim. `interpolation`: linear, lower, higher, midpoint, nearest.

    >>> import tensorplay as tp
    >>> tp.quantile(tp.tensor([[1.0, 2.0, 3.0, 4.0]]), tp.tensor([0.5, 1.0]), dim=1).tolist()
    [[2.5], [4.0]]
    """
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """`quantile` of the non-NaN elements.

    >>> import tensorplay as tp
    >>> tp.nanquantile(tp.tensor([1.0, float("nan"), 3.0]), 0.5).item()
    2.0
    """
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


for _name, _fn in (("nansum", nansum), ("nanmean", nanmean), ("count_nonzero", count_nonzero),
                   ("var_mean", var_mean), ("std_mean", std_mean), ("median", median), ("nanmedian", nanmedian),
                   ("quantile", quantile), ("nanquantile", nanquantile)):
    op(_name, _fn, method=_name not in ("var_mean", "std_mean"))



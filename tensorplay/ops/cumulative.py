"""Scans along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp.

Each is a log-depth inclusive scan written with primitives (Hillis-Steele):
for shift = 1, 2, 4, ..., element i is combined with element i - shift
(slice + pad brings it over; positions below the shift keep their value), so
every transform applies and compiled code fuses each step. The combine must be
associative: +, *, the (value, index) maximum, and logaddexp are. Integer and
bool inputs of cumsum/cumprod accumulate in int64, as in PyTorch.

>>> import tensorplay as tp
>>> tp.cumsum(tp.tensor([1, 2, 3]), 0).tolist()
[1, 3, 6]
"""
from __future__ import annotations

from collections import namedtuple
from typing import Callable, Sequence

from tensorplay.ir import dtypes, get_primitive as _gp

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, convert, copy, dtype_of, ebind, normalize_dim, shape_of
from ._table import op

values_indices = namedtuple("values_indices", ["values", "indices"])
_SLICE, _PAD = _gp("slice"), _gp("pad")


def _arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _shifted(x: Tensor, d: int, shift: int, fill) -> Tensor:
    """`x` moved `shift` places up along `d` (element i holds x[i - shift]); the gap holds `fill`."""
    shape = shape_of(x)
    nd = len(shape)
    zeros = (0,) * nd
    limit = tuple(s - shift if i == d else s for i, s in enumerate(shape))
    head = ebind(_SLICE, x, start_indices=zeros, limit_indices=limit, strides=(1,) * nd)
    low = tuple(shift if i == d else 0 for i in range(nd))
    return ebind(_PAD, head, low=low, high=zeros, interior=zeros, value=fill)


def scan(xs: Sequence[Tensor], fills: Sequence, d: int, combine: Callable, *, masked: bool = False) -> list[Tensor]:
    """Inclusive scan of the equally shaped tensors `xs` along `d`: ``combine(earlier, later[, has])``
    merges element i - shift (`fills` where there is none) into element i; with `masked`, it also
    gets `has`, the boolean mask of the positions i >= shift (for combines without an identity)."""
    xs = list(xs)
    shape = shape_of(xs[0])
    shift = 1
    while shift < shape[d]:
        earlier = [_shifted(x, d, shift, f) for x, f in zip(xs, fills)]
        if masked:
            has = bind("ge", bind("iota", shape=shape, dtype=dtypes.int64, dimension=d),
                       bind("full", shape=shape, dtype=dtypes.int64, value=shift))
            xs = list(combine(earlier, xs, has))
        else:
            xs = list(combine(earlier, xs))
        shift *= 2
    return xs


def _prepare(input, dim, op_name: str, dtype=None, *, accumulate: bool = False) -> tuple[Tensor, int | None]:
    x = _arg(input)
    if dtype is not None:
        x = convert(x, dtype)
    elif accumulate and not dtype_of(x).is_floating_point:
        x = convert(x, dtypes.int64)
    shape = shape_of(x)
    d = normalize_dim(dim, len(shape), op_name)
    return x, (d if shape else None)


def _monoid_scan(x: Tensor, d: int | None, prim: str, identity) -> Tensor:
    if d is None or shape_of(x)[d] <= 1:
        return copy(x)
    return scan([x], [identity], d, lambda earlier, later: [bind(prim, earlier[0], later[0])])[0]


def cumsum(input, dim, *, dtype=None) -> Tensor:
    """Running sum along `dim` (bool and integer inputs accumulate in int64).

    >>> import tensorplay as tp
    >>> tp.cumsum(tp.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=0).tolist()
    [[1.0, 2.0], [4.0, 6.0]]
    """
    x, d = _prepare(input, dim, "cumsum", dtype, accumulate=True)
    return _monoid_scan(x, d, "add", 0)


def cumprod(input, dim, *, dtype=None) -> Tensor:
    """Running product along `dim` (bool and integer inputs accumulate in int64); zeros are exact,
    and so is the gradient through them (the scan is made of multiplications).

    >>> import tensorplay as tp
    >>> tp.cumprod(tp.tensor([2.0, 3.0, 0.0, 5.0]), 0).tolist()
    [2.0, 6.0, 0.0, 0.0]
    """
    x, d = _prepare(input, dim, "cumprod", dtype, accumulate=True)
    return _monoid_scan(x, d, "mul", 1)


def _running_extremum(input, dim, op_name: str, largest: bool):
    from .elementwise import isnan, logical_and, logical_not, logical_or

    x, d = _prepare(input, dim, op_name)
    if d is None or shape_of(x)[d] == 0:
        return values_indices(copy(x), convert(bind("full", shape=shape_of(x), dtype=dtypes.int64, value=0),
                                               dtypes.int64))
    pos = bind("iota", shape=shape_of(x), dtype=dtypes.int64, dimension=d)
    floating = dtype_of(x).is_floating_point

    def combine(earlier, later, has):
        (ve, ie), (vl, il) = earlier, later
        # the later element wins ties (PyTorch's rule), and a NaN wins until the next NaN
        better = bind("ge" if largest else "le", vl, ve)
        if floating:
            better = logical_or(isnan(vl), logical_and(better, logical_not(isnan(ve))))
        take_later = logical_or(logical_not(has), better)
        return bind("select", take_later, vl, ve), bind("select", take_later, il, ie)
    _, idx = scan([x, pos], [0, 0], d, combine, masked=True)
    from .indexing import gather

    return values_indices(gather(x, d, idx), idx)


def cummax(input, dim):
    """Running maximum along `dim` and the position it came from (the latest of equal values; NaN
    propagates). Gradients flow to the element each maximum came from.

    >>> import tensorplay as tp
    >>> tp.cummax(tp.tensor([1.0, 3.0, 2.0, 3.0]), 0)
    values_indices(values=tensor([1., 3., 3., 3.]), indices=tensor([0, 1, 1, 3]))
    """
    return _running_extremum(input, dim, "cummax", True)


def cummin(input, dim):
    """Running minimum along `dim` and the position it came from (the latest of equal values).

    >>> import tensorplay as tp
    >>> tp.cummin(tp.tensor([2.0, 1.0, 3.0, 1.0]), 0).indices.tolist()
    [0, 1, 1, 3]
    """
    return _running_extremum(input, dim, "cummin", False)


def logcumsumexp(input, dim) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, computed without overflow or underflow: the scan combines
    with logaddexp(a, b) = max(a, b) + log1p(exp(-|a - b|)).

    >>> import tensorplay as tp
    >>> tp.logcumsumexp(tp.tensor([-1000.0, 0.0, float("-inf")]), 0).tolist()
    [-1000.0, 0.0, 0.0]
    """
    from .elementwise import abs, exp, log1p, maximum, neg, sub

    x, d = _prepare(input, dim, "logcumsumexp")
    if not dtype_of(x).is_floating_point:
        raise TypeError(f"logcumsumexp: expected a floating point input, got {dtype_of(x).name}")
    if d is None or shape_of(x)[d] <= 1:
        return copy(x)
    zero = bind("full", shape=shape_of(x), dtype=dtype_of(x), value=0.0)

    def combine(earlier, later):  # the gap below the shift holds -inf, logaddexp's identity
        a, b = earlier[0], later[0]
        same = bind("eq", a, b)  # also both -inf or both +inf, where a - b is NaN
        gap = bind("select", same, zero, neg(abs(sub(a, b))))
        return [bind("add", maximum(a, b), log1p(exp(gap)))]
    return scan([x], [float("-inf")], d, combine)[0]


# === the op table ===================================================================================
for _name in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
    op(_name, globals()[_name], method=True)

"""Functional indexed assignment: the value of `x` after `x[key] = value` (and friends).

In-place indexing (`Tensor.__setitem__`, `masked_fill_`, `index_put_`, ...) computes
the new value with these functions and stores it with `write_into`; basic indexing
(ints, slices, None, ...) does not need them: it writes through a view.
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, broadcast_shapes, broadcast_to_shape, constant, convert
from .indexing import getitem


def _positions(x: Tensor, key) -> Tensor:
    """The flat offsets into `x` of the elements `x[key]` selects, in the shape of `x[key]`."""
    offsets = bind("iota", shape=(x.numel(),), dtype=dtypes.int64, dimension=0)
    return getitem(bind("reshape", offsets, shape=tuple(x.shape)), key)


def setitem_functional(x: Tensor, key, value) -> Tensor:
    """A new tensor equal to `x` with the elements selected by `key` replaced by `value`.

    The selected positions are found by indexing a tensor of flat offsets with the same key, so
    every indexing form (slices, ints, None, integer arrays, masks) is supported. With repeated
    integer indices the written values are summed (PyTorch leaves that case unspecified).

    >>> import tensorplay as tp
    >>> setitem_functional(tp.zeros(4), [0, 2], tp.tensor([5.0, 6.0]))
    tensor([5., 0., 6., 0.])
    """
    n = x.numel()
    positions = _positions(x, key)
    target_shape = tuple(positions.shape)
    v = as_tensor_operand(value, x.dtype if not isinstance(value, Tensor) else None)
    v = broadcast_to_shape(convert(v, x.dtype), target_shape, "__setitem__")
    pos = bind("reshape", positions, shape=(positions.numel(),))
    flat_x = bind("reshape", x, shape=(n,))
    hits = bind("index_add", constant(0, dtypes.int32, (n,), (x, v)), pos,
                constant(1, dtypes.int32, (pos.shape[0],), (x, v)), axis=0)
    mask = bind("gt", hits, constant(0, dtypes.int32, (n,), (hits,)))
    acc_dtype = x.dtype if not x.dtype.is_bool else dtypes.int32
    written = bind("index_add", constant(0, acc_dtype, (n,), (x, v)), pos,
                   convert(bind("reshape", v, shape=(pos.shape[0],)), acc_dtype), axis=0)
    out = bind("select", mask, convert(written, x.dtype), flat_x)
    return bind("reshape", out, shape=tuple(x.shape))


def index_put_accumulate(x: Tensor, key, values) -> Tensor:
    """`x` with `values` added at the elements `key` selects (repeated indices accumulate).

    >>> import tensorplay as tp
    >>> index_put_accumulate(tp.zeros(3), ([0, 0, 2],), tp.tensor([1.0, 2.0, 3.0]))
    tensor([3., 0., 3.])
    """
    positions = _positions(x, key)
    v = as_tensor_operand(values, x.dtype if not isinstance(values, Tensor) else None)
    v = broadcast_to_shape(convert(v, x.dtype), tuple(positions.shape), "index_put_")
    pos = bind("reshape", positions, shape=(positions.numel(),))
    flat = bind("index_add", bind("reshape", x, shape=(x.numel(),)), pos,
                bind("reshape", v, shape=(pos.shape[0],)), axis=0)
    return bind("reshape", flat, shape=tuple(x.shape))


def mask_key(x: Tensor, key):
    """The boolean mask when `key` is one (``x[mask]``, ``x[(mask,)]``), else None."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, np.ndarray) and key.dtype == np.bool_ and key.ndim:
        return Tensor._wrap(key)
    if isinstance(key, Tensor) and key.dtype is dtypes.bool_ and key.ndim:
        return key
    return None


def masked_setitem(x: Tensor, mask: Tensor, value: Tensor, *, leading: bool = True):
    """`x` with `value` wherever `mask` holds (``x[mask] = value`` / ``masked_fill``), as a `where`.

    With ``leading=True`` (indexing) the mask covers x's leading dims and `value` must be
    one element or broadcast to the per-element shape ``x.shape[mask.ndim:]``; otherwise
    (``masked_fill``) the mask broadcasts against x like any operand. A value with one
    row per selected element cannot be expressed without data-dependent shapes: that
    case is left to the general path (eager only).

    >>> import tensorplay as tp
    >>> x = tp.tensor([1.0, -2.0, 3.0])
    >>> masked_setitem(x, x < 0, tp.tensor(0.0))
    tensor([1., 0., 3.])
    """
    from .elementwise import where

    shape = tuple(x.shape)
    if leading:
        if mask.ndim > x.ndim or tuple(mask.shape) != shape[:mask.ndim]:
            raise IndexError(f"the shape of the mask {tuple(mask.shape)} does not match the shape of the indexed "
                             f"tensor {shape}")
        rest = shape[mask.ndim:]
        if value.numel() != 1:
            try:
                if broadcast_shapes(rest, tuple(value.shape), op="__setitem__") != rest:
                    raise ValueError
            except ValueError:
                return _general_masked(x, mask, value)
        mask = bind("reshape", mask, shape=tuple(mask.shape) + (1,) * len(rest))
    elif value.numel() != 1 and broadcast_shapes(shape, tuple(value.shape), op="masked_fill") != shape:
        raise ValueError(f"masked_fill: value of shape {tuple(value.shape)} does not broadcast to {shape}")
    if value.numel() == 1 and value.ndim:
        value = bind("reshape", value, shape=())
    mask = broadcast_to_shape(mask, shape, "masked_fill")
    value = broadcast_to_shape(convert(value, x.dtype), shape, "masked_fill")
    return where(mask, value, x)


def _general_masked(x: Tensor, mask: Tensor, value: Tensor) -> Tensor:
    return setitem_functional(x, mask, value)

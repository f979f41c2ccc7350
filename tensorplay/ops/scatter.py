"""Functional indexed assignment: the value of `x` after `x[key] = value`."""
from __future__ import annotations

from ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, broadcast_to_shape, constant, convert
from .indexing import getitem


def setitem_functional(x: Tensor, key, value) -> Tensor:
    """A new tensor equal to `x` with the elements selected by `key` replaced by `value`.

    The selected positions are found by indexing a tensor of flat offsets with the same key, so
    every indexing form (slices, ints, None, integer arrays, masks) is supported. With repeated
    integer indices the written values are summed (PyTorch leaves that case unspecified).
    """
    n = x.numel()
    offsets = bind("iota", shape=(n,), dtype=dtypes.int64, dimension=0)
    positions = getitem(bind("reshape", offsets, shape=tuple(x.shape)), key)
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

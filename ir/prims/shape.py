"""Layout primitives: broadcast, reshape, transpose, slice, pad, concatenate, rev,
take/index_add (integer indexing along one axis), and the constant makers
`iota` and `full`."""
from __future__ import annotations

from math import prod

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..types import TensorType
from ._util import check_axes, check_dtypes, fail


def _ints(op, name, v, n=None):
    if not isinstance(v, tuple) or not all(isinstance(i, int) for i in v):
        fail(op, f"attribute {name} must be a tuple of ints, got {v!r}", TypeError)
    if n is not None and len(v) != n:
        fail(op, f"attribute {name}={list(v)} must have {n} entries")
    return v


# --- broadcast_in_dim ----------------------------------------------------------------------------
def _broadcast_type(x: TensorType, *, shape, broadcast_dimensions) -> TensorType:
    op = "broadcast_in_dim"
    _ints(op, "shape", shape)
    bd = _ints(op, "broadcast_dimensions", broadcast_dimensions, x.ndim)
    check_axes(op, bd, len(shape))
    if list(bd) != sorted(bd):
        fail(op, f"broadcast_dimensions {list(bd)} must be increasing")
    for i, d in enumerate(bd):
        if x.shape[i] not in (1, shape[d]):
            fail(op, f"operand shape {x.shape} cannot broadcast to {tuple(shape)} "
                     f"(operand dim {i} of size {x.shape[i]} maps to size {shape[d]})")
    return TensorType(tuple(shape), x.dtype)


def _broadcast_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim = register(Primitive("broadcast_in_dim", _broadcast_type, _broadcast_impl, num_operands=1))


# --- reshape -----------------------------------------------------------------------------------
def _reshape_type(x: TensorType, *, shape) -> TensorType:
    _ints("reshape", "shape", shape)
    if prod(shape) != x.size or any(d < 0 for d in shape):
        fail("reshape", f"cannot reshape {x.shape} ({x.size} elements) to {tuple(shape)}")
    return TensorType(tuple(shape), x.dtype)


reshape = register(Primitive("reshape", _reshape_type, lambda x, *, shape: x.reshape(shape), num_operands=1))


# --- transpose ---------------------------------------------------------------------------------
def _transpose_type(x: TensorType, *, permutation) -> TensorType:
    _ints("transpose", "permutation", permutation, x.ndim)
    if sorted(permutation) != list(range(x.ndim)):
        fail("transpose", f"permutation {list(permutation)} is not a permutation of {x.ndim} axes")
    return TensorType(tuple(x.shape[p] for p in permutation), x.dtype)


transpose = register(Primitive("transpose", _transpose_type,
                               lambda x, *, permutation: np.transpose(x, permutation), num_operands=1))


# --- slice -------------------------------------------------------------------------------------
def _slice_type(x: TensorType, *, start_indices, limit_indices, strides) -> TensorType:
    op = "slice"
    for name, v in (("start_indices", start_indices), ("limit_indices", limit_indices), ("strides", strides)):
        _ints(op, name, v, x.ndim)
    out = []
    for d, (s, l, st) in enumerate(zip(start_indices, limit_indices, strides)):
        if not (0 <= s <= l <= x.shape[d]) or st < 1:
            fail(op, f"invalid slice {s}:{l}:{st} of dimension {d} (size {x.shape[d]}) of {x.shape}")
        out.append(max(0, -(-(l - s) // st)))
    return TensorType(tuple(out), x.dtype)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    return np.asarray(x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))])


slice_ = register(Primitive("slice", _slice_type, _slice_impl, num_operands=1))


# --- pad ---------------------------------------------------------------------------------------
def _pad_type(x: TensorType, *, low, high, interior, value) -> TensorType:
    op = "pad"
    for name, v in (("low", low), ("high", high), ("interior", interior)):
        _ints(op, name, v, x.ndim)
    out = []
    for d in range(x.ndim):
        if low[d] < 0 or high[d] < 0 or interior[d] < 0:
            fail(op, f"padding must be non-negative, got low={list(low)} high={list(high)} interior={list(interior)}")
        n = x.shape[d]
        out.append(low[d] + high[d] + n + max(n - 1, 0) * interior[d])
    return TensorType(tuple(out), x.dtype)


def _pad_impl(x, *, low, high, interior, value):
    shape = _pad_type(TensorType(x.shape, dt.from_numpy(x.dtype)), low=low, high=high, interior=interior,
                      value=value).shape
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(slice(lo, lo + (n - 1) * (i + 1) + 1 if n else lo, i + 1)
              for lo, n, i in zip(low, x.shape, interior))] = x
    return out


pad = register(Primitive("pad", _pad_type, _pad_impl, num_operands=1))


# --- concatenate -------------------------------------------------------------------------------
def _concat_type(*xs: TensorType, axis) -> TensorType:
    op = "concatenate"
    if not xs:
        fail(op, "needs at least one operand")
    first = xs[0]
    check_axes(op, (axis,), first.ndim)
    for x in xs[1:]:
        if x.dtype is not first.dtype:
            fail(op, f"operand dtypes {[t.dtype.name for t in xs]} must be equal", TypeError)
        if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis):
            fail(op, f"operand shapes {[t.shape for t in xs]} must agree except on axis {axis}")
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return TensorType(tuple(shape), first.dtype)


concatenate = register(Primitive("concatenate", _concat_type,
                                 lambda *xs, axis: np.concatenate(xs, axis=axis), variadic=True))


# --- rev ---------------------------------------------------------------------------------------
def _rev_type(x: TensorType, *, axes) -> TensorType:
    check_axes("rev", _ints("rev", "axes", axes), x.ndim)
    return x


rev = register(Primitive("rev", _rev_type, lambda x, *, axes: np.asarray(np.flip(x, axes)), num_operands=1))


# --- take / index_add --------------------------------------------------------------------------
def _take_type(x: TensorType, idx: TensorType, *, axis) -> TensorType:
    check_axes("take", (axis,), x.ndim)
    check_dtypes("take", idx, dt.INTS, "index")
    if x.shape[axis] == 0 and idx.size:
        fail("take", f"cannot index into axis {axis} of size 0 of {x.shape}", IndexError)
    return TensorType(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)


def _take_impl(x, idx, *, axis):
    if x.shape[axis] == 0:
        return np.empty(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)
    return np.take(x, idx, axis=axis, mode="clip")


take = register(Primitive("take", _take_type, _take_impl, num_operands=2,
                          doc="x.take(idx) along `axis`; indices are clamped into range."))


def _index_add_type(x: TensorType, idx: TensorType, upd: TensorType, *, axis) -> TensorType:
    expected = _take_type(x, idx, axis=axis)
    if upd != expected:
        fail("index_add", f"updates of type {upd} must have type {expected} "
                          f"(operand {x}, index {idx}, axis {axis})")
    return x


def _index_add_impl(x, idx, upd, *, axis):
    out = np.array(x, copy=True)
    if x.shape[axis] == 0:
        return out
    idx = np.clip(idx, 0, x.shape[axis] - 1)
    moved = np.moveaxis(out, axis, 0)
    np.add.at(moved, idx, np.moveaxis(upd, tuple(range(axis, axis + idx.ndim)), tuple(range(idx.ndim))))
    return out


index_add = register(Primitive("index_add", _index_add_type, _index_add_impl, num_operands=3,
                               doc="x with `upd` added at `idx` along `axis` (repeated indices accumulate)."))


# --- constants ---------------------------------------------------------------------------------
def _iota_type(*, shape, dtype, dimension) -> TensorType:
    _ints("iota", "shape", shape)
    check_axes("iota", (dimension,), len(shape))
    if not isinstance(dtype, dt.DType) or dtype.is_bool:
        fail("iota", f"dtype must be a numeric DType, got {dtype!r}", TypeError)
    return TensorType(tuple(shape), dtype)


def _iota_impl(*, shape, dtype, dimension):
    line = np.arange(shape[dimension], dtype=dtype.np)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(line.reshape(expanded), shape)


iota = register(Primitive("iota", _iota_type, _iota_impl, num_operands=0, differentiable=False))


def _full_type(*, shape, dtype, value) -> TensorType:
    _ints("full", "shape", shape)
    if not isinstance(dtype, dt.DType):
        fail("full", f"dtype attribute must be a DType, got {dtype!r}", TypeError)
    if not isinstance(value, (bool, int, float)):
        fail("full", f"value must be a Python scalar, got {type(value).__name__}", TypeError)
    return TensorType(tuple(shape), dtype)


def _full_impl(*, shape, dtype, value):
    return np.full(shape, value, dtype=dtype.np)


full = register(Primitive("full", _full_type, _full_impl, num_operands=0, differentiable=False))


# === batching rules =============================================================================


# === differentiation rules ======================================================================

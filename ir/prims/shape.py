"""Layout primitives: broadcast, reshape, transpose, slice, pad, concatenate, rev,
take/index_add (integer indexing along one axis), and the constant makers
`iota` and `full`."""
from __future__ import annotations

from math import prod

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..rules import (common_bdim, constant, defjvp_linear, fold_same_value, instantiate, int64_indices,
                     is_undefined, materialize, move_bdim, permute, shift_axis)
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


broadcast_in_dim = register(Primitive("broadcast_in_dim", _broadcast_type, _broadcast_impl, num_operands=1,
                                      family="layout", fold=fold_same_value,
                                      doc="place operand dim i at result dim `broadcast_dimensions[i]`, repeat size-1 dims"))


# --- reshape -----------------------------------------------------------------------------------
def _reshape_type(x: TensorType, *, shape) -> TensorType:
    _ints("reshape", "shape", shape)
    if prod(shape) != x.size or any(d < 0 for d in shape):
        fail("reshape", f"cannot reshape {x.shape} ({x.size} elements) to {tuple(shape)}")
    return TensorType(tuple(shape), x.dtype)


reshape = register(Primitive("reshape", _reshape_type, lambda x, *, shape: x.reshape(shape), num_operands=1,
                             family="layout", fold=fold_same_value, doc="same elements, new `shape` (row-major)"))


# --- transpose ---------------------------------------------------------------------------------
def _transpose_type(x: TensorType, *, permutation) -> TensorType:
    _ints("transpose", "permutation", permutation, x.ndim)
    if sorted(permutation) != list(range(x.ndim)):
        fail("transpose", f"permutation {list(permutation)} is not a permutation of {x.ndim} axes")
    return TensorType(tuple(x.shape[p] for p in permutation), x.dtype)


transpose = register(Primitive("transpose", _transpose_type,
                               lambda x, *, permutation: np.transpose(x, permutation), num_operands=1,
                               family="layout", fold=fold_same_value,
                               doc="permute dimensions: result dim i is operand dim `permutation[i]`"))


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


slice_ = register(Primitive("slice", _slice_type, _slice_impl, num_operands=1, family="layout", fold=fold_same_value,
                            doc="strided window `start_indices:limit_indices:strides`"))


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


def _fold_pad(consts, operands, attrs, out):
    """A constant padded with its own value is that constant."""
    fill = np.asarray(attrs["value"], dtype=out.dtype.np)[()]
    return consts[0] if fill == consts[0] else None


pad = register(Primitive("pad", _pad_type, _pad_impl, num_operands=1, family="layout", fold=_fold_pad,
                         doc="pad with `value`: `low`/`high` at the ends, `interior` between elements"))


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
                                 lambda *xs, axis: np.concatenate(xs, axis=axis), variadic=True, family="layout",
                                 fold=lambda consts, operands, attrs, out: consts[0] if len(set(consts)) == 1 else None,
                                 doc="join operands along `axis`"))


# --- rev ---------------------------------------------------------------------------------------
def _rev_type(x: TensorType, *, axes) -> TensorType:
    check_axes("rev", _ints("rev", "axes", axes), x.ndim)
    return x


rev = register(Primitive("rev", _rev_type, lambda x, *, axes: np.asarray(np.flip(x, axes)), num_operands=1,
                         family="layout", fold=fold_same_value, doc="reverse the order along `axes`"))


# --- take / index_add --------------------------------------------------------------------------
def _take_type(x: TensorType, idx: TensorType, *, axis) -> TensorType:
    check_axes("take", (axis,), x.ndim)
    check_dtypes("take", idx, dt.INTS, "index")
    if x.shape[axis] == 0 and idx.size:
        fail("take", f"cannot index into axis {axis} of size 0 of {x.shape}", IndexError)
    return TensorType(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)


def _check_in_range(op: str, idx, n: int, axis: int) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx[(idx < 0) | (idx >= n)].flat[0]
        raise IndexError(f"{op}: index {bad} is out of range for axis {axis} with size {n}")


def _take_impl(x, idx, *, axis):
    if x.shape[axis] == 0:
        return np.empty(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)
    _check_in_range("take", idx, x.shape[axis], axis)
    return np.take(x, idx, axis=axis)


take = register(Primitive("take", _take_type, _take_impl, num_operands=2, family="indexing", roles=("data", "index"),
                          doc="x.take(idx) along `axis`; an index outside [0, n) raises IndexError"))


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
    _check_in_range("index_add", idx, x.shape[axis], axis)
    moved = np.moveaxis(out, axis, 0)
    np.add.at(moved, idx, np.moveaxis(upd, tuple(range(axis, axis + idx.ndim)), tuple(range(idx.ndim))))
    return out


index_add = register(Primitive("index_add", _index_add_type, _index_add_impl, num_operands=3, family="indexing",
                               roles=("data", "index", "data"),
                               doc="x with `upd` added at `idx` along `axis` (repeats accumulate)"))


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


iota = register(Primitive("iota", _iota_type, _iota_impl, num_operands=0, differentiable=False, family="constant",
                          doc="0, 1, 2, ... along `dimension`, broadcast to `shape`"))


def _full_type(*, shape, dtype, value) -> TensorType:
    _ints("full", "shape", shape)
    if not isinstance(dtype, dt.DType):
        fail("full", f"dtype attribute must be a DType, got {dtype!r}", TypeError)
    if not isinstance(value, (bool, int, float)):
        fail("full", f"value must be a Python scalar, got {type(value).__name__}", TypeError)
    return TensorType(tuple(shape), dtype)


def _full_impl(*, shape, dtype, value):
    return np.full(shape, value, dtype=dtype.np)


full = register(Primitive("full", _full_type, _full_impl, num_operands=0, differentiable=False, family="constant",
                          doc="a constant tensor filled with `value`"))


# === batching rules (families from ir.rules) =============================================================================

iota.def_batch(constant(iota))  # no operands: the same for every sample
full.def_batch(constant(full))


@broadcast_in_dim.def_batch
def _broadcast_in_dim_batch(ctx, values, dims, *, shape, broadcast_dimensions):
    # The batch axis goes right after the result dim of the operand dim before it: dims stay increasing.
    (x,), (d,) = values, dims
    bd = broadcast_dimensions
    q = bd[d - 1] + 1 if d > 0 else 0
    new_bd = bd[:d] + (q,) + tuple(b + 1 for b in bd[d:])
    return ctx.broadcast_in_dim(x, shape=shape[:q] + (ctx.axis_size,) + shape[q:], broadcast_dimensions=new_bd), q


@reshape.def_batch
def _reshape_batch(ctx, values, dims, *, shape):
    (x,), (d,) = values, dims
    return ctx.reshape(move_bdim(ctx, x, d, 0), shape=(ctx.axis_size,) + shape), 0


@transpose.def_batch
def _transpose_batch(ctx, values, dims, *, permutation):
    (x,), (d,) = values, dims
    perm = [shift_axis(p, d) for p in permutation]
    perm.insert(d, d)  # the batch axis stays where it is
    return ctx.transpose(x, permutation=tuple(perm)), d


def _insert(t: tuple, d: int, v) -> tuple:
    return t[:d] + (v,) + t[d:]


@slice_.def_batch
def _slice_batch(ctx, values, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = values, dims
    return ctx.slice(x, start_indices=_insert(start_indices, d, 0),
                     limit_indices=_insert(limit_indices, d, ctx.axis_size), strides=_insert(strides, d, 1)), d


@pad.def_batch
def _pad_batch(ctx, values, dims, *, low, high, interior, value):
    (x,), (d,) = values, dims
    return ctx.pad(x, low=_insert(low, d, 0), high=_insert(high, d, 0), interior=_insert(interior, d, 0),
                   value=value), d


@concatenate.def_batch
def _concatenate_batch(ctx, values, dims, *, axis):
    vals, d = common_bdim(ctx, values, dims)
    return ctx.concatenate(*vals, axis=shift_axis(axis, d)), d


@rev.def_batch
def _rev_batch(ctx, values, dims, *, axes):
    (x,), (d,) = values, dims
    return ctx.rev(x, axes=tuple(shift_axis(a, d) for a in axes)), d


# take / index_add with batched indices fuse the batch axis with the indexed axis: row b*A + i of the
# flattened operand is element i of sample b, so one take/index_add along axis 0 serves every sample.
def _batch_first(ctx, x, d, order):
    """`x` (batch axis `d`, or unbatched) laid out as (batch, per-sample axes in `order`...): one transpose."""
    if d is None:
        return permute(ctx, materialize(ctx, x, None, 0), (0,) + tuple(1 + k for k in order))
    return permute(ctx, x, (d,) + tuple(shift_axis(k, d) for k in order))


def _rows(ctx, x, d, axis):
    """Operand `x` (batch axis `d`, or unbatched) as shape (B*A, pre..., post...) for indexed axis `axis`."""
    rank = x.ndim - (d is not None)
    x = _batch_first(ctx, x, d, (axis,) + tuple(k for k in range(rank) if k != axis))
    return ctx.reshape(x, shape=(ctx.axis_size * x.shape[1],) + x.shape[2:])


def _row_indices(ctx, idx, e, n):
    """Batched indices (batch axis `e`) into `_rows`: b*n plus the index of sample b, or -1 where that
    index is outside [0, n), so that the batched op raises IndexError as each sample's would."""
    idx = int64_indices(ctx, move_bdim(ctx, idx, e, 0))
    zero, size = ctx.const(0, idx.shape, dt.int64), ctx.const(n, idx.shape, dt.int64)
    inside = ctx.emit("and", ctx.ge(idx, zero), ctx.lt(idx, size))
    offsets = ctx.mul(ctx.iota(shape=idx.shape, dtype=dt.int64, dimension=0), size)
    return ctx.select(inside, ctx.add(idx, offsets), ctx.const(-1, idx.shape, dt.int64))


@take.def_batch
def _take_batch(ctx, values, dims, *, axis):
    (x, idx), (d, e) = values, dims
    if e is None:  # result: x.shape[:axis] + idx.shape + x.shape[axis + 1:]
        a = shift_axis(axis, d)
        return ctx.take(x, idx, axis=a), (d if d < a else d - 1 + idx.ndim)
    if d is None:
        return ctx.take(x, idx, axis=axis), axis + e
    n_idx = idx.ndim - 1
    out = ctx.take(_rows(ctx, x, d, axis), _row_indices(ctx, idx, e, x.shape[shift_axis(axis, d)]), axis=0)
    # (B, idx..., pre..., post...) -> (B, pre..., idx..., post...)
    perm = (0,) + tuple(range(1 + n_idx, 1 + n_idx + axis)) + tuple(range(1, 1 + n_idx)) \
        + tuple(range(1 + n_idx + axis, out.ndim))
    return permute(ctx, out, perm), 0


@index_add.def_batch
def _index_add_batch(ctx, values, dims, *, axis):
    (x, idx, upd), (d, e, u) = values, dims
    if e is None:  # batch x (broadcast if needed) and lay upd out as `take` of the batched x would
        xd = 0 if d is None else d
        x = materialize(ctx, x, d, xd)
        a = shift_axis(axis, xd)
        ud = xd if xd < a else xd - 1 + idx.ndim
        return ctx.index_add(x, idx, materialize(ctx, upd, u, ud), axis=a), xd
    n_idx, n = idx.ndim - 1, x.shape[shift_axis(axis, d)]
    rank = upd.ndim - (u is not None)  # per sample (pre..., idx..., post...) -> (B, idx..., pre..., post...)
    upd = _batch_first(ctx, upd, u, tuple(range(axis, axis + n_idx)) + tuple(range(axis))
                       + tuple(range(axis + n_idx, rank)))
    out = ctx.index_add(_rows(ctx, x, d, axis), _row_indices(ctx, idx, e, n), upd, axis=0)
    out = ctx.reshape(out, shape=(ctx.axis_size, n) + out.shape[1:])  # (B, A, pre..., post...)
    return permute(ctx, out, (0,) + tuple(range(2, 2 + axis)) + (1,) + tuple(range(2 + axis, out.ndim))), 0


# === differentiation rules ======================================================================
# Every layout primitive is linear: its tangent is the primitive applied to the tangent, and its
# transpose is the adjoint layout op (broadcast <-> reduce_sum, slice <-> pad, take <-> index_add).

for _prim in (broadcast_in_dim, reshape, transpose, slice_, concatenate, rev):
    defjvp_linear(_prim)


@pad.def_jvp
def _pad_jvp(b, primals, tangents, *, low, high, interior, value):
    (x,), (t,) = primals, tangents
    out = b.pad(x, low=low, high=high, interior=interior, value=value)
    return out, None if t is None else b.pad(t, low=low, high=high, interior=interior, value=0.0)


@take.def_jvp
def _take_jvp(b, primals, tangents, *, axis):
    (x, idx), (t, _) = primals, tangents
    return b.take(x, idx, axis=axis), None if t is None else b.take(t, idx, axis=axis)


@index_add.def_jvp
def _index_add_jvp(b, primals, tangents, *, axis):
    (x, idx, upd), (tx, _, tu) = primals, tangents
    out = b.index_add(x, idx, upd, axis=axis)
    if tx is None and tu is None:
        return out, None
    return out, b.index_add(instantiate(b, tx, x), idx, instantiate(b, tu, upd), axis=axis)


@broadcast_in_dim.def_transpose
def _broadcast_transpose(b, ct, ops, *, shape, broadcast_dimensions):
    (x,) = ops
    new_dims = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    expanded = [d for i, d in enumerate(broadcast_dimensions) if x.shape[i] == 1 and shape[d] != 1]
    summed = b.reduce_sum(ct, axes=tuple(sorted(new_dims + expanded))) if new_dims or expanded else ct
    return [summed if summed.shape == x.shape else b.reshape(summed, shape=x.shape)]


reshape.def_transpose(lambda b, ct, ops, *, shape: [b.reshape(ct, shape=ops[0].shape)])
rev.def_transpose(lambda b, ct, ops, *, axes: [b.rev(ct, axes=axes)])


@transpose.def_transpose
def _transpose_transpose(b, ct, ops, *, permutation):
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return [b.transpose(ct, permutation=tuple(inverse))]


@slice_.def_transpose
def _slice_transpose(b, ct, ops, *, start_indices, limit_indices, strides):
    (x,) = ops
    low, high, interior = [], [], []
    for n, s, k, st in zip(x.shape, start_indices, ct.shape, strides):
        end = s + (k - 1) * st + 1 if k else s  # one past the last element read
        low.append(s)
        high.append(n - end)
        interior.append(st - 1 if k else 0)
    return [b.pad(ct, low=tuple(low), high=tuple(high), interior=tuple(interior), value=0.0)]


@pad.def_transpose
def _pad_transpose(b, ct, ops, *, low, high, interior, value):
    (x,) = ops
    limit = tuple(lo + (n - 1) * (i + 1) + 1 if n else lo for lo, n, i in zip(low, x.shape, interior))
    return [b.slice(ct, start_indices=tuple(low), limit_indices=limit, strides=tuple(i + 1 for i in interior))]


@concatenate.def_transpose
def _concatenate_transpose(b, ct, ops, *, axis):
    cts, offset = [], 0
    for x in ops:
        n = x.shape[axis]
        if is_undefined(x):
            start = tuple(offset if d == axis else 0 for d in range(ct.ndim))
            limit = tuple(offset + n if d == axis else ct.shape[d] for d in range(ct.ndim))
            cts.append(b.slice(ct, start_indices=start, limit_indices=limit, strides=(1,) * ct.ndim))
        else:
            cts.append(None)
        offset += n
    return cts


@take.def_transpose
def _take_transpose(b, ct, ops, *, axis):
    x, idx = ops
    return [b.index_add(b.zeros_like(x), idx, ct, axis=axis), None]


@index_add.def_transpose
def _index_add_transpose(b, ct, ops, *, axis):
    x, idx, upd = ops
    return [ct if is_undefined(x) else None, None,
            b.take(ct, idx, axis=axis) if is_undefined(upd) else None]

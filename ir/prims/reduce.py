"""Reductions over a set of axes (the axes are removed from the result) and
arg-reductions over one axis."""
from __future__ import annotations

from math import prod as _size

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..rules import arg_reducer as _arg_rule, defjvp_linear, fold_same_value, reducer as _reduce_rule
from ..types import TensorType
from ._util import check_axes, check_dtypes, fail

NUMERIC = (dt.int32, dt.int64, dt.float32, dt.float64)


def _reduce_type(name, allowed, needs_elements):
    def rule(x: TensorType, *, axes) -> TensorType:
        check_dtypes(name, x, allowed)
        axes = check_axes(name, axes, x.ndim, shape=x.shape)
        if needs_elements and any(x.shape[a] == 0 for a in axes):
            fail(name, f"cannot reduce over an empty axis of {x.shape} (axes {list(axes)}): it has no identity")
        return TensorType(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)
    return rule


def reducer(name: str, np_fn, allowed=NUMERIC, needs_elements=False, *, fold, doc: str) -> Primitive:
    """Declare a reduction `name` computed by numpy's `np_fn(x, axis=...)`, batched by `rules.reducer`."""
    def impl(x, *, axes):
        return np.asarray(np_fn(x, axis=tuple(axes))).astype(x.dtype, copy=False)
    prim = register(Primitive(name, _reduce_type(name, allowed, needs_elements), impl, num_operands=1,
                              family="reduction", fold=fold, doc=doc))
    prim.def_batch(_reduce_rule(prim))  # axes shift past the batch axis
    return prim


def _fold_repeated(combine):
    """Fold a reduction of a constant fill: `combine(value, n)` for the n reduced elements."""
    def fold(consts, operands, attrs, out):
        n = _size(operands[0].shape[a] for a in attrs["axes"])
        with np.errstate(all="ignore"):
            return combine(consts[0], n)
    return fold


reduce_sum = reducer("reduce_sum", np.sum, fold=_fold_repeated(lambda v, n: v * n),
                     doc="sum over `axes` (removed from the shape)")
reduce_prod = reducer("reduce_prod", np.prod, fold=_fold_repeated(lambda v, n: v ** n),
                      doc="product over `axes` (removed from the shape)")
reduce_max = reducer("reduce_max", np.max, dt.ALL, needs_elements=True, fold=fold_same_value,
                     doc="maximum over `axes` (removed from the shape)")
reduce_min = reducer("reduce_min", np.min, dt.ALL, needs_elements=True, fold=fold_same_value,
                     doc="minimum over `axes` (removed from the shape)")


def _arg_type(name):
    def rule(x: TensorType, *, axis, index_dtype) -> TensorType:
        check_axes(name, (axis,), x.ndim, shape=x.shape)
        if x.shape[axis] == 0:
            fail(name, f"cannot take {name} over the empty axis {axis} of {x.shape}")
        if index_dtype not in dt.INTS:
            fail(name, f"index_dtype must be int32 or int64, got {index_dtype!r}", TypeError)
        return TensorType(x.shape[:axis] + x.shape[axis + 1:], index_dtype)
    return rule


def arg_reducer(name: str, np_fn, doc: str) -> Primitive:
    """Declare an index-of-extremum reduction over one axis (first occurrence wins)."""
    def impl(x, *, axis, index_dtype):
        return np.asarray(np_fn(x, axis=axis)).astype(index_dtype.np)
    prim = register(Primitive(name, _arg_type(name), impl, num_operands=1, differentiable=False, family="reduction",
                              doc=doc))
    prim.def_batch(_arg_rule(prim))
    return prim


argmax = arg_reducer("argmax", np.argmax, "index of the largest element along `axis` (first one wins)")
argmin = arg_reducer("argmin", np.argmin, "index of the smallest element along `axis` (first one wins)")


# === differentiation rules ======================================================================
# reduce_sum is linear (transpose: broadcast back); max/min pass the tangent of the extremal
# elements (averaged over ties); prod uses exact products of the other elements (zeros are fine).
defjvp_linear(reduce_sum)


@reduce_sum.def_transpose
def _reduce_sum_transpose(b, ct, ops, *, axes):
    (x,) = ops
    kept = tuple(d for d in range(len(x.shape)) if d not in axes)
    return [b.broadcast_in_dim(ct, shape=x.shape, broadcast_dimensions=kept)]


def _extremum_jvp(prim: Primitive):
    def rule(b, primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        y = b.emit(prim, x, axes=axes)
        if t is None:
            return y, None
        kept = tuple(d for d in range(x.ndim) if d not in axes)
        at = b.convert_element_type(b.eq(x, b.broadcast_in_dim(y, shape=x.shape, broadcast_dimensions=kept)),
                                    dtype=x.dtype)
        return y, b.div(b.reduce_sum(b.mul(t, at), axes=axes), b.reduce_sum(at, axes=axes))
    return rule


reduce_max.def_jvp(_extremum_jvp(reduce_max))
reduce_min.def_jvp(_extremum_jvp(reduce_min))


def _shift_last(b, v, k: int, fill: float):
    """`v` shifted k places to the right along its last axis, the vacated places set to `fill`."""
    nd = v.ndim
    padded = b.pad(v, low=(0,) * (nd - 1) + (k,), high=(0,) * nd, interior=(0,) * nd, value=fill)
    return b.slice(padded, start_indices=(0,) * nd, limit_indices=v.shape, strides=(1,) * nd)


def _exclusive_products(b, v):
    """Products of all elements before each one along the last axis (log-depth doubling scan)."""
    k, n = 1, v.shape[-1]
    while k < n:
        v = b.mul(v, _shift_last(b, v, k, 1.0))
        k *= 2
    return _shift_last(b, v, 1, 1.0)


@reduce_prod.def_jvp
def _reduce_prod_jvp(b, primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    y = b.reduce_prod(x, axes=axes)
    if t is None or not axes:
        return y, t
    kept = [d for d in range(x.ndim) if d not in axes]
    perm, rows = tuple(kept + sorted(axes)), tuple(x.shape[d] for d in kept) + (_size(x.shape[a] for a in axes),)

    def to_rows(v):  # reduced axes last, flattened into one
        return b.reshape(v if list(perm) == sorted(perm) else b.transpose(v, permutation=perm), shape=rows)

    xr = to_rows(x)
    others = b.mul(_exclusive_products(b, xr), b.rev(_exclusive_products(b, b.rev(xr, axes=(xr.ndim - 1,))),
                                                     axes=(xr.ndim - 1,)))
    return y, b.reduce_sum(b.mul(to_rows(t), others), axes=(xr.ndim - 1,))

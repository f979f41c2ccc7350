"""Reductions over a set of axes (the axes are removed from the result) and
arg-reductions over one axis."""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
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


def reducer(name: str, np_fn, allowed=NUMERIC, needs_elements=False, **rules) -> Primitive:
    """Declare a reduction `name` computed by numpy's `np_fn(x, axis=...)`."""
    def impl(x, *, axes):
        return np.asarray(np_fn(x, axis=tuple(axes))).astype(x.dtype, copy=False)
    return register(Primitive(name, _reduce_type(name, allowed, needs_elements), impl, num_operands=1, **rules))


reduce_sum = reducer("reduce_sum", np.sum)
reduce_prod = reducer("reduce_prod", np.prod)
reduce_max = reducer("reduce_max", np.max, dt.ALL, needs_elements=True)
reduce_min = reducer("reduce_min", np.min, dt.ALL, needs_elements=True)


def _arg_type(name):
    def rule(x: TensorType, *, axis, index_dtype) -> TensorType:
        check_axes(name, (axis,), x.ndim, shape=x.shape)
        if x.shape[axis] == 0:
            fail(name, f"cannot take {name} over the empty axis {axis} of {x.shape}")
        if index_dtype not in dt.INTS:
            fail(name, f"index_dtype must be int32 or int64, got {index_dtype!r}", TypeError)
        return TensorType(x.shape[:axis] + x.shape[axis + 1:], index_dtype)
    return rule


def arg_reducer(name: str, np_fn) -> Primitive:
    """Declare an index-of-extremum reduction over one axis (first occurrence wins)."""
    def impl(x, *, axis, index_dtype):
        return np.asarray(np_fn(x, axis=axis)).astype(index_dtype.np)
    return register(Primitive(name, _arg_type(name), impl, num_operands=1, differentiable=False))


argmax = arg_reducer("argmax", np.argmax)
argmin = arg_reducer("argmin", np.argmin)


# === batching rules =============================================================================
from ..passes.batching import arg_reducer as _arg_rule, reducer as _reduce_rule  # noqa: E402

for _prim in (reduce_sum, reduce_prod, reduce_max, reduce_min):
    _prim.def_batch(_reduce_rule(_prim))  # axes shift past the batch axis
for _prim in (argmax, argmin):
    _prim.def_batch(_arg_rule(_prim))


# === differentiation rules ======================================================================

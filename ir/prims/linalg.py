"""`dot_general`: batched tensor contraction, the one matrix primitive.

Result dimensions are ordered (batch..., lhs free..., rhs free...), as in XLA.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..types import TensorType
from ._util import check_axes, check_dtypes, fail

NUMERIC = (dt.int32, dt.int64, dt.float32, dt.float64)


def free_axes(ndim: int, *used) -> tuple[int, ...]:
    taken = {a for group in used for a in group}
    return tuple(a for a in range(ndim) if a not in taken)


def _dot_type(lhs: TensorType, rhs: TensorType, *, contract, batch) -> TensorType:
    op = "dot_general"
    check_dtypes(op, lhs, NUMERIC, "lhs")
    if lhs.dtype is not rhs.dtype:
        fail(op, f"operand dtypes {lhs.dtype.name} and {rhs.dtype.name} must be equal", TypeError)
    (lc, rc), (lb, rb) = contract, batch
    check_axes(op, lc + lb, lhs.ndim)
    check_axes(op, rc + rb, rhs.ndim)
    if len(lc) != len(rc) or len(lb) != len(rb):
        fail(op, f"contract={[list(lc), list(rc)]} and batch={[list(lb), list(rb)]} must pair lhs and rhs axes")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            fail(op, f"lhs {lhs.shape} axis {a} (size {lhs.shape[a]}) does not match rhs {rhs.shape} "
                     f"axis {b} (size {rhs.shape[b]}) (contract={[list(lc), list(rc)]}, batch={[list(lb), list(rb)]})")
    shape = tuple(lhs.shape[a] for a in lb) + tuple(lhs.shape[a] for a in free_axes(lhs.ndim, lc, lb)) \
        + tuple(rhs.shape[a] for a in free_axes(rhs.ndim, rc, rb))
    return TensorType(shape, lhs.dtype)


def _dot_impl(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    bshape = tuple(lhs.shape[a] for a in lb)
    mshape = tuple(lhs.shape[a] for a in lf)
    nshape = tuple(rhs.shape[a] for a in rf)
    k = prod(lhs.shape[a] for a in lc)
    l2 = np.transpose(lhs, lb + lf + lc).reshape(prod(bshape), prod(mshape), k)
    r2 = np.transpose(rhs, rb + rc + rf).reshape(prod(bshape), k, prod(nshape))
    return np.matmul(l2, r2).reshape(bshape + mshape + nshape)


dot_general = register(Primitive("dot_general", _dot_type, _dot_impl, num_operands=2))


# === batching rules =============================================================================
from ..passes.batching import shift_axis  # noqa: E402


@dot_general.def_batch
def _dot_general_batch(ctx, values, dims, *, contract, batch):
    """No broadcasts: a batched x unbatched product makes the batch axis a free dim, batched x batched
    makes it a (leading) batch dim of the contraction."""
    (lhs, rhs), (ld, rd) = values, dims
    (lc, rc), (lb, rb) = contract, batch
    lc, lb = tuple(shift_axis(a, ld) for a in lc), tuple(shift_axis(a, ld) for a in lb)
    rc, rb = tuple(shift_axis(a, rd) for a in rc), tuple(shift_axis(a, rd) for a in rb)
    if ld is not None and rd is not None:
        return ctx.dot_general(lhs, rhs, contract=(lc, rc), batch=((ld,) + lb, (rd,) + rb)), 0
    out = ctx.dot_general(lhs, rhs, contract=(lc, rc), batch=(lb, rb))
    if ld is not None:  # result dims: (batch..., lhs free..., rhs free...)
        return out, len(lb) + free_axes(lhs.ndim, lc, lb).index(ld)
    return out, len(lb) + len(free_axes(lhs.ndim, lc, lb)) + free_axes(rhs.ndim, rc, rb).index(rd)


# === differentiation rules ======================================================================

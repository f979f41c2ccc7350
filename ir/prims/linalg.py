"""`dot_general`: batched tensor contraction, the one matrix primitive.

Result dimensions are ordered (batch..., lhs free..., rhs free...), as in XLA.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..rules import add_tangents, free_axes, is_undefined, shift_axis
from ..types import TensorType
from ._util import check_axes, check_dtypes, fail

NUMERIC = (dt.int32, dt.int64, dt.float32, dt.float64)


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


dot_general = register(Primitive("dot_general", _dot_type, _dot_impl, num_operands=2, family="contraction",
                                 doc="batched contraction; result dims are (batch, lhs free, rhs free)"))


# === batching rules =============================================================================


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
# dot_general is bilinear: d(x·y) = dx·y + x·dy; its transposes contract the cotangent with the
# other operand and permute the result back into the operand's layout (as in JAX's lax.dot_general).


@dot_general.def_jvp
def _dot_general_jvp(b, primals, tangents, *, contract, batch):
    (x, y), (tx, ty) = primals, tangents
    out = b.dot_general(x, y, contract=contract, batch=batch)
    t = None if tx is None else b.dot_general(tx, y, contract=contract, batch=batch)
    if ty is not None:
        t = add_tangents(b, t, b.dot_general(x, ty, contract=contract, batch=batch))
    return out, t


def _ranges_like(*groups):
    start = 0
    for g in groups:
        yield tuple(range(start, start + len(g)))
        start += len(g)


def _dot_transpose_lhs(b, ct, x, y, contract, batch, swap_ans: bool = False):
    """The cotangent of lhs `x` (undefined) of ``dot_general(x, y)``; with `swap_ans`, `x` is the rhs."""
    (x_contract, y_contract), (x_batch, y_batch) = contract, batch
    x_kept = free_axes(len(x.shape), x_contract, x_batch)
    y_kept = free_axes(y.ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    r = b.dot_general(ct, y, contract=(ans_y, y_kept), batch=(ans_batch, y_batch))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract, kind="stable")]
    perm = tuple(int(a) for a in np.argsort(list(x_batch) + list(x_kept) + x_contract_by_y, kind="stable"))
    return r if perm == tuple(range(len(perm))) else b.transpose(r, permutation=perm)


@dot_general.def_transpose
def _dot_general_transpose(b, ct, ops, *, contract, batch):
    x, y = ops
    if is_undefined(x) and is_undefined(y):
        raise NotImplementedError("transpose: dot_general of two linear values is not linear")
    if is_undefined(x):
        return [_dot_transpose_lhs(b, ct, x, y, contract, batch), None]
    (lc, rc), (lb, rb) = contract, batch
    return [None, _dot_transpose_lhs(b, ct, y, x, (rc, lc), (rb, lb), swap_ans=True)]

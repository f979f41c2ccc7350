"""Layout lowerings: the operand index from the output index (broadcast, reshape,
transpose, slice, pad, concatenate, rev, take), and the constant makers
`iota` and `full`. An out-of-range `take` index is reported (`KernelContext.checked_index`):
the call raises IndexError, as its impl does.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Node
from .. import irutil as u
from ..context import Index, KernelContext
from ..registry import Lowering, always, never, register
from .elementwise import convert

# --- layout: operand index from output index ------------------------------------------------------
def layout(name: str, emit: Callable, linear: Callable[[Node], bool] = never,
           expands: Callable[[Node], bool] = never, cheap: bool = True) -> None:
    """Register an expression lowering that reads its operand(s) at a remapped index."""
    register(name, Lowering("expr", emit, linear=linear, expands=expands, cheap=cheap))


def _broadcast(ctx: KernelContext, node: Node, idx: Index) -> ir.Value:
    x = node.inputs[0]
    if x.type.size == node.out.type.size and idx._dims is None:
        return ctx.value(x, Index(x.shape, linear=idx.linear(ctx.b)))
    dims = idx.dims(ctx.b)
    shape = node.attrs["shape"]
    sub = [dims[d] if x.shape[i] == shape[d] else u.i64(0) for i, d in enumerate(node.attrs["broadcast_dimensions"])]
    return ctx.value(x, Index(x.shape, dims=sub, linear=idx._linear if x.type.size == node.out.type.size else None))


layout("broadcast_in_dim", _broadcast, linear=lambda n: n.inputs[0].type.size == n.out.type.size,
       expands=lambda n: n.inputs[0].type.size < n.out.type.size)
layout("reshape", lambda ctx, node, idx: ctx.value(node.inputs[0], Index(node.inputs[0].shape,
                                                                          linear=idx.linear(ctx.b))),
       linear=always)


def _transpose(ctx, node, idx):
    dims = idx.dims(ctx.b)
    perm = node.attrs["permutation"]
    sub = [None] * len(perm)
    for i, p in enumerate(perm):
        sub[p] = dims[i]
    return ctx.value(node.inputs[0], Index(node.inputs[0].shape, dims=sub))


layout("transpose", _transpose)


def _slice(ctx, node, idx):
    b = ctx.b
    a = node.attrs
    sub = [u.iadd(b, u.i64(s), u.imul(b, d, st))
           for d, s, st in zip(idx.dims(b), a["start_indices"], a["strides"])]
    return ctx.value(node.inputs[0], Index(node.inputs[0].shape, dims=sub))


layout("slice", _slice)


def _rev(ctx, node, idx):
    b = ctx.b
    x = node.inputs[0]
    axes = set(node.attrs["axes"])
    sub = [u.isub(b, u.i64(n - 1), d) if k in axes else d for k, (d, n) in enumerate(zip(idx.dims(b), x.shape))]
    return ctx.value(x, Index(x.shape, dims=sub))


layout("rev", _rev)


def fill_constant(dtype: dt.DType, value) -> ir.Constant:
    """The register constant numpy's `np.full(..., value, dtype)` would store."""
    v = np.full((), value, dtype=dt.compute_dtype(dtype).np).astype(dtype.np)[()]  # 16-bit floats: via float32
    return u.const(u.reg_type(dtype), bool(v) if dtype.is_bool else (float(v) if dtype.is_floating_point else int(v)))


def _pad(ctx, node, idx):
    b = ctx.b
    x = node.inputs[0]
    a = node.attrs
    fill = fill_constant(x.dtype, a["value"])
    if x.type.size == 0:
        return fill
    inside = None
    sub = []
    ranges = idx.ranges or [None] * len(x.shape)
    for d, n, lo, it, r in zip(idx.dims(b), x.shape, a["low"], a["interior"], ranges):
        p = u.isub(b, d, u.i64(lo))
        if lo == 0 and it == 0 and n == node.out.shape[len(sub)]:
            sub.append(p)
            continue
        if r is not None and it == 0:  # this coordinate's range is known (a box): settle it here
            if r[0] - lo >= 0 and r[1] - lo <= n:
                sub.append(p)  # every element of the box reads x along this axis
                continue
            if r[1] - lo <= 0 or r[0] - lo >= n:
                return fill  # no element of the box does
        conds = [b.icmp_signed(">=", p, u.i64(0))]
        pc = u.iclamp(b, p, 0, 2 ** 62)
        if it:
            conds.append(b.icmp_signed("==", u.imod(b, pc, it + 1), u.i64(0)))
            pc = u.idiv(b, pc, it + 1)
        conds.append(b.icmp_signed("<", pc, u.i64(n)))
        sub.append(u.iclamp(b, pc, 0, n - 1))
        for c in conds:
            inside = c if inside is None else b.and_(inside, c)
    v = ctx.value(x, Index(x.shape, dims=sub))
    return v if inside is None else b.select(inside, v, fill)


layout("pad", _pad)


def _concatenate(ctx, node, idx):
    b = ctx.b
    axis = node.attrs["axis"]
    dims = idx.dims(b)
    lo, hi = idx.ranges[axis] if idx.ranges else (0, node.out.shape[axis])
    result = None
    offset = 0
    for x in node.inputs:
        n = x.shape[axis]
        if n == 0 or offset + n <= lo or offset >= hi:  # empty, or read by no element of this box
            offset += n
            continue
        if offset <= lo and hi <= offset + n:  # the box (a `schedule.Kernel.boxes` piece) reads x alone
            local = u.isub(b, dims[axis], u.i64(offset))
            return ctx.value(x, Index(x.shape, dims=dims[:axis] + [local] + dims[axis + 1:]))
        local = u.iclamp(b, u.isub(b, dims[axis], u.i64(offset)), 0, n - 1)
        v = ctx.value(x, Index(x.shape, dims=dims[:axis] + [local] + dims[axis + 1:]))
        if result is None:
            result = v
        else:
            result = b.select(b.icmp_signed(">=", dims[axis], u.i64(offset)), v, result)
        offset += n
    if result is None:  # every operand is empty, so is the output: this code never runs
        return u.const(u.reg_type(node.out.dtype), 0)
    return result


layout("concatenate", _concatenate)


def _take(ctx, node, idx):
    b = ctx.b
    x, ind = node.inputs
    axis = node.attrs["axis"]
    dims = idx.dims(b)
    k = ind.ndim
    j = ctx.value(ind, Index(ind.shape, dims=dims[axis:axis + k]))
    j = ctx.checked_index(node, j, x.shape[axis])  # out of range: IndexError at the call
    return ctx.value(x, Index(x.shape, dims=dims[:axis] + [j] + dims[axis + k:]))


layout("take", _take, expands=lambda n: n.out.type.size > n.inputs[0].type.size)


def _iota(ctx, node, idx):
    i = idx.dims(ctx.b)[node.attrs["dimension"]]
    return convert(ctx.b, i, dt.int64, node.out.dtype)


layout("iota", _iota, linear=lambda n: sum(d > 1 for d in n.out.shape) <= 1)
layout("full", lambda ctx, node, idx: fill_constant(node.out.dtype, node.attrs["value"]), linear=always)


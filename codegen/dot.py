"""dot_general: batched contraction, its own kernel over materialised operands.

PLACEHOLDER docstring: choice of loop nest vs BLAS documented after measurement.
"""
from __future__ import annotations

from math import prod

from llvmlite import ir

from ir.core import Node
from ir.prims.linalg import free_axes
from . import irutil as u
from .context import Index, KernelContext
from .lower import Lowering, _register

_FAST = ("reassoc", "contract")


def _mul_add(b: ir.IRBuilder, acc: ir.Value, x: ir.Value, y: ir.Value, fast: bool) -> ir.Value:
    if isinstance(x.type, ir.IntType):
        return b.add(acc, b.mul(x, y))
    flags = _FAST if fast else ("contract",)
    return b.fadd(acc, b.fmul(x, y, flags=("contract",)), flags=flags)


def emit_dot_loops(ctx: KernelContext, node: Node) -> None:
    """Generated loop nest. Two orders, chosen statically by operand layout:

    - *axpy* (`out[b, m, :] += lhs[b, m, k] * rhs[b, k, :]`): the inner loop runs
      over the rhs free axes, contiguous in `out` and (usually) in `rhs`;
    - *dot* (`out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, n, k]`): used when the
      rhs has no free axes or its innermost axis is contracted; the sum is a
      register accumulator that LLVM vectorises (reassociated).
    """
    b = ctx.b
    lhs, rhs = node.inputs
    out = node.out
    (lc, rc), (lb, rb) = node.attrs["contract"], node.attrs["batch"]
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    bshape = tuple(lhs.shape[a] for a in lb)
    mshape = tuple(lhs.shape[a] for a in lf)
    nshape = tuple(rhs.shape[a] for a in rf)
    kshape = tuple(lhs.shape[a] for a in lc)
    zero = u.const(u.reg_type(out.dtype), 0)

    def operand_index(v, batch, free, contract, bax, fax, cax):
        dims = [None] * v.ndim
        for axes, ivs in ((bax, batch), (fax, free), (cax, contract)):
            for a, iv in zip(axes, ivs):
                dims[a] = iv
        return Index(v.shape, dims=dims)

    dot_form = not rf or (rhs.ndim - 1) in rc
    with u.loop_nest(b, bshape + mshape, "bm") as bm:
        bi, mi = bm[:len(bshape)], bm[len(bshape):]
        if dot_form:
            with u.loop_nest(b, nshape, "n") as ni:
                slot = u.alloca_at_entry(b, zero.type, "acc")
                b.store(zero, slot)
                with u.loop_nest(b, kshape, "k") as ki:
                    x = ctx.load(lhs, operand_index(lhs, bi, mi, ki, lb, lf, lc))
                    y = ctx.load(rhs, operand_index(rhs, bi, ni, ki, rb, rf, rc))
                    b.store(_mul_add(b, b.load(slot, typ=zero.type), x, y, True), slot)
                ctx.store(out, Index(out.shape, dims=bi + mi + ni), b.load(slot, typ=zero.type))
            continue_ = None  # noqa: F841
        else:
            with u.loop_nest(b, nshape, "z") as ni:
                ctx.store(out, Index(out.shape, dims=bi + mi + ni), zero)
            with u.loop_nest(b, kshape, "k") as ki:
                x = ctx.load(lhs, operand_index(lhs, bi, mi, ki, lb, lf, lc))
                with u.loop_nest(b, nshape, "n") as ni:
                    y = ctx.load(rhs, operand_index(rhs, bi, ni, ki, rb, rf, rc))
                    o = Index(out.shape, dims=bi + mi + ni)
                    ctx.store(out, o, _mul_add(b, ctx.load(out, o), x, y, False))


def emit_dot(ctx: KernelContext, node: Node) -> None:
    emit_dot_loops(ctx, node)


_register("dot_general", Lowering("kernel", emit_dot))

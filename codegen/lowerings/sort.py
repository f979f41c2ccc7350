"""The `argsort` lowering: a stable bottom-up merge sort of positions, per row.

For each position of the non-sorted axes, the permutation starts as 0..n-1
and is merged in runs of width 1, 2, 4, ... (the widths are known at compile
time, so the pass loop is unrolled: ceil(log2 n) passes of branch-free merges,
O(n log n) compares). The two ping-pong buffers are the output row itself and
one scratch row from `malloc`; the pass count decides which one the first pass
writes, so that the last pass lands in the output. Ties take the left run
first (stable); NaN compares above every number, so it sorts last ascending
and first descending, as the impl does.
"""
from __future__ import annotations

from llvmlite import ir

from tensorplay.ir.core import Node
from .. import irutil as u
from ..context import Index, KernelContext
from ..registry import Lowering, register


def _libc(b: ir.IRBuilder, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = b.module.globals.get(name)
    return fn or ir.Function(b.module, ir.FunctionType(ret, args), name)


def _before(b: ir.IRBuilder, a: ir.Value, c: ir.Value, dtype, descending: bool) -> ir.Value:
    """True when element `a` sorts strictly before `c` (NaN above every number)."""
    if descending:
        a, c = c, a
    if dtype.is_floating_point:  # a < c, or c is NaN and a is not
        return b.or_(b.fcmp_ordered("<", a, c), b.and_(b.fcmp_unordered("uno", c, c), b.fcmp_ordered("ord", a, a)))
    if dtype.is_bool:
        return b.and_(b.not_(a), c)
    return b.icmp_signed("<", a, c)


def emit_argsort(ctx: KernelContext, node: Node) -> None:
    b = ctx.b
    (x,), out = node.inputs, node.out
    axis, descending = node.attrs["axis"], node.attrs["descending"]
    n = x.shape[axis]
    if out.type.size == 0:
        return
    rows = x.shape[:axis] + x.shape[axis + 1:]
    widths = []
    w = 1
    while w < n:
        widths.append(w)
        w *= 2
    scratch = None
    if widths:
        raw = b.call(_libc(b, "malloc", ir.PointerType(u.I8), [u.I64]), [u.i64(8 * n)])
        scratch = b.bitcast(raw, ir.PointerType(u.I64))
    with u.loop_nest(b, rows, "row") as ivs:
        def at(k):
            return ivs[:axis] + [k] + ivs[axis:]

        def ptr(buf, k):
            if buf == "out":
                return ctx.pointer(out, Index(out.shape, dims=at(k)))
            return b.gep(scratch, [k], inbounds=True, source_etype=u.I64)

        def key(j):
            return ctx.load(x, Index(x.shape, dims=at(j)))

        src = "out" if len(widths) % 2 == 0 else "scratch"
        with u.for_range(b, n, "init") as k:
            b.store(k, ptr(src, k))
        for w in widths:
            dst = "scratch" if src == "out" else "out"
            with u.for_range(b, (n + 2 * w - 1) // (2 * w), "run") as r:
                lo = b.mul(r, u.i64(2 * w))
                mid = u.intrinsic(b, "llvm.smin", [b.add(lo, u.i64(w)), u.i64(n)])
                hi = u.intrinsic(b, "llvm.smin", [b.add(lo, u.i64(2 * w)), u.i64(n)])
                left = u.alloca_at_entry(b, u.I64, "left")
                right = u.alloca_at_entry(b, u.I64, "right")
                b.store(lo, left)
                b.store(mid, right)
                with u.for_range(b, hi, "merge", start=lo) as k:
                    i, j = b.load(left, typ=u.I64), b.load(right, typ=u.I64)
                    pi = b.load(ptr(src, u.intrinsic(b, "llvm.smin", [i, u.i64(n - 1)])), typ=u.I64)
                    pj = b.load(ptr(src, u.intrinsic(b, "llvm.smin", [j, u.i64(n - 1)])), typ=u.I64)
                    right_first = b.and_(b.icmp_signed("<", j, hi),
                                         b.or_(b.icmp_signed(">=", i, mid),
                                               _before(b, key(pj), key(pi), x.dtype, descending)))
                    b.store(b.select(right_first, pj, pi), ptr(dst, k))
                    b.store(b.select(right_first, i, b.add(i, u.i64(1))), left)
                    b.store(b.select(right_first, b.add(j, u.i64(1)), j), right)
                    ctx.forget()
            src = dst
        ctx.forget()
    if scratch is not None:
        b.call(_libc(b, "free", ir.VoidType(), [ir.PointerType(u.I8)]), [raw])


register("argsort", Lowering("kernel", emit_argsort))

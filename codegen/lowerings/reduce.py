"""Kernel-kind lowerings: primitives that emit their own loop nest.

- reductions (sum, prod, max, min): one driver, parameterised by a `Monoid`;
  producers are fused (the operand is an expression evaluated in the loop);
- argmax / argmin: max then first-match, two vectorised passes, producers fused;
- index_add: copy then scatter-accumulate, over materialised operands;
- dot_general: `lowerings/dot.py` (the emitters are in `codegen/dot.py`).

The reduction driver walks the operand in memory order, so every load is
contiguous whichever axes are reduced. Reduced axes that form a suffix of the
shape are accumulated in a register (float32 sums accumulate in float64, with
`reassoc` so LLVM vectorises the sum); reduced axes further out accumulate
into the output buffer, which is first filled with the identity; for the 16-bit
floats (whose buffer would round every partial result) every reduced axis is
accumulated in a register instead (sums in float64, then one rounding).
"""
from __future__ import annotations

import itertools
import re
from .._record import record
from typing import Callable

from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Node
from .. import irutil as u
from .. import jit
from ..context import Index, KernelContext
from ..registry import Lowering, register
from .elementwise import convert

# reassociation lets LLVM vectorise float reductions; no "contract": fusing a producer's multiply
# into the accumulation (an FMA) would make results depend on which loop (vector or remainder) ran.
# Register accumulations over short suffixes stay in order (`jit.reassociation_is_per_element`).
_FAST = ("reassoc",)


@record(frozen=True)
class Monoid:
    """An associative combine with its identity; `acc` is the accumulator dtype for an input dtype."""

    identity: Callable[[dt.DType], object]
    combine: Callable[..., ir.Value]  # (builder, acc, x, dtype[, flags]) -> acc
    acc: Callable[[dt.DType], dt.DType] = lambda d: d


def _extreme(dtype: dt.DType, largest: bool):
    if dtype.is_floating_point:
        return float("inf") if largest else float("-inf")
    if dtype.is_bool:
        return largest
    bits = dtype.itemsize * 8
    return (1 << (bits - 1)) - 1 if largest else -(1 << (bits - 1))


def _sum(b, acc, x, dtype, flags=_FAST):
    return b.fadd(acc, x, flags=flags) if dtype.is_floating_point else b.add(acc, x)


def _prod(b, acc, x, dtype, flags=_FAST):
    return b.fmul(acc, x, flags=flags) if dtype.is_floating_point else b.mul(acc, x)


def _max(b, acc, x, dtype, flags=None):
    if dtype.is_floating_point:
        return u.intrinsic(b, "llvm.maximum", [acc, x])
    return b.or_(acc, x) if dtype.is_bool else u.intrinsic(b, "llvm.smax", [acc, x])


def _min(b, acc, x, dtype, flags=None):
    if dtype.is_floating_point:
        return u.intrinsic(b, "llvm.minimum", [acc, x])
    return b.and_(acc, x) if dtype.is_bool else u.intrinsic(b, "llvm.smin", [acc, x])


MONOIDS = {
    "reduce_sum": Monoid(lambda d: 0, _sum, lambda d: dt.float64 if d is dt.float32 or dt.is_low_float(d) else d),
    "reduce_prod": Monoid(lambda d: 1, _prod),
    "reduce_max": Monoid(lambda d: _extreme(d, False), _max),
    "reduce_min": Monoid(lambda d: _extreme(d, True), _min),
}


# --- vector width of widening reductions ----------------------------------------------------------
# LLVM's loop vectoriser sizes a loop by its widest type: a float32 sum accumulated in float64 ran
# 4 lanes on AVX2 (256-bit double vectors), so its fused producers (sin, exp, ...) computed on
# 128-bit halves. A `llvm.loop.vectorize.width` hint asks for 512 bits of the operand type instead
# (16 float32 lanes, as `module.VECTOR_WIDTH`; the same text on every host): the accumulator takes
# two to four registers. On AVX2 16 lanes beat 8 (two independent chains): sum(tanh(sin(x))) over
# rows of 10^4 float32, CPU 71 ms (4 lanes) -> 38 ms (8) -> 28 ms (16).
WIDENED_VECTOR_BITS = 512
_LOOP_IDS = itertools.count()
_LOOP_ID_TEXT = re.compile(r'^(!\d+) = !\{ ?!"tp\.loop\.id\.u?\d+", (!\d+) ?\}$', re.MULTILINE)


def widening_lanes(dtype: dt.DType, acc_dtype: dt.DType) -> int | None:
    """Vector lanes to ask for when `dtype` elements accumulate in a wider `acc_dtype`, else None.

    >>> widening_lanes(dt.float32, dt.float64), widening_lanes(dt.float64, dt.float64)
    (16, None)
    """
    if acc_dtype.itemsize <= dtype.itemsize or not dtype.is_floating_point:
        return None
    return WIDENED_VECTOR_BITS // (8 * max(dtype.itemsize, 4))


def hint_vector_width(latch: ir.Block, lanes: int | None) -> None:
    """Attach a vectorisation-width hint to the loop whose back edge ends block `latch`
    (`fix_loop_ids` turns the placeholder into LLVM's self-referential loop id)."""
    if lanes is None or latch.terminator is None:
        return
    m = latch.parent.module
    width = m.add_metadata([ir.MetaDataString(m, "llvm.loop.vectorize.width"), ir.Constant(ir.IntType(32), lanes)])
    loop_id = m.add_metadata([ir.MetaDataString(m, f"tp.loop.id.{next(_LOOP_IDS)}"), width])
    latch.terminator.set_metadata("llvm.loop", loop_id)


def fix_loop_ids(text: str) -> str:
    """Module text with each loop-id placeholder of `hint_vector_width` made ``distinct !{!self, ...}``.

    >>> fix_loop_ids('!1 = !{ !"tp.loop.id.7", !0 }')
    '!1 = distinct !{!1, !0}'
    """
    return _LOOP_ID_TEXT.sub(r"\1 = distinct !{\1, \2}", text)


def emit_reduction(ctx: KernelContext, node: Node, monoid: Monoid) -> None:
    """Store `node.out` = the reduction of `node.inputs[0]` over ``node.attrs['axes']``."""
    b = ctx.b
    x, out = node.inputs[0], node.out
    axes = set(node.attrs["axes"])
    shape = x.shape
    dtype, acc_dtype = x.dtype, monoid.acc(x.dtype)
    acc_t = u.reg_type(acc_dtype)
    k = len(shape)
    while k > 0 and (k - 1) in axes:
        k -= 1
    prefix, suffix = shape[:k], shape[k:]
    outer_reduced = any(a < k for a in axes)
    if outer_reduced and dt.is_low_float(dtype):
        _emit_reduction_in_register(ctx, node, monoid)
        return
    if outer_reduced:  # fill the output with the identity, then accumulate into it
        with u.loop_nest(b, out.shape, "init", unroll_outer=False) as ivs:
            ctx.store(out, Index(out.shape, dims=ivs), u.const(u.reg_type(dtype), monoid.identity(dtype)))

    # outer loops of the nest are never unrolled (copies of a vectorised inner loop: LLVM time only);
    # the reduced loops are untouched (see `jit.reassociation_is_per_element`)
    with u.loop_nest(b, prefix, "o", unroll_outer=False) as pre:
        out_idx = Index(out.shape, dims=[d for a, d in enumerate(pre) if a not in axes])
        if suffix:
            flags = _FAST if jit.reassociation_is_per_element(suffix) else ()
            slot = u.alloca_at_entry(b, acc_t, "acc")
            b.store(u.const(acc_t, monoid.identity(acc_dtype)), slot)
            with u.loop_nest(b, suffix, "r") as post:
                v = convert(b, ctx.value(x, Index(shape, dims=pre + post)), dtype, acc_dtype)
                b.store(monoid.combine(b, b.load(slot, typ=acc_t), v, acc_dtype, flags), slot)
                ctx.forget()
                latch = b.block
            if flags:  # a vectorised (reassociated) register sum
                hint_vector_width(latch, widening_lanes(dtype, acc_dtype))
            v = convert(b, b.load(slot, typ=acc_t), acc_dtype, dtype)
        else:
            v = ctx.value(x, Index(shape, dims=pre))
        if outer_reduced:
            # in order: with `reassoc`, a kept loop unrolled away (n <= 4) let LLVM vectorise the
            # outer reduced loop as a tree, so an element's bits depended on the kept extents (vmap
            # chunks of 2 != the whole batch on AVX-512, whose masked loads make it profitable)
            v = monoid.combine(b, ctx.load(out, out_idx), v, dtype, ())
        ctx.store(out, out_idx, v)
        ctx.forget()


def _emit_reduction_in_register(ctx: KernelContext, node: Node, monoid: Monoid) -> None:
    """The reduction with every reduced axis innermost, accumulated in a register: for 16-bit floats,
    whose output buffer cannot hold float32 partial results (one rounding, at the end)."""
    b = ctx.b
    x, out = node.inputs[0], node.out
    axes = node.attrs["axes"]
    dtype, acc_dtype = x.dtype, monoid.acc(x.dtype)
    acc_t = u.reg_type(acc_dtype)
    kept = [a for a in range(x.ndim) if a not in axes]
    with u.loop_nest(b, out.shape, "o") as outer:
        slot = u.alloca_at_entry(b, acc_t, "acc")
        b.store(u.const(acc_t, monoid.identity(acc_dtype)), slot)
        with u.loop_nest(b, tuple(x.shape[a] for a in sorted(axes)), "r") as inner:
            dims = [None] * x.ndim
            for a, d in zip(kept, outer):
                dims[a] = d
            for a, d in zip(sorted(axes), inner):
                dims[a] = d
            v = convert(b, ctx.value(x, Index(x.shape, dims=dims)), dtype, acc_dtype)
            b.store(monoid.combine(b, b.load(slot, typ=acc_t), v, acc_dtype, ()), slot)
            ctx.forget()
        ctx.store(out, Index(out.shape, dims=outer), convert(b, b.load(slot, typ=acc_t), acc_dtype, dtype))
        ctx.forget()


def reduction(name: str) -> None:
    monoid = MONOIDS[name]
    register(name, Lowering("kernel", lambda ctx, node: emit_reduction(ctx, node, monoid), fuses_producers=True))


for _name in MONOIDS:
    reduction(_name)


# --- argmax / argmin ---------------------------------------------------------------------------
def emit_arg_reduction(ctx: KernelContext, node: Node, largest: bool) -> None:
    """Index of the first extremum along ``axis``; a NaN counts as the extremum (numpy's rule).

    Two vectorisable passes per output element instead of one (value, index) scan, which
    LLVM does not vectorise: m = max (NaN-propagating), then the smallest j with x[j] == m
    (or x[j] NaN when m is) as an integer min-reduction."""
    b = ctx.b
    x, out = node.inputs[0], node.out
    axis = node.attrs["axis"]
    n = x.shape[axis]
    dtype = x.dtype
    t = u.reg_type(dtype)
    monoid = MONOIDS["reduce_max" if largest else "reduce_min"]
    with u.loop_nest(b, out.shape, "o") as ivs:
        def at(j):
            return ctx.value(x, Index(x.shape, dims=ivs[:axis] + [j] + ivs[axis:]))
        best_slot = u.alloca_at_entry(b, t, "best")
        pos_slot = u.alloca_at_entry(b, u.I64, "pos")
        b.store(u.const(t, monoid.identity(dtype)), best_slot)
        with u.for_range(b, u.i64(n), "r") as j:
            b.store(monoid.combine(b, b.load(best_slot, typ=t), at(j), dtype), best_slot)
            ctx.forget()
        best = b.load(best_slot, typ=t)
        b.store(u.i64(n), pos_slot)
        with u.for_range(b, u.i64(n), "s") as j:
            v = at(j)
            if dtype.is_floating_point:
                hit = b.or_(b.fcmp_ordered("==", v, best),
                            b.and_(b.fcmp_unordered("uno", v, v), b.fcmp_unordered("uno", best, best)))
            else:
                hit = b.icmp_unsigned("==", v, best)
            cand = b.select(hit, j, u.i64(n))
            b.store(u.intrinsic(b, "llvm.smin", [b.load(pos_slot, typ=u.I64), cand]), pos_slot)
            ctx.forget()
        pos = b.load(pos_slot, typ=u.I64)
        ctx.store(out, Index(out.shape, dims=ivs), convert(b, pos, dt.int64, out.dtype))
        ctx.forget()


register("argmax", Lowering("kernel", lambda ctx, node: emit_arg_reduction(ctx, node, True),
                             fuses_producers=True))
register("argmin", Lowering("kernel", lambda ctx, node: emit_arg_reduction(ctx, node, False),
                             fuses_producers=True))


# --- index_add ---------------------------------------------------------------------------------
def emit_index_add(ctx: KernelContext, node: Node) -> None:
    """out = x; out[..., idx[i], ...] += upd[..., i, ...] in index order (like np.add.at); an index
    out of range is reported: the call raises IndexError."""
    b = ctx.b
    x, ind, upd = node.inputs
    out = node.out
    axis = node.attrs["axis"]
    if u.mem_type(out.dtype) is u.I16 and x.shape[axis] and upd.type.size:
        _emit_index_add_low(ctx, node)
        return
    with u.for_range(b, u.i64(x.type.size), "copy") as i:
        ctx.store(out, Index(out.shape, linear=i), ctx.load(x, Index(x.shape, linear=i)))
    if x.shape[axis] == 0 or upd.type.size == 0:
        return
    k = ind.ndim
    with u.loop_nest(b, upd.shape, "s") as ivs:
        j = ctx.load(ind, Index(ind.shape, dims=ivs[axis:axis + k]))
        j = ctx.checked_index(node, j, x.shape[axis])  # out of range: IndexError at the call
        dst = Index(out.shape, dims=ivs[:axis] + [j] + ivs[axis + k:])
        cur = ctx.load(out, dst)
        v = ctx.load(upd, Index(upd.shape, dims=ivs))
        if out.dtype.is_floating_point:
            s = b.fadd(cur, v)
        elif out.dtype.is_bool:
            s = b.or_(cur, v)
        else:
            s = b.add(cur, v)
        ctx.store(out, dst, s)
        ctx.forget()


def _emit_index_add_low(ctx: KernelContext, node: Node) -> None:
    """index_add of 16-bit floats: accumulated in a float32 copy of `x` (heap scratch), then rounded
    once per element, as the eager impl (which computes in float32) does."""
    from ..dot import _free, _malloc

    b = ctx.b
    x, ind, upd = node.inputs
    out = node.out
    axis = node.attrs["axis"]
    acc = _malloc(b, 4 * x.type.size)

    def at(linear):
        return b.gep(acc, [linear], inbounds=True, source_etype=u.F32)
    with u.for_range(b, u.i64(x.type.size), "widen") as i:
        b.store(ctx.load(x, Index(x.shape, linear=i)), at(i))
    k = ind.ndim
    with u.loop_nest(b, upd.shape, "s") as ivs:
        j = ctx.load(ind, Index(ind.shape, dims=ivs[axis:axis + k]))
        j = ctx.checked_index(node, j, x.shape[axis])  # out of range: IndexError at the call
        p = at(Index(out.shape, dims=ivs[:axis] + [j] + ivs[axis + k:]).linear(b))
        b.store(b.fadd(b.load(p, typ=u.F32), ctx.load(upd, Index(upd.shape, dims=ivs))), p)
        ctx.forget()
    with u.for_range(b, u.i64(x.type.size), "narrow") as i:
        ctx.store(out, Index(out.shape, linear=i), b.load(at(i), typ=u.F32))
    _free(b, acc)


register("index_add", Lowering("kernel", emit_index_add))

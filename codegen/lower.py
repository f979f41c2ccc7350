"""One lowering per primitive, registered in `LOWERINGS` keyed by primitive name.

A lowering has one of two kinds, each with one signature:

- ``expr``: ``emit(ctx, node, idx) -> ir.Value`` returns the element of
  ``node.out`` at `idx` (an `Index`), asking ``ctx.value(operand, index)`` for
  operand elements. Elementwise math, select, convert and every layout op are
  expressions, so the scheduler can fuse chains of them into one loop nest.
- ``kernel``: ``emit(ctx, node) -> None`` emits a whole loop nest storing
  ``node.out`` (reductions, arg-reductions, dot_general, index_add).

Semantics follow the numpy `impl` of each primitive exactly for integers and
booleans: integer `div` truncates toward zero, `div` and `rem` by zero give 0,
INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0, float->int
conversion truncates and gives INT_MIN for NaN/inf/out-of-range values (what
numpy's cast does on x86). An out-of-range `take`/`index_add` index is reported
(`KernelContext.checked_index`): the call raises IndexError.
Floating-point transcendentals come from `vecmath` (vectorisable polynomials,
error bounds stated there); `rem` on floats is LLVM `frem` (libm fmod, exact).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Node
from . import irutil as u
from . import vecmath as vm
from .context import Index, KernelContext


@dataclass(frozen=True)
class Lowering:
    """How one primitive is compiled (see the module docstring for the two `kind`s)."""

    kind: str
    emit: Callable
    elementwise: bool = False  # expr whose operands are read at the output index itself
    cheap: bool = True  # expr: recomputing it per use costs a few instructions
    linear: Callable[[Node], bool] = lambda node: False  # expr: needs only the linear output index
    expands: Callable[[Node], bool] = lambda node: False  # expr: evaluates an operand more often than its size
    fuses_producers: bool = False  # kernel: operands are evaluated as fused expressions


LOWERINGS: dict[str, Lowering] = {}


def _register(name: str, lowering: Lowering) -> None:
    assert name not in LOWERINGS, name
    LOWERINGS[name] = lowering


def _always(node: Node) -> bool:
    return True


# --- elementwise families -----------------------------------------------------------------------
def elementwise(name: str, fn: Callable, cheap: bool = True) -> None:
    """Register `fn(b, args, dtype) -> value`, applied to the operands at the output index.

    `dtype` is the operands' element type (for select: the type of the selected values)."""
    def emit(ctx: KernelContext, node: Node, idx: Index) -> ir.Value:
        dtype = node.inputs[-1].dtype if node.prim.name == "select" else node.inputs[0].dtype
        return fn(ctx.b, ctx.operands(node, idx), dtype, **node.attrs)
    _register(name, Lowering("expr", emit, elementwise=True, cheap=cheap, linear=_always))


def float_unary(name: str, fn: Callable) -> None:
    """A float-only unary math function from `vecmath` (expensive: never recomputed per use)."""
    elementwise(name, lambda b, a, dtype: fn(b, a[0]), cheap=False)


def by_kind(*, f: Callable | None = None, i: Callable | None = None, bool_: Callable | None = None) -> Callable:
    """Dispatch an elementwise body on the operand dtype's kind (float, int, bool)."""
    table = {"f": f, "i": i, "b": bool_ if bool_ is not None else i}

    def fn(b, args, dtype, **attrs):
        return table[dtype.kind](b, *args)
    return fn


for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "logistic", "erf"):
    float_unary(_name, getattr(vm, _name))


def _zero(x: ir.Value) -> ir.Value:
    return u.const(x.type, 0)


def _sign_float(b, x):
    one = u.const(x.type, 1.0)
    r = b.select(b.fcmp_ordered(">", x, _zero(x)), one, _zero(x))
    r = b.select(b.fcmp_ordered("<", x, _zero(x)), u.const(x.type, -1.0), r)
    return b.select(b.fcmp_unordered("uno", x, x), x, r)


def _sign_int(b, x):
    pos = b.zext(b.icmp_signed(">", x, _zero(x)), x.type)
    neg = b.zext(b.icmp_signed("<", x, _zero(x)), x.type)
    return b.sub(pos, neg)


elementwise("neg", by_kind(f=lambda b, x: b.fneg(x), i=lambda b, x: b.sub(_zero(x), x)))
elementwise("abs", by_kind(f=lambda b, x: u.intrinsic(b, "llvm.fabs", [x]),
                           i=lambda b, x: b.select(b.icmp_signed("<", x, _zero(x)), b.sub(_zero(x), x), x)))
elementwise("sign", by_kind(f=_sign_float, i=_sign_int))
elementwise("sqrt", lambda b, a, dtype: u.intrinsic(b, "llvm.sqrt", a), cheap=False)
elementwise("rsqrt", lambda b, a, dtype: b.fdiv(u.const(a[0].type, 1.0), u.intrinsic(b, "llvm.sqrt", a)),
            cheap=False)
elementwise("floor", lambda b, a, dtype: u.intrinsic(b, "llvm.floor", a))
elementwise("ceil", lambda b, a, dtype: u.intrinsic(b, "llvm.ceil", a))
elementwise("round", lambda b, a, dtype: u.intrinsic(b, "llvm.roundeven", a))
elementwise("logical_not", lambda b, a, dtype: b.xor(a[0], u.const(a[0].type, -1)))
elementwise("stop_gradient", lambda b, a, dtype: a[0])

# --- binary arithmetic ---------------------------------------------------------------------------
elementwise("add", by_kind(f=lambda b, x, y: b.fadd(x, y), i=lambda b, x, y: b.add(x, y)))
elementwise("sub", by_kind(f=lambda b, x, y: b.fsub(x, y), i=lambda b, x, y: b.sub(x, y)))
elementwise("mul", by_kind(f=lambda b, x, y: b.fmul(x, y), i=lambda b, x, y: b.mul(x, y)))


def _div_int(b, x, y):
    # C division truncating toward zero, as the impl: x / 0 == 0 and INT_MIN / -1 == INT_MIN (wraps).
    zero, one = _zero(x), u.const(x.type, 1)
    by_zero = b.icmp_signed("==", y, zero)
    by_minus_one = b.icmp_signed("==", y, u.const(x.type, -1))
    q = b.sdiv(x, b.select(b.or_(by_zero, by_minus_one), one, y))
    return b.select(by_zero, zero, b.select(by_minus_one, b.sub(zero, x), q))


elementwise("div", by_kind(f=lambda b, x, y: b.fdiv(x, y), i=_div_int), cheap=False)
elementwise("pow", lambda b, a, dtype: vm.pow(b, *a), cheap=False)
elementwise("atan2", lambda b, a, dtype: vm.atan2(b, *a), cheap=False)
elementwise("max", by_kind(f=lambda b, x, y: u.intrinsic(b, "llvm.maximum", [x, y]),
                           i=lambda b, x, y: u.intrinsic(b, "llvm.smax", [x, y]),
                           bool_=lambda b, x, y: b.or_(x, y)))
elementwise("min", by_kind(f=lambda b, x, y: u.intrinsic(b, "llvm.minimum", [x, y]),
                           i=lambda b, x, y: u.intrinsic(b, "llvm.smin", [x, y]),
                           bool_=lambda b, x, y: b.and_(x, y)))


def _rem_int(b, x, y):
    # np.fmod on ints: x % 0 == 0 and INT_MIN % -1 == 0; LLVM's srem is undefined for both.
    zero, one = _zero(x), u.const(x.type, 1)
    bad = b.or_(b.icmp_signed("==", y, zero), b.icmp_signed("==", y, u.const(x.type, -1)))
    r = b.srem(x, b.select(bad, one, y))
    return b.select(bad, zero, r)


elementwise("rem", by_kind(f=lambda b, x, y: b.frem(x, y), i=_rem_int), cheap=False)
elementwise("and", lambda b, a, dtype: b.and_(*a))
elementwise("or", lambda b, a, dtype: b.or_(*a))
elementwise("xor", lambda b, a, dtype: b.xor(*a))


def compare(name: str, op: str) -> None:
    """Register a comparison: ordered for floats (false on NaN) except `!=`, signed ints, unsigned bools."""
    def fn(b, args, dtype):
        if dtype.is_floating_point:
            return (b.fcmp_unordered if op == "!=" else b.fcmp_ordered)(op, *args)
        if dtype.is_bool:
            return b.icmp_unsigned(op, *args)
        return b.icmp_signed(op, *args)
    elementwise(name, fn)


for _name, _op in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    compare(_name, _op)

elementwise("select", lambda b, a, dtype: b.select(*a))


def convert(b: ir.IRBuilder, x: ir.Value, src: dt.DType, dst: dt.DType) -> ir.Value:
    """Convert a register value from `src` to `dst` exactly as numpy's `astype` does on x86."""
    to = u.reg_type(dst)
    if src is dst:
        return x
    if dst.is_bool:
        if src.is_floating_point:
            return b.fcmp_unordered("!=", x, _zero(x))
        return b.icmp_signed("!=", x, _zero(x))
    if src.is_bool:
        return b.uitofp(x, to) if dst.is_floating_point else b.zext(x, to)
    if src.is_integer and dst.is_integer:
        return b.sext(x, to) if to.width > x.type.width else b.trunc(x, to)
    if src.is_integer:
        return b.sitofp(x, to)
    if dst.is_floating_point:
        return b.fpext(x, to) if dst.itemsize > src.itemsize else b.fptrunc(x, to)
    # float -> int: truncate; NaN, inf and out-of-range give INT_MIN (x86 "integer indefinite").
    lim = float(2 ** (to.width - 1))
    ok = b.and_(b.fcmp_ordered(">=", x, u.const(x.type, -lim)), b.fcmp_ordered("<", x, u.const(x.type, lim)))
    return b.select(ok, b.fptosi(x, to), u.const(to, -(1 << (to.width - 1))))


def _emit_convert(ctx: KernelContext, node: Node, idx: Index) -> ir.Value:
    return convert(ctx.b, ctx.value(node.inputs[0], idx), node.inputs[0].dtype, node.out.dtype)


_register("convert_element_type", Lowering("expr", _emit_convert, elementwise=True, linear=_always))


# --- layout: operand index from output index ------------------------------------------------------
def layout(name: str, emit: Callable, linear: Callable[[Node], bool] = lambda n: False,
           expands: Callable[[Node], bool] = lambda n: False, cheap: bool = True) -> None:
    _register(name, Lowering("expr", emit, linear=linear, expands=expands, cheap=cheap))


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
       linear=_always)


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


def _fill(dtype: dt.DType, value) -> ir.Constant:
    """The register constant numpy's `np.full(..., value, dtype)` would store."""
    v = np.full((), value, dtype=dtype.np)[()]
    return u.const(u.reg_type(dtype), bool(v) if dtype.is_bool else (float(v) if dtype.is_floating_point else int(v)))


def _pad(ctx, node, idx):
    b = ctx.b
    x = node.inputs[0]
    a = node.attrs
    fill = _fill(x.dtype, a["value"])
    if x.type.size == 0:
        return fill
    inside = None
    sub = []
    for d, n, lo, it in zip(idx.dims(b), x.shape, a["low"], a["interior"]):
        p = u.isub(b, d, u.i64(lo))
        if lo == 0 and it == 0 and n == node.out.shape[len(sub)]:
            sub.append(p)
            continue
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
    result = None
    offset = 0
    for x in node.inputs:
        n = x.shape[axis]
        if n == 0:
            continue
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
layout("full", lambda ctx, node, idx: _fill(node.out.dtype, node.attrs["value"]), linear=_always)

from . import philox  # noqa: E402  (registers random_uniform / random_normal)
from . import kernels  # noqa: E402,F401  (registers the kernel-kind lowerings)

for _name in ("random_uniform", "random_normal"):
    layout(_name, philox.EMITTERS[_name], cheap=False)

"""Elementwise lowerings: unary and binary math, comparisons, select, casts.

Semantics follow the numpy `impl` of each primitive exactly for integers and
booleans: integer `div` truncates toward zero, `div` and `rem` by zero give 0,
INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0, float->int conversion
truncates and gives INT_MIN for NaN/inf/out-of-range values (what numpy's
cast does on x86). Floating-point transcendentals come from `vecmath`
(vectorisable polynomials; each states its error bound, which the lowering
carries as `Lowering.ulp`); `rem` on floats is LLVM `frem` (libm fmod, exact).
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Node
from .. import irutil as u
from .. import vecmath as vm
from ..context import Index, KernelContext
from ..registry import Lowering, always, register

# --- elementwise families -----------------------------------------------------------------------
def elementwise(name: str, fn: Callable, cheap: bool = True, ulp: tuple[float, float] | None = None) -> None:
    """Register `fn(b, args, dtype) -> value`, applied to the operands at the output index.

    `dtype` is the element type of the primitive's data operands (`Primitive.data_dtype`: for
    select, the type of the selected values, not of the predicate)."""
    def emit(ctx: KernelContext, node: Node, idx: Index) -> ir.Value:
        return fn(ctx.b, ctx.operands(node, idx), node.prim.data_dtype(node.inputs), **node.attrs)
    register(name, Lowering("expr", emit, elementwise=True, cheap=cheap, linear=always, ulp=ulp))


def float_math(name: str, fn: Callable) -> None:
    """A float-only math function from `vecmath` (expensive: never recomputed per use), with the
    error bound stated beside the function (`vecmath.bound`)."""
    elementwise(name, lambda b, a, dtype: fn(b, *a), cheap=False, ulp=fn.ulp)


def by_kind(*, f: Callable | None = None, i: Callable | None = None, bool_: Callable | None = None) -> Callable:
    """Dispatch an elementwise body on the operand dtype's kind (float, int, bool)."""
    table = {"f": f, "i": i, "b": bool_ if bool_ is not None else i}

    def fn(b, args, dtype, **attrs):
        return table[dtype.kind](b, *args)
    return fn


for _name, _fn in vm.FUNCTIONS.items():  # every vecmath function with a stated bound lowers its primitive
    float_math(_name, _fn)


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
    """Convert a register value from `src` to `dst` exactly as numpy's `astype` does on x86.

    The 16-bit floats are float32 in registers: a conversion to one gives the float32 value, which
    `KernelContext.value` (or the store) rounds to the storage type."""
    src, dst = dt.compute_dtype(src), dt.compute_dtype(dst)
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


register("convert_element_type", Lowering("expr", _emit_convert, elementwise=True, linear=always))



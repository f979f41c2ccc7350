"""Small llvmlite helpers in the style of numba's cgutils: IR types per dtype,
constants, and context managers so that a loop nest reads like a loop nest.

Booleans live in registers as ``i1`` and in memory as one byte (``i8``, 0 or 1),
matching numpy's ``bool_`` storage so buffers are shared without conversion.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from llvmlite import ir

from tensorplay.ir import dtypes as dt

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
I128 = ir.IntType(128)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

_REG = {dt.bool_: I1, dt.int32: I32, dt.int64: I64, dt.float32: F32, dt.float64: F64}
_MEM = {dt.bool_: I8, dt.int32: I32, dt.int64: I64, dt.float32: F32, dt.float64: F64}


def reg_type(dtype: dt.DType) -> ir.Type:
    """The register type holding one element of `dtype`."""
    return _REG[dtype]


def mem_type(dtype: dt.DType) -> ir.Type:
    """The in-memory element type of `dtype` (bool is one byte)."""
    return _MEM[dtype]


def is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.FloatType, ir.DoubleType))


def const(t: ir.Type, value) -> ir.Constant:
    """A constant of register type `t`; floats may be nan/inf, ints wrap to the type's width."""
    if is_float(t):
        return ir.Constant(t, float(value))
    width = t.width
    v = int(value) & ((1 << width) - 1)
    if width > 1 and v >= 1 << (width - 1):
        v -= 1 << width
    return ir.Constant(t, v)


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _const_int(v: ir.Value) -> int | None:
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and isinstance(v.constant, int):
        return v.constant
    return None


# Index arithmetic with constant folding in Python: it keeps the emitted IR small,
# which is most of the compile time of a small graph.
def iadd(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    cx, cy = _const_int(x), _const_int(y)
    if cx is not None and cy is not None:
        return i64(cx + cy)
    if cx == 0:
        return y
    if cy == 0:
        return x
    return b.add(x, y)


def isub(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    cx, cy = _const_int(x), _const_int(y)
    if cx is not None and cy is not None:
        return i64(cx - cy)
    if cy == 0:
        return x
    return b.sub(x, y)


def imul(b: ir.IRBuilder, x: ir.Value, c: int) -> ir.Value:
    """x * c for a Python int constant c."""
    cx = _const_int(x)
    if cx is not None:
        return i64(cx * c)
    if c == 0:
        return i64(0)
    if c == 1:
        return x
    return b.mul(x, i64(c), flags=("nuw", "nsw"))


def idiv(b: ir.IRBuilder, x: ir.Value, c: int) -> ir.Value:
    """x // c for non-negative x and a positive Python int constant c."""
    cx = _const_int(x)
    if cx is not None:
        return i64(cx // c)
    return x if c == 1 else b.udiv(x, i64(c))


def imod(b: ir.IRBuilder, x: ir.Value, c: int) -> ir.Value:
    """x % c for non-negative x and a positive Python int constant c."""
    cx = _const_int(x)
    if cx is not None:
        return i64(cx % c)
    return i64(0) if c == 1 else b.urem(x, i64(c))


def iclamp(b: ir.IRBuilder, x: ir.Value, lo: int, hi: int) -> ir.Value:
    """min(max(x, lo), hi) on signed i64."""
    cx = _const_int(x)
    if cx is not None:
        return i64(min(max(cx, lo), hi))
    x = b.select(b.icmp_signed("<", x, i64(lo)), i64(lo), x)
    return b.select(b.icmp_signed(">", x, i64(hi)), i64(hi), x)


def intrinsic(b: ir.IRBuilder, name: str, args: list[ir.Value], tys: list[ir.Type] | None = None,
              ret: ir.Type | None = None) -> ir.Value:
    """Call the overloaded LLVM intrinsic `name` (e.g. ``llvm.fabs``) on `args`."""
    module = b.module
    tys = tys if tys is not None else [args[0].type]
    full = ".".join([name] + [t.intrinsic_name for t in tys])
    fn = module.globals.get(full)
    if fn is None:
        fnty = ir.FunctionType(ret or args[0].type, [a.type for a in args])
        fn = ir.Function(module, fnty, full)
    return b.call(fn, args)


@contextmanager
def for_range(b: ir.IRBuilder, count: int | ir.Value, name: str = "i",
              start: int | ir.Value = 0) -> Iterator[ir.Value]:
    """Emit ``for (i = start; i < count; ++i) { <body> }``; yields ``i`` (i64) inside the body.

    The builder is left after the loop when the ``with`` block ends.
    """
    count = i64(count) if isinstance(count, int) else count
    start = i64(start) if isinstance(start, int) else start
    pre = b.block
    header = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    exit_ = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, name=name)
    iv.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", iv, count), body, exit_)
    b.position_at_end(body)
    yield iv
    nxt = b.add(iv, i64(1), name=f"{name}.next", flags=("nuw", "nsw"))
    iv.add_incoming(nxt, b.block)
    b.branch(header)
    b.position_at_end(exit_)


@contextmanager
def loop_nest(b: ir.IRBuilder, shape: tuple[int, ...], name: str = "d",
              start: tuple[int, ...] | None = None) -> Iterator[list[ir.Value]]:
    """Nested `for_range` loops over `shape` (outermost first); yields the induction variables.
    With `start`, dimension k runs over [start[k], shape[k]) (a box of the index space).

    Dimensions of size 1 get no loop: their index is the constant 0.
    """
    ivs: list[ir.Value] = []
    with _nest(b, shape, 0, name, ivs, start or (0,) * len(shape)):
        yield ivs


@contextmanager
def _nest(b, shape, k, name, ivs, start):
    if k == len(shape):
        yield
        return
    if shape[k] - start[k] == 1:
        ivs.append(i64(start[k]))
        with _nest(b, shape, k + 1, name, ivs, start):
            yield
        return
    with for_range(b, shape[k], f"{name}{k}", start=start[k]) as iv:
        ivs.append(iv)
        with _nest(b, shape, k + 1, name, ivs, start):
            yield


@contextmanager
def if_then(b: ir.IRBuilder, pred: ir.Value) -> Iterator[None]:
    """Emit ``if (pred) { <body> }``; the builder continues after the ``if``."""
    then = b.append_basic_block("then")
    after = b.append_basic_block("endif")
    b.cbranch(pred, then, after)
    b.position_at_end(then)
    yield
    b.branch(after)
    b.position_at_end(after)


def alloca_at_entry(b: ir.IRBuilder, t: ir.Type, name: str = "", init: ir.Value | None = None) -> ir.Value:
    """A stack slot in the function's entry block (so SROA/mem2reg promote it to a register),
    holding `init` on entry when given."""
    fn = b.function
    with b.goto_block(fn.entry_basic_block):
        if fn.entry_basic_block.instructions:
            b.position_before(fn.entry_basic_block.instructions[0])
        slot = b.alloca(t, name=name)
        if init is not None:
            b.store(init, slot)
        return slot

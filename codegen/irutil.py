"""Small llvmlite helpers in the style of numba's cgutils: IR types per dtype,
constants, and context managers so that a loop nest reads like a loop nest.

Booleans live in registers as ``i1`` and in memory as one byte (``i8``, 0 or 1),
matching numpy's ``bool_`` storage so buffers are shared without conversion.

The 16-bit floats (float16, bfloat16) live in memory as ``i16`` bit patterns and
in registers as ``float``: a load widens (exact), a store rounds to nearest even,
and `round_to` gives an operation's float32 result the one rounding the storage
type has (the semantics of `ir.dtypes.widen`). float16 uses LLVM's ``half``
conversions when the host has F16C (``vcvtph2ps``/``vcvtps2ph``), integer bit
code otherwise; bfloat16 is always integer code. Both give the same bits.
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import Iterator

from llvmlite import ir

from tensorplay.ir import dtypes as dt

from .host import stream_min_bytes

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
I128 = ir.IntType(128)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

_REG = {dt.bool_: I1, dt.int32: I32, dt.int64: I64, dt.float32: F32, dt.float64: F64}
_MEM = {dt.bool_: I8, dt.int32: I32, dt.int64: I64, dt.float32: F32, dt.float64: F64}
for _low in dt.LOW_FLOATS:  # storage types: bits in memory, float32 in registers
    _REG[_low], _MEM[_low] = F32, I16


def reg_type(dtype: dt.DType) -> ir.Type:
    """The register type holding one element of `dtype`."""
    return _REG[dtype]


def mem_type(dtype: dt.DType) -> ir.Type:
    """The in-memory element type of `dtype` (bool is one byte)."""
    return _MEM[dtype]


def is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.FloatType, ir.DoubleType))


# --- the 16-bit floats -----------------------------------------------------------------------------
_F16C: list = []  # [bool]: does the host have F16C (LLVM lowers half <-> float to single instructions)?


def half_instructions() -> bool:
    """Use LLVM ``half`` conversions for float16? True when the host CPU has F16C (x86) or is AArch64
    (where half conversions are base instructions); `set_half_instructions` overrides it (tests)."""
    if not _F16C:
        import llvmlite.binding as llvm

        feats = llvm.get_host_cpu_features()
        _F16C.append(bool(feats.get("f16c", False)) or llvm.get_process_triple().startswith(("aarch64", "arm64")))
    return _F16C[0]


def set_half_instructions(on: bool | None) -> None:
    """Force (True/False) or reset to host detection (None) the float16 conversion code path.
    Compiled code already cached keeps the path it was built with."""
    _F16C.clear()
    if on is not None:
        _F16C.append(bool(on))


def widen(b: ir.IRBuilder, bits: ir.Value, dtype: dt.DType) -> ir.Value:
    """The float32 value of the ``i16`` pattern `bits` of 16-bit float `dtype` (exact)."""
    if dtype is dt.float16:
        if half_instructions():
            return b.fpext(b.bitcast(bits, F16), F32)
        return _half_bits_to_float(b, bits)
    return b.bitcast(b.shl(b.zext(bits, I32), ir.Constant(I32, 16)), F32)  # bfloat16: the top half of a float


def narrow(b: ir.IRBuilder, x: ir.Value, dtype: dt.DType) -> ir.Value:
    """The ``i16`` pattern of float32 `x` rounded to 16-bit float `dtype` (to nearest, ties to even;
    NaN stays NaN)."""
    if dtype is dt.float16:
        if half_instructions():
            return b.bitcast(b.fptrunc(x, F16), I16)
        return _float_to_half_bits(b, x)
    w = b.bitcast(x, I32)  # bfloat16: round the low 16 bits away, to even; NaNs are kept quiet
    c = lambda v: ir.Constant(I32, v)  # noqa: E731
    lsb = b.and_(b.lshr(w, c(16)), c(1))
    rounded = b.lshr(b.add(w, b.add(c(0x7FFF), lsb)), c(16))
    quiet = b.or_(b.lshr(w, c(16)), c(0x40))
    return b.trunc(b.select(b.fcmp_unordered("uno", x, x), quiet, rounded), I16)


def round_to(b: ir.IRBuilder, x: ir.Value, dtype: dt.DType) -> ir.Value:
    """Float32 `x` rounded to 16-bit float `dtype`, as float32 again (one operation's rounding)."""
    if dtype is dt.float16 and half_instructions():
        return b.fpext(b.fptrunc(x, F16), F32)  # instcombine folds the pair into a following store
    return widen(b, narrow(b, x, dtype), dtype)


def _float_to_half_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """float32 -> float16 bits without half instructions (the branch-free scheme of Maratyszcza's FP16
    library: two scalings let the float unit do the rounding, subnormals included)."""
    c = lambda v: ir.Constant(I32, v)  # noqa: E731
    f = lambda v: ir.Constant(F32, v)  # noqa: E731
    w = b.bitcast(x, I32)
    base = b.fmul(b.fmul(intrinsic(b, "llvm.fabs", [x]), f(2.0 ** 112)), f(2.0 ** -110))
    shl1 = b.add(w, w)
    sign = b.and_(w, c(-0x80000000))
    bias = b.and_(shl1, c(-0x1000000))  # 0xFF000000
    bias = b.select(b.icmp_unsigned("<", bias, c(0x71000000)), c(0x71000000), bias)
    base = b.fadd(b.bitcast(b.add(b.lshr(bias, c(1)), c(0x07800000)), F32), base)
    bits = b.bitcast(base, I32)
    nonsign = b.add(b.and_(b.lshr(bits, c(13)), c(0x7C00)), b.and_(bits, c(0x0FFF)))
    nan = b.icmp_unsigned(">", shl1, c(-0x1000000))  # shl1 > 0xFF000000: NaN
    return b.trunc(b.or_(b.lshr(sign, c(16)), b.select(nan, c(0x7E00), nonsign)), I16)


def _half_bits_to_float(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """float16 bits -> float32 without half instructions (exact; subnormals via a magic subtraction)."""
    c = lambda v: ir.Constant(I32, v)  # noqa: E731
    w = b.shl(b.zext(h, I32), c(16))
    sign = b.and_(w, c(-0x80000000))
    two_w = b.add(w, w)
    normal = b.fmul(b.bitcast(b.add(b.lshr(two_w, c(4)), c(0xE0 << 23)), F32), ir.Constant(F32, 2.0 ** -112))
    denormal = b.fsub(b.bitcast(b.or_(b.lshr(two_w, c(17)), c(126 << 23)), F32), ir.Constant(F32, 0.5))
    small = b.icmp_unsigned("<", two_w, c(1 << 27))
    mag = b.select(small, b.bitcast(denormal, I32), b.bitcast(normal, I32))
    return b.bitcast(b.or_(sign, mag), F32)


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


_NO_UNROLL_IDS = itertools.count()


def _no_unroll(branch: ir.Instruction) -> None:
    """Mark the loop whose back edge is `branch` ``llvm.loop.unroll.disable`` (with a
    ``tp.loop.id`` placeholder that `lowerings.reduce.fix_loop_ids` makes LLVM's self-referential
    loop id). Vectorisation and interleaving are unaffected."""
    m = branch.parent.parent.module
    hint = m.add_metadata([ir.MetaDataString(m, "llvm.loop.unroll.disable")])
    branch.set_metadata("llvm.loop", m.add_metadata([ir.MetaDataString(m, f"tp.loop.id.u{next(_NO_UNROLL_IDS)}"),
                                                     hint]))


@contextmanager
def for_range(b: ir.IRBuilder, count: int | ir.Value, name: str = "i",
              start: int | ir.Value = 0, unroll: bool = True) -> Iterator[ir.Value]:
    """Emit ``for (i = start; i < count; ++i) { <body> }``; yields ``i`` (i64) inside the body.
    With ``unroll=False`` LLVM never unrolls the loop (`_no_unroll`).

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
    back = b.branch(header)
    if not unroll:
        _no_unroll(back)
    b.position_at_end(exit_)


@contextmanager
def loop_nest(b: ir.IRBuilder, shape: tuple[int, ...], name: str = "d",
              start: tuple[int, ...] | None = None, unroll_outer: bool = True) -> Iterator[list[ir.Value]]:
    """Nested `for_range` loops over `shape` (outermost first); yields the induction variables.
    With `start`, dimension k runs over [start[k], shape[k]) (a box of the index space).
    With ``unroll_outer=False`` every loop but the innermost is marked never to be unrolled.

    Dimensions of size 1 get no loop: their index is the constant 0.
    """
    ivs: list[ir.Value] = []
    start = start or (0,) * len(shape)
    looped = [k for k in range(len(shape)) if shape[k] - start[k] != 1]
    inner = looped[-1] if looped and unroll_outer is False else None
    with _nest(b, shape, 0, name, ivs, start, unroll_outer, inner):
        yield ivs


@contextmanager
def _nest(b, shape, k, name, ivs, start, unroll_outer=True, inner=None):
    if k == len(shape):
        yield
        return
    if shape[k] - start[k] == 1:
        ivs.append(i64(start[k]))
        with _nest(b, shape, k + 1, name, ivs, start, unroll_outer, inner):
            yield
        return
    with for_range(b, shape[k], f"{name}{k}", start=start[k], unroll=unroll_outer or k == inner) as iv:
        ivs.append(iv)
        with _nest(b, shape, k + 1, name, ivs, start, unroll_outer, inner):
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


# --- streaming (non-temporal) stores ---------------------------------------------------------------
# A large output written once and not read again by the executable gains nothing from the cache: a
# regular store first reads the line it writes (write-allocate), doubling the memory traffic, and
# evicts data that is still wanted. Non-temporal stores write whole lines past the cache. They are
# weakly ordered, so a kernel that issues them ends with an `sfence` (a `fence seq_cst` would be an
# mfence; `release`/`acq_rel` fences emit nothing on x86 and do not order them).
_STREAM: list = []  # [(min bytes or None, vector bytes or None)], worked out once


def streaming() -> tuple[int | None, int | None]:
    """``(min bytes, vector bytes)`` of streaming stores on this host: graph outputs of at least `min
    bytes` are written with non-temporal vector stores of `vector bytes` (32 with AVX, 16 with SSE2);
    ``(None, None)`` where the target has none (not x86-64) or no cache size is known.

    The threshold is the size of one core's L2 cache (what the host reports): a result larger
    than that leaves the core's own cache before anyone reads it. ``TENSORPLAY_STREAM_MIN_BYTES``
    overrides it (a number of bytes; ``off`` never streams). Part of the disk-cache key.

    >>> lo, width = streaming()
    >>> lo is None or (lo > 0 and width in (16, 32))
    True
    """
    if not _STREAM:
        from . import jit

        e = jit.engine()
        width = None
        if e.tm.triple.startswith(("x86_64", "amd64")):
            width = 32 if "+avx," in e.features + "," else 16
        lo = stream_min_bytes()
        _STREAM.append((lo, width) if lo is not None and width is not None else (None, None))
    return _STREAM[0]


def reset_streaming() -> None:
    """Forget the streaming settings (tests change TENSORPLAY_STREAM_MIN_BYTES)."""
    _STREAM.clear()


def nontemporal(instr: ir.Instruction) -> ir.Instruction:
    """Mark a store ``!nontemporal`` (a hint: the values stored are the same)."""
    m = instr.parent.parent.module
    instr.set_metadata("nontemporal", m.add_metadata([ir.Constant(I32, 1)]))
    return instr


def store_fence(b: ir.IRBuilder) -> None:
    """``sfence``: the kernel's non-temporal stores are ordered before anything after it."""
    m = b.module
    fn = m.globals.get("llvm.x86.sse.sfence") or ir.Function(m, ir.FunctionType(VOID, []), "llvm.x86.sse.sfence")
    b.call(fn, [])


def type_bytes(t: ir.Type) -> int:
    """Bytes of one element of memory type `t`."""
    return {I8: 1, I16: 2, I32: 4, I64: 8, F32: 4, F64: 8}[t]


def stream_copy(b: ir.IRBuilder, dst: ir.Value, src: ir.Value, count: ir.Value, t: ir.Type, width: int) -> None:
    """Copy `count` elements of memory type `t` from `src` (a scratch buffer, read through the
    cache) to `dst` with non-temporal stores: scalar ones (``movnti``; plain stores for elements of
    under 4 bytes) until `dst` is `width`-byte aligned, then `width`-byte vectors, then scalar
    ones for the tail. Bits are copied as integers. The caller ends the kernel with `store_fence`."""
    es = type_bytes(t)
    it = ir.IntType(8 * es)
    lanes = width // es
    vt = ir.VectorType(it, lanes)
    count = i64(count) if isinstance(count, int) else count
    addr = b.ptrtoint(dst, I64)
    head = b.lshr(b.and_(b.sub(i64(0), addr), i64(width - 1)), i64(es.bit_length() - 1))
    aligned = b.icmp_unsigned("==", b.and_(addr, i64(es - 1)), i64(0))
    head = b.select(aligned, head, count)  # an element-misaligned destination: every store scalar
    head = b.select(b.icmp_unsigned("<", head, count), head, count)

    def scalar(lo, hi, name):
        with for_range(b, hi, name, start=lo, unroll=False) as i:
            x = b.load(b.gep(src, [i], inbounds=True, source_etype=it), typ=it, align=es)
            st = b.store(x, b.gep(dst, [i], inbounds=True, source_etype=it), align=es)
            if es >= 4:
                nontemporal(st)

    scalar(i64(0), head, "nt.head")
    vectors = b.udiv(b.sub(count, head), i64(lanes))
    with for_range(b, vectors, "nt.vec", unroll=False) as j:
        i = b.add(head, b.mul(j, i64(lanes)))
        x = b.load(b.gep(src, [i], inbounds=True, source_etype=it), typ=vt, align=es)
        nontemporal(b.store(x, b.gep(dst, [i], inbounds=True, source_etype=it), align=width))
    scalar(b.add(head, b.mul(vectors, i64(lanes))), count, "nt.tail")

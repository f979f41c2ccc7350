"""Philox-4x32-10 random bits as an elementwise expression, bit-identical to
`ir/prims/random.py`.

Element j of a draw for one key uses the Philox block at counter
``key[1] + j`` under seed ``key[0]``. The 32x32->64 products are i64 multiplies
of zero-extended i32 words, which x86 vectorises (vpmuludq).

`random_uniform` is bit-exact in both dtypes (every step is exact).
`random_normal` is bit-exact too: the exact integer/bit reductions of the two
words are mirrored here instruction for instruction, and the float part is
`ir.prims.random.box_muller` itself, run on `_IROps`, which emits each
operation as one plain ``fadd``/``fsub``/``fmul``/``fdiv``/``llvm.sqrt``
without fast-math flags. Without the ``contract`` flag LLVM may not fuse a
multiply and an add into an FMA (the target machine keeps the default
``FPOpFusion::Standard``; llvmlite exposes no other setting), and without
``reassoc``/``arcp``/``afn`` it may only apply value-preserving rewrites, so
the kernel rounds exactly like numpy's float64 ufuncs.
`tests/codegen/test_random_bits.py` checks the bits and that the kernel's
assembly has no FMA instruction.
"""
from __future__ import annotations

from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.prims.random import PHILOX_M, PHILOX_W, SQRT_HALF_BITS, box_muller
from . import irutil as u
from .context import Index, KernelContext, strides


def philox_words(b: ir.IRBuilder, seed: ir.Value, counter: ir.Value) -> tuple[ir.Value, ir.Value]:
    """First two 32-bit words (i32) of Philox-4x32-10 for i64 `seed` and `counter`."""
    k0 = b.trunc(seed, u.I32)
    k1 = b.trunc(b.lshr(seed, u.i64(32)), u.I32)
    c0 = b.trunc(counter, u.I32)
    c1 = b.trunc(b.lshr(counter, u.i64(32)), u.I32)
    c2 = c3 = ir.Constant(u.I32, 0)
    m0, m1 = u.i64(PHILOX_M[0]), u.i64(PHILOX_M[1])
    w0, w1 = u.const(u.I32, PHILOX_W[0]), u.const(u.I32, PHILOX_W[1])
    for _ in range(10):
        p0 = b.mul(m0, b.zext(c0, u.I64))
        p1 = b.mul(m1, b.zext(c2, u.I64))
        hi0, lo0 = b.trunc(b.lshr(p0, u.i64(32)), u.I32), b.trunc(p0, u.I32)
        hi1, lo1 = b.trunc(b.lshr(p1, u.i64(32)), u.I32), b.trunc(p1, u.I32)
        c0, c1, c2, c3 = b.xor(b.xor(hi1, c1), k0), lo1, b.xor(b.xor(hi0, c3), k1), lo0
        k0 = b.add(k0, w0)
        k1 = b.add(k1, w1)
    return c0, c1


def _words(ctx: KernelContext, node, idx: Index) -> tuple[ir.Value, ir.Value]:
    b = ctx.b
    key = node.inputs[0]
    nk = key.ndim - 1  # leading key dimensions of the output
    draw_shape = node.out.shape[nk:]
    if nk == 0:
        j = idx.linear(b)
        kdims: list[ir.Value] = []
    else:
        dims = idx.dims(b)
        kdims = dims[:nk]
        j = u.i64(0)
        for d, s, n in zip(dims[nk:], strides(draw_shape), draw_shape):
            if n > 1:
                j = u.iadd(b, j, u.imul(b, d, s))
    seed = ctx.value(key, Index(key.shape, dims=kdims + [u.i64(0)]))
    base = ctx.value(key, Index(key.shape, dims=kdims + [u.i64(1)]))
    return philox_words(b, seed, b.add(base, j))


def _uniform(ctx: KernelContext, node, idx: Index) -> ir.Value:
    b = ctx.b
    w0, w1 = _words(ctx, node, idx)
    if node.out.dtype is dt.float32:
        return b.fmul(b.uitofp(b.lshr(w0, u.const(u.I32, 8)), u.F32), u.const(u.F32, 2.0 ** -24))
    hi = b.uitofp(b.lshr(w0, u.const(u.I32, 5)), u.F64)
    lo = b.uitofp(b.lshr(w1, u.const(u.I32, 6)), u.F64)
    return b.fmul(b.fadd(b.fmul(hi, u.const(u.F64, 2.0 ** 26)), lo), u.const(u.F64, 2.0 ** -53))


class _IROps:
    """`ir.prims.random.NumpyOps` as LLVM IR on double values: one flag-free instruction per
    operation (Python floats become exact double constants)."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    @staticmethod
    def _v(x) -> ir.Value:
        return x if isinstance(x, ir.Value) else ir.Constant(u.F64, float(x))

    def add(self, x, y):
        return self.b.fadd(self._v(x), self._v(y))

    def sub(self, x, y):
        return self.b.fsub(self._v(x), self._v(y))

    def mul(self, x, y):
        return self.b.fmul(self._v(x), self._v(y))

    def div(self, x, y):
        return self.b.fdiv(self._v(x), self._v(y))

    def sqrt(self, x):
        return u.intrinsic(self.b, "llvm.sqrt", [self._v(x)])

    def gt(self, x, y):
        return self.b.fcmp_ordered(">", self._v(x), self._v(y))

    def select(self, cond, x, y):
        return self.b.select(cond, self._v(x), self._v(y))


def _normal(ctx: KernelContext, node, idx: Index) -> ir.Value:
    b = ctx.b
    w0, w1 = _words(ctx, node, idx)
    # random.log_argument: u1 = (w0 + 1) 2^-32 = m 2^k, m in [sqrt(1/2), sqrt(2))
    ix = b.bitcast(b.sitofp(b.add(b.zext(w0, u.I64), u.i64(1)), u.F64), u.I64)
    tmp = b.sub(ix, u.i64(SQRT_HALF_BITS))
    m = b.bitcast(b.sub(ix, b.and_(tmp, u.const(u.I64, 0xFFF << 52))), u.F64)
    k = b.fsub(b.sitofp(b.lshr(tmp, u.i64(52)), u.F64), u.const(u.F64, 32.0))
    # random.cos_argument: cos(2 pi w1 2^-32) = +-sin(pi/2 x)
    q = b.lshr(w1, u.const(u.I32, 30))
    f = b.and_(w1, u.const(u.I32, 0x3FFFFFFF))
    a = b.select(b.trunc(q, u.I1), f, b.sub(u.const(u.I32, 1 << 30), f))
    x = b.fmul(b.sitofp(a, u.F64), u.const(u.F64, 2.0 ** -30))
    neg = b.trunc(b.xor(q, b.lshr(q, u.const(u.I32, 1))), u.I1)
    z = box_muller(_IROps(b), m, k, x, neg)
    return z if node.out.dtype is dt.float64 else b.fptrunc(z, u.F32)


EMITTERS = {"random_uniform": _uniform, "random_normal": _normal}

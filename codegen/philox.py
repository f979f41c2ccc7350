"""Philox-4x32-10 random bits as an elementwise expression, bit-identical to
`ir/prims/random.py`.

Element j of a draw for one key uses the Philox block at counter
``key[1] + j`` under seed ``key[0]``. The 32x32->64 products are i64 multiplies
of zero-extended i32 words, which x86 vectorises (vpmuludq).

`random_uniform` is bit-exact in both dtypes (every step is exact).
`random_normal` is Box-Muller in float64 exactly as the reference writes it,
but with the vectorised `vecmath.log` and `vecmath.cos` (float64, each within
1 ulp of the exact value, as numpy's are) instead of numpy's. So the float64
value may differ from the reference by a few ulp (at most 3 in the tests);
rounded to float32 it is identical except for rare 1-ulp double-rounding cases
(< 0.1% of draws).
"""
from __future__ import annotations

import math

from llvmlite import ir

from ir import dtypes as dt
from ir.prims.random import PHILOX_M, PHILOX_W
from . import irutil as u
from . import vecmath as vm
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


def _normal(ctx: KernelContext, node, idx: Index) -> ir.Value:
    b = ctx.b
    w0, w1 = _words(ctx, node, idx)
    u1 = b.fmul(b.fadd(b.uitofp(w0, u.F64), u.const(u.F64, 1.0)), u.const(u.F64, 2.0 ** -32))
    u2 = b.fmul(b.uitofp(w1, u.F64), u.const(u.F64, 2.0 ** -32))
    r = u.intrinsic(b, "llvm.sqrt", [b.fmul(u.const(u.F64, -2.0), vm.log(b, u1))])
    z = b.fmul(r, vm.cos(b, b.fmul(u.const(u.F64, 2.0 * math.pi), u2)))
    return z if node.out.dtype is dt.float64 else b.fptrunc(z, u.F32)


EMITTERS = {"random_uniform": _uniform, "random_normal": _normal}

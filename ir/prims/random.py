"""Counter-based random numbers (Philox-4x32-10).

A key is an int64 tensor of shape (*K, 2) holding (seed, counter base). Element
j of the draw for one key uses the Philox block at counter base + j, so the
same key gives the same bits in eager mode, in the interpreter and in
compiled code, and a batch of keys gives a batch of independent draws.

`random_normal` is Box-Muller computed from IEEE-754 basic operations only
(+, -, *, /, sqrt, exact exponent splits and integer-to-float conversions),
never libm: `box_muller` below is written once against a small operations
interface and run by this module on numpy float64 arrays and by
`codegen/philox.py` as LLVM IR (no fast-math flags, no FMA), so both perform
the same correctly rounded operations in the same order and agree bit for bit
on any IEEE machine. Accuracy against the exact value: log(u1) < 1 ulp
(fdlibm's log), cos(2 pi u2) < 1 ulp (see `sin_half_pi`).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..rules import random_draw
from ..types import TensorType
from ._util import check_dtypes, fail

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)
CHUNK = 8192  # elements drawn per pass: the temporaries of one pass stay in the L2 cache


def philox(seed: np.ndarray, counter: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First two 32-bit words of Philox-4x32-10 for 64-bit `seed` and `counter` (as uint64 arrays)."""
    seed = seed.astype(np.uint64)
    counter = counter.astype(np.uint64)
    k0, k1 = seed & MASK32, seed >> np.uint64(32)
    m0, m1 = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
    w0, w1 = np.uint64(PHILOX_W[0]), np.uint64(PHILOX_W[1])
    s32 = np.uint64(32)
    # round 1 on the block (lo, hi, 0, 0) of the counter: the second product is 0
    p0 = (counter & MASK32) * m0
    c0 = (counter >> s32) ^ k0
    c1 = np.zeros_like(p0)
    c2 = (p0 >> s32) ^ k1
    p0 &= MASK32
    c3 = p0
    for _ in range(9):
        k0 = (k0 + w0) & MASK32
        k1 = (k1 + w1) & MASK32
        p0 = c0 * m0
        p1 = c2 * m1
        c0 = p1 >> s32  # (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0), built in place
        c0 ^= c1
        c0 ^= k0
        c2 = p0 >> s32
        c2 ^= c3
        c2 ^= k1
        p1 &= MASK32
        p0 &= MASK32
        c1, c3 = p1, p0
    return c0, c1


def draw(key: np.ndarray, shape: tuple[int, ...], dtype: dt.DType, from_bits) -> np.ndarray:
    """`from_bits(w0, w1, dtype)` for every element of every key, `CHUNK` elements at a time."""
    n = math.prod(shape)
    keys = key.reshape(-1, 2).astype(np.uint64)  # int64 -> uint64 wraps, as the compiled i64 does
    total = keys.shape[0] * n
    out = np.empty(total, dtype.np)
    for lo in range(0, total, CHUNK):
        hi = min(lo + CHUNK, total)
        if keys.shape[0] == 1:
            seed = keys[:, 0]
            counter = keys[0, 1] + np.arange(lo, hi, dtype=np.uint64)
        else:
            row, j = np.divmod(np.arange(lo, hi, dtype=np.uint64), np.uint64(n))
            seed = keys[row, 0]
            counter = keys[row, 1] + j
        out[lo:hi] = from_bits(*philox(seed, counter), dtype)
    return out.reshape(key.shape[:-1] + tuple(shape))


def uniform_from_bits(w0, w1, dtype: dt.DType) -> np.ndarray:
    """Map Philox words to [0, 1): 24 random bits for float32, 53 for float64."""
    if dtype is dt.float32:
        return ((w0 >> np.uint64(8)).astype(np.float64) * 2.0 ** -24).astype(np.float32)
    hi = (w0 >> np.uint64(5)).astype(np.float64)
    lo = (w1 >> np.uint64(6)).astype(np.float64)
    return (hi * 2.0 ** 26 + lo) * 2.0 ** -53


# === random_normal: Box-Muller from basic IEEE operations =======================================
# z = sqrt(-2 log u1) * cos(2 pi u2) with u1 = (w0 + 1) 2^-32 in (0, 1], u2 = w1 2^-32 in [0, 1),
# in float64, rounded once to the result dtype.
#
# -log u1: u1 = m 2^k exactly, m in [sqrt(1/2), sqrt(2)) (musl's bit split), then fdlibm's e_log.c:
# s = f/(2+f) with f = m - 1, log(m) = log((1+s)/(1-s)) = f - hfsq + s (hfsq + R(s^2)), k ln2 in two parts.
LOG_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
          2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
          1.479819860511658591e-01)  # fdlibm Lg1..Lg7
LN2_HI = 6.93147180369123816490e-01  # 32 significant bits: k * LN2_HI is exact for |k| < 2^21
LN2_LO = 1.90821492927058770002e-10
SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # bits of float64 sqrt(1/2)
# cos(2 pi u2) = +-sin(pi/2 x), x in [0, 1] (exact quadrant reduction of the integer w1). For x <= 1/2,
# sin(pi/2 x) = x HALF_PI_HI + x (HALF_PI_LO + x^2 S(x^2)), where HALF_PI_HI + HALF_PI_LO = pi/2 and
# x * HALF_PI_HI is exact (22 bits times at most 30); for x > 1/2 it is cos(pi/2 v), v = 1 - x (exact),
# = 1 - H v^2 + v^4 C(v^2) with H = pi^2/8 = COS_H_HI + COS_H_LO, summed as in fdlibm's k_cos.c
# (w = 1 - COS_H_HI v^2 plus the rounding error of w; COS_H_LO enters the polynomial as its constant
# term, since rounding H alone would cost up to 0.3 ulp). S and C: interpolants at
# Chebyshev nodes on t = x^2 in [0, 1/4 + 1e-3], fitted in 60-digit arithmetic (mpmath) as in
# codegen/vecmath_fit.py; relative truncation error 1.4e-17 (S) and 2.5e-18 (C).
HALF_PI_HI = 1.5707964897155762
HALF_PI_LO = -1.629206795526437e-07
SIN_S = (-0.6459640975062462, 0.07969262624614377, -0.004681754134237102, 0.0001604411663956029,
         -3.5987018296366915e-06, 5.642026430862996e-08)
COS_H_HI = 1.2337005501361697  # pi^2 / 8 = COS_H_HI + COS_H_LO
COS_H_LO = 7.831619385924639e-17
COS_C = (0.25366950790104803, -0.020863480763350675, 0.0009192602747331638, -2.520204056619016e-05,
         4.710735867054155e-07, -6.337348543572053e-09)


class NumpyOps:
    """The operations `box_muller` needs, on float64 numpy arrays (operands may be Python floats).

    `codegen/philox.py` implements the same interface as LLVM IR; every float operation is a
    single correctly rounded IEEE operation (or an exact select/compare) on both sides."""

    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)
    mul = staticmethod(np.multiply)
    div = staticmethod(np.divide)
    sqrt = staticmethod(np.sqrt)
    gt = staticmethod(np.greater)  # -> bool mask
    select = staticmethod(np.where)  # select(mask, if_true, if_false)


def horner(o, t, coefs):
    """c0 + t (c1 + t (c2 + ...)) in exactly this order."""
    acc = coefs[-1]
    for c in reversed(coefs[:-1]):
        acc = o.add(o.mul(acc, t), c)
    return acc


def neg_log(o, m, k):
    """-log(m * 2^k) for m in [sqrt(1/2), sqrt(2)), integral float k; < 1 ulp; +0 for m = 1, k = 0."""
    f = o.sub(m, 1.0)
    s = o.div(f, o.add(f, 2.0))
    z = o.mul(s, s)
    w = o.mul(z, z)
    t1 = o.mul(w, horner(o, w, LOG_LG[1::2]))
    t2 = o.mul(z, horner(o, w, LOG_LG[0::2]))
    r = o.add(t2, t1)
    hfsq = o.mul(o.mul(f, 0.5), f)
    inner = o.sub(hfsq, o.add(o.mul(s, o.add(hfsq, r)), o.mul(k, LN2_LO)))
    # fdlibm: log = k*LN2_HI - (inner - f); negated exactly (round-to-nearest is symmetric)
    return o.sub(o.sub(inner, f), o.mul(k, LN2_HI))


def sin_half_pi(o, x):
    """sin(pi/2 x) for x in [0, 1] a multiple of 2^-30 (so x * HALF_PI_HI is exact); < 1 ulp."""
    t = o.mul(x, x)
    sin_part = o.add(o.mul(x, HALF_PI_HI), o.mul(x, o.add(o.mul(t, horner(o, t, SIN_S)), HALF_PI_LO)))
    v = o.sub(1.0, x)
    tv = o.mul(v, v)
    hz = o.mul(tv, COS_H_HI)
    w = o.sub(1.0, hz)
    cos_part = o.add(w, o.add(o.sub(o.sub(1.0, w), hz), o.mul(tv, horner(o, tv, (-COS_H_LO,) + COS_C))))
    return o.select(o.gt(x, 0.5), cos_part, sin_part)


def box_muller(o, m, k, x, neg):
    """sqrt(-2 log(m 2^k)) * (-1 if neg else 1) * sin(pi/2 x); never -0."""
    z = o.mul(o.sqrt(o.mul(neg_log(o, m, k), 2.0)), sin_half_pi(o, x))
    return o.select(neg, o.sub(0.0, z), z)


def log_argument(w0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """u1 = (w0 + 1) 2^-32 as m 2^k, m in [sqrt(1/2), sqrt(2)), k a float64 integer in [-32, 0] (exact)."""
    ix = (w0 + np.uint64(1)).astype(np.float64).view(np.uint64)
    tmp = ix - np.uint64(SQRT_HALF_BITS)
    m = (ix - (tmp & np.uint64(0xFFF << 52))).view(np.float64)
    k = (tmp >> np.uint64(52)).astype(np.float64) - 32.0
    return m, k


def cos_argument(w1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos(2 pi w1 2^-32) = (-1 if neg else 1) sin(pi/2 x), x in [0, 1] a multiple of 2^-30 (exact).

    Quadrant q = w1 >> 30, position f = w1 mod 2^30: cos is sin(pi/2 (1 - f 2^-30)) for q = 0,
    -sin(pi/2 f 2^-30) for q = 1, and the negatives of those for q = 2, 3."""
    q = w1 >> np.uint64(30)
    f = w1 & np.uint64(0x3FFFFFFF)
    a = np.where((q & np.uint64(1)).astype(bool), f, np.uint64(1 << 30) - f)
    x = a.astype(np.float64) * 2.0 ** -30
    neg = ((q ^ (q >> np.uint64(1))) & np.uint64(1)).astype(bool)
    return x, neg


def normal_from_bits(w0, w1, dtype: dt.DType) -> np.ndarray:
    """Box-Muller in float64 on u1 in (0, 1], u2 in [0, 1), rounded to `dtype` (see `box_muller`)."""
    return box_muller(NumpyOps, *log_argument(w0), *cos_argument(w1)).astype(dtype.np, copy=False)


def log_u1(w0: np.ndarray) -> np.ndarray:
    """log((w0 + 1) 2^-32) as random_normal computes it (float64; for tests)."""
    return 0.0 - neg_log(NumpyOps, *log_argument(w0))


def cos_2pi_u2(w1: np.ndarray) -> np.ndarray:
    """cos(2 pi w1 2^-32) as random_normal computes it (float64, never -0; for tests)."""
    x, neg = cos_argument(w1)
    c = sin_half_pi(NumpyOps, x)
    return np.where(neg, 0.0 - c, c)


def _random_type(name):
    def rule(key: TensorType, *, shape, dtype) -> TensorType:
        check_dtypes(name, key, (dt.int64,), "key")
        if key.ndim < 1 or key.shape[-1] != 2:
            fail(name, f"key must have shape (..., 2), got {key.shape}")
        if dtype not in dt.FLOATS:
            fail(name, f"dtype must be float32 or float64, got {dtype!r}", TypeError)
        return TensorType(key.shape[:-1] + tuple(shape), dtype)
    return rule


def random_primitive(name: str, from_bits, doc: str) -> Primitive:
    """Declare a random primitive drawing `from_bits(w0, w1, dtype)` per element (batched by
    `rules.random_draw`: a batched key is a batch of keys)."""
    def impl(key, *, shape, dtype):
        return draw(key, tuple(shape), dtype, from_bits)
    prim = register(Primitive(name, _random_type(name), impl, num_operands=1, differentiable=False, random=True,
                              family="random", roles=("index",), doc=doc))
    prim.def_batch(random_draw(prim))
    return prim


random_uniform = random_primitive("random_uniform", uniform_from_bits, "uniform [0, 1) draws from a Philox key")
random_normal = random_primitive("random_normal", normal_from_bits, "standard normal draws from a Philox key")


# === differentiation rules ======================================================================
# Random draws are `differentiable=False`: the JVP pass gives them zero tangents (the key is an
# integer input), so they need no rules; under reverse mode they are evaluated once, in the primal graph.

"""Vectorisable math: branch-free polynomial approximations emitted as LLVM IR.

Calls into libm keep the loop vectoriser from vectorising a loop; these
functions use only arithmetic, `llvm.fma`, rounding/min/max/copysign
intrinsics, bit casts and selects, so a fused loop becomes SIMD code. Each
function takes and returns a scalar `float` or `double` register value.

Error bounds (max error in ulp of the result against the correctly rounded
value, measured by `tests/codegen/test_vecmath.py` over wide ranges and edge
values; float32 inputs that are handled "via f64" are computed in double
precision and rounded once):

=========  ====================================  =======  =======
function   method                                float32  float64
=========  ====================================  =======  =======
exp        Cody-Waite ln2 split, polynomial,     1.5      1.5
           two-step 2^k scaling (subnormals)
expm1      same reduction, 2^k(expm1(r)+1)-1     2        2
log        m in [sqrt(1/2),sqrt(2)): f64 atanh   1        1
           series (fdlibm), f32 poly in m-1
log1p      log of u=1+x plus (x-(u-1))/u         1        1
sin, cos   k*pi/2 reduction in f64 (3-part FMA)  1.5      1
           then a float32 polynomial for f32
tan        sin/cos quotient                      1 (f64)  2.5
tanh       expm1(2|x|) / (expm1(2|x|)+2)         2.5      2.5
logistic   1/(1+exp(-|x|)), mirrored for x<0     2.5      2.5
erf        odd poly on |x|<1, piecewise erfc     1.5      1.5
           polys on [1, 6) picked by selects
pow        exp(y*log|x|); f64: table log in      1 (f64)  1.5
           double-double; C99 special cases
atan2      octant reduction, odd polynomial      1 (f64)  3
asinh      log1p(a + a^2/(1 + sqrt(1 + a^2)))    1 (f64)  2
acosh      log1p(t + sqrt(t(t+2))), t = x - 1;   1 (f64)  2.5
           log(2x - 1/(x + sqrt(x^2-1))) above 2
atanh      log1p(2a/(1 - a)) / 2 (fdlibm split)  1 (f64)  2
cbrt       bit-level guess, Newton steps         1 (f64)  1
hypot      f64: scaled by 2^k, sqrt(fma)         1 (f64)  1.5
=========  ====================================  =======  =======

The table is checked against the `@bound` declarations by
`tests/codegen/test_vecmath.py::test_docstring_table_matches_the_bounds`.

Domains: the IEEE special values (0, -0, inf, nan) give what C99/numpy give.
sin/cos/tan keep their bound over the whole float range. Below `CODY_WAITE_LIMIT`
(2^50) the argument is reduced by a 3-part pi/2 (Cody-Waite); at and above it by
the exact Payne-Hanek reduction of `trig_reduce`, which costs ~60 instructions
per element. A kernel does not pay for it unless it must: it first runs with
the fast reduction only, ORing "some |x| >= 2^50" into a flag, and re-runs with
the full one when the flag is set (`fast_trig`, used by `module`). A
kernel's outputs never alias its inputs, so the re-run overwrites the same
results, identical in every lane that did not need it.
"""
from __future__ import annotations

import contextvars
import functools
import math
from contextlib import contextmanager
from decimal import Context, Decimal, localcontext

import numpy as np
from llvmlite import ir

from . import _vecmath_coefficients as K
from . import irutil as u
from .trig_reduce import payne_hanek

_HIGH = Context(prec=90)  # constants are derived in 90-digit decimal arithmetic, in a local context
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459"
               "230781640628620899862803482534211706798214808651328230665")
_LN2 = Decimal(2).ln(_HIGH)


def _split(d: Decimal, parts: int, bits: int = 53) -> list[float]:
    """`d` as a sum of `parts` doubles; the first has only `bits` significant bits."""
    out = []
    rest = d
    for i in range(parts):
        x = float(rest)
        if i == 0 and bits < 53:
            m, e = math.frexp(x)
            x = math.ldexp(round(m * 2 ** bits), e - bits)
        out.append(x)
        rest -= Decimal(x)
    return out


def _f32(x: float) -> float:
    return float(np.float32(x))


with localcontext(_HIGH):
    _SPLITS = (_split(_LN2, 2, bits=42), _split(_LN2, 2, bits=16), _split(_PI / 2, 3), _split(_PI, 2),
               _split(_PI / 4, 2), float(2 / _PI), float(1 / _LN2), float(Decimal(2).sqrt() - 1),
               _split(2 / _PI.sqrt(), 2))
# k * LN2_F64_HI is exact for |k| < 2^11; PIO2 is pi/2 as three doubles
(LN2_F64_HI, LN2_F64_LO), _LN2_16, PIO2, PI, PIO4, TWO_OVER_PI, LOG2E, TAN_PI_8, TWO_OVER_SQRTPI = _SPLITS
TWO_OVER_SQRTPI_F32 = (_f32(TWO_OVER_SQRTPI[0]), _f32(TWO_OVER_SQRTPI[0] - _f32(TWO_OVER_SQRTPI[0])))
PIO2_HL = PIO2[:2]
LN2_F32_HI16, LN2_F32_LO16 = [_f32(v) for v in _LN2_16]  # k * HI16 is exact in float32 for |k| < 2^8
SQRT2 = math.sqrt(2.0)
_ROUND_MAGIC = 1.5 * 2.0 ** 52  # x + this is exact and x's integer is in the low mantissa bits, |x| < 2^51
ULP_BOUNDS: dict[str, tuple[float, float]] = {}  # name -> (float32, float64), filled by `bound`


FUNCTIONS: dict[str, object] = {}  # name -> emitter, filled by `bound`


def bound(f32: float, f64: float):
    """Decorator: state the error bound (ulp, float32 and float64) of the function it decorates.

    A function with a stated bound is the lowering of the float primitive of the same name
    (`codegen/lowerings/elementwise.py` registers every entry of `FUNCTIONS`, with `Lowering.ulp`
    set to the bound); `tests/codegen/test_vecmath.py` measures every bound, and checks the table
    in this module's docstring against them.
    """
    def deco(fn):
        fn.ulp = (f32, f64)
        ULP_BOUNDS[fn.__name__] = fn.ulp
        FUNCTIONS[fn.__name__] = fn
        return fn
    return deco


CODY_WAITE_LIMIT = 2.0 ** 50  # sin/cos/tan reduce |x| >= this with Payne-Hanek
CODY_WAITE_LIMIT_F32 = 2.0 ** 30  # float32 arguments: |k| < 2^31, so q comes from one i32 conversion
TRIG_LIMIT = math.inf  # sin/cos/tan keep their bound for every |x| < TRIG_LIMIT (read by the tests)

# How sin/cos/tan reduce huge arguments in the code being emitted: None = always exact (Payne-Hanek
# for the lanes that need it); an i1 stack slot = the fast reduction only, flagging huge lanes there
_FAST_TRIG_FLAG: contextvars.ContextVar = contextvars.ContextVar("tensorplay_fast_trig_flag", default=None)


@contextmanager
def fast_trig(flag_slot: ir.Value):
    """While emitting inside this block, sin/cos/tan use the Cody-Waite reduction only and OR into
    the i1 `flag_slot` whether some finite |x| >= CODY_WAITE_LIMIT was seen (its result is then
    wrong: the caller must re-run the code emitted outside this block)."""
    token = _FAST_TRIG_FLAG.set(flag_slot)
    try:
        yield
    finally:
        _FAST_TRIG_FLAG.reset(token)


# --- emission helpers ---------------------------------------------------------------------------
class _M:
    """Float arithmetic on one register type; Python floats are turned into constants."""

    def __init__(self, b: ir.IRBuilder, t: ir.Type):
        self.b = b
        self.t = t
        self.f64 = t == u.F64
        self.it = u.I64 if self.f64 else u.I32
        self.mant = 52 if self.f64 else 23
        self.bias = 1023 if self.f64 else 127

    def c(self, v) -> ir.Value:
        if isinstance(v, ir.Value):
            return v
        return ir.Constant(self.t, float(v) if self.f64 else _f32(v))

    def add(self, x, y):
        return self.b.fadd(self.c(x), self.c(y))

    def sub(self, x, y):
        return self.b.fsub(self.c(x), self.c(y))

    def mul(self, x, y):
        return self.b.fmul(self.c(x), self.c(y))

    def div(self, x, y):
        return self.b.fdiv(self.c(x), self.c(y))

    def neg(self, x):
        return self.b.fneg(x)

    def fma(self, x, y, z):
        return u.intrinsic(self.b, "llvm.fma", [self.c(x), self.c(y), self.c(z)])

    def call1(self, name, x):
        return u.intrinsic(self.b, name, [self.c(x)])

    def abs(self, x):
        return self.call1("llvm.fabs", x)

    def rint(self, x):
        return self.call1("llvm.roundeven", x)

    def minnum(self, x, y):
        return u.intrinsic(self.b, "llvm.minnum", [self.c(x), self.c(y)])

    def maxnum(self, x, y):
        return u.intrinsic(self.b, "llvm.maxnum", [self.c(x), self.c(y)])

    def copysign(self, mag, sign):
        return u.intrinsic(self.b, "llvm.copysign", [self.c(mag), self.c(sign)])

    def clamp(self, x, lo, hi):
        """min(max(x, lo), hi); a NaN becomes `lo`'s side, so later integer conversions stay defined."""
        return self.minnum(self.maxnum(x, lo), hi)

    def cmp(self, op, x, y):
        return self.b.fcmp_ordered(op, self.c(x), self.c(y))

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def sel(self, cond, x, y):
        return self.b.select(cond, self.c(x), self.c(y))

    def horner(self, x, coeffs):
        """c0 + x*(c1 + x*(c2 + ...)) with fused multiply-adds."""
        acc = self.c(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, c)
        return acc

    def to_int(self, x):
        """The integer `x` (|x| < 2^31: a clamped exponent or a table index) in an `it` register.

        float64 converts through i32: x86 without AVX-512DQ converts f64 -> i64 one lane at a time,
        f64 -> i32 a vector at a time."""
        if not self.f64:
            return self.b.fptosi(x, self.it)
        return self.b.sext(self.b.fptosi(x, u.I32), self.it)

    def pow2(self, k):
        """2.0**k for an integer register `k` in the normal exponent range."""
        bits = self.b.shl(self.b.add(k, ir.Constant(self.it, self.bias)), ir.Constant(self.it, self.mant))
        return self.b.bitcast(bits, self.t)

    def scale(self, x, k):
        """x * 2**k for |k| up to twice the exponent range, rounding once (two exact-ish steps)."""
        k1 = self.b.ashr(k, ir.Constant(self.it, 1))
        k2 = self.b.sub(k, k1)
        return self.mul(self.mul(x, self.pow2(k1)), self.pow2(k2))

    def two_sum(self, a, b):
        s = self.add(a, b)
        bb = self.sub(s, a)
        err = self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))
        return s, err

    def fast_two_sum(self, a, b):
        """(s, err) with s + err == a + b exactly, for |a| >= |b|."""
        s = self.add(a, b)
        return s, self.sub(b, self.sub(s, a))


def _m(b: ir.IRBuilder, x: ir.Value) -> _M:
    return _M(b, x.type)


def _widen(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fpext(x, u.F64) if x.type == u.F32 else x


def _narrow(b: ir.IRBuilder, x: ir.Value, t: ir.Type) -> ir.Value:
    return b.fptrunc(x, t) if t == u.F32 else x


def _exp_p(m: _M):
    return K.EXP_P_F64 if m.f64 else [_f32(c) for c in K.EXP_P_F32]


def _reduce_ln2(m: _M, x):
    """k, r with x = k*ln2 + r, |r| <= ln2/2 (x already clamped to a finite range)."""
    kf = m.rint(m.mul(x, LOG2E))
    hi, lo = (LN2_F64_HI, LN2_F64_LO) if m.f64 else (LN2_F32_HI16, LN2_F32_LO16)
    r = m.fma(m.neg(kf), hi, x)
    r = m.fma(m.neg(kf), lo, r)
    return kf, r


def _expm1_poly(m: _M, r):
    """expm1(r) for |r| <= ln2/2."""
    return m.fma(m.mul(r, r), m.horner(r, _exp_p(m)), r)


# --- exp, expm1 ---------------------------------------------------------------------------------
@bound(1.5, 1.5)
def exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e**x."""
    m = _m(b, x)
    lo, hi = (-746.0, 710.0) if m.f64 else (-104.0, 89.0)
    xc = m.clamp(x, lo, hi)
    kf, r = _reduce_ln2(m, xc)
    p = m.add(1.0, _expm1_poly(m, r))
    res = m.scale(p, m.to_int(kf))
    return m.sel(m.isnan(x), x, res)


@bound(2, 2)
def expm1(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e**x - 1, accurate near 0."""
    m = _m(b, x)
    lo, hi = (-40.0, 710.0) if m.f64 else (-20.0, 89.0)
    xc = m.clamp(x, lo, hi)
    kf, r = _reduce_ln2(m, xc)
    e = _expm1_poly(m, r)
    k = m.to_int(kf)
    top = ir.Constant(m.it, m.mant + 2)
    ka = b.select(b.icmp_signed("<", k, top), k, top)
    kb = b.sub(k, ka)
    sa = m.pow2(ka)
    res = m.mul(m.fma(e, sa, m.sub(sa, 1.0)), m.pow2(kb))
    res = m.sel(m.cmp("==", x, 0.0), x, res)  # keeps -0
    return m.sel(m.isnan(x), x, res)


# --- log, log1p ---------------------------------------------------------------------------------
_ATANH_SERIES = [2.0 / (2 * k + 1) for k in range(1, 12)]  # R(z) = sum 2 z^k / (2k+1)


def _log_parts(m: _M, x):
    """Exponent e (float) and mantissa m in [sqrt(1/2), sqrt(2)) with x = m * 2**e, for finite x > 0."""
    b = m.b
    tiny = 2.0 ** (-1022 if m.f64 else -126)
    sub = m.cmp("<", x, tiny)
    shift = m.mant + 2
    xs = m.sel(sub, m.mul(x, 2.0 ** shift), x)
    bits = b.bitcast(xs, m.it)
    mask = (1 << m.mant) - 1
    e = b.sub(b.lshr(bits, ir.Constant(m.it, m.mant)), ir.Constant(m.it, m.bias))
    e = b.sub(e, b.select(sub, ir.Constant(m.it, shift), ir.Constant(m.it, 0)))
    mb = b.or_(b.and_(bits, ir.Constant(m.it, mask)), ir.Constant(m.it, m.bias << m.mant))
    mant = b.bitcast(mb, m.t)
    big = m.cmp(">", mant, SQRT2)
    mant = m.sel(big, m.mul(mant, 0.5), mant)
    e = b.add(e, b.zext(big, m.it))
    return b.sitofp(e, m.t), mant


def _log_core(m: _M, x, c=None):
    """log(x) for finite x > 0, plus a small correction c (the rounding error of log1p's 1 + x).

    float64: fdlibm's atanh series in s = f/(2+f); float32: a division-free
    polynomial in f = m - 1 (cephes style), which vectorises better."""
    ef, mant = _log_parts(m, x)
    f = m.sub(mant, 1.0)
    hi, lo = (LN2_F64_HI, LN2_F64_LO) if m.f64 else (LN2_F32_HI16, LN2_F32_LO16)
    tail = m.mul(ef, lo)
    if c is not None:
        tail = m.add(tail, c)
    if not m.f64:
        z = m.mul(f, f)
        y = m.fma(m.mul(f, z), m.horner(f, [_f32(v) for v in K.LOG_L_F32]), m.mul(-0.5, z))
        return m.fma(ef, hi, m.add(f, m.add(y, tail)))
    s = m.div(f, m.add(2.0, f))
    z = m.mul(s, s)
    R = m.mul(z, m.horner(z, _ATANH_SERIES[:10]))
    hfsq = m.mul(m.mul(0.5, f), f)
    inner = m.sub(hfsq, m.fma(s, m.add(hfsq, R), tail))
    return m.sub(m.mul(ef, hi), m.sub(inner, f))


def _log_specials(m: _M, x, res):
    inf = float("inf")
    res = m.sel(m.cmp("==", x, inf), inf, res)
    res = m.sel(m.cmp("<", x, 0.0), float("nan"), res)
    return m.sel(m.isnan(x), x, res)


@bound(1, 1)
def log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural logarithm (log(0) = -inf, log(x<0) = nan)."""
    m = _m(b, x)
    safe = m.sel(m.cmp(">", x, 0.0), x, 1.0)
    safe = m.minnum(safe, 1.7976931348623157e308 if m.f64 else 3.4028234663852886e38)
    res = _log_core(m, safe)
    res = m.sel(m.cmp("==", x, 0.0), float("-inf"), res)
    return _log_specials(m, x, res)


@bound(1, 1)
def log1p(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """log(1 + x), accurate near 0."""
    m = _m(b, x)
    fmax = 1.7976931348623157e308 if m.f64 else 3.4028234663852886e38
    xs = m.sel(m.cmp(">", x, -1.0), m.minnum(x, fmax), 0.0)
    w = m.add(1.0, xs)
    c = m.div(m.sub(xs, m.sub(w, 1.0)), w)  # the rounding error of 1 + x, relative to w
    res = _log_core(m, w, c)
    res = m.sel(m.cmp("==", x, 0.0), x, res)  # keeps -0
    res = m.sel(m.cmp("==", x, -1.0), float("-inf"), res)
    res = m.sel(m.cmp("==", x, float("inf")), float("inf"), res)
    res = m.sel(m.cmp("<", x, -1.0), float("nan"), res)
    return m.sel(m.isnan(x), x, res)


# --- tanh, logistic -----------------------------------------------------------------------------
@bound(2.5, 2.5)
def tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Hyperbolic tangent via expm1(2|x|) / (expm1(2|x|) + 2)."""
    m = _m(b, x)
    a = m.minnum(m.abs(x), 20.0 if m.f64 else 10.0)  # a NaN becomes 10 here; the last select restores it
    # expm1(2a) inlined for 2a in [0, 40]: no clamp, no 2^k split (k <= 58 stays in range), no
    # zero/NaN selects; bit-identical to `expm1` there (2^k - 1 rounds to 2^k exactly when expm1's
    # split would round 2^top - 1 to 2^top). expm1(+0) = 2^0 * 0 + 0 = +0, and copysign keeps -0.
    kf, r = _reduce_ln2(m, m.add(a, a))
    sa = m.pow2(m.to_int(kf))
    e = m.fma(_expm1_poly(m, r), sa, m.sub(sa, 1.0))
    t = m.div(e, m.add(e, 2.0))
    res = m.copysign(t, x)
    return m.sel(m.isnan(x), x, res)


@bound(2.5, 2.5)
def logistic(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """1 / (1 + e**-x), computed from e**-|x| so both tails keep their relative accuracy."""
    m = _m(b, x)
    e = exp(b, m.neg(m.abs(x)))
    r = m.div(1.0, m.add(1.0, e))
    return m.sel(m.cmp("<", x, 0.0), m.mul(e, r), r)


# --- sin, cos, tan ------------------------------------------------------------------------------
def _trig_reduce(m: _M, x, precise: bool):
    """Quadrant q (i32, 0..3) and r (+ tail r_lo) with x = q*pi/2 + r (mod 2pi), |r| <~ pi/4.

    `x` is double and finite. k*P1 is exact in the FMA and x - k*P1 is exact for
    |k| < 2^52; the tail term is carried when `precise` (float64 results).

    Not `precise` (float32 arguments), |x| < CODY_WAITE_LIMIT_F32: q is k's low word (one
    f64 -> i32 conversion, vectorised on AVX2 and AVX-512 alike), and two parts of pi/2 suffice:
    a = x - k*P1 is exact (x and k*P1 are multiples of 2^-52 below 2), and dropping k*P3
    (|P3| < 2^-107) errs by < 2^-76 absolute, far below 2^-53 of the smallest |r| a float32 below
    2^30 can leave."""
    b = m.b
    kf = m.rint(m.mul(x, TWO_OVER_PI))
    nk = m.neg(kf)
    a = m.fma(nk, PIO2[0], x)
    if not precise:
        r = m.fma(nk, PIO2[1], a)
        q = b.and_(b.fptosi(kf, u.I32), ir.Constant(u.I32, 3))
        return q, r, None
    if precise:
        p_hi = m.mul(kf, PIO2[1])
        p_lo = m.fma(kf, PIO2[1], m.neg(p_hi))
        r, err = m.two_sum(a, m.neg(p_hi))
        r_lo = m.fma(nk, PIO2[2], m.sub(err, p_lo))
        r, r_lo = m.fast_two_sum(r, r_lo)
    else:
        r = m.fma(nk, PIO2[2], m.fma(nk, PIO2[1], a))
        r_lo = None
    # Only k mod 4 matters, and |k| < 2^51 here: adding 1.5 * 2^52 puts k + 2^51 into the low
    # mantissa bits exactly, whose low two bits are k mod 4 (two's complement). Unlike an f64 -> i64
    # conversion, which x86 without AVX-512DQ does one lane at a time, this stays in vector registers.
    # q is an i32 (the low word), as wide as a float32 lane: its masks select float32 results directly.
    shifted = b.trunc(b.bitcast(m.add(kf, _ROUND_MAGIC), u.I64), u.I32)
    q = b.and_(shifted, ir.Constant(u.I32, 3))
    return q, r, r_lo


def _sin_cos_poly(m: _M, r, r_lo, S, C):
    """sin and cos of r (+ a tail r_lo, or None), |r| <~ pi/4, fdlibm-style kernels."""
    z = m.mul(r, r)
    v = m.mul(z, r)
    hz = m.mul(0.5, z)
    w = m.sub(1.0, hz)
    if r_lo is None:
        s = m.fma(v, m.horner(z, S), r)
        c = m.add(w, m.fma(m.mul(z, z), m.horner(z, C), m.sub(m.sub(1.0, w), hz)))
        return s, c
    s = m.add(r, m.fma(v, m.horner(z, S), m.mul(r_lo, m.sub(1.0, hz))))
    c = m.add(w, m.add(m.sub(m.sub(1.0, w), hz), m.sub(m.mul(m.mul(z, z), m.horner(z, C)), m.mul(r, r_lo))))
    return s, c


def _trig(b: ir.IRBuilder, x: ir.Value, which: str) -> ir.Value:
    """sin/cos/tan. The reduction by pi/2 always runs in double precision. float64 carries
    the reduced argument as a double-double; float32 sin/cos round it to a float pair
    (r_hi, r_lo) and evaluate float32 polynomials (16 lanes per 512-bit vector);
    float32 tan stays in double and is rounded once."""
    t = x.type
    m64 = _M(b, u.F64)
    mx = _m(b, x)
    # the range checks run in x's own type (the limits and inf are exact in float32): for float32 they
    # are one 8/16-lane compare each, and the masks need no narrowing from 64-bit lanes
    ax = mx.abs(x)
    small = mx.cmp("<", ax, CODY_WAITE_LIMIT if t == u.F64 else CODY_WAITE_LIMIT_F32)
    huge = b.and_(b.not_(small), mx.cmp("<", ax, math.inf))  # finite, needs Payne-Hanek
    xs = _widen(b, mx.sel(small, x, 0.0))
    precise = t == u.F64
    q, r, r_lo = _trig_reduce(m64, xs, precise)
    flag = _FAST_TRIG_FLAG.get()
    if flag is not None:
        b.store(b.or_(b.load(flag, typ=u.I1), huge), flag)
    else:
        q_ph, r_ph, r_lo_ph = payne_hanek(b, m64.sel(huge, _widen(b, x), CODY_WAITE_LIMIT))
        q = b.select(huge, b.trunc(q_ph, u.I32), q)
        r_lo = b.select(huge, r_lo_ph, r_lo) if precise else None
        r = b.select(huge, r_ph if precise else m64.add(r_ph, r_lo_ph), r)
    if t == u.F64:
        m, S, C = m64, K.SIN_S_F64, K.COS_C_F64
    elif which == "tan":
        m, S, C = m64, K.SIN_S_F32, K.COS_C_F32
    else:
        m = _M(b, u.F32)
        r = b.fptrunc(r, u.F32)
        S, C = [_f32(c) for c in K.SIN_S_F32], [_f32(c) for c in K.COS_C_F32]
    s, c = _sin_cos_poly(m, r, r_lo, S, C)
    odd = b.trunc(q, u.I1)
    hi_half = b.icmp_unsigned(">=", q, ir.Constant(u.I32, 2))
    if which == "tan":
        res = m.sel(odd, m.neg(m.div(c, s)), m.div(s, c))
    elif which == "sin":
        mag = m.sel(odd, c, s)
        res = m.sel(hi_half, m.neg(mag), mag)
    else:
        mag = m.sel(odd, s, c)
        flip = b.xor(hi_half, odd)  # cos: +c, -s, -c, +s for q = 0, 1, 2, 3
        res = m.sel(flip, m.neg(mag), mag)
    out = _narrow(b, res, t) if m.t != t else res
    mo = _m(b, x)
    out = mo.sel(mo.cmp("<", mo.abs(x), math.inf), out, float("nan"))  # sin/cos/tan(+-inf) = nan
    if which != "cos":
        out = mo.sel(mo.cmp("==", x, 0.0), x, out)  # keeps -0
    return mo.sel(mo.isnan(x), x, out)


@bound(1.5, 1)
def sin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Sine."""
    return _trig(b, x, "sin")


@bound(1.5, 1)
def cos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Cosine."""
    return _trig(b, x, "cos")


@bound(1, 2.5)
def tan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Tangent."""
    return _trig(b, x, "tan")


# --- erf ----------------------------------------------------------------------------------------
@bound(1.5, 1.5)
def erf(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Error function: odd polynomial below 1, 1 - erfc(|x|) from piecewise polynomials above
    (in the input's own precision: float32 runs 16 lanes per 512-bit vector)."""
    m = _m(b, x)
    cast = (lambda v: v) if m.f64 else _f32
    a = m.abs(x)
    # small: a*c0 + a*z*Q(z), with c0 = 2/sqrt(pi) split in two so its rounding does not show
    z = m.mul(a, a)
    tail = [cast(c) for c in (K.ERF_SMALL_F64 if m.f64 else K.ERF_SMALL_F32)[1:]]
    c0_hi, c0_lo = TWO_OVER_SQRTPI if m.f64 else TWO_OVER_SQRTPI_F32
    small = m.fma(a, c0_hi, m.fma(m.mul(a, z), m.horner(z, tail), m.mul(a, c0_lo)))
    pieces = K.ERFC_PIECES_F64 if m.f64 else K.ERFC_PIECES_F32
    # pick the piece's coefficients per lane with selects (vector blends), then one Horner
    center = m.c(pieces[0][2])
    coeffs = [m.c(cast(c)) for c in pieces[0][3]]
    for lo, _hi, ctr, cs in pieces[1:]:
        ge = m.cmp(">=", a, lo)
        center = m.sel(ge, ctr, center)
        coeffs = [m.sel(ge, cast(c), old) for c, old in zip(cs, coeffs)]
    erfc = m.horner(m.sub(a, center), coeffs)
    res = m.sel(m.cmp("<", a, 1.0), small, m.sub(1.0, erfc))
    res = m.sel(m.cmp(">=", a, pieces[-1][1]), 1.0, res)
    res = m.copysign(res, x)
    return m.sel(m.isnan(x), x, res)


# --- atan2 --------------------------------------------------------------------------------------
@bound(1, 3)
def atan2(b: ir.IRBuilder, y: ir.Value, x: ir.Value) -> ir.Value:
    """atan2(y, x) in (-pi, pi], with the C99 special cases (signed zeros, infinities)."""
    t = x.type
    precise = t == u.F64
    m = _M(b, u.F64)
    yd, xd = _widen(b, y), _widen(b, x)
    ay, ax = m.abs(yd), m.abs(xd)
    swap = m.cmp(">", ay, ax)
    num = m.sel(swap, ax, ay)
    den = m.sel(swap, ay, ax)
    q = m.div(num, den)
    q = m.sel(m.cmp("==", den, 0.0), 0.0, q)
    q = m.sel(m.cmp("==", num, float("inf")), 1.0, q)
    big = m.cmp(">", q, TAN_PI_8)
    v = m.sel(big, m.div(m.sub(q, 1.0), m.add(q, 1.0)), q)
    z = m.mul(v, v)
    at = m.fma(m.mul(z, v), m.horner(z, K.ATAN_A_F64 if precise else K.ATAN_A_F32), v)
    a = m.sel(big, m.add(PIO4[0], m.add(at, PIO4[1])), at)
    a = m.sel(swap, m.add(m.sub(PIO2_HL[0], a), PIO2_HL[1]), a)
    neg_x = b.icmp_signed("<", b.bitcast(xd, u.I64), ir.Constant(u.I64, 0))  # sign bit, so -0 counts
    a = m.sel(neg_x, m.add(m.sub(PI[0], a), PI[1]), a)
    res = m.copysign(a, yd)
    res = m.sel(b.or_(m.isnan(xd), m.isnan(yd)), float("nan"), res)
    return _narrow(b, res, t)


# --- pow ----------------------------------------------------------------------------------------
_LOG_TABLE_BITS = 7


@functools.lru_cache(maxsize=None)
def _log_table():
    """(1/c rounded to 8 bits, -log(that) as two doubles) for 2^7 subintervals of [sqrt(1/2), sqrt(2)).
    Made on pow's first lowering: its 128 90-digit logarithms were 8-9 ms of every cold compile's
    import of this module."""
    n = 1 << _LOG_TABLE_BITS
    lo, hi = math.sqrt(0.5), math.sqrt(2.0)
    invc, logc_hi, logc_lo = [], [], []
    for i in range(n):
        c = lo + (hi - lo) * (i + 0.5) / n
        m, e = math.frexp(1.0 / c)
        inv = math.ldexp(round(m * 256), e - 8)  # 8 significant bits: m*inv - 1 is exact in an FMA
        with localcontext(_HIGH):
            d = -Decimal(inv).ln()
            h = float(d)
            lo_part = float(d - Decimal(h))
        invc.append(inv)
        logc_hi.append(h)
        logc_lo.append(lo_part)
    return lo, (hi - lo) / n, invc, logc_hi, logc_lo



def _table_lookup(b: ir.IRBuilder, name: str, values: list[float], index: ir.Value) -> ir.Value:
    module = b.module
    g = module.globals.get(name)
    if g is None:
        arr_t = ir.ArrayType(u.F64, len(values))
        g = ir.GlobalVariable(module, arr_t, name)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(arr_t, [ir.Constant(u.F64, v) for v in values])
    p = b.gep(g, [ir.Constant(u.I64, 0), index], inbounds=True, source_etype=g.value_type)
    return b.load(p, typ=u.F64)


def _log_dd(m: _M, x):
    """log(x) as a double-double (hi, lo), ~2^-66 relative, for finite x > 0 (float64)."""
    b = m.b
    ef, mant = _log_parts(m, x)
    lo_edge, width, invc, logc_hi, logc_lo = _log_table()
    i = m.to_int(m.mul(m.sub(mant, lo_edge), 1.0 / width))
    i = u.iclamp(b, i, 0, len(invc) - 1)
    inv = _table_lookup(b, "tp_log_invc", invc, i)
    lc_hi = _table_lookup(b, "tp_log_logc_hi", logc_hi, i)
    lc_lo = _table_lookup(b, "tp_log_logc_lo", logc_lo, i)
    # r + r_lo = mant * inv - 1 exactly (two-product; p_hi - 1 is exact as p_hi is near 1)
    p_hi = m.mul(mant, inv)
    r_lo = m.fma(mant, inv, m.neg(p_hi))
    r = m.sub(p_hi, 1.0)
    # log1p(r) = r - r^2/2 + r^3 * P(r); r^2/2 exactly as a double-double
    h = m.mul(-0.5, r)
    r2_hi = m.mul(h, r)
    r2_lo = m.fma(h, r, m.neg(r2_hi))
    P = [(-1.0) ** k / (k + 3) for k in range(9)]  # 1/3 - r/4 + r^2/5 - ...
    r3 = m.mul(m.mul(r, r), m.mul(r, m.horner(r, P)))
    # sum: ef*ln2 + logc + r + r2 + r3 + r_lo/(1+r), largest terms first
    hi1, lo1 = m.two_sum(m.mul(ef, LN2_F64_HI), lc_hi)
    hi2, lo2 = m.two_sum(hi1, r)
    hi3, lo3 = m.two_sum(hi2, r2_hi)
    small = m.add(m.add(r2_lo, r3), m.add(lc_lo, m.mul(ef, LN2_F64_LO)))
    lo = m.add(m.add(m.add(lo1, lo2), lo3), m.add(m.div(r_lo, p_hi), small))  # log1p(r+r_lo) - log1p(r)
    return m.fast_two_sum(hi3, lo)


def _exp_dd(m: _M, hi, lo):
    """exp(hi + lo) for a double-double exponent (float64)."""
    xc = m.clamp(hi, -746.0, 710.0)
    kf, r = _reduce_ln2(m, xc)
    r = m.add(r, m.sel(m.cmp("==", hi, xc), lo, 0.0))  # drop the tail once hi was clamped
    p = m.add(1.0, _expm1_poly(m, r))
    return m.scale(p, m.to_int(kf))


@bound(1, 1.5)
def pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x**y with C99 semantics (pow(x, 0) = 1, pow(1, y) = 1, negative x needs an integer y, ...)."""
    t = x.type
    m = _M(b, u.F64)
    xd, yd = _widen(b, x), _widen(b, y)
    ax = m.abs(xd)
    safe = m.sel(b.and_(m.cmp(">", ax, 0.0), m.cmp("<", ax, float("inf"))), ax, 1.0)
    if t == u.F64:
        l_hi, l_lo = _log_dd(m, safe)
        p_hi = m.mul(yd, l_hi)
        p_lo = m.fma(yd, l_lo, m.fma(yd, l_hi, m.neg(p_hi)))
        p_lo = m.sel(m.cmp("<", m.abs(p_hi), float("inf")), p_lo, 0.0)
        mag = _exp_dd(m, p_hi, p_lo)
    else:
        mag = exp(b, m.mul(yd, _log_core(m, safe)))
    # |x| = 0 or inf: the magnitude is 0 or inf depending on the sign of y (and of log|x|)
    inf = float("inf")
    zero_x = m.cmp("==", ax, 0.0)
    inf_x = m.cmp("==", ax, inf)
    ypos = m.cmp(">", yd, 0.0)
    mag = m.sel(zero_x, m.sel(ypos, 0.0, inf), mag)
    mag = m.sel(inf_x, m.sel(ypos, inf, 0.0), mag)
    # |y| = inf: 0, 1 or inf depending on |x| vs 1
    inf_y = m.cmp("==", m.abs(yd), inf)
    big_x = m.cmp(">", ax, 1.0)
    mag = m.sel(inf_y, m.sel(b.xor(big_x, ypos), 0.0, inf), mag)
    yint = m.cmp("==", m.rint(yd), yd)
    hy = m.mul(0.5, yd)
    yodd = b.and_(yint, m.cmp("!=", m.rint(hy), hy))
    neg_x = b.icmp_signed("<", b.bitcast(xd, u.I64), ir.Constant(u.I64, 0))
    res = m.sel(b.and_(neg_x, yodd), m.neg(mag), mag)
    bad = b.and_(m.cmp("<", xd, 0.0), b.and_(b.not_(yint), m.cmp("<", ax, inf)))
    res = m.sel(bad, float("nan"), res)
    res = m.sel(b.or_(m.isnan(xd), m.isnan(yd)), float("nan"), res)
    res = m.sel(b.and_(m.cmp("==", ax, 1.0), inf_y), 1.0, res)
    res = m.sel(m.cmp("==", yd, 0.0), 1.0, res)
    res = m.sel(m.cmp("==", xd, 1.0), 1.0, res)
    return _narrow(b, res, t)


# --- inverse hyperbolic functions (fdlibm's formulas, in double for float32) ---------------------------
_BIG = 2.0 ** 28  # beyond this, sqrt(x^2 + 1) == x in double: asinh/acosh are log(2x)


def _via_f64(b: ir.IRBuilder, x: ir.Value, body) -> ir.Value:
    """body(m, x) in double precision, rounded once to `x`'s type (float32 results are correctly
    rounded up to the double result's own error)."""
    return _narrow(b, body(_M(b, u.F64), _widen(b, x)), x.type)


def _log_2x(m: _M, a):
    return m.add(log(m.b, a), float(_LN2))


@bound(1, 2)
def asinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Inverse hyperbolic sine: log1p(a + a²/(1 + sqrt(1 + a²))) on a = |x|, sign restored."""
    def body(m: _M, x):
        a = m.abs(x)
        small = m.minnum(a, _BIG)
        sq = m.mul(small, small)
        mid = log1p(m.b, m.add(small, m.div(sq, m.add(1.0, m.call1("llvm.sqrt", m.add(1.0, sq))))))
        res = m.sel(m.cmp(">", a, _BIG), _log_2x(m, a), mid)
        res = m.sel(m.isnan(x), x, res)
        return m.copysign(res, x)  # keeps -0
    return _via_f64(b, x, body)


@bound(1, 2.5)
def acosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Inverse hyperbolic cosine (nan for x < 1): log1p(t + sqrt(t(t + 2))) with t = x - 1 up to
    x = 2, log(2x - 1/(x + sqrt(x² - 1))) beyond, log(2x) past 2^28."""
    def body(m: _M, x):
        t = m.sub(x, 1.0)
        near = log1p(m.b, m.add(t, m.call1("llvm.sqrt", m.mul(t, m.add(t, 2.0)))))
        mid_x = m.clamp(x, 2.0, _BIG)
        root = m.call1("llvm.sqrt", m.fma(mid_x, mid_x, -1.0))
        mid = log(m.b, m.sub(m.mul(2.0, mid_x), m.div(1.0, m.add(mid_x, root))))
        res = m.sel(m.cmp(">", x, 2.0), mid, near)
        res = m.sel(m.cmp(">", x, _BIG), _log_2x(m, x), res)
        return m.sel(m.cmp("<", x, 1.0), float("nan"), m.sel(m.isnan(x), x, res))
    return _via_f64(b, x, body)


@bound(1, 2)
def atanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Inverse hyperbolic tangent: log1p(2a + 2a²/(1 - a)) / 2 for a = |x| < 1/2, log1p(2a/(1 - a)) / 2
    above; ±inf at ±1, nan beyond."""
    def body(m: _M, x):
        a = m.abs(x)
        one_minus = m.sub(1.0, a)
        two_a = m.add(a, a)
        low = log1p(m.b, m.add(two_a, m.div(m.mul(two_a, a), one_minus)))
        high = log1p(m.b, m.div(two_a, one_minus))
        res = m.mul(0.5, m.sel(m.cmp("<", a, 0.5), low, high))
        res = m.sel(m.cmp("==", a, 1.0), float("inf"), res)
        res = m.sel(m.cmp(">", a, 1.0), float("nan"), res)
        res = m.sel(m.isnan(x), x, res)
        return m.copysign(res, x)
    return _via_f64(b, x, body)


# --- roots --------------------------------------------------------------------------------------------
_CBRT_MAGIC = 0x2A9F7893782DA1CE  # bits(a) / 3 + this: cbrt(a) within 3.3% for normal doubles
_TINY = 2.0 ** -1000  # below this (subnormals), scale by 2^54 = (2^18)^3 before the bit estimate


@bound(1, 1)
def cbrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Real cube root: a bit-level first guess, then Newton steps y -= (y - a/y²)/3 in double
    (three for float32, four for float64); 0, ±inf and nan are returned as they are."""
    steps = 4 if x.type == u.F64 else 3

    def body(m: _M, x):
        a = m.abs(x)
        tiny = m.cmp("<", a, _TINY)
        scaled = m.sel(tiny, m.mul(a, 2.0 ** 54), a)
        bits = m.b.bitcast(scaled, u.I64)
        y = m.b.bitcast(m.b.add(m.b.udiv(bits, ir.Constant(u.I64, 3)), ir.Constant(u.I64, _CBRT_MAGIC)), u.F64)
        for _ in range(steps):
            y = m.sub(y, m.mul(m.sub(y, m.div(scaled, m.mul(y, y))), 1.0 / 3.0))
        y = m.sel(tiny, m.mul(y, 2.0 ** -18), y)
        special = m.b.or_(m.b.fcmp_unordered("uno", x, x),
                          m.b.or_(m.cmp("==", a, 0.0), m.cmp("==", a, float("inf"))))
        return m.sel(special, x, m.copysign(y, x))
    return _via_f64(b, x, body)


@bound(1, 1.5)
def hypot(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """sqrt(x² + y²) without spurious overflow or underflow: float32 in double; float64 scaled by a
    power of two into a safe range, then sqrt(fma(a, a, b·b)). inf wins over nan (C99)."""
    if x.type == u.F32:
        m64 = _M(b, u.F64)
        wx, wy = _widen(b, x), _widen(b, y)
        res = _narrow(b, m64.call1("llvm.sqrt", m64.fma(wx, wx, m64.mul(wy, wy))), x.type)
        m = _m(b, x)
        a, c = m.abs(x), m.abs(y)
    else:
        m = _m(b, x)
        a, c = m.abs(x), m.abs(y)
        big = m.maxnum(a, c)
        scale = m.sel(m.cmp(">", big, 2.0 ** 500), 2.0 ** -600,
                      m.sel(m.cmp("<", big, 2.0 ** -500), 2.0 ** 600, 1.0))
        sa, sc = m.mul(a, scale), m.mul(c, scale)
        res = m.div(m.call1("llvm.sqrt", m.fma(sa, sa, m.mul(sc, sc))), scale)
    res = m.sel(m.b.fcmp_unordered("uno", a, c), float("nan"), res)
    return m.sel(m.b.or_(m.cmp("==", a, float("inf")), m.cmp("==", c, float("inf"))), float("inf"), res)

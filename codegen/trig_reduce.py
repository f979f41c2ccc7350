"""Payne-Hanek reduction by pi/2 for any finite double, in branch-free integer arithmetic.

`x = q*pi/2 + r` with `|r| <= pi/4`: for `|x| = M * 2^e` (M the 53-bit integer mantissa), only
the bits of 2/pi that multiply M into something not a multiple of 4 matter, a window of
`WINDOW_BITS` bits starting at bit `e - 1` of 2/pi. The 53 x 192-bit product is formed exactly
in 32-bit limbs (64-bit lane multiplies, vectorisable), its top two bits below the multiples
of 4 are the quadrant and the rest the fraction f in [0, 1), exact to 2^-190, so even the
doubles closest to a multiple of pi/2 (r ~ 2^-61) keep full relative precision. f is turned
into a double-double and multiplied by pi/2.

The window is read from `TWO_OVER_PI_WORDS`, the bits of 2/pi in 32-bit words (one gather per
limb). The exactness argument: truncating 2/pi after the window changes M*2^e*(2/pi) by less
than M*2^(2-WINDOW_BITS) < 2^-137; everything before the final double-double is integer math.

    >>> words = TWO_OVER_PI_WORDS
    >>> (words[1] << 32 | words[2]) / 2.0 ** 64  # 2/pi = 0.6366...; word 0 is padding
    0.6366197723675814
"""
from __future__ import annotations

from llvmlite import ir

from . import irutil as u

WINDOW_BITS = 192  # six 32-bit limbs
_PAD = 32  # bit t of the table is bit j = t - _PAD of 2/pi (bits j <= 0 are 0: 2/pi < 1)
_MAX_E = 2047 - 1075  # largest exponent of a finite double's integer mantissa


def _two_over_pi_bits(n: int) -> int:
    """floor(2/pi * 2^n), from pi by Machin's formula in integer arithmetic (16 guard bits)."""
    g = n + 64

    def arctan_inv(k: int) -> int:  # atan(1/k) * 2^g
        total, term, i, k2 = 0, (1 << g) // k, 1, k * k
        while term:
            total += term // i if (i // 2) % 2 == 0 else -(term // i)
            term //= k2
            i += 2
        return total

    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)  # pi * 2^g
    return (1 << (n + g + 1)) // pi


def _words() -> tuple[int, ...]:
    n_bits = _PAD + _MAX_E - 1 + WINDOW_BITS + 64  # every window, plus the word after it
    n_words = (n_bits + 31) // 32 + 1
    frac_bits = n_words * 32 - _PAD
    value = _two_over_pi_bits(frac_bits)  # bit j of 2/pi is bit frac_bits - j of `value`
    return tuple((value >> (32 * (n_words - 1 - i))) & 0xFFFFFFFF for i in range(n_words))


TWO_OVER_PI_WORDS = _words()
# pi/2 as a double-double
PIO2_HI = 1.5707963267948966
PIO2_LO = 6.123233995736766e-17


def _table(b: ir.IRBuilder) -> ir.GlobalVariable:
    name = "tp_two_over_pi_words"
    g = b.module.globals.get(name)
    if g is None:
        t = ir.ArrayType(u.I64, len(TWO_OVER_PI_WORDS))
        g = ir.GlobalVariable(b.module, t, name)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(t, [ir.Constant(u.I64, w) for w in TWO_OVER_PI_WORDS])
    return g


def payne_hanek(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(q mod 4 as i64, r_hi, r_lo) with x = q*pi/2 + r_hi + r_lo, for a finite double `x` with
    |x| >= 2^50 (smaller arguments are exact too, down to |x| >= 2^-1; callers select)."""
    i64 = u.I64
    c = u.i64
    lo32 = c(0xFFFFFFFF)
    bits = b.bitcast(x, i64)
    mag = b.and_(bits, c((1 << 63) - 1))
    e = b.sub(b.lshr(mag, c(52)), c(1075))  # |x| = M * 2^e
    mant = b.or_(b.and_(mag, c((1 << 52) - 1)), c(1 << 52))
    m1, m0 = b.lshr(mant, c(32)), b.and_(mant, lo32)
    # the window starts at table bit t0 = e - 1 + _PAD: word q0, bit offset s inside it
    t0 = b.add(e, c(_PAD - 2))  # table bit t is bit j = t - _PAD + 1 of 2/pi
    t0 = b.select(b.icmp_signed("<", t0, c(0)), c(0), t0)  # |x| < 2^-1: callers never use this lane
    q0, s = b.lshr(t0, c(5)), b.and_(t0, c(31))
    table = _table(b)

    def word(i: int) -> ir.Value:
        p = b.gep(table, [c(0), b.add(q0, c(i))], inbounds=True, source_etype=table.value_type)
        return b.load(p, typ=i64)

    words = [word(i) for i in range(WINDOW_BITS // 32 + 1)]
    shift = b.sub(c(32), s)  # 1..32
    limbs = []  # most significant first
    for k in range(WINDOW_BITS // 32):
        pair = b.or_(b.shl(words[k], c(32)), words[k + 1])
        limbs.append(b.and_(b.lshr(pair, shift), lo32))
    n = len(limbs)
    # product M * window mod 2^WINDOW_BITS in base 2^32: limb L (weight 2^(32 L)) accumulates the
    # low halves of m0*w[n-1-L] and m1*w[n-L] and the high halves from L-1; each sum < 2^35.
    acc = [c(0)] * n
    for k, w in enumerate(limbs):
        for m, at in ((m0, n - 1 - k), (m1, n - k)):
            if at >= n:
                continue
            p = b.mul(m, w)  # < 2^64 (m, w < 2^32)
            acc[at] = b.add(acc[at], b.and_(p, lo32))
            if at + 1 < n:
                acc[at + 1] = b.add(acc[at + 1], b.lshr(p, c(32)))
    for L in range(n - 1):  # carries
        acc[L + 1] = b.add(acc[L + 1], b.lshr(acc[L], c(32)))
        acc[L] = b.and_(acc[L], lo32)
    top = b.and_(acc[n - 1], lo32)
    quadrant = b.lshr(top, c(30))
    half = b.and_(b.lshr(top, c(29)), c(1))  # f >= 1/2: use f - 1 and the next quadrant
    quadrant = b.add(quadrant, half)
    # fraction terms as exact doubles: t_top = (top's 30 low bits) * 2^-30 (minus 1 when f >= 1/2),
    # then one limb per 32 bits further down
    f64 = u.F64

    def scaled(v: ir.Value, exp2: int) -> ir.Value:
        return b.fmul(b.uitofp(v, f64), ir.Constant(f64, 2.0 ** exp2))

    t_top = scaled(b.and_(top, c((1 << 30) - 1)), -30)
    t_top = b.fsub(t_top, b.uitofp(half, f64))
    terms = [t_top] + [scaled(acc[L], -30 - 32 * (n - 1 - L)) for L in range(n - 2, n - 5, -1)]
    # accurate sum: two_sum cascade, the errors and the last limb added at the end
    s_hi, errs = terms[0], []
    for t in terms[1:]:
        s_new = b.fadd(s_hi, t)
        bb = b.fsub(s_new, s_hi)
        errs.append(b.fadd(b.fsub(s_hi, b.fsub(s_new, bb)), b.fsub(t, bb)))
        s_hi = s_new
    low = scaled(acc[n - 5], -30 - 32 * 4)
    for err in errs:
        low = b.fadd(low, err)
    f_hi = b.fadd(s_hi, low)
    f_lo = b.fsub(low, b.fsub(f_hi, s_hi))
    # r = f * pi/2 as a double-double
    r_hi = b.fmul(f_hi, ir.Constant(f64, PIO2_HI))
    r_err = u.intrinsic(b, "llvm.fma", [f_hi, ir.Constant(f64, PIO2_HI), b.fneg(r_hi)])
    r_lo = b.fadd(r_err, b.fadd(b.fmul(f_hi, ir.Constant(f64, PIO2_LO)), b.fmul(f_lo, ir.Constant(f64, PIO2_HI))))
    hi = b.fadd(r_hi, r_lo)
    lo = b.fsub(r_lo, b.fsub(hi, r_hi))
    # negative x: x = (-q)*pi/2 + (-r)
    neg = b.icmp_signed("<", bits, c(0))
    q = b.and_(b.select(neg, b.sub(c(0), quadrant), quadrant), c(3))
    return q, b.select(neg, b.fneg(hi), hi), b.select(neg, b.fneg(lo), lo)

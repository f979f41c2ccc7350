"""Elementwise primitives: unary math, binary arithmetic, comparisons, select, casts.

Each primitive is one declaration: `unary(...)` / `binary(...)` / `compare(...)`
give it its type rule, impl, batching rule (`rules.vectorized`), constant
folding, JVP row(s), sample domain and doc; the few rules that do not fit a
family (select, casts, transposes of the linear ops) follow at the end.

Binary primitives take operands of identical shape and dtype; broadcasting and
type promotion happen in the tensor layer, which inserts `broadcast_in_dim`
and `convert_element_type` explicitly.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..primitive import Domain, Primitive, register
from ..rules import (defjvp_binary, defjvp_unary, defjvp_zero, fold_elementwise, instantiate, is_undefined,
                     scalar_like as _c, vectorized)
from ..types import TensorType
from ._util import check_dtypes, check_same

NUMERIC = (dt.int32, dt.int64, dt.float32, dt.float64)
ALL = dt.ALL
LOGICAL = (dt.bool_, dt.int32, dt.int64)

_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf_scalar(x)).astype(x.dtype) if x.size else x.copy()


def _unary_type(name, allowed):
    def rule(x: TensorType) -> TensorType:
        check_dtypes(name, x, allowed)
        return x
    return rule


def _declare(prim: Primitive) -> Primitive:
    """Register an elementwise primitive with the family's batching and folding rules."""
    register(prim)
    prim.def_batch(vectorized(prim))  # operands aligned on one batch axis, unbatched ones broadcast
    prim.fold = fold_elementwise(prim)
    return prim


def unary(name: str, fn, allowed=dt.FLOATS, *, jvp=None, domain: Domain | None = None, doc: str = "",
          family: str = "elementwise", differentiable: bool = True) -> Primitive:
    """Declare an elementwise unary primitive `name` computed by numpy's `fn`.

    `jvp` is the derivative row ``jvp(ctx, t, x, y) -> tangent`` (linear in `t`, ``y = name(x)``);
    a differentiable primitive without one is piecewise constant (zero derivative). `domain` is
    where test samples are drawn (required: `tests/ir/test_prim_impls.py` names primitives without).
    """
    def impl(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype, copy=False)
    prim = _declare(Primitive(name, _unary_type(name, allowed), impl, num_operands=1, family=family, doc=doc,
                              domain=domain, differentiable=differentiable))
    if jvp is not None:
        defjvp_unary(prim, jvp)
    elif differentiable:
        defjvp_zero(prim)
    return prim


def _binary_type(name, allowed, out_dtype=None):
    def rule(x: TensorType, y: TensorType) -> TensorType:
        check_same(name, x, y)
        check_dtypes(name, x, allowed)
        return TensorType(x.shape, out_dtype or x.dtype)
    return rule


def binary(name: str, fn, allowed=NUMERIC, *, jvp=None, domain: Domain | tuple | None = None, doc: str = "",
           family: str = "elementwise", differentiable: bool = True) -> Primitive:
    """Declare an elementwise binary primitive on operands of equal shape and dtype.

    `jvp` is ``(dx, dy)``: the contribution ``d(ctx, t, x, y, out)`` of each operand's tangent.
    """
    def impl(x, y):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, y)).astype(x.dtype, copy=False)
    prim = _declare(Primitive(name, _binary_type(name, allowed), impl, num_operands=2, family=family, doc=doc,
                              domain=domain, differentiable=differentiable))
    if jvp is not None:
        defjvp_binary(prim, *jvp)
    return prim


def compare(name: str, fn, doc: str) -> Primitive:
    """Declare a comparison: equal-typed operands, boolean result, zero derivative."""
    def impl(x, y):
        return np.asarray(fn(x, y), dtype=np.bool_)
    return _declare(Primitive(name, _binary_type(name, ALL, dt.bool_), impl, num_operands=2, family="compare",
                              doc=doc, domain=Domain(), differentiable=False))


def _logistic(x):
    e = np.exp(-np.abs(x))  # never overflows; keeps the tiny left tail instead of rounding it to 0
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


ANYWHERE = Domain()  # floats uniform in [-2, 2): the op is smooth there
AWAY_FROM_ZERO = Domain(avoid="zero")
OFF_INTEGER = Domain(avoid="integers")

# --- unary math ----------------------------------------------------------------------------------
# Each row of `jvp` is linear in the tangent t; y is the primitive's result.
neg = unary("neg", np.negative, NUMERIC, doc="-x", domain=ANYWHERE,
            jvp=lambda b, t, x, y: b.neg(t))                                                   # -t
sin = unary("sin", np.sin, doc="sine", domain=ANYWHERE,
            jvp=lambda b, t, x, y: b.mul(t, b.cos(x)))                                         # t·cos x
cos = unary("cos", np.cos, doc="cosine", domain=ANYWHERE,
            jvp=lambda b, t, x, y: b.mul(t, b.neg(b.sin(x))))                                  # -t·sin x
tan = unary("tan", np.tan, doc="tangent", domain=Domain(-1.2, 1.2),
            jvp=lambda b, t, x, y: b.mul(t, b.add(_c(b, y, 1), b.mul(y, y))))                  # t·(1 + tan²x)
exp = unary("exp", np.exp, doc="e ** x", domain=Domain(-3, 3),
            jvp=lambda b, t, x, y: b.mul(t, y))                                                # t·eˣ
log = unary("log", np.log, doc="natural logarithm", domain=Domain(0.1, 4.0),
            jvp=lambda b, t, x, y: b.div(t, x))                                                # t / x
log1p = unary("log1p", np.log1p, doc="log(1 + x), accurate near 0", domain=Domain(-0.5, 3.0),
              jvp=lambda b, t, x, y: b.div(t, b.add(x, _c(b, x, 1))))                          # t / (1 + x)
expm1 = unary("expm1", np.expm1, doc="e ** x - 1, accurate near 0", domain=ANYWHERE,
              jvp=lambda b, t, x, y: b.mul(t, b.add(y, _c(b, y, 1))))                          # t·eˣ
sqrt = unary("sqrt", np.sqrt, doc="square root", domain=Domain(0.1, 4.0),
             jvp=lambda b, t, x, y: b.div(t, b.mul(y, _c(b, y, 2))))                           # t / (2√x)
rsqrt = unary("rsqrt", lambda x: 1 / np.sqrt(x), doc="1 / sqrt(x)", domain=Domain(0.1, 4.0),
              jvp=lambda b, t, x, y: b.mul(t, b.div(b.mul(y, _c(b, y, -0.5)), x)))             # -t·x^(-3/2) / 2
tanh = unary("tanh", np.tanh, doc="hyperbolic tangent", domain=ANYWHERE,
             jvp=lambda b, t, x, y: b.mul(t, b.sub(_c(b, y, 1), b.mul(y, y))))                 # t·(1 - tanh²x)
logistic = unary("logistic", _logistic, doc="1 / (1 + e ** -x)", domain=Domain(-4, 4),
                 jvp=lambda b, t, x, y: b.mul(t, b.mul(y, b.sub(_c(b, y, 1), y))))             # t·σ(x)(1 - σ(x))
erf = unary("erf", _erf, doc="error function", domain=ANYWHERE,
            jvp=lambda b, t, x, y: b.mul(t, b.mul(_c(b, x, 2 / math.sqrt(math.pi)),            # t·2/√π·e^(-x²)
                                                  b.exp(b.neg(b.mul(x, x))))))
asinh = unary("asinh", np.arcsinh, doc="inverse hyperbolic sine", domain=Domain(-3, 3),
              jvp=lambda b, t, x, y: b.div(t, b.sqrt(b.add(b.mul(x, x), _c(b, x, 1)))))        # t / √(x² + 1)
acosh = unary("acosh", np.arccosh, doc="inverse hyperbolic cosine (x >= 1)", domain=Domain(1.1, 4.0),
              jvp=lambda b, t, x, y: b.div(t, b.sqrt(b.mul(b.sub(x, _c(b, x, 1)),              # t / √((x-1)(x+1))
                                                           b.add(x, _c(b, x, 1))))))
atanh = unary("atanh", np.arctanh, doc="inverse hyperbolic tangent (|x| < 1)", domain=Domain(-0.8, 0.8),
              jvp=lambda b, t, x, y: b.div(t, b.sub(_c(b, x, 1), b.mul(x, x))))                # t / (1 - x²)
cbrt = unary("cbrt", np.cbrt, doc="real cube root", domain=Domain(-3, 3, avoid="zero"),
             jvp=lambda b, t, x, y: b.div(t, b.mul(_c(b, y, 3), b.mul(y, y))))                 # t / (3 ∛x²)
abs = unary("abs", np.abs, NUMERIC, doc="absolute value", domain=AWAY_FROM_ZERO,
            jvp=lambda b, t, x, y: b.mul(t, b.sign(x)))                                        # t·sign x
sign = unary("sign", np.sign, NUMERIC, doc="-1, 0 or 1", domain=AWAY_FROM_ZERO)  # piecewise constant
floor = unary("floor", np.floor, doc="round down", domain=OFF_INTEGER)
ceil = unary("ceil", np.ceil, doc="round up", domain=OFF_INTEGER)
round = unary("round", np.round, doc="round half to even", domain=OFF_INTEGER)  # like torch.round
logical_not = unary("logical_not", np.invert, LOGICAL, doc="bitwise / logical not", domain=ANYWHERE, family="logical",
                    differentiable=False)


# --- binary arithmetic ---------------------------------------------------------------------------
def _div(x, y):
    if x.dtype.kind == "f":
        return np.divide(x, y)
    q = np.floor_divide(x, np.where(y == 0, 1, y))  # integers: C division, truncating toward zero
    return np.where(y == 0, 0, q + ((q * y != x) & ((x < 0) != (y < 0))))


def _extremum(larger: bool):
    """max/min with IEEE 754-2019 maximum/minimum semantics: NaN propagates and -0 < +0.

    torch.maximum agrees up to the sign of a zero result (its vectorised and scalar paths
    disagree on which of two zeros they return); LLVM's llvm.maximum/minimum are exactly this.
    numpy's maximum/minimum propagate NaN but return either zero of a tie, so ties of zeros are
    settled by a sum: -0 + +0 is +0 (max), -(+0 + -0) is -0 (min).
    """
    pick = np.maximum if larger else np.minimum

    def fn(x, y):
        r = pick(x, y)
        if x.dtype.kind != "f":
            return r
        zero_ties = (r == 0) & (x == y)
        if not zero_ties.any():
            return r
        return np.where(zero_ties, x + y if larger else -(-x - y), r)
    return fn


def _ge_weight(b, x, y):
    """1 where x > y, 1/2 where x == y, 0 where x < y: how max(x, y) splits its tangent on ties."""
    gt_, ge_ = (b.convert_element_type(p, dtype=x.dtype) for p in (b.gt(x, y), b.ge(x, y)))
    return b.mul(b.add(gt_, ge_), _c(b, x, 0.5))


def _pow_dx(b, t, x, y, out):
    """t·y·x^(y-1), and 0 where y == 0 (so that 0^0 has derivative 0, not nan)."""
    zero = _c(b, y, 0)
    return b.mul(t, b.select(b.eq(y, zero), zero, b.mul(y, b.pow(x, b.sub(y, _c(b, y, 1))))))


def _pow_dy(b, t, x, y, out):
    """t·log(x)·x^y, and 0 where x == 0 and y >= 0 (x^y is 0 or 1 there), as torch does."""
    zero = _c(b, x, 0)
    flat = b.emit("and", b.eq(x, zero), b.ge(y, zero))
    return b.mul(t, b.select(flat, zero, b.mul(b.log(x), out)))


def _atan2_denominator(b, x, y):
    return b.add(b.mul(x, x), b.mul(y, y))


def _trunc_quotient(b, x, y):
    """trunc(x / y) = sign(q)·floor(|q|): the derivative of fmod(x, y) with respect to -y."""
    q = b.div(x, y)
    return b.mul(b.sign(q), b.floor(b.abs(q)))


# jvp = (dx, dy): d out = dx(b, tx, x, y, out) + dy(b, ty, x, y, out), each linear in its tangent.
add = binary("add", np.add, doc="x + y", domain=ANYWHERE,
             jvp=(lambda b, t, x, y, o: t, lambda b, t, x, y, o: t))                           # tx + ty
sub = binary("sub", np.subtract, doc="x - y", domain=ANYWHERE,
             jvp=(lambda b, t, x, y, o: t, lambda b, t, x, y, o: b.neg(t)))                    # tx - ty
mul = binary("mul", np.multiply, doc="x * y", domain=ANYWHERE,
             jvp=(lambda b, t, x, y, o: b.mul(t, y), lambda b, t, x, y, o: b.mul(x, t)))       # tx·y + x·ty
div = binary("div", _div, doc="x / y (integers truncate toward zero; division by zero gives 0)",
             domain=(Domain(-6, 6), AWAY_FROM_ZERO),
             jvp=(lambda b, t, x, y, o: b.div(t, y),                                           # tx/y - ty·(x/y)/y
                  lambda b, t, x, y, o: b.mul(t, b.neg(b.div(o, y)))))
pow = binary("pow", np.power, dt.FLOATS, doc="x ** y", domain=(Domain(0.5, 2.0), Domain()),
             jvp=(_pow_dx, _pow_dy))                                           # tx·y·x^(y-1) + ty·log x·x^y
max = binary("max", _extremum(True), ALL, doc="elementwise maximum (NaN wins; +0 > -0)", domain=ANYWHERE,
             jvp=(lambda b, t, x, y, o: b.mul(t, _ge_weight(b, x, y)),                         # ties split the tangent
                  lambda b, t, x, y, o: b.mul(t, _ge_weight(b, y, x))))
min = binary("min", _extremum(False), ALL, doc="elementwise minimum (NaN wins; -0 < +0)", domain=ANYWHERE,
             jvp=(lambda b, t, x, y, o: b.mul(t, _ge_weight(b, y, x)),
                  lambda b, t, x, y, o: b.mul(t, _ge_weight(b, x, y))))
atan2 = binary("atan2", np.arctan2, dt.FLOATS, doc="four-quadrant arctangent of x / y",
               domain=(AWAY_FROM_ZERO, AWAY_FROM_ZERO),
               jvp=(lambda b, t, x, y, o: b.mul(t, b.div(y, _atan2_denominator(b, x, y))),         # (tx·y - ty·x)
                    lambda b, t, x, y, o: b.mul(t, b.div(b.neg(x), _atan2_denominator(b, x, y)))))  # / (x² + y²)
hypot = binary("hypot", np.hypot, dt.FLOATS, doc="sqrt(x² + y²) without overflow or underflow",
               domain=(AWAY_FROM_ZERO, AWAY_FROM_ZERO),
               jvp=(lambda b, t, x, y, o: b.mul(t, b.div(x, o)),                               # (tx·x + ty·y) / out
                    lambda b, t, x, y, o: b.mul(t, b.div(y, o))))
rem = binary("rem", np.fmod, NUMERIC, doc="C remainder, sign of the dividend (torch.fmod)",
             domain=(Domain(-6, 6), AWAY_FROM_ZERO),
             jvp=(lambda b, t, x, y, o: t,                                                     # tx - ty·trunc(x/y)
                  lambda b, t, x, y, o: b.mul(t, b.neg(_trunc_quotient(b, x, y)))))
and_ = binary("and", np.bitwise_and, LOGICAL, doc="bitwise / logical and", domain=ANYWHERE, family="logical",
              differentiable=False)
or_ = binary("or", np.bitwise_or, LOGICAL, doc="bitwise / logical or", domain=ANYWHERE, family="logical",
             differentiable=False)
xor = binary("xor", np.bitwise_xor, LOGICAL, doc="bitwise / logical exclusive or", domain=ANYWHERE, family="logical",
             differentiable=False)

# --- comparisons -------------------------------------------------------------------------------
eq = compare("eq", np.equal, "x == y")
ne = compare("ne", np.not_equal, "x != y")
lt = compare("lt", np.less, "x < y")
le = compare("le", np.less_equal, "x <= y")
gt = compare("gt", np.greater, "x > y")
ge = compare("ge", np.greater_equal, "x >= y")


# --- select, casts, stop_gradient ----------------------------------------------------------------
def _select_type(pred: TensorType, on_true: TensorType, on_false: TensorType) -> TensorType:
    check_same("select", on_true, on_false)
    if pred.dtype is not dt.bool_:
        check_dtypes("select", pred, (dt.bool_,), "predicate")
    if pred.shape != on_true.shape:
        raise ValueError(f"select: predicate shape {pred.shape} must equal operand shape {on_true.shape}")
    return on_true


select = _declare(Primitive("select", _select_type, lambda p, a, b: np.where(p, a, b), num_operands=3,
                            family="elementwise", roles=("pred", "data", "data"), domain=Domain(),
                            doc="pred ? on_true : on_false, elementwise"))


def _convert_type(x: TensorType, *, dtype) -> TensorType:
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"convert_element_type: dtype attribute must be a DType, got {dtype!r}")
    return TensorType(x.shape, dtype)


def _convert_impl(x, *, dtype):
    if dtype.is_bool:
        return np.asarray(x != 0)
    with np.errstate(invalid="ignore"):
        return x.astype(dtype.np)


convert_element_type = _declare(Primitive("convert_element_type", _convert_type, _convert_impl, num_operands=1,
                                          family="elementwise", domain=Domain(),
                                          doc="cast to `dtype` (to bool: x != 0)"))

stop_gradient = _declare(Primitive("stop_gradient", lambda x: x, lambda x: x, num_operands=1, differentiable=False,
                                   family="elementwise", domain=Domain(), doc="identity whose derivative is zero"))


# === rules written out ==========================================================================
@select.def_jvp
def _select_jvp(b, primals, tangents):
    (p, x, y), (_, tx, ty) = primals, tangents
    out = b.select(p, x, y)
    if tx is None and ty is None:
        return out, None
    return out, b.select(p, instantiate(b, tx, x), instantiate(b, ty, y))


@convert_element_type.def_jvp
def _convert_jvp(b, primals, tangents, *, dtype):
    (x,), (t,) = primals, tangents
    out = b.convert_element_type(x, dtype=dtype)
    return out, None if t is None or not dtype.is_floating_point else b.convert_element_type(t, dtype=dtype)


# --- transpose rules of the primitives that are linear in some operand -------------------------------
neg.def_transpose(lambda b, ct, ops: [b.neg(ct)])
add.def_transpose(lambda b, ct, ops: [ct if is_undefined(ops[0]) else None,
                                      ct if is_undefined(ops[1]) else None])
sub.def_transpose(lambda b, ct, ops: [ct if is_undefined(ops[0]) else None,
                                      b.neg(ct) if is_undefined(ops[1]) else None])
convert_element_type.def_transpose(lambda b, ct, ops, *, dtype: [b.convert_element_type(ct, dtype=ops[0].dtype)])


@mul.def_transpose
def _mul_transpose(b, ct, ops):
    x, y = ops
    if is_undefined(x) and is_undefined(y):
        raise NotImplementedError("transpose: mul of two linear values is not linear")
    return [b.mul(ct, y), None] if is_undefined(x) else [None, b.mul(x, ct)]


@div.def_transpose
def _div_transpose(b, ct, ops):
    x, y = ops
    if is_undefined(y):
        raise NotImplementedError("transpose: div is linear only in its numerator")
    return [b.div(ct, y), None]


@select.def_transpose
def _select_transpose(b, ct, ops):
    p, x, y = ops
    zeros = b.zeros_like(ct)
    return [None,
            b.select(p, ct, zeros) if is_undefined(x) else None,
            b.select(p, zeros, ct) if is_undefined(y) else None]

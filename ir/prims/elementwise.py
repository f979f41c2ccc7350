"""Elementwise primitives: unary math, binary arithmetic, comparisons, select, casts.

Binary primitives take operands of identical shape and dtype; broadcasting and
type promotion happen in the tensor layer, which inserts `broadcast_in_dim`
and `convert_element_type` explicitly.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
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


def unary(name: str, fn, allowed=dt.FLOATS, **rules) -> Primitive:
    """Declare an elementwise unary primitive `name` computed by numpy's `fn`."""
    def impl(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype, copy=False)
    return register(Primitive(name, _unary_type(name, allowed), impl, num_operands=1, **rules))


def _binary_type(name, allowed, out_dtype=None):
    def rule(x: TensorType, y: TensorType) -> TensorType:
        check_same(name, x, y)
        check_dtypes(name, x, allowed)
        return TensorType(x.shape, out_dtype or x.dtype)
    return rule


def binary(name: str, fn, allowed=NUMERIC, **rules) -> Primitive:
    """Declare an elementwise binary primitive on operands of equal shape and dtype."""
    def impl(x, y):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, y)).astype(x.dtype, copy=False)
    return register(Primitive(name, _binary_type(name, allowed), impl, num_operands=2, **rules))


def compare(name: str, fn) -> Primitive:
    """Declare a comparison: equal-typed operands, boolean result, zero derivative."""
    def impl(x, y):
        return np.asarray(fn(x, y), dtype=np.bool_)
    return register(Primitive(name, _binary_type(name, ALL, dt.bool_), impl, num_operands=2,
                              differentiable=False))


# --- unary math (floating point) --------------------------------------------------------------
neg = unary("neg", np.negative, NUMERIC)
sin = unary("sin", np.sin)
cos = unary("cos", np.cos)
tan = unary("tan", np.tan)
exp = unary("exp", np.exp)
log = unary("log", np.log)
log1p = unary("log1p", np.log1p)
expm1 = unary("expm1", np.expm1)
sqrt = unary("sqrt", np.sqrt)
rsqrt = unary("rsqrt", lambda x: 1 / np.sqrt(x))
tanh = unary("tanh", np.tanh)
def _logistic(x):
    e = np.exp(-np.abs(x))  # never overflows; keeps the tiny left tail instead of rounding it to 0
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


logistic = unary("logistic", _logistic)
erf = unary("erf", _erf)
abs = unary("abs", np.abs, NUMERIC)
sign = unary("sign", np.sign, NUMERIC)
floor = unary("floor", np.floor)
ceil = unary("ceil", np.ceil)
round = unary("round", np.round)  # half to even, like torch.round
logical_not = unary("logical_not", np.invert, LOGICAL, differentiable=False)

# --- binary arithmetic -------------------------------------------------------------------------
add = binary("add", np.add)
sub = binary("sub", np.subtract)
mul = binary("mul", np.multiply)
def _div(x, y):
    if x.dtype.kind == "f":
        return np.divide(x, y)
    q = np.floor_divide(x, np.where(y == 0, 1, y))  # integers: C division, truncating toward zero
    return np.where(y == 0, 0, q + ((q * y != x) & ((x < 0) != (y < 0))))


div = binary("div", _div)
pow = binary("pow", np.power, dt.FLOATS)
max = binary("max", np.maximum, ALL)
min = binary("min", np.minimum, ALL)
atan2 = binary("atan2", np.arctan2, dt.FLOATS)
rem = binary("rem", np.fmod, NUMERIC)  # C remainder: sign of the dividend (torch.fmod)
and_ = binary("and", np.bitwise_and, LOGICAL, differentiable=False)
or_ = binary("or", np.bitwise_or, LOGICAL, differentiable=False)
xor = binary("xor", np.bitwise_xor, LOGICAL, differentiable=False)

# --- comparisons -------------------------------------------------------------------------------
eq = compare("eq", np.equal)
ne = compare("ne", np.not_equal)
lt = compare("lt", np.less)
le = compare("le", np.less_equal)
gt = compare("gt", np.greater)
ge = compare("ge", np.greater_equal)


# --- select, casts, stop_gradient ----------------------------------------------------------------
def _select_type(pred: TensorType, on_true: TensorType, on_false: TensorType) -> TensorType:
    check_same("select", on_true, on_false)
    if pred.dtype is not dt.bool_:
        check_dtypes("select", pred, (dt.bool_,), "predicate")
    if pred.shape != on_true.shape:
        raise ValueError(f"select: predicate shape {pred.shape} must equal operand shape {on_true.shape}")
    return on_true


select = register(Primitive("select", _select_type, lambda p, a, b: np.where(p, a, b), num_operands=3))


def _convert_type(x: TensorType, *, dtype) -> TensorType:
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"convert_element_type: dtype attribute must be a DType, got {dtype!r}")
    return TensorType(x.shape, dtype)


def _convert_impl(x, *, dtype):
    if dtype.is_bool:
        return np.asarray(x != 0)
    with np.errstate(invalid="ignore"):
        return x.astype(dtype.np)


convert_element_type = register(Primitive("convert_element_type", _convert_type, _convert_impl, num_operands=1))

stop_gradient = register(Primitive("stop_gradient", lambda x: x, lambda x: x, num_operands=1,
                                   differentiable=False))


# === batching rules =============================================================================
from ..passes.batching import vectorized  # noqa: E402

for _prim in (neg, sin, cos, tan, exp, log, log1p, expm1, sqrt, rsqrt, tanh, logistic, erf, abs, sign, floor, ceil,
              round, logical_not, add, sub, mul, div, pow, max, min, atan2, rem, and_, or_, xor, eq, ne, lt, le, gt,
              ge, select, convert_element_type, stop_gradient):
    _prim.def_batch(vectorized(_prim))  # operands aligned on one batch axis, unbatched ones broadcast


# === differentiation rules ======================================================================
# Forward mode is one JVP rule per primitive (tangents are symbolic: None is a zero); reverse mode
# transposes the linear tangent graph, so only primitives linear in an operand need a transpose rule.
from ..passes.jvp import defjvp_binary, defjvp_unary, defjvp_zero, instantiate, scalar_like as _c  # noqa: E402
from ..passes.transpose import is_undefined  # noqa: E402

# d y = row(b, t, x, y) for y = f(x); every row is linear in the tangent t.
_UNARY_JVP = {
    neg: lambda b, t, x, y: b.neg(t),                                             # -t
    sin: lambda b, t, x, y: b.mul(t, b.cos(x)),                                   # t·cos x
    cos: lambda b, t, x, y: b.mul(t, b.neg(b.sin(x))),                            # -t·sin x
    tan: lambda b, t, x, y: b.mul(t, b.add(_c(b, y, 1), b.mul(y, y))),            # t·(1 + tan²x)
    exp: lambda b, t, x, y: b.mul(t, y),                                          # t·eˣ
    log: lambda b, t, x, y: b.div(t, x),                                          # t / x
    log1p: lambda b, t, x, y: b.div(t, b.add(x, _c(b, x, 1))),                    # t / (1 + x)
    expm1: lambda b, t, x, y: b.mul(t, b.add(y, _c(b, y, 1))),                    # t·eˣ
    sqrt: lambda b, t, x, y: b.div(t, b.mul(y, _c(b, y, 2))),                     # t / (2√x)
    rsqrt: lambda b, t, x, y: b.mul(t, b.div(b.mul(y, _c(b, y, -0.5)), x)),       # -t·x^(-3/2) / 2
    tanh: lambda b, t, x, y: b.mul(t, b.sub(_c(b, y, 1), b.mul(y, y))),           # t·(1 - tanh²x)
    logistic: lambda b, t, x, y: b.mul(t, b.mul(y, b.sub(_c(b, y, 1), y))),       # t·σ(x)(1 - σ(x))
    erf: lambda b, t, x, y: b.mul(t, b.mul(_c(b, x, 2 / math.sqrt(math.pi)),      # t·2/√π·e^(-x²)
                                           b.exp(b.neg(b.mul(x, x))))),
    abs: lambda b, t, x, y: b.mul(t, b.sign(x)),                                  # t·sign x
}
for _prim, _row in _UNARY_JVP.items():
    defjvp_unary(_prim, _row)
for _prim in (sign, floor, ceil, round):  # piecewise constant: zero derivative
    defjvp_zero(_prim)


def _ge_weight(b, x, y):
    """1 where x > y, 1/2 where x == y, 0 where x < y: how max(x, y) splits its tangent on ties."""
    gt_, ge_ = (b.convert_element_type(p, dtype=x.dtype) for p in (b.gt(x, y), b.ge(x, y)))
    return b.mul(b.add(gt_, ge_), _c(b, x, 0.5))


def _pow_dx(b, t, x, y, out):
    """t·y·x^(y-1), and 0 where y == 0 (so that 0^0 has derivative 0, not nan)."""
    zero = _c(b, y, 0)
    return b.mul(t, b.select(b.eq(y, zero), zero, b.mul(y, b.pow(x, b.sub(y, _c(b, y, 1))))))


def _pow_dy(b, t, x, y, out):
    """t·log(x)·x^y, with log(x) read as 0 where x == 0 (x^y is 0 or 1 there)."""
    safe_x = b.select(b.eq(x, _c(b, x, 0)), _c(b, x, 1), x)
    return b.mul(t, b.mul(b.log(safe_x), out))


def _atan2_denominator(b, x, y):
    return b.add(b.mul(x, x), b.mul(y, y))


def _trunc_quotient(b, x, y):
    """trunc(x / y) = sign(q)·floor(|q|): the derivative of fmod(x, y) with respect to -y."""
    q = b.div(x, y)
    return b.mul(b.sign(q), b.floor(b.abs(q)))


# d out = dx(b, tx, x, y, out) + dy(b, ty, x, y, out); each contribution is linear in its tangent.
_BINARY_JVP = {
    add: (lambda b, t, x, y, o: t,                                                # tx + ty
          lambda b, t, x, y, o: t),
    sub: (lambda b, t, x, y, o: t,                                                # tx - ty
          lambda b, t, x, y, o: b.neg(t)),
    mul: (lambda b, t, x, y, o: b.mul(t, y),                                      # tx·y + x·ty
          lambda b, t, x, y, o: b.mul(x, t)),
    div: (lambda b, t, x, y, o: b.div(t, y),                                      # tx/y - ty·(x/y)/y
          lambda b, t, x, y, o: b.mul(t, b.neg(b.div(o, y)))),
    pow: (_pow_dx,                                                                # tx·y·x^(y-1)
          _pow_dy),                                                               # + ty·log x·x^y
    max: (lambda b, t, x, y, o: b.mul(t, _ge_weight(b, x, y)),                    # ties split the tangent
          lambda b, t, x, y, o: b.mul(t, _ge_weight(b, y, x))),
    min: (lambda b, t, x, y, o: b.mul(t, _ge_weight(b, y, x)),
          lambda b, t, x, y, o: b.mul(t, _ge_weight(b, x, y))),
    atan2: (lambda b, t, x, y, o: b.mul(t, b.div(y, _atan2_denominator(b, x, y))),         # (tx·y - ty·x)
            lambda b, t, x, y, o: b.mul(t, b.div(b.neg(x), _atan2_denominator(b, x, y)))),  # / (x² + y²)
    rem: (lambda b, t, x, y, o: t,                                                # tx - ty·trunc(x/y)
          lambda b, t, x, y, o: b.mul(t, b.neg(_trunc_quotient(b, x, y)))),
}
for _prim, (_dx, _dy) in _BINARY_JVP.items():
    defjvp_binary(_prim, _dx, _dy)


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

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
logistic = unary("logistic", lambda x: 0.5 * (1 + np.tanh(0.5 * x)))
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

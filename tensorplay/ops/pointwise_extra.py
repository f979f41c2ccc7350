"""More elementwise functions PyTorch programs use, each a composite of existing ops (so every
transform applies: vmap, grad, jvp, tp.compile).

Inverse trigonometric functions go through ``atan2``: ``asin(x) = atan2(x, sqrt((1-x)(1+x)))``
(NaN outside [-1, 1], as torch), ``acos(x) = atan2(sqrt((1-x)(1+x)), x)``, ``atan(x) = atan2(x, 1)``;
``sinh``/``cosh`` use ``expm1``/``exp`` (they overflow to inf slightly before the true value
does: ``cosh(x)`` at |x| > 88.7 in float32).

>>> import tensorplay as tp
>>> tp.asin(tp.tensor([0.0, 1.0])).tolist() == [0.0, tp.acos(tp.tensor(0.0)).item()]
True
>>> tp.nan_to_num(tp.tensor([float("nan"), float("inf"), -1.0]), posinf=9.0).tolist()
[0.0, 9.0, -1.0]
"""
from __future__ import annotations

import math

from tensorplay.ir import dtypes

from .._tensor import Tensor
from . import elementwise as ew
from ._common import as_tensor_operand, convert, dtype_of, filled, get_default_dtype, result_type, shape_of
from ._table import op


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _float(x) -> Tensor:
    x = _t(x)
    return x if dtype_of(x).is_floating_point else convert(x, get_default_dtype())


def _one_minus_sq_root(x: Tensor) -> Tensor:
    return ew.sqrt(ew.mul(ew.sub(1.0, x), ew.add(1.0, x)))


def asin(input):
    """Elementwise arcsine, in radians (NaN outside [-1, 1]).

    >>> import tensorplay as tp
    >>> round(tp.asin(tp.tensor(0.5)).item(), 6)
    0.523599
    """
    x = _float(input)
    return ew.atan2(x, _one_minus_sq_root(x))


def acos(input):
    """Elementwise arccosine, in radians (NaN outside [-1, 1]).

    >>> import tensorplay as tp
    >>> round(tp.acos(tp.tensor(-1.0)).item(), 6)
    3.141593
    """
    x = _float(input)
    return ew.atan2(_one_minus_sq_root(x), x)


def atan(input):
    """Elementwise arctangent, in radians.

    >>> import tensorplay as tp
    >>> round(tp.atan(tp.tensor(1.0)).item(), 6)
    0.785398
    """
    x = _float(input)
    return ew.atan2(x, 1.0)


def sinh(input):
    """Elementwise hyperbolic sine, ``(expm1(x) - expm1(-x)) / 2`` (accurate near 0).

    >>> import tensorplay as tp
    >>> round(tp.sinh(tp.tensor(1.0)).item(), 5)
    1.1752
    """
    x = _float(input)
    return ew.mul(ew.sub(ew.expm1(x), ew.expm1(ew.neg(x))), 0.5)


def cosh(input):
    """Elementwise hyperbolic cosine.

    >>> import tensorplay as tp
    >>> tp.cosh(tp.tensor([0.0])).tolist()
    [1.0]
    """
    x = _float(input)
    return ew.mul(ew.add(ew.exp(x), ew.exp(ew.neg(x))), 0.5)


def log2(input):
    """Elementwise base-2 logarithm.

    >>> import tensorplay as tp
    >>> round(tp.log2(tp.tensor(8.0)).item(), 5)
    3.0
    """
    return ew.mul(ew.log(_float(input)), 1.0 / math.log(2.0))


def log10(input):
    """Elementwise base-10 logarithm.

    >>> import tensorplay as tp
    >>> round(tp.log10(tp.tensor(1000.0)).item(), 5)
    3.0
    """
    return ew.mul(ew.log(_float(input)), 1.0 / math.log(10.0))


def exp2(input):
    """Elementwise 2 ** input.

    >>> import tensorplay as tp
    >>> tp.exp2(tp.tensor([3.0, -1.0])).tolist()
    [8.0, 0.5]
    """
    return ew.pow(2.0, _float(input))


def trunc(input):
    """Round toward zero (integers unchanged).

    >>> import tensorplay as tp
    >>> tp.trunc(tp.tensor([-1.7, 1.7])).tolist()
    [-1.0, 1.0]
    """
    x = _t(input)
    if not dtype_of(x).is_floating_point:
        return ew.add(x, 0) if not dtype_of(x).is_bool else x
    return ew.where(ew.lt(x, 0.0), ew.ceil(x), ew.floor(x))


fix = trunc


def frac(input):
    """The fractional part, ``input - trunc(input)`` (sign of the input).

    >>> import tensorplay as tp
    >>> [round(v, 4) for v in tp.frac(tp.tensor([-1.25, 2.5])).tolist()]
    [-0.25, 0.5]
    """
    x = _t(input)
    if not dtype_of(x).is_floating_point:
        raise TypeError(f"frac: expected a floating point tensor, got {dtype_of(x).name}")
    return ew.sub(x, trunc(x))


def erfc(input):
    """The complementary error function ``1 - erf(x)`` (absolute accuracy: tiny values for large x are 0).

    >>> import tensorplay as tp
    >>> tp.erfc(tp.tensor([0.0])).tolist()
    [1.0]
    """
    return ew.sub(1.0, ew.erf(_float(input)))


def sgn(input):
    """The sign of each element (for real tensors, as `sign`).

    >>> import tensorplay as tp
    >>> tp.sgn(tp.tensor([-2.0, 0.0, 3.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    return ew.sign(input)


def signbit(input):
    """True where the sign bit is set (negative numbers and -0.0).

    >>> import tensorplay as tp
    >>> tp.signbit(tp.tensor([-0.0, 0.0, -1.0, 2.0])).tolist()
    [True, False, True, False]
    """
    x = _t(input)
    if not dtype_of(x).is_floating_point:
        return ew.lt(x, 0)
    return ew.where(ew.eq(x, 0.0), ew.lt(ew.div(1.0, x), 0.0), ew.lt(x, 0.0))


def heaviside(input, values):
    """The Heaviside step: 0 below zero, 1 above, `values` at zero.

    >>> import tensorplay as tp
    >>> tp.heaviside(tp.tensor([-1.0, 0.0, 2.0]), tp.tensor(0.5)).tolist()
    [0.0, 0.5, 1.0]
    """
    x, v = _t(input), _t(values)
    if dtype_of(x) is not dtype_of(v):
        raise TypeError(f"heaviside is not yet implemented for tensors with different dtypes: "
                        f"{dtype_of(x).name} and {dtype_of(v).name}")
    d = dtype_of(x)
    return ew.where(ew.eq(x, 0), v, convert(ew.gt(x, 0), d))


def logaddexp(input, other):
    """``log(exp(input) + exp(other))`` without overflow.

    >>> import tensorplay as tp
    >>> round(tp.logaddexp(tp.tensor(1000.0), tp.tensor(1000.0)).item(), 2)
    1000.69
    """
    a, b = _float(input), _float(other)
    m = ew.maximum(a, b)
    d = ew.neg(ew.abs(ew.sub(a, b)))  # NaN for equal infinities, handled by the where
    both_inf = ew.bitwise_and(ew.eq(a, b), isinf(a))
    return ew.where(both_inf, a, ew.add(m, ew.log1p(ew.exp(d))))


def logit(input, eps=None):
    """``log(p / (1 - p))``, with p clamped to [eps, 1 - eps] when `eps` is given.

    >>> import tensorplay as tp
    >>> tp.logit(tp.tensor([0.5])).tolist()
    [0.0]
    """
    p = _float(input)
    if eps is not None:
        p = ew.clamp(p, eps, 1.0 - eps)
    return ew.log(ew.div(p, ew.sub(1.0, p)))


def xlogy(input, other):
    """``input * log(other)``, and 0 where input is 0 (unless other is NaN).

    >>> import tensorplay as tp
    >>> tp.xlogy(tp.tensor([0.0, 2.0]), tp.tensor([0.0, 1.0])).tolist()
    [0.0, 0.0]
    """
    x, y = _float(input), _float(other)
    prod = ew.mul(x, ew.log(y))
    zero_x = ew.bitwise_and(ew.eq(x, 0.0), ew.logical_not(ew.isnan(y)))
    return ew.where(zero_x, ew.mul(x, 0.0), prod)


def isinf(input):
    """True at +inf and -inf.

    >>> import tensorplay as tp
    >>> tp.isinf(tp.tensor([1.0, float("-inf"), float("nan")])).tolist()
    [False, True, False]
    """
    x = _t(input)
    if not dtype_of(x).is_floating_point:
        return filled(False, dtypes.bool_, shape_of(x), (x,))
    return ew.eq(ew.abs(x), float("inf"))


def isposinf(input):
    """True at +inf."""
    x = _t(input)
    if not dtype_of(x).is_floating_point:
        return filled(False, dtypes.bool_, shape_of(x), (x,))
    return ew.eq(x, float("inf"))


def isneginf(input):
    """True at -inf."""
    x = _t(input)
    if not dtype_of(x).is_floating_point:
        return filled(False, dtypes.bool_, shape_of(x), (x,))
    return ew.eq(x, float("-inf"))


def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (default: the dtype's largest and smallest).

    >>> import tensorplay as tp
    >>> tp.nan_to_num(tp.tensor([float("-inf")]), neginf=-1.0).tolist()
    [-1.0]
    """
    x = _t(input)
    d = dtype_of(x)
    if not d.is_floating_point:
        return ew.add(x, 0) if not d.is_bool else x
    import numpy as np

    info = np.finfo(d.np)
    hi = float(info.max) if posinf is None else float(posinf)
    lo = float(info.min) if neginf is None else float(neginf)
    x = ew.where(ew.isnan(x), float(nan), x)
    x = ew.where(ew.eq(x, float("inf")), hi, x)
    return ew.where(ew.eq(x, float("-inf")), lo, x)


def _fminmax(pick, name: str):
    def fn(input, other):
        dtype = result_type(input, other, op=name)
        a, b = convert(_t(input), dtype), convert(_t(other), dtype)
        if not dtype.is_floating_point:
            return pick(a, b)
        m = pick(a, b)
        return ew.where(ew.isnan(a), b, ew.where(ew.isnan(b), a, m))
    fn.__name__ = fn.__qualname__ = name
    return fn


fmax = _fminmax(ew.maximum, "fmax")
fmax.__doc__ = """Elementwise maximum that ignores NaN (NaN only where both are NaN).

    >>> import tensorplay as tp
    >>> tp.fmax(tp.tensor([1.0, float("nan")]), tp.tensor([float("nan"), 2.0])).tolist()
    [1.0, 2.0]
    """
fmin = _fminmax(ew.minimum, "fmin")
fmin.__doc__ = """Elementwise minimum that ignores NaN (NaN only where both are NaN).

    >>> import tensorplay as tp
    >>> tp.fmin(tp.tensor([1.0, float("nan")]), tp.tensor([0.0, 2.0])).tolist()
    [0.0, 2.0]
    """


def logical_xor(input, other):
    """True where exactly one of the two is nonzero.

    >>> import tensorplay as tp
    >>> tp.logical_xor(tp.tensor([0, 1, 2]), tp.tensor([1, 1, 0])).tolist()
    [True, False, True]
    """
    a, b = _t(input), _t(other)
    return ew.ne(ew.ne(a, 0), ew.ne(b, 0))


def is_floating_point(input) -> bool:
    """True when `input`'s dtype is a floating point type.

    >>> import tensorplay as tp
    >>> tp.is_floating_point(tp.ones(1)), tp.is_floating_point(tp.ones(1, dtype=tp.int64))
    (True, False)
    """
    return _t(input).dtype.is_floating_point


# (name, fn, Tensor method?, in-place method?)
for _name, _fn, _method, _inplace in (
    ("asin", asin, True, True), ("acos", acos, True, True), ("atan", atan, True, True),
    ("arcsin", asin, True, True), ("arccos", acos, True, True), ("arctan", atan, True, True),
    ("sinh", sinh, True, True), ("cosh", cosh, True, True), ("log2", log2, True, True),
    ("log10", log10, True, True), ("exp2", exp2, True, True), ("trunc", trunc, True, True),
    ("fix", fix, True, True), ("frac", frac, True, True), ("erfc", erfc, True, True), ("sgn", sgn, True, True),
    ("signbit", signbit, True, False), ("heaviside", heaviside, True, True), ("logaddexp", logaddexp, True, False),
    ("logit", logit, True, True), ("xlogy", xlogy, True, True), ("isinf", isinf, True, False),
    ("isposinf", isposinf, True, False), ("isneginf", isneginf, True, False),
    ("nan_to_num", nan_to_num, True, True), ("fmax", fmax, True, False), ("fmin", fmin, True, False),
    ("logical_xor", logical_xor, True, True), ("is_floating_point", is_floating_point, False, False),
):
    op(_name, _fn, method=_method, inplace=_inplace)

"""Elementwise math: arithmetic with broadcasting and type promotion, unary
functions, comparisons, `where`, `clamp`. Each is a thin layer over one
primitive (or a short composite)."""
from __future__ import annotations

from ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, constant, convert, get_default_dtype, prepare, result_type


def _float_operand(x: Tensor, op: str) -> Tensor:
    """Integer and bool tensors are computed in the default float dtype, as in PyTorch."""
    x = as_tensor_operand(x)
    return x if x.dtype.is_floating_point else convert(x, get_default_dtype())


def _unary_float(prim: str):
    def fn(input):
        return bind(prim, _float_operand(input, prim))
    fn.__name__ = prim
    fn.__doc__ = f"Elementwise {prim}; integer inputs are promoted to the default float dtype."
    return fn


sin = _unary_float("sin")
cos = _unary_float("cos")
tan = _unary_float("tan")
exp = _unary_float("exp")
log = _unary_float("log")
log1p = _unary_float("log1p")
expm1 = _unary_float("expm1")
sqrt = _unary_float("sqrt")
rsqrt = _unary_float("rsqrt")
tanh = _unary_float("tanh")
sigmoid = _unary_float("logistic")
sigmoid.__name__ = "sigmoid"
erf = _unary_float("erf")


def _unary_same(prim: str, name: str):
    def fn(input):
        x = as_tensor_operand(input)
        if x.dtype.is_bool:
            raise TypeError(f"{name}: not supported for bool tensors")
        return bind(prim, x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}, keeping the input dtype."
    return fn


neg = _unary_same("neg", "neg")
negative = neg
abs = _unary_same("abs", "abs")
sign = _unary_same("sign", "sign")


def _rounding(prim: str):
    def fn(input):
        x = as_tensor_operand(input)
        return bind(prim, x) if x.dtype.is_floating_point else x
    fn.__name__ = prim
    fn.__doc__ = f"Elementwise {prim}; integer tensors are returned unchanged."
    return fn


floor = _rounding("floor")
ceil = _rounding("ceil")
round = _rounding("round")


def relu(input):
    """max(input, 0) elementwise."""
    x = as_tensor_operand(input)
    return bind("max", x, constant(0, x.dtype, x.shape, (x,)))


def _binary(prim: str, name: str, float_only: bool = False):
    def fn(input, other):
        dtype = result_type(input, other)
        if float_only and not dtype.is_floating_point:
            dtype = get_default_dtype()
        a, b = prepare((input, other), name, dtype)
        return bind(prim, a, b)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting and type promotion."
    return fn


add_ = _binary("add", "add")
sub_ = _binary("sub", "sub")
mul = _binary("mul", "mul")
div = _binary("div", "div", float_only=True)
true_divide = div
pow = _binary("pow", "pow")
maximum = _binary("max", "maximum")
minimum = _binary("min", "minimum")
atan2 = _binary("atan2", "atan2", float_only=True)
fmod = _binary("rem", "fmod")


def add(input, other, *, alpha=1):
    """input + alpha * other, with broadcasting and type promotion."""
    return add_(input, other if alpha == 1 else mul(other, alpha))


def sub(input, other, *, alpha=1):
    """input - alpha * other, with broadcasting and type promotion."""
    return sub_(input, other if alpha == 1 else mul(other, alpha))


subtract = sub
multiply = mul
divide = div


def _pow_impl(input, exponent):
    dtype = result_type(input, exponent)
    if not dtype.is_floating_point:
        if isinstance(exponent, int) and exponent >= 0 and isinstance(input, Tensor):
            return _int_pow(input, exponent)
        dtype = get_default_dtype()
    a, b = prepare((input, exponent), "pow", dtype)
    return bind("pow", a, b)


def _int_pow(x: Tensor, n: int) -> Tensor:
    result = constant(1, x.dtype, x.shape, (x,))
    base = x
    while n:
        if n & 1:
            result = bind("mul", result, base)
        n >>= 1
        if n:
            base = bind("mul", base, base)
    return result


pow = _pow_impl
pow.__name__ = "pow"
pow.__doc__ = "input ** exponent elementwise; float results for non-integral powers."


def remainder(input, other):
    """Python-style modulus: the result has the sign of the divisor."""
    r = fmod(input, other)
    _, b = prepare((input, other), "remainder", r.dtype)
    fix = bind("and", bind("ne", r, constant(0, r.dtype, r.shape, (r,))),
               bind("ne", bind("lt", r, constant(0, r.dtype, r.shape, (r,))),
                    bind("lt", b, constant(0, r.dtype, r.shape, (r,)))))
    return where(fix, add_(r, b), r)


def floor_divide(input, other):
    """Division rounded toward minus infinity (Python's //)."""
    dtype = result_type(input, other)
    a, b = prepare((input, other), "floor_divide", dtype)
    if dtype.is_floating_point:
        return bind("floor", bind("div", a, b))
    q = bind("div", a, b)
    zero = constant(0, dtype, q.shape, (q,))
    inexact = bind("ne", bind("mul", q, b), a)
    negative = bind("ne", bind("lt", a, zero), bind("lt", b, zero))
    return where(bind("and", inexact, negative), bind("sub", q, constant(1, dtype, q.shape, (q,))), q)


def _compare(prim: str, name: str):
    def fn(input, other):
        a, b = prepare((input, other), name)
        return bind(prim, a, b)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise comparison {name}: a bool tensor."
    return fn


eq = _compare("eq", "eq")
ne = _compare("ne", "ne")
lt = _compare("lt", "lt")
le = _compare("le", "le")
gt = _compare("gt", "gt")
ge = _compare("ge", "ge")
less, less_equal, greater, greater_equal, not_equal = lt, le, gt, ge, ne


def _logical(prim: str, name: str):
    def fn(input, other):
        dtype = result_type(input, other)
        if dtype.is_floating_point:
            raise TypeError(f"{name}: not supported for floating point tensors ({dtype.name})")
        a, b = prepare((input, other), name, dtype)
        return bind(prim, a, b)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of bool or integer tensors."
    return fn


bitwise_and = _logical("and", "bitwise_and")
bitwise_or = _logical("or", "bitwise_or")
bitwise_xor = _logical("xor", "bitwise_xor")


def bitwise_not(input):
    """Bitwise (or logical, for bool) negation."""
    x = as_tensor_operand(input)
    if x.dtype.is_floating_point:
        raise TypeError("bitwise_not: not supported for floating point tensors")
    return bind("logical_not", x)


def logical_not(input):
    """Elementwise not, as a bool tensor."""
    return bind("logical_not", convert(as_tensor_operand(input), dtypes.bool_))


def logical_and(input, other):
    return bitwise_and(convert(as_tensor_operand(input), dtypes.bool_), convert(as_tensor_operand(other), dtypes.bool_))


def logical_or(input, other):
    return bitwise_or(convert(as_tensor_operand(input), dtypes.bool_), convert(as_tensor_operand(other), dtypes.bool_))


def where(condition, input, other):
    """Elementwise choice: `input` where `condition` holds, else `other` (all broadcast together)."""
    cond = as_tensor_operand(condition)
    if not cond.dtype.is_bool:
        cond = convert(cond, dtypes.bool_)
    dtype = result_type(input, other)
    a, b = prepare((input, other), "where", dtype)
    from ._common import broadcast_shapes, broadcast_to_shape

    shape = broadcast_shapes(tuple(cond.shape), tuple(a.shape), op="where")
    return bind("select", broadcast_to_shape(cond, shape, "where"), broadcast_to_shape(a, shape, "where"),
                broadcast_to_shape(b, shape, "where"))


def clamp(input, min=None, max=None):
    """Limit `input` to [min, max]; either bound may be None or a tensor."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    out = as_tensor_operand(input)
    if min is not None:
        out = maximum(out, min)
    if max is not None:
        out = minimum(out, max)
    return out


clip = clamp


def square(input):
    """input * input."""
    return mul(input, input)


def reciprocal(input):
    """1 / input in floating point."""
    return div(1.0, _float_operand(input, "reciprocal"))


def isnan(input):
    """True where the input is NaN."""
    x = as_tensor_operand(input)
    return ne(x, x)


def isfinite(input):
    """True where the input is neither infinite nor NaN."""
    x = as_tensor_operand(input)
    if not x.dtype.is_floating_point:
        return constant(True, dtypes.bool_, x.shape, (x,))
    return lt(abs(x), float("inf"))


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    return add(input, mul(weight, sub(end, input)))


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return add(input, mul(mul(tensor1, tensor2), value))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2."""
    return add(input, mul(div(tensor1, tensor2), value))


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """|input - other| <= atol + rtol * |other| elementwise."""
    a, b = prepare((input, other), "isclose")
    if not a.dtype.is_floating_point:
        return eq(a, b)
    close = le(abs(sub(a, b)), add(mul(abs(b), rtol), atol))
    close = bitwise_or(close, eq(a, b))  # equal infinities
    if equal_nan:
        close = bitwise_or(close, bitwise_and(isnan(a), isnan(b)))
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every element of input is close to other (see `isclose`)."""
    from .reduction import all as _all

    return bool(_all(isclose(input, other, rtol, atol, equal_nan)))


def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    from .reduction import all as _all

    return bool(_all(eq(input, other)))

"""Elementwise math: arithmetic with broadcasting and type promotion, unary
functions, comparisons, `where`, `clamp`. Each is a thin layer over one
primitive (or a short composite).

Dtype rules follow PyTorch: `result_type` promotion for binary ops; true
division and the float functions (sin, exp, ...) compute integer and bool
inputs in the default float dtype; `+`/`*` on bools are logical or/and.
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import REGISTRY as _P, dtypes

from .._tensor import Tensor
from .._state import STATE
from .._trace import memo_traced_op
from .._traced_memo import memo_composite
from ._table import op
from ._common import (_SCALARS, as_tensor_operand, broadcast_shapes, constant, convert, copy, dtype_of, ebind,
                      filled, fixed, get_default_dtype, prepare, result_type, shape_of)

def _tensor_arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _float_operand(x, op: str = "") -> Tensor:
    """Integer and bool tensors are computed in the default float dtype, as in PyTorch."""
    x = _tensor_arg(x)
    return x if dtype_of(x).is_floating_point else convert(x, get_default_dtype())


_PY_CATEGORY = {bool: 0, int: 1, float: 2}
_CATEGORY = {d: dtypes.category(d) for d in dtypes.KNOWN}

# numpy scalars have the categories `scalar_dtype` gives them: bool < integer < float
_PY_CATEGORY.update({t: 0 for t in (np.bool_,)})
_PY_CATEGORY.update({t: 1 for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)})
_PY_CATEGORY.update({t: 2 for t in (np.float16, np.float32, np.float64, np.longdouble)})
_BROADCAST = _P["broadcast_in_dim"]


def _broadcast2(sa: tuple, sb: tuple, op: str) -> tuple:
    """The broadcast of two shapes; one being a suffix of the other (a bias) is the fast case."""
    na, nb = len(sa), len(sb)
    if na >= nb and sa[na - nb:] == sb:
        return sa
    if nb > na and sb[nb - na:] == sa:
        return sb
    return broadcast_shapes(sa, sb, op=op)


def _expand(t: Tensor, s: tuple, shape: tuple) -> Tensor:
    """`t` (of shape `s`, broadcastable to `shape`) broadcast to `shape`, as `broadcast_to_shape`."""
    if s == shape:
        return t
    return ebind(_BROADCAST, t, shape=shape, broadcast_dimensions=tuple(range(len(shape) - len(s), len(shape))))


def _operands(input, other, op: str, dtype=None):
    """(a, b, dtype): the two operands promoted and broadcast.

    Fast paths for the common cases -- two tensors (one shape, or broadcast against each other),
    a tensor and a Python or numpy number -- give the same result as the general `result_type` +
    `prepare`: the same conversions and the same broadcast_in_dim nodes, in the same order.
    """
    if isinstance(input, Tensor):
        if isinstance(other, Tensor):
            da, db = dtype_of(input), dtype_of(other)
            if dtype is None:
                dtype = da if da is db else result_type(input, other, op=op)
            a = input if da is dtype else convert(input, dtype)
            b = other if db is dtype else convert(other, dtype)
            sa, sb = shape_of(a), shape_of(b)
            if sa == sb:
                return a, b, dtype
            shape = _broadcast2(sa, sb, op)
            return _expand(a, sa, shape), _expand(b, sb, shape), dtype
        cat = _PY_CATEGORY.get(type(other))
        if cat is not None:
            d = dtype_of(input)
            if dtype is None:
                dtype = d if cat <= _CATEGORY[d] else (dtypes.int64 if cat == 1 else get_default_dtype())
            a = input if d is dtype else convert(input, dtype)
            return a, constant(other, dtype, shape_of(a), (a,)), dtype
    elif isinstance(other, Tensor):
        cat = _PY_CATEGORY.get(type(input))
        if cat is not None:
            d = dtype_of(other)
            if dtype is None:
                dtype = d if cat <= _CATEGORY[d] else (dtypes.int64 if cat == 1 else get_default_dtype())
            b = other if d is dtype else convert(other, dtype)
            return constant(input, dtype, shape_of(b), (b,)), b, dtype
    if dtype is None:
        dtype = result_type(input, other, op=op)
    a, b = prepare((input, other), op, dtype)
    return a, b, dtype


def _no_bool(dtype, op: str):
    if dtype.is_bool:
        raise TypeError(f"{op}: not supported for bool tensors")


# --- unary ---------------------------------------------------------------------------------------
def _unary_float(prim: str, name: str | None = None):
    p = _P[prim]
    default = get_default_dtype

    def fn(input):
        x = input if isinstance(input, Tensor) else as_tensor_operand(input)
        if not dtype_of(x).is_floating_point:
            x = convert(x, default())
        return ebind(p, x)
    fn.__name__ = name or prim
    fn.__qualname__ = fn.__name__
    fn.__doc__ = f"Elementwise {name or prim}; integer and bool inputs are computed in the default float dtype."
    return fn


# The op table's float functions of one primitive each: public name -> primitive. Each row becomes
# `tp.<name>`, `Tensor.<name>` and the in-place `Tensor.<name>_`.
FLOAT_UNARY = {
    "sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh", "sigmoid": "logistic", "erf": "erf",
    "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "cbrt": "cbrt",
}
for _name, _prim in FLOAT_UNARY.items():
    globals()[_name] = op(_name, memo_traced_op(_unary_float(_prim, _name), 1), inplace=True)


def _unary_same(prim: str, name: str):
    p = _P[prim]

    def fn(input):
        x = _tensor_arg(input)
        if dtype_of(x).is_bool:
            raise TypeError(f"{name}: not supported for bool tensors (shape {tuple(shape_of(x))})")
        return ebind(p, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, keeping the input dtype."
    return fn


neg = _unary_same("neg", "neg")
negative = neg
abs = _unary_same("abs", "abs")


def sign(input):
    """-1, 0 or 1 elementwise, keeping the input dtype (bool tensors are their own sign); as torch, NaN gives 0.

    >>> import tensorplay as tp
    >>> tp.sign(tp.tensor([-2.0, 0.0, float("nan"), 3.0]))
    tensor([-1.,  0.,  0.,  1.])
    """
    x = _tensor_arg(input)
    d = dtype_of(x)
    if d.is_bool:
        return copy(x)
    s = ebind(_P["sign"], x)
    return where(isnan(x), constant(0, d, (), (x,)), s) if d.is_floating_point else s


def _rounding(prim: str):
    p = _P[prim]

    def fn(input):
        x = _tensor_arg(input)
        d = dtype_of(x)
        _no_bool(d, prim)
        return ebind(p, x) if d.is_floating_point else copy(x)
    fn.__name__ = fn.__qualname__ = prim
    fn.__doc__ = f"Elementwise {prim}; integer tensors are returned unchanged (as a copy), bool is an error."
    return fn


floor = _rounding("floor")
ceil = _rounding("ceil")
_round = _rounding("round")


def round(input, *, decimals: int = 0):
    """Round half to even; with `decimals`, to that many decimal places (as torch.round)."""
    x = _tensor_arg(input)
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if decimals == 0:
        return _round(x)
    if not dtype_of(x).is_floating_point:
        raise TypeError(f"round: decimals={decimals} is not supported for {dtype_of(x).name} tensors")
    scale = 10.0 ** decimals
    if decimals > 0:
        return div(_round(mul(x, scale)), scale)
    return mul(_round(div(x, 10.0 ** -decimals)), 10.0 ** -decimals)


def relu(input):
    """max(input, 0) elementwise; as in PyTorch its derivative at 0 is 0 (a select, not a max)."""
    stack = STATE.stack
    if stack and input.__class__ is Tensor:  # traced: replay its 3 nodes (pbig, `_traced_memo`)
        out = _RELU_HIT(stack[-1], _MEMO_KEY, input)
        return _RELU_MEMO(_MEMO_KEY, (input,), input) if out is None else out
    return _relu(input)


def _relu(input):
    x = _tensor_arg(input)
    d = dtype_of(x)
    _no_bool(d, "relu")
    zero = fixed(0, d, shape_of(x), (x,))
    return ebind(_P["select"], ebind(_P["le"], x, zero), zero, x)  # NaN stays NaN


# --- binary arithmetic ---------------------------------------------------------------------------
def _scaled(b: Tensor, alpha, dtype, op: str) -> Tensor:
    """alpha * b for add/sub's `alpha`, which must not be float for integral results (as in PyTorch)."""
    if not isinstance(alpha, _SCALARS):
        raise TypeError(f"{op}: alpha must be a Python number, got {type(alpha).__name__}")
    if isinstance(alpha, (float, np.floating)) and not dtype.is_floating_point:
        raise TypeError(f"{op}: for integral input tensors, argument alpha must not be a floating point number")
    if dtype.is_bool:
        return b if alpha else constant(False, dtype, shape_of(b), (b,))
    return ebind(_P["mul"], b, constant(alpha, dtype, shape_of(b), (b,)))


def add(input, other, *, alpha=1):
    """input + alpha * other, with broadcasting and type promotion (logical or for bools)."""
    stack = STATE.stack
    if stack and input.__class__ is Tensor and other.__class__ is Tensor and alpha.__class__ is int \
            and alpha == 1:  # traced: replay the broadcast + add (pbig, `_traced_memo`)
        out = _ADD_HIT(stack[-1], _MEMO_KEY, input, other)
        return _ADD_MEMO(_MEMO_KEY, (input, other), input, other) if out is None else out
    return _add(input, other, alpha=alpha)


def _add(input, other, *, alpha=1):
    a, b, dtype = _operands(input, other, "add")
    if type(alpha) is not int or alpha != 1:
        b = _scaled(b, alpha, dtype, "add")
    return ebind(_P["or"] if dtype.is_bool else _P["add"], a, b)


_MEMO_KEY = ("elementwise",)  # (the operands' types determine what relu and a tensor-tensor add emit)
_RELU_MEMO = memo_composite(_relu)
_ADD_MEMO = memo_composite(_add)
_RELU_HIT, _ADD_HIT = _RELU_MEMO.hit, _ADD_MEMO.hit


def sub(input, other, *, alpha=1):
    """input - alpha * other, with broadcasting and type promotion."""
    for o in (input, other):  # PyTorch refuses any bool operand (a Python bool is a bool operand too)
        if isinstance(o, bool) or (isinstance(o, Tensor) and dtype_of(o).is_bool):
            raise TypeError("sub: subtraction, the `-` operator, with a bool tensor is not supported; "
                            "to invert a mask use the `~` or `logical_not()` operator instead")
    a, b, dtype = _operands(input, other, "sub")
    if type(alpha) is not int or alpha != 1:
        b = _scaled(b, alpha, dtype, "sub")
    return ebind(_P["sub"], a, b)


subtract = sub


_LOW_FLOATS = frozenset(dtypes.LOW_FLOATS)
_PY_NUMBERS = (float, int)


def _low_by_scalar(prim: str, x: Tensor, s) -> Tensor:
    """A 16-bit float tensor times (or divided by) a Python number as torch's CPU kernels do it: the
    number is taken in float32 (not rounded to 16 bits first), then the result is rounded once."""
    d = dtype_of(x)
    x32 = convert(x, dtypes.float32)
    return convert(ebind(_P[prim], x32, constant(s, dtypes.float32, shape_of(x32), (x32,))), d)


def mul(input, other):
    """input * other, with broadcasting and type promotion (logical and for bools).

    A 16-bit float tensor times a Python number uses the number in float32, as torch does:

    >>> import tensorplay as tp
    >>> (tp.tensor([3.0]).half() * 0.1).item()  # float32(0.1) * 3, rounded once; not 3 * half(0.1)
    0.300048828125
    """
    if other.__class__ in _PY_NUMBERS and input.__class__ is Tensor and dtype_of(input) in _LOW_FLOATS:
        return _low_by_scalar("mul", input, other)
    if input.__class__ in _PY_NUMBERS and other.__class__ is Tensor and dtype_of(other) in _LOW_FLOATS:
        return _low_by_scalar("mul", other, input)
    a, b, dtype = _operands(input, other, "mul")
    return ebind(_P["and"] if dtype.is_bool else _P["mul"], a, b)


multiply = mul


def _check_int_divisor(b: Tensor, op: str):
    """Integer division by zero is an error in PyTorch; we can check it on concrete values."""
    if b._trace is None and (b._data == 0).any():
        raise RuntimeError(f"{op}: ZeroDivisionError (integer division by zero, divisor shape {tuple(shape_of(b))})")


def div(input, other, *, rounding_mode=None):
    """True division (float result, integers promote to the default float), or with `rounding_mode`
    ``"trunc"``/``"floor"`` the rounded quotient in the promoted dtype."""
    if rounding_mode is None:
        if other.__class__ in _PY_NUMBERS and input.__class__ is Tensor and dtype_of(input) in _LOW_FLOATS:
            return _low_by_scalar("div", input, other)  # the number in float32, as torch (see `mul`)
        dtype = result_type(input, other, op="div")
        if not dtype.is_floating_point:
            dtype = get_default_dtype()
        a, b, _ = _operands(input, other, "div", dtype)
        return ebind(_P["div"], a, b)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        a, b, dtype = _operands(input, other, "div")
        _no_bool(dtype, "div")
        if dtype.is_floating_point:
            q = ebind(_P["div"], a, b)
            return where(ebind(_P["lt"], q, constant(0, dtype, shape_of(q), (q,))), ceil(q), floor(q))
        _check_int_divisor(b, "div")
        return ebind(_P["div"], a, b)  # the integer primitive truncates toward zero
    raise ValueError(f"div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


divide = true_divide = div


def _pow(input, exponent):
    """input ** exponent elementwise, in the promoted dtype (integer powers stay integer)."""
    dtype = result_type(input, exponent, op="pow")
    _no_bool(dtype, "pow")
    if dtype.is_floating_point:
        a, b, _ = _operands(input, exponent, "pow", dtype)
        return ebind(_P["pow"], a, b)
    if isinstance(input, Tensor) and isinstance(exponent, (int,)) and not isinstance(exponent, bool):
        if exponent < 0:
            raise ValueError("pow: integers to negative integer powers are not allowed")
        return _int_pow(convert(input, dtype), exponent)
    a, b, _ = _operands(input, exponent, "pow", dtype)
    return _int_pow_tensor(a, b)


pow = _pow
pow.__name__ = pow.__qualname__ = "pow"


def _int_pow(x: Tensor, n: int) -> Tensor:
    """x ** n for a non-negative Python int by repeated squaring (wrapping like C integers)."""
    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else ebind(_P["mul"], result, base)
        n >>= 1
        if n:
            base = ebind(_P["mul"], base, base)
    return filled(1, dtype_of(x), shape_of(x), (x,)) if result is None else \
        (copy(result) if result is x else result)


def _int_pow_tensor(a: Tensor, b: Tensor) -> Tensor:
    """a ** b for integer tensors of equal shape and dtype: square-and-multiply over the bits of b.

    Negative exponents give PyTorch's integer results: 1 for base 1, +-1 for base -1, else 0.
    """
    dtype, shape = dtype_of(a), shape_of(a)

    def k(v):
        return constant(v, dtype, shape, (a, b))

    negative = ebind(_P["lt"], b, k(0))
    e = where(negative, k(0), b)
    if e._trace is None:
        nbits = int(e._data.max()).bit_length() if e._data.size else 0
    else:
        nbits = dtype.itemsize * 8 - 1
    one = k(1)
    result = filled(1, dtype, shape, (a, b))
    base = a
    for i in range(nbits):
        bit = ebind(_P["ne"], ebind(_P["and"], e, one), k(0))
        result = ebind(_P["select"], bit, ebind(_P["mul"], result, base), result)
        if i + 1 < nbits:
            base = ebind(_P["mul"], base, base)
            e = ebind(_P["div"], e, k(2))
    odd = ebind(_P["ne"], ebind(_P["and"], b, one), k(0))
    special = where(ebind(_P["eq"], a, one), one,
                    where(ebind(_P["eq"], a, k(-1)), where(odd, k(-1), one), k(0)))
    return ebind(_P["select"], negative, special, result)


def maximum(input, other):
    """Elementwise maximum (NaN propagates), with broadcasting and type promotion."""
    a, b, _ = _operands(input, other, "maximum")
    return ebind(_P["max"], a, b)


def minimum(input, other):
    """Elementwise minimum (NaN propagates), with broadcasting and type promotion."""
    a, b, _ = _operands(input, other, "minimum")
    return ebind(_P["min"], a, b)


def _binary_float(prim: str, name: str):
    p = _P[prim]

    def fn(input, other):
        dtype = result_type(input, other, op=name)
        if not dtype.is_floating_point:
            dtype = get_default_dtype()
        a, b, _ = _operands(input, other, name, dtype)
        return ebind(p, a, b)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise {name} of input and other, broadcast and promoted; integer and bool inputs "
                  f"are computed in the default float dtype.")
    return fn


# The op table's float functions of two operands: public name -> primitive (function, method, in place).
FLOAT_BINARY = {"atan2": "atan2", "hypot": "hypot"}
for _name, _prim in FLOAT_BINARY.items():
    globals()[_name] = op(_name, _binary_float(_prim, _name), inplace=True)


def fmod(input, other):
    """C-style remainder: the result has the sign of the dividend (torch.fmod)."""
    a, b, dtype = _operands(input, other, "fmod")
    _no_bool(dtype, "fmod")
    if not dtype.is_floating_point:
        _check_int_divisor(b, "fmod")
    return ebind(_P["rem"], a, b)


def remainder(input, other):
    """Python-style modulus: the result has the sign of the divisor (torch.remainder)."""
    a, b, dtype = _operands(input, other, "remainder")
    _no_bool(dtype, "remainder")
    if not dtype.is_floating_point:
        _check_int_divisor(b, "remainder")
    r = ebind(_P["rem"], a, b)
    zero = constant(0, dtype, shape_of(r), (r,))
    fix = ebind(_P["and"], ebind(_P["ne"], r, zero),
                ebind(_P["ne"], ebind(_P["lt"], r, zero), ebind(_P["lt"], b, zero)))
    return ebind(_P["select"], fix, ebind(_P["add"], r, b), r)


def floor_divide(input, other):
    """Division rounded toward minus infinity (Python's //, also for floats: 1 // 0.1 == 9)."""
    a, b, dtype = _operands(input, other, "floor_divide")
    _no_bool(dtype, "floor_divide")
    shape = shape_of(a)

    def k(v):
        return constant(v, dtype, shape, (a, b))

    if not dtype.is_floating_point:
        _check_int_divisor(b, "floor_divide")
        q = ebind(_P["div"], a, b)  # truncates toward zero
        inexact = ebind(_P["ne"], ebind(_P["mul"], q, b), a)
        negative = ebind(_P["ne"], ebind(_P["lt"], a, k(0)), ebind(_P["lt"], b, k(0)))
        return ebind(_P["select"], ebind(_P["and"], inexact, negative), ebind(_P["sub"], q, k(1)), q)
    # CPython's float floor division (also numpy's and PyTorch's): exact via fmod, then rounded.
    q = ebind(_P["div"], a, b)
    mod = ebind(_P["rem"], a, b)
    d = ebind(_P["div"], ebind(_P["sub"], a, mod), b)
    adjust = ebind(_P["and"], ebind(_P["ne"], mod, k(0)),
                   ebind(_P["ne"], ebind(_P["lt"], b, k(0)), ebind(_P["lt"], mod, k(0))))
    d = ebind(_P["select"], adjust, ebind(_P["sub"], d, k(1)), d)
    fd = ebind(_P["floor"], d)
    fd = ebind(_P["select"], ebind(_P["gt"], ebind(_P["sub"], d, fd), k(0.5)), ebind(_P["add"], fd, k(1)), fd)
    fd = ebind(_P["select"], ebind(_P["ne"], d, k(0)), fd, ebind(_P["mul"], q, k(0)))  # signed zero
    return ebind(_P["select"], ebind(_P["eq"], b, k(0)), q, fd)


# --- comparisons and logic -----------------------------------------------------------------------
def _compare(prim: str, name: str):
    p = _P[prim]

    def fn(input, other):
        a, b, _ = _operands(input, other, name)
        return ebind(p, a, b)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise comparison {name} in the promoted dtype: a bool tensor."
    return fn


eq = _compare("eq", "eq")
ne = _compare("ne", "ne")
lt = _compare("lt", "lt")
le = _compare("le", "le")
gt = _compare("gt", "gt")
ge = _compare("ge", "ge")
less, less_equal, greater, greater_equal, not_equal = lt, le, gt, ge, ne


def _logical(prim: str, name: str):
    p = _P[prim]

    def fn(input, other):
        dtype = result_type(input, other, op=name)
        if dtype.is_floating_point:
            raise TypeError(f"{name}: not supported for floating point tensors ({dtype.name})")
        a, b, _ = _operands(input, other, name, dtype)
        return ebind(p, a, b)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of bool or integer tensors."
    return fn


bitwise_and = _logical("and", "bitwise_and")
bitwise_or = _logical("or", "bitwise_or")
bitwise_xor = _logical("xor", "bitwise_xor")


def bitwise_not(input):
    """Bitwise (or logical, for bool) negation."""
    x = _tensor_arg(input)
    if dtype_of(x).is_floating_point:
        raise TypeError("bitwise_not: not supported for floating point tensors")
    return ebind(_P["logical_not"], x)


def logical_not(input):
    """Elementwise not, as a bool tensor."""
    return ebind(_P["logical_not"], convert(_tensor_arg(input), dtypes.bool_))


def logical_and(input, other):
    """Elementwise and of the truth values, as a bool tensor."""
    return bitwise_and(convert(_tensor_arg(input), dtypes.bool_), convert(_tensor_arg(other), dtypes.bool_))


def logical_or(input, other):
    """Elementwise or of the truth values, as a bool tensor."""
    return bitwise_or(convert(_tensor_arg(input), dtypes.bool_), convert(_tensor_arg(other), dtypes.bool_))


def where(condition, input, other):
    """Elementwise choice: `input` where `condition` holds, else `other` (all broadcast together)."""
    from ._common import broadcast_shapes, broadcast_to_shape

    cond = _tensor_arg(condition)
    if not dtype_of(cond).is_bool:
        raise TypeError(f"where: expected condition to be a bool tensor, but got dtype {dtype_of(cond).name} "
                        f"(shape {tuple(shape_of(cond))})")
    a, b, _ = _operands(input, other, "where")
    shape = shape_of(a)
    cshape = shape_of(cond)
    if cshape != shape:
        shape = broadcast_shapes(cshape, shape, op="where")
        cond, a, b = (broadcast_to_shape(t, shape, "where") for t in (cond, a, b))
    return ebind(_P["select"], cond, a, b)


def clamp(input, min=None, max=None):
    """Limit `input` to [min, max]; either bound may be None or a tensor (min > max gives max)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    # selects rather than max/min: NaN stays NaN and, as in PyTorch, the derivative is 1 on [min, max]
    out = _tensor_arg(input)
    if min is not None:
        out = where(lt(out, min), min, out)
    if max is not None:
        out = where(gt(out, max), max, out)
    return out


clip = clamp


def clamp_min(input, min):
    """Limit `input` from below: ``clamp(input, min=min)``.

    >>> import tensorplay as tp
    >>> tp.clamp_min(tp.tensor([-1.0, 2.0]), 0.5).tolist()
    [0.5, 2.0]
    """
    return clamp(input, min=min)


def clamp_max(input, max):
    """Limit `input` from above: ``clamp(input, max=max)``.

    >>> import tensorplay as tp
    >>> tp.clamp_max(tp.tensor([-1.0, 2.0]), 0.5).tolist()
    [-1.0, 0.5]
    """
    return clamp(input, max=max)


def square(input):
    """input * input (bool inputs give int64, as torch.square)."""
    x = _tensor_arg(input)
    if dtype_of(x).is_bool:
        x = convert(x, dtypes.int64)
    return mul(x, x)


def reciprocal(input):
    """1 / input in floating point."""
    return div(1.0, _float_operand(input, "reciprocal"))


def isnan(input):
    """True where the input is NaN."""
    x = _tensor_arg(input)
    if not dtype_of(x).is_floating_point:
        return filled(False, dtypes.bool_, shape_of(x), (x,))
    return ebind(_P["ne"], x, x)


def isfinite(input):
    """True where the input is neither infinite nor NaN."""
    x = _tensor_arg(input)
    d = dtype_of(x)
    if not d.is_floating_point:
        return filled(True, dtypes.bool_, shape_of(x), (x,))
    return ebind(_P["lt"], ebind(_P["abs"], x), constant(float("inf"), d, shape_of(x), (x,)))


def lerp(input, end, weight):
    """input + weight * (end - input), for floating point tensors."""
    for o in (input, end):
        if isinstance(o, Tensor) and not dtype_of(o).is_floating_point:
            raise TypeError(f"lerp: expected floating point tensors, got {dtype_of(o).name}")
    return add(input, mul(weight, sub(end, input)))


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, as torch: all three promoted to one dtype first, `value` cast to it.

    >>> import tensorplay as tp
    >>> big = tp.tensor([2 ** 20], dtype=tp.int32)
    >>> tp.addcmul(tp.zeros(1), big, big)  # the product is taken in float32, not int32
    tensor([1.0995e+12])
    >>> tp.addcmul(tp.tensor([1, 2]), tp.tensor([1, 2]), tp.tensor([3, 4]), value=0.5)  # int64: value -> 0
    tensor([1, 2])
    """
    x, t1, t2 = _tensor_arg(input), _tensor_arg(tensor1), _tensor_arg(tensor2)
    dtype = result_type(x, t1, t2, op="addcmul")
    x, t1, t2 = convert(x, dtype), convert(t1, dtype), convert(t2, dtype)
    value = bool(value) if dtype.is_bool else int(value) if dtype.is_integer else float(value)
    return add(x, mul(mul(t1, value), t2))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (integer tensor1 / tensor2 is an error, as in PyTorch)."""
    t1, t2 = _tensor_arg(tensor1), _tensor_arg(tensor2)
    if not dtype_of(t1).is_floating_point and not dtype_of(t2).is_floating_point:
        raise TypeError(f"addcdiv: integer division is not supported ({dtype_of(t1).name} / {dtype_of(t2).name}); "
                        f"use addcmul with a float reciprocal or convert to floating point")
    return add(input, mul(div(t1, t2), value))


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """|input - other| <= atol + rtol * |other| elementwise (and finite), or exactly equal."""
    a, b, dtype = _operands(input, other, "isclose")
    close = ebind(_P["eq"], a, b)
    if equal_nan and dtype.is_floating_point:
        close = bitwise_or(close, bitwise_and(isnan(a), isnan(b)))
    if rtol == 0 and atol == 0:
        return close
    if not dtype.is_floating_point:
        a, b = convert(a, get_default_dtype()), convert(b, get_default_dtype())
    err = abs(sub(a, b))
    allowed = add(abs(mul(b, rtol)), atol)
    return bitwise_or(close, bitwise_and(isfinite(err), le(err, allowed)))


def where_method(self, condition, other):
    """``Tensor.where``: `self` where `condition` holds, else `other` (``tp.where(condition, self, other)``).

    >>> import tensorplay as tp
    >>> tp.tensor([1.0, 2.0]).where(tp.tensor([True, False]), 0.0)
    tensor([1., 0.])
    """
    return where(condition, self, other)


# === the op table ===================================================================================
# The rest of this module's user-facing ops: (name, Tensor method: True (the function), False, or the
# method itself, in-place method?). Each row is a `tp.` function and, as flagged, `Tensor.<name>` and
# `Tensor.<name>_` (tensorplay/ops/_table.py).
for _name, _method, _inplace in (
    ("neg", True, True), ("negative", True, False), ("abs", True, True), ("sign", True, True),
    ("floor", True, True), ("ceil", True, True), ("round", True, True), ("relu", True, True),
    ("add", True, True), ("sub", True, True), ("subtract", True, False), ("mul", True, True),
    ("multiply", True, False), ("div", True, True), ("divide", True, False), ("true_divide", True, False),
    ("pow", True, True), ("maximum", True, True), ("minimum", True, True), ("fmod", True, True),
    ("remainder", True, True), ("floor_divide", True, True),
    ("eq", True, False), ("ne", True, False), ("lt", True, False), ("le", True, False), ("gt", True, False),
    ("ge", True, False), ("less", False, False), ("less_equal", False, False), ("greater", False, False),
    ("greater_equal", False, False), ("not_equal", False, False),
    ("bitwise_and", True, True), ("bitwise_or", True, True), ("bitwise_xor", True, True),
    ("bitwise_not", True, True), ("logical_not", True, True), ("logical_and", True, False),
    ("logical_or", True, False), ("where", where_method, False), ("clamp", True, True), ("clip", True, True),
    ("clamp_min", True, True), ("clamp_max", True, True),
    ("square", True, True), ("reciprocal", True, True), ("isnan", True, False), ("isfinite", True, False),
    ("lerp", True, True), ("addcmul", True, True), ("addcdiv", True, True), ("isclose", True, False),
):
    op(_name, globals()[_name], method=_method, inplace=_inplace)

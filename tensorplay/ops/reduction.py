"""Reductions with `dim`/`keepdim`: sum, mean, prod, max, min, argmax, argmin,
logsumexp, var, std, all, any and norm (scans are in `cumulative`).

As in PyTorch, `dim=None` reduces every dim and so does an empty dim list
(``x.sum(dim=())``); bool and integer inputs sum in int64; mean,
var and std need floating point inputs.
"""
from __future__ import annotations

import builtins
from collections import namedtuple
from math import prod as _product  # `prod` below is the tensor op

from tensorplay.ir import dtypes, get_primitive as _gp

from .._tensor import Tensor
from .._trace import memo_traced_op
from ._table import op
from ._common import (as_tensor_operand, constant, convert, copy, dtype_of, ebind, filled,
                      normalize_dim, normalize_dims, shape_of)

values_indices = namedtuple("values_indices", ["values", "indices"])

_SUM, _PROD, _MAX, _MIN = (_gp(n) for n in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"))
_ARGMAX, _ARGMIN, _RESHAPE = _gp("argmax"), _gp("argmin"), _gp("reshape")
_DIV, _ADD = _gp("div"), _gp("add")
_EQ, _SELECT = _gp("eq"), _gp("select")


def _arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _axes(dim, ndim: int, op: str) -> tuple[int, ...]:
    """Normalised reduction axes; None and an empty list both mean every dim (PyTorch's rule)."""
    if dim.__class__ is int and 0 < ndim and -ndim <= dim < ndim:  # one dim in range: the common call
        return (dim % ndim,)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return normalize_dims(dim, ndim, op)


def _out_shape(shape, axes, keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _keep(out: Tensor, shape, axes, keepdim: bool) -> Tensor:
    if not keepdim or not shape:
        return out
    return ebind(_RESHAPE, out, shape=_out_shape(shape, axes, True))


def _reduce(prim, x: Tensor, dim, keepdim: bool, op: str) -> Tensor:
    shape = shape_of(x)
    axes = _axes(dim, len(shape), op)
    if not shape:
        return copy(x)
    return _keep(ebind(prim, x, axes=axes), shape, axes, keepdim)


def _accumulate_dtype(x: Tensor, dtype):
    if dtype is not None:
        return dtype
    d = dtype_of(x)
    return d if d.is_floating_point else dtypes.int64


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum over `dim` (all dims when None); bool and integer inputs sum in int64, as in PyTorch."""
    if dim is None and keepdim is False and dtype is None:
        return _sum_all(input)
    return _summed(input, dim, keepdim, dtype)


def _summed(input, dim=None, keepdim: bool = False, dtype=None):
    x = _arg(input)
    return _reduce(_SUM, convert(x, _accumulate_dtype(x, dtype)), dim, keepdim, "sum")


_sum_all = memo_traced_op(_summed, 1)  # ``x.sum()`` traced: one node, replayed by its memo (`_trace`)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Product over `dim` (all dims when None); bool and integer inputs multiply in int64."""
    x = _arg(input)
    return _reduce(_PROD, convert(x, _accumulate_dtype(x, dtype)), dim, keepdim, "prod")


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Arithmetic mean over `dim` (NaN over no elements); integer inputs are an error, as in PyTorch."""
    x = _arg(input)
    if dtype is not None:
        x = convert(x, dtype)
    d = dtype_of(x)
    if not d.is_floating_point:
        raise TypeError(f"mean(): could not infer output dtype. Input dtype must be floating point, "
                        f"got {d.name} (shape {tuple(shape_of(x))})")
    shape = shape_of(x)
    axes = _axes(dim, len(shape), "mean")
    count = _product(shape[a] for a in axes)
    s = _reduce(_SUM, x, axes, keepdim, "mean")
    if count == 1:
        return s
    return ebind(_DIV, s, constant(count, d, shape_of(s), (s,)))


def _extremum(prim, argprim, name: str):
    def fn(input, dim=None, keepdim: bool = False):
        x = _arg(input)
        shape = shape_of(x)
        if dim is None:
            if 0 in shape:
                raise ValueError(f"{name}(): expected a non-empty tensor (shape {tuple(shape)}) when dim is None")
            return _reduce(prim, x, None, False, name)
        if isinstance(dim, Tensor):  # max(a, b) elementwise
            from .elementwise import maximum, minimum

            return (maximum if name == "max" else minimum)(x, dim)
        d = normalize_dim(dim, len(shape), name)
        if not shape:
            return values_indices(copy(x), filled(0, dtypes.int64, (), (x,)))
        if shape[d] == 0:
            raise IndexError(f"{name}(): expected reduction dim {d} to have non-zero size (shape {tuple(shape)})")
        values = _keep(ebind(prim, x, axes=(d,)), shape, (d,), keepdim)
        idx = _keep(ebind(argprim, x, axis=d, index_dtype=dtypes.int64), shape, (d,), keepdim)
        return values_indices(values, idx)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name} of all elements, or with `dim` a (values, indices) pair; "
                  f"with a tensor second argument, the elementwise {name}imum.")
    return fn


max = _extremum(_MAX, _ARGMAX, "max")
min = _extremum(_MIN, _ARGMIN, "min")


def _extreme_values(prim, name):
    def fn(input, dim=None, keepdim: bool = False):
        x = _arg(input)
        shape = shape_of(x)
        axes = _axes(dim, len(shape), name)
        if builtins.any(shape[a] == 0 for a in axes) or (not axes and 0 in shape):
            raise IndexError(f"{name}(): expected a non-empty reduction over dims {list(axes)} "
                             f"(shape {tuple(shape)})")
        return _reduce(prim, x, axes or None, keepdim, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name[1:]}imum over `dim` (several dims allowed), values only."
    return fn


amax = _extreme_values(_MAX, "amax")
amin = _extreme_values(_MIN, "amin")


def _argfn(prim, name: str):
    def fn(input, dim=None, keepdim: bool = False):
        x = _arg(input)
        shape = shape_of(x)
        if dtype_of(x).is_bool:
            raise TypeError(f"{name}(): does not support bool input (shape {tuple(shape)})")
        if dim is None:
            n = _product(shape)
            if n == 0:
                raise IndexError(f"{name}(): expected a non-empty tensor (shape {tuple(shape)}) when dim is None")
            flat = ebind(_RESHAPE, x, shape=(n,))
            out = ebind(prim, flat, axis=0, index_dtype=dtypes.int64)
            return ebind(_RESHAPE, out, shape=(1,) * len(shape)) if keepdim else out
        d = normalize_dim(dim, len(shape), name)
        if not shape:
            return filled(0, dtypes.int64, (), (x,))
        if shape[d] == 0:
            raise IndexError(f"{name}(): expected reduction dim {d} to have non-zero size (shape {tuple(shape)})")
        return _keep(ebind(prim, x, axis=d, index_dtype=dtypes.int64), shape, (d,), keepdim)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Index of the {name[3:]}imum (of the flattened tensor when dim is None); first occurrence wins."
    return fn


argmax = _argfn(_ARGMAX, "argmax")
argmin = _argfn(_ARGMIN, "argmin")


def logsumexp(input, dim, keepdim: bool = False):
    """log(sum(exp(input))) over `dim`, computed stably by shifting by the maximum (-inf over no elements)."""
    from .elementwise import _float_operand, exp, log, sub, add, where, isfinite

    x = _float_operand(input, "logsumexp")
    shape = shape_of(x)
    axes = _axes(dim, len(shape), "logsumexp")
    if not shape:
        return copy(x)
    if builtins.any(shape[a] == 0 for a in axes):
        return log(sum(exp(x), axes, keepdim))
    m = ebind(_gp("stop_gradient"), amax(x, axes, keepdim=True))
    m = where(isfinite(m), m, 0.0)
    s = sum(exp(sub(x, m)), axes, keepdim=True)
    out = add(log(s), m)
    return out if keepdim else ebind(_RESHAPE, out, shape=_out_shape(shape, axes, False))


def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Variance over `dim` with Bessel's correction by default (correction=1; `unbiased=False` is 0).

    The divisor is max(0, N - correction), so too few elements give NaN (or inf), as in PyTorch.
    """
    from .elementwise import abs, add, mul, sub

    if isinstance(dim, bool):  # var(x, False): the legacy `unbiased` overload
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise TypeError("var(): pass either `unbiased` or `correction`, not both")
    x = _arg(input)
    d = dtype_of(x)
    if not d.is_floating_point:
        raise TypeError(f"var(): std and var only support floating point dtypes, got {d.name} "
                        f"(shape {tuple(shape_of(x))})")
    shape = shape_of(x)
    axes = _axes(dim, len(shape), "var")
    n = _product(shape[a] for a in axes)
    centered = sub(x, mean(x, axes, keepdim=True))
    s = sum(mul(centered, centered), axes, keepdim=keepdim)
    denom = builtins.max(n - correction, 0)
    if denom == 0 and d is not dtypes.float64:
        # PyTorch accumulates float32 (and 16-bit floats) in float64, where squares of their tiny
        # deviations do not underflow: the result is inf unless every deviation is exactly 0 (then
        # NaN). |deviation| keeps that sign. float64 squares can underflow in torch too: s as it is.
        s = add(s, sum(abs(centered), axes, keepdim=keepdim))
    return s if denom == 1 else ebind(_DIV, s, constant(denom, d, shape_of(s), (s,)))


def _flat_at_zero(fn, s: Tensor) -> Tensor:
    """fn(s) for a root `fn` (fn(0) == 0) whose derivative at s == 0 is taken as 0, not inf.

    PyTorch's std and norm backward mask the zero the same way (a constant vector has std 0 and
    gradient 0). Written with two selects, so that no infinite slope meets a zero tangent: where
    s == 0, the root sees 1 instead, and the result is the constant 0.
    """
    d = dtype_of(s)
    zero = ebind(_EQ, s, constant(0, d, shape_of(s), (s,)))
    safe = ebind(_SELECT, zero, constant(1, d, shape_of(s), (s,)), s)
    return ebind(_SELECT, zero, constant(0, d, shape_of(s), (s,)), fn(safe))


def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Standard deviation over `dim` (square root of `var`, same arguments); its derivative where
    the variance is 0 is 0, as in PyTorch."""
    from .elementwise import sqrt

    return _flat_at_zero(sqrt, var(input, dim, unbiased, keepdim, correction=correction))


def _all_any(prim, name: str, empty_value: bool):
    def fn(input, dim=None, keepdim: bool = False):
        x = convert(_arg(input), dtypes.bool_)
        shape = shape_of(x)
        axes = _axes(dim, len(shape), name)
        if not shape:
            return copy(x)
        if builtins.any(shape[a] == 0 for a in axes):
            return filled(empty_value, dtypes.bool_, _out_shape(shape, axes, keepdim), (x,))
        return _keep(ebind(prim, x, axes=axes), shape, axes, keepdim)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"True where {'every' if empty_value else 'some'} element (over `dim`) is non-zero "
                  f"({empty_value} over no elements).")
    return fn


all = _all_any(_MIN, "all", True)
any = _all_any(_MAX, "any", False)


def norm(input, p=2, dim=None, keepdim: bool = False):
    """The vector p-norm over `dim` (all elements when None): p may be 0, 1, 2, inf, -inf, 'fro' or any float."""
    from .elementwise import abs, pow, sqrt, mul, ne

    x = _arg(input)
    d = dtype_of(x)
    if not d.is_floating_point:
        raise TypeError(f"norm(): input dtype should be floating point, got {d.name} (shape {tuple(shape_of(x))})")
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise ValueError(f"norm: unsupported norm type {p!r}")
    if p == 2:  # derivatives at 0 are 0, as in PyTorch (see `_flat_at_zero`)
        return _flat_at_zero(sqrt, sum(mul(x, x), dim, keepdim))
    if p == 1:
        return sum(abs(x), dim, keepdim)
    if p == 0:
        return sum(convert(ne(x, 0), d), dim, keepdim)
    if p == float("inf"):
        return amax(abs(x), dim, keepdim)
    if p == float("-inf"):
        return amin(abs(x), dim, keepdim)
    return _flat_at_zero(lambda s: pow(s, 1.0 / p), sum(pow(abs(x), p), dim, keepdim))


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every element of input is close to other (see `isclose`)."""
    from .elementwise import isclose

    return bool(all(isclose(input, other, rtol, atol, equal_nan)))


def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements."""
    from .elementwise import eq

    a, b = (x if isinstance(x, Tensor) else as_tensor_operand(x) for x in (input, other))
    if shape_of(a) != shape_of(b):
        return False
    return bool(all(eq(a, b)))


# === the op table ===================================================================================
# (name, Tensor method?): each row is a `tp.` function and, as flagged, a Tensor method
# (tensorplay/ops/_table.py).
for _name, _method in (
    ("sum", True), ("prod", True), ("mean", True), ("max", True), ("min", True), ("amax", True),
    ("amin", True), ("argmax", True), ("argmin", True), ("logsumexp", True), ("var", True), ("std", True),
    ("all", True), ("any", True), ("norm", True), ("allclose", True), ("equal", True),
):
    op(_name, globals()[_name], method=_method)

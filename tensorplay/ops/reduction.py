"""Reductions with `dim`/`keepdim`: sum, mean, prod, max, min, argmax, argmin,
logsumexp, var, std, all, any, norm."""
from __future__ import annotations

import builtins
from collections import namedtuple

from ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, constant, convert, get_default_dtype, normalize_dim, normalize_dims

values_indices = namedtuple("values_indices", ["values", "indices"])


def _keep(out: Tensor, x: Tensor, axes, keepdim: bool) -> Tensor:
    if not keepdim or x.ndim == 0:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return bind("reshape", out, shape=shape)


def _reduce(prim: str, x: Tensor, dim, keepdim: bool, op: str) -> Tensor:
    axes = normalize_dims(dim, x.ndim, op)
    if x.ndim == 0:
        return x
    return _keep(bind(prim, x, axes=axes), x, axes, keepdim)


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum over `dim` (all dims when None); bool and integer inputs sum in int64, as in PyTorch."""
    x = as_tensor_operand(input)
    target = dtype or (dtypes.int64 if not x.dtype.is_floating_point else x.dtype)
    return _reduce("reduce_sum", convert(x, target), dim, keepdim, "sum")


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Product over `dim` (all dims when None)."""
    x = as_tensor_operand(input)
    target = dtype or (dtypes.int64 if not x.dtype.is_floating_point else x.dtype)
    return _reduce("reduce_prod", convert(x, target), dim, keepdim, "prod")


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Arithmetic mean over `dim`; integer inputs are an error, as in PyTorch."""
    x = as_tensor_operand(input)
    if dtype is not None:
        x = convert(x, dtype)
    if not x.dtype.is_floating_point:
        raise TypeError(f"mean(): could not infer output dtype. Input dtype must be floating point, "
                        f"got {x.dtype.name}")
    axes = normalize_dims(dim, x.ndim, "mean")
    count = 1
    for a in axes:
        count *= x.shape[a]
    s = _reduce("reduce_sum", x, dim, keepdim, "mean")
    return bind("div", s, constant(count if count else float("nan"), s.dtype, s.shape, (s,))) \
        if count != 1 else s


def _extremum(prim: str, argprim: str, name: str):
    def fn(input, dim=None, keepdim: bool = False):
        x = as_tensor_operand(input)
        if dim is None:
            if x.numel() == 0:
                raise ValueError(f"{name}(): expected a non-empty tensor (shape {tuple(x.shape)}) when dim is None")
            return _reduce(prim, x, None, False, name)
        if isinstance(dim, Tensor):  # max(a, b) elementwise
            from .elementwise import maximum, minimum

            return (maximum if name == "max" else minimum)(x, dim)
        d = normalize_dim(dim, x.ndim, name)
        if x.ndim == 0:
            return values_indices(x, constant(0, dtypes.int64, (), (x,)))
        values = _reduce(prim, x, (d,), keepdim, name)
        idx = _keep(bind(argprim, x, axis=d, index_dtype=dtypes.int64), x, (d,), keepdim)
        return values_indices(values, idx)
    fn.__name__ = name
    fn.__doc__ = (f"{name} of all elements, or with `dim` a (values, indices) pair; "
                  f"with a tensor second argument, the elementwise {name}imum.")
    return fn


max = _extremum("reduce_max", "argmax", "max")
min = _extremum("reduce_min", "argmin", "min")


def amax(input, dim=None, keepdim: bool = False):
    """Maximum over `dim` (several dims allowed), values only."""
    return _reduce("reduce_max", as_tensor_operand(input), dim, keepdim, "amax")


def amin(input, dim=None, keepdim: bool = False):
    """Minimum over `dim` (several dims allowed), values only."""
    return _reduce("reduce_min", as_tensor_operand(input), dim, keepdim, "amin")


def _arg(prim: str, name: str):
    def fn(input, dim=None, keepdim: bool = False):
        x = as_tensor_operand(input)
        if dim is None:
            flat = bind("reshape", x, shape=(x.numel(),))
            out = bind(prim, flat, axis=0, index_dtype=dtypes.int64)
            return bind("reshape", out, shape=(1,) * x.ndim) if keepdim else out
        d = normalize_dim(dim, x.ndim, name)
        if x.ndim == 0:
            return constant(0, dtypes.int64, (), (x,))
        return _keep(bind(prim, x, axis=d, index_dtype=dtypes.int64), x, (d,), keepdim)
    fn.__name__ = name
    fn.__doc__ = f"Index of the {name[3:]}imum (of the flattened tensor when dim is None); first occurrence wins."
    return fn


argmax = _arg("argmax", "argmax")
argmin = _arg("argmin", "argmin")


def logsumexp(input, dim, keepdim: bool = False):
    """log(sum(exp(input))) over `dim`, computed stably by shifting by the maximum."""
    from .elementwise import _float_operand, exp, log, sub, add, where, isfinite

    x = _float_operand(input, "logsumexp")
    axes = normalize_dims(dim, x.ndim, "logsumexp")
    m = bind("stop_gradient", amax(x, axes, keepdim=True))
    m = where(isfinite(m), m, 0.0)
    s = sum(exp(sub(x, m)), axes, keepdim=True)
    out = add(log(s), m)
    return out if keepdim else _squeeze_axes(out, axes)


def _squeeze_axes(x: Tensor, axes) -> Tensor:
    return bind("reshape", x, shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))


def var(input, dim=None, *, correction=1, keepdim: bool = False, unbiased=None):
    """Variance over `dim` with Bessel's correction by default (correction=1)."""
    from .elementwise import mul, sub

    if unbiased is not None:
        correction = 1 if unbiased else 0
    x = as_tensor_operand(input)
    if not x.dtype.is_floating_point:
        raise TypeError(f"var(): input dtype must be floating point, got {x.dtype.name}")
    axes = normalize_dims(dim, x.ndim, "var")
    n = 1
    for a in axes:
        n *= x.shape[a]
    centered = sub(x, mean(x, axes, keepdim=True))
    s = sum(mul(centered, centered), axes, keepdim=keepdim)
    denom = builtins.max(n - correction, 0)
    return bind("div", s, constant(denom if denom else float("nan"), s.dtype, s.shape, (s,))) \
        if denom != 1 else s


def std(input, dim=None, *, correction=1, keepdim: bool = False, unbiased=None):
    """Standard deviation over `dim` (square root of `var`)."""
    from .elementwise import sqrt

    return sqrt(var(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased))


def all(input, dim=None, keepdim: bool = False):
    """True where every element (over `dim`) is non-zero."""
    x = convert(as_tensor_operand(input), dtypes.bool_)
    return _reduce("reduce_min", x, dim, keepdim, "all") if x.numel() else constant(True, dtypes.bool_, ())


def any(input, dim=None, keepdim: bool = False):
    """True where some element (over `dim`) is non-zero."""
    x = convert(as_tensor_operand(input), dtypes.bool_)
    return _reduce("reduce_max", x, dim, keepdim, "any") if x.numel() else constant(False, dtypes.bool_, ())


def norm(input, p=2, dim=None, keepdim: bool = False):
    """The p-norm over `dim` (all elements when None); p may be 1, 2, inf or any positive float."""
    from .elementwise import abs, pow, sqrt, mul, _float_operand

    x = _float_operand(input, "norm")
    if p == 2:
        return sqrt(sum(mul(x, x), dim, keepdim))
    if p == 1:
        return sum(abs(x), dim, keepdim)
    if p == float("inf"):
        return amax(abs(x), dim, keepdim)
    return pow(sum(pow(abs(x), p), dim, keepdim), 1.0 / p)


def cumsum(input, dim):
    """Cumulative sum along `dim` (as a triangular contraction; fine for moderate sizes)."""
    from .linalg import tensordot_axes

    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "cumsum")
    n = x.shape[d] if x.ndim else 1
    if x.ndim == 0:
        return x
    i = bind("iota", shape=(n, n), dtype=dtypes.int32, dimension=0)
    j = bind("iota", shape=(n, n), dtype=dtypes.int32, dimension=1)
    tri = convert(bind("le", i, j), x.dtype if x.dtype.is_floating_point else dtypes.int64)
    x = convert(x, tri.dtype)
    return tensordot_axes(x, tri, d)


def _float_default(x):
    return x if x.dtype.is_floating_point else convert(x, get_default_dtype())

"""Normalised exponentials: softmax and log_softmax (composites over primitives).

Both shift by the (gradient-stopped) maximum along `dim` for stability; the input must be
floating point, or `dtype=` names the float dtype to convert to first (as in PyTorch). A 0-d input is one element
(softmax 1, log_softmax 0); an empty `dim` gives an empty result.
"""
from __future__ import annotations

from tensorplay.ir import get_primitive as _gp

from .._tensor import Tensor
from ._common import as_tensor_operand, convert, copy, dtype_of, ebind, normalize_dim, shape_of, widened
from ._table import op
from .elementwise import exp, sub, div, log
from .reduction import amax, sum

_STOP, _RESHAPE = _gp("stop_gradient"), _gp("reshape")


def _normalized(input, dim: int, dtype, op: str, body):
    x = input if isinstance(input, Tensor) else as_tensor_operand(input)
    if dtype is not None:
        x = convert(x, dtype)
    if not dtype_of(x).is_floating_point:
        raise TypeError(f"{op}: expected a floating point tensor (or dtype=), got {dtype_of(x).name} "
                        f"(shape {tuple(shape_of(x))})")
    low, (x,) = widened(x)
    if low is not None:  # 16-bit floats: computed in float32, rounded once (as torch's CPU kernel)
        return convert(_normalized(x, dim, None, op, body), low)
    shape = tuple(shape_of(x))
    d = normalize_dim(dim, len(shape), op)
    if not shape:  # one element
        return ebind(_RESHAPE, body(ebind(_RESHAPE, x, shape=(1,)), 0), shape=())
    if shape[d] == 0:
        return copy(x)
    return body(x, d)


def _softmax(x, d):
    e = exp(sub(x, ebind(_STOP, amax(x, d, keepdim=True))))
    return div(e, sum(e, d, keepdim=True))


def _log_softmax(x, d):
    z = sub(x, ebind(_STOP, amax(x, d, keepdim=True)))
    return sub(z, log(sum(exp(z), d, keepdim=True)))


def softmax(input, dim: int, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`, shifted by the maximum for stability."""
    return _normalized(input, dim, dtype, "softmax", _softmax)


def log_softmax(input, dim: int, dtype=None):
    """x - logsumexp(x) along `dim`."""
    return _normalized(input, dim, dtype, "log_softmax", _log_softmax)


# === the op table: `tp.` functions and Tensor methods (tensorplay/ops/_table.py) =====================
for _name in ("softmax", "log_softmax"):
    op(_name, globals()[_name])

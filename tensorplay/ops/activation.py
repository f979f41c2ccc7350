"""Normalised exponentials: softmax and log_softmax (composites over primitives)."""
from __future__ import annotations

from .._trace import bind
from ._common import convert, normalize_dim
from .elementwise import _float_operand, exp, sub, div, log
from .reduction import amax, sum


def _shifted(input, dim: int, dtype, op: str):
    x = _float_operand(input, op)
    if dtype is not None:
        x = convert(x, dtype)
    d = normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return x, None
    m = bind("stop_gradient", amax(x, d, keepdim=True))
    return sub(x, m), d


def softmax(input, dim: int, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`, shifted by the maximum for stability."""
    z, d = _shifted(input, dim, dtype, "softmax")
    if d is None:
        return div(exp(z), exp(z))
    e = exp(z)
    return div(e, sum(e, d, keepdim=True))


def log_softmax(input, dim: int, dtype=None):
    """x - logsumexp(x) along `dim`."""
    z, d = _shifted(input, dim, dtype, "log_softmax")
    if d is None:
        return sub(z, z)
    return sub(z, log(sum(exp(z), d, keepdim=True)))

"""A tanh MLP and its value and tangent by hand in float64: the oracle the linearize tests share."""
from __future__ import annotations

import numpy as np

import tensorplay as tp


def mlp(ps, x):
    """``x @ w + b`` per layer, tanh between layers (tensorplay tensors)."""
    for i, (w, b) in enumerate(ps):
        x = x @ w + b
        if i < len(ps) - 1:
            x = tp.tanh(x)
    return x


def mlp_np(ps, x):
    """`mlp` in float64 numpy."""
    for i, (w, b) in enumerate(ps):
        x = x @ w.numpy().astype(np.float64) + b.numpy().astype(np.float64)
        if i < len(ps) - 1:
            x = np.tanh(x)
    return x


def mlp_jvp_np(ps, x, t):
    """The tangent of `mlp` at x along t, by hand in float64.

    >>> ps = [(tp.tensor([[2.0]]), tp.tensor([0.0]))]
    >>> mlp_jvp_np(ps, np.array([1.0]), np.array([3.0])).tolist()
    [6.0]
    """
    h, dh = x.astype(np.float64), t.astype(np.float64)
    for i, (w, b) in enumerate(ps):
        w64 = w.numpy().astype(np.float64)
        z, dz = h @ w64 + b.numpy().astype(np.float64), dh @ w64
        if i < len(ps) - 1:
            h = np.tanh(z)
            dh = (1 - h * h) * dz
        else:
            dh = dz
    return dh

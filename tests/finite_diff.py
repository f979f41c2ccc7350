"""Float64 central finite differences: the gradient oracle the tests share."""
from __future__ import annotations

import numpy as np


def fd_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """The gradient of the scalar function `f` at `x` by central differences, one element at a time.

    >>> fd_grad(lambda v: (v ** 2).sum(), np.array([1.0, -2.0])).round(6).tolist()
    [2.0, -4.0]
    """
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g

"""Inputs the chunked-map tests share: an owned tensor copy and seeded float32 data."""
from __future__ import annotations

import numpy as np

import tensorplay as tp


def T(a) -> tp.Tensor:
    """A tensor owning a copy of `a` (so a test's in-place update never reaches its source)."""
    return tp.from_numpy(np.array(a, copy=True))


def _data(*shape, seed=0) -> np.ndarray:
    """Standard-normal float32 data of `shape` from generator `seed`.

    >>> _data(2, 3).shape
    (2, 3)
    """
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

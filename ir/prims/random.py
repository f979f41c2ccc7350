"""Counter-based random numbers (Philox-4x32-10).

A key is an int64 tensor of shape (*K, 2) holding (seed, counter base). Element
j of the draw for one key uses the Philox block at counter base + j, so the
same key gives the same bits in eager mode, in the interpreter and in
compiled code, and a batch of keys gives a batch of independent draws.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..types import TensorType
from ._util import check_dtypes, fail

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)


def philox(seed: np.ndarray, counter: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First two 32-bit words of Philox-4x32-10 for 64-bit `seed` and `counter` (as uint64 arrays)."""
    seed = seed.astype(np.uint64)
    counter = counter.astype(np.uint64)
    k0, k1 = seed & MASK32, seed >> np.uint64(32)
    c0, c1 = counter & MASK32, counter >> np.uint64(32)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    m0, m1 = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
    w0, w1 = np.uint64(PHILOX_W[0]), np.uint64(PHILOX_W[1])
    for _ in range(10):
        p0 = m0 * c0
        p1 = m1 * c2
        hi0, lo0 = p0 >> np.uint64(32), p0 & MASK32
        hi1, lo1 = p1 >> np.uint64(32), p1 & MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + w0) & MASK32
        k1 = (k1 + w1) & MASK32
    return c0, c1


def _counters(key: np.ndarray, shape: tuple[int, ...]):
    n = int(np.prod(shape))
    seed = key[..., 0].astype(np.uint64)[..., None]
    base = key[..., 1].astype(np.uint64)[..., None]
    return seed, base + np.arange(n, dtype=np.uint64)


def uniform_from_bits(w0, w1, dtype: dt.DType) -> np.ndarray:
    """Map Philox words to [0, 1): 24 random bits for float32, 53 for float64."""
    if dtype is dt.float32:
        return ((w0 >> np.uint64(8)).astype(np.float64) * 2.0 ** -24).astype(np.float32)
    hi = (w0 >> np.uint64(5)).astype(np.float64)
    lo = (w1 >> np.uint64(6)).astype(np.float64)
    return (hi * 2.0 ** 26 + lo) * 2.0 ** -53


def normal_from_bits(w0, w1, dtype: dt.DType) -> np.ndarray:
    """Box-Muller in float64 on u1 in (0, 1], u2 in [0, 1), rounded to `dtype`."""
    u1 = (w0.astype(np.float64) + 1.0) * 2.0 ** -32
    u2 = w1.astype(np.float64) * 2.0 ** -32
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return z.astype(dtype.np)


def _random_type(name):
    def rule(key: TensorType, *, shape, dtype) -> TensorType:
        check_dtypes(name, key, (dt.int64,), "key")
        if key.ndim < 1 or key.shape[-1] != 2:
            fail(name, f"key must have shape (..., 2), got {key.shape}")
        if dtype not in dt.FLOATS:
            fail(name, f"dtype must be float32 or float64, got {dtype!r}", TypeError)
        return TensorType(key.shape[:-1] + tuple(shape), dtype)
    return rule


def random_primitive(name: str, from_bits) -> Primitive:
    """Declare a random primitive drawing `from_bits(w0, w1, dtype)` per element."""
    def impl(key, *, shape, dtype):
        seed, counter = _counters(key, shape)
        w0, w1 = philox(seed, counter)
        return from_bits(w0, w1, dtype).reshape(key.shape[:-1] + tuple(shape))
    return register(Primitive(name, _random_type(name), impl, num_operands=1, differentiable=False, random=True))


random_uniform = random_primitive("random_uniform", uniform_from_bits)
random_normal = random_primitive("random_normal", normal_from_bits)


# === batching rules =============================================================================
from ..passes.batching import random_draw  # noqa: E402

random_uniform.def_batch(random_draw(random_uniform))  # a batched key is a batch of keys
random_normal.def_batch(random_draw(random_normal))


# === differentiation rules ======================================================================
# Random draws are `differentiable=False`: the JVP pass gives them zero tangents (the key is an
# integer input), so they need no rules; under reverse mode they are evaluated once, in the primal graph.

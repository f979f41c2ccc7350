"""Graph-building helpers for matrix calculus rules: batched matrix products, transposes,
triangles and diagonals over the last two axes of (..., m, n) values."""
from __future__ import annotations

from .. import dtypes as dt


def mT(b, x):
    """x with its last two axes swapped."""
    n = x.ndim
    return b.transpose(x, permutation=tuple(range(n - 2)) + (n - 1, n - 2))


def matmul(b, x, y):
    """Batched x @ y over equal leading axes."""
    n = x.ndim
    lead = tuple(range(n - 2))
    return b.dot_general(x, y, contract=((n - 1,), (n - 2,)), batch=(lead, lead))


def _offsets(b, shape):
    n = len(shape)
    rows = b.iota(shape=shape, dtype=dt.int64, dimension=n - 2)
    cols = b.iota(shape=shape, dtype=dt.int64, dimension=n - 1)
    return b.sub(cols, rows)


def triangle(b, x, k: int = 0, lower: bool = True):
    """tril(x, k) or triu(x, k) of the last two axes."""
    off = _offsets(b, x.shape)
    keep = (b.le if lower else b.ge)(off, b.const(k, x.shape, dt.int64))
    return b.select(keep, x, b.zeros_like(x))


def eye_mask(b, shape):
    """Boolean (..., n, n) mask of the main diagonal."""
    return b.eq(_offsets(b, shape), b.const(0, shape, dt.int64))


def eye_like(b, x):
    """The identity matrices of x's shape and dtype."""
    return b.convert_element_type(eye_mask(b, x.shape), dtype=x.dtype)


def diagonal(b, x):
    """The main diagonal (..., n) of square matrices x (..., n, n)."""
    n = x.shape[-1]
    lead = x.shape[:-2]
    flat = b.reshape(x, shape=lead + (n * n,))
    nd = len(lead) + 1
    return b.slice(flat, start_indices=(0,) * nd, limit_indices=lead + (max(n * n, 1) if n else 0,),
                   strides=(1,) * (nd - 1) + (n + 1 if n else 1,))


def diag_embed(b, d, like):
    """Square matrices of `like`'s shape with d (..., n) on the diagonal."""
    n = like.ndim
    full = b.broadcast_in_dim(d, shape=like.shape, broadcast_dimensions=tuple(range(n - 2)) + (n - 1,))
    return b.select(eye_mask(b, like.shape), full, b.zeros_like(full))


def trace(b, x):
    """Sum of the diagonal of square matrices x (..., n, n) -> (...)."""
    return b.reduce_sum(diagonal(b, x), axes=(x.ndim - 2,))


def symmetrize_lower(b, x):
    """The symmetric matrix whose lower triangle is x's (what eigh and cholesky read)."""
    return b.add(triangle(b, x, 0, True), mT(b, triangle(b, x, -1, True)))

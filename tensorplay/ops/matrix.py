"""Matrix-structure ops: tril, triu, diag, diag_embed, trace.

All are compositions of primitives: a triangle is a select against an
``iota(col) - iota(row)`` comparison over the last two dims, a diagonal is a
strided slice (`shape.diagonal`), an embedded diagonal is a `take` with a
constant index and a select. So every transform applies to each of them.

>>> import tensorplay as tp
>>> tp.triu(tp.ones(2, 2)).tolist()
[[1.0, 1.0], [0.0, 1.0]]
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, dtype_of, normalize_dim, shape_of
from ._table import op


def _arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _int(value, what: str, op_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op_name}: {what} must be an int, got {type(value).__name__}")
    return int(value)


def _zeros_like(x: Tensor) -> Tensor:
    return bind("full", shape=shape_of(x), dtype=dtype_of(x), value=False if dtype_of(x).is_bool else 0)


def _triangle(input, diagonal, op_name: str, lower: bool) -> Tensor:
    x = _arg(input)
    k = _int(diagonal, "diagonal", op_name)
    shape = shape_of(x)
    if len(shape) < 2:
        raise RuntimeError(f"{op_name}: input tensor must have at least 2 dimensions, got shape {tuple(shape)}")
    nd = len(shape)
    rows = bind("iota", shape=shape, dtype=dtypes.int64, dimension=nd - 2)
    cols = bind("iota", shape=shape, dtype=dtypes.int64, dimension=nd - 1)
    offset = bind("sub", cols, rows)
    keep = bind("le" if lower else "ge", offset, bind("full", shape=shape, dtype=dtypes.int64, value=k))
    return bind("select", keep, x, _zeros_like(x))


def tril(input, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims: elements with col - row <= `diagonal`, others 0.

    >>> import tensorplay as tp
    >>> tp.tril(tp.tensor([[1, 2, 3], [4, 5, 6]]), diagonal=1).tolist()
    [[1, 2, 0], [4, 5, 6]]
    """
    return _triangle(input, diagonal, "tril", True)


def triu(input, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims: elements with col - row >= `diagonal`, others 0.

    >>> import tensorplay as tp
    >>> tp.triu(tp.tensor([[1, 2, 3], [4, 5, 6]]), diagonal=-1).tolist()
    [[1, 2, 3], [4, 5, 6]]
    """
    return _triangle(input, diagonal, "triu", False)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose (dim1, dim2) planes hold the last dim of `input` on diagonal `offset`.

    The result has one dim more than `input`; `dim1` and `dim2` index the result.

    >>> import tensorplay as tp
    >>> tp.diag_embed(tp.tensor([[1, 2], [3, 4]])).tolist()
    [[[1, 0], [0, 2]], [[3, 0], [0, 4]]]
    """
    from .shape import movedim

    x = _arg(input)
    k = _int(offset, "offset", "diag_embed")
    shape = shape_of(x)
    if not shape:
        raise RuntimeError("diag_embed: input must have at least 1 dimension, got a 0-d tensor")
    nd = len(shape) + 1
    a, b = normalize_dim(dim1, nd, "diag_embed"), normalize_dim(dim2, nd, "diag_embed")
    if a == b:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = shape[-1]
    m = n + abs(k)
    rows, cols = np.indices((m, m))
    source = np.clip(rows if k >= 0 else cols, 0, max(n - 1, 0)).astype(np.int64)
    out_shape = shape[:-1] + (m, m)
    if n == 0:
        plane = bind("full", shape=out_shape, dtype=dtype_of(x), value=False if dtype_of(x).is_bool else 0)
    else:
        from .creation import tensor

        picked = bind("take", x, tensor(source), axis=nd - 2)
        on_diag = bind("broadcast_in_dim", tensor(cols - rows == k), shape=out_shape,
                       broadcast_dimensions=(nd - 2, nd - 1))
        plane = bind("select", on_diag, picked, _zeros_like(picked))
    if (a, b) == (nd - 2, nd - 1):
        return plane
    return movedim(plane, (nd - 2, nd - 1), (a, b))


def diag(input, diagonal: int = 0) -> Tensor:
    """A 1-d input becomes a square matrix with it on diagonal `diagonal`; a 2-d input gives that
    diagonal as a 1-d tensor.

    >>> import tensorplay as tp
    >>> tp.diag(tp.tensor([1, 2]), 1).tolist()
    [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    >>> tp.diag(tp.tensor([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    from .shape import diagonal as _diagonal

    x = _arg(input)
    k = _int(diagonal, "diagonal", "diag")
    nd = len(shape_of(x))
    if nd == 1:
        return diag_embed(x, k)
    if nd == 2:
        return _diagonal(x, k)
    raise RuntimeError(f"diag: expected a 1-d or 2-d input, got shape {tuple(shape_of(x))}")


def trace(input) -> Tensor:
    """The sum of the main diagonal of a 2-d input (integer inputs sum in int64).

    >>> import tensorplay as tp
    >>> tp.trace(tp.tensor([[1, 2], [3, 4]])).item()
    5
    """
    from .reduction import sum as _sum
    from .shape import diagonal as _diagonal

    x = _arg(input)
    if len(shape_of(x)) != 2:
        raise RuntimeError(f"trace: expected a matrix, got shape {tuple(shape_of(x))}")
    return _sum(_diagonal(x))


# === the op table ===================================================================================
for _name in ("tril", "triu", "diag", "diag_embed", "trace"):
    op(_name, globals()[_name], method=True, inplace=_name in ("tril", "triu"))

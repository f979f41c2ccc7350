"""Ops whose result shape depends on the data: nonzero, argwhere, masked_select, unique.

Without a static `size`, these read the input's value (`Tensor._concrete`), so
they run eagerly and under `grad`/`jvp`/`vjp` of concrete inputs (their
positions are then constants, and `masked_select` still passes gradients to the
selected elements), but under `vmap` or `tp.compile` they raise a TracingError
naming the op and the transform. With ``size=k`` (as JAX's ``nonzero(size=)``)
`nonzero`, `argwhere` and `masked_select` are compositions of primitives with a
static result shape: the first k hits, padded with `fill_value`; they then work
under every transform.

>>> import tensorplay as tp
>>> tp.nonzero(tp.tensor([0, 3, 0, 4])).tolist()
[[1], [3]]
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, dtype_of, shape_of
from ._table import op

def _arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _why(op_name: str) -> str:
    return f"{op_name} (its result shape depends on the data; pass a static size= to trace it)"


def _check_size(size, op_name: str) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise TypeError(f"{op_name}: size must be a non-negative int, got {size!r}")
    return int(size)


def _sized_positions(mask: Tensor, size: int, fill_value) -> Tensor:
    """The flat positions of the first `size` true elements of the 1-d `mask` (int64), then `fill_value`."""
    from .cumulative import cumsum
    from .scattering import scatter

    n = shape_of(mask)[0]
    rank = bind("sub", cumsum(mask, 0), bind("full", shape=(n,), dtype=dtypes.int64, value=1))
    keep = bind("and", mask, bind("lt", rank, bind("full", shape=(n,), dtype=dtypes.int64, value=size)))
    slot = bind("select", keep, rank, bind("full", shape=(n,), dtype=dtypes.int64, value=size))  # spare slot
    spots = bind("full", shape=(size + 1,), dtype=dtypes.int64, value=int(fill_value))
    out = scatter(spots, 0, slot, bind("iota", shape=(n,), dtype=dtypes.int64, dimension=0))
    return bind("slice", out, start_indices=(0,), limit_indices=(size,), strides=(1,))


def _unravel(flat: Tensor, shape) -> Tensor:
    """(k, ndim) coordinates of the flat positions `flat` (k,) in `shape`; negative fills stay as they are."""
    k = shape_of(flat)[0]
    cols, stride = [], 1
    for n in reversed(shape):
        q = bind("div", flat, bind("full", shape=(k,), dtype=dtypes.int64, value=stride))
        c = bind("rem", q, bind("full", shape=(k,), dtype=dtypes.int64, value=max(n, 1)))
        neg = bind("lt", flat, bind("full", shape=(k,), dtype=dtypes.int64, value=0))
        cols.append(bind("select", neg, flat, c))
        stride *= n
    cols.reverse()
    return bind("concatenate", *[bind("reshape", c, shape=(k, 1)) for c in cols], axis=1) if cols else \
        bind("full", shape=(k, 0), dtype=dtypes.int64, value=0)


def nonzero(input, *, as_tuple: bool = False, size=None, fill_value: int = -1):
    """The coordinates of the non-zero elements, one row per element in row-major order: an int64
    tensor of shape (count, ndim), or with `as_tuple` one 1-d tensor per dim. With a static `size`,
    the first `size` rows, padded with `fill_value` (then it traces under every transform).

    >>> import tensorplay as tp
    >>> tp.nonzero(tp.tensor([[1, 0], [0, 2]])).tolist()
    [[0, 0], [1, 1]]
    >>> tp.nonzero(tp.tensor([0.0, 5.0]), size=3).tolist()
    [[1], [-1], [-1]]
    """
    x = _arg(input)
    shape = shape_of(x)
    if size is None:
        arr = x._concrete(_why("nonzero"))
        coords = np.argwhere(np.asarray(arr) != 0) if shape else np.zeros((int(arr != 0), 0), np.int64)
        out = Tensor._wrap(np.ascontiguousarray(coords, dtype=np.int64))
    else:
        size = _check_size(size, "nonzero")
        flat = bind("reshape", bind("ne", x, bind("full", shape=shape, dtype=dtype_of(x), value=0)),
                    shape=(int(np.prod(shape)),))
        out = _unravel(_sized_positions(flat, size, fill_value), shape)
    if not as_tuple:
        return out
    from .shape import select

    return tuple(select(out, 1, i) for i in range(max(len(shape), 1)))


def argwhere(input, *, size=None, fill_value: int = -1) -> Tensor:
    """``nonzero(input)``: the (count, ndim) int64 coordinates of the non-zero elements.

    >>> import tensorplay as tp
    >>> tp.argwhere(tp.tensor([0, 1, 1])).tolist()
    [[1], [2]]
    """
    return nonzero(input, size=size, fill_value=fill_value)


def masked_select(input, mask, *, size=None, fill_value=0) -> Tensor:
    """The elements of `input` where the boolean `mask` (broadcast with it) holds, as a 1-d tensor in
    row-major order; with a static `size`, the first `size` of them padded with `fill_value`.
    Gradients flow to the selected elements.

    >>> import tensorplay as tp
    >>> tp.masked_select(tp.tensor([[1, 2], [3, 4]]), tp.tensor([True, False])).tolist()
    [1, 3]
    """
    from ._common import broadcast_shapes, broadcast_to_shape
    from .indexing import take

    x, m = _arg(input), _arg(mask)
    if not dtype_of(m).is_bool:
        raise TypeError(f"masked_select: mask must be a bool tensor, got {dtype_of(m).name}")
    shape = broadcast_shapes(shape_of(x), shape_of(m), op="masked_select")
    x, m = broadcast_to_shape(x, shape, "masked_select"), broadcast_to_shape(m, shape, "masked_select")
    n = int(np.prod(shape))
    flat_x, flat_m = bind("reshape", x, shape=(n,)), bind("reshape", m, shape=(n,))
    if size is None:
        arr = flat_m._concrete(_why("masked_select"))
        return take(flat_x, Tensor._wrap(np.flatnonzero(arr).astype(np.int64)))
    pos = _sized_positions(flat_m, _check_size(size, "masked_select"), -1)
    k = shape_of(pos)[0]
    hit = bind("ge", pos, bind("full", shape=(k,), dtype=dtypes.int64, value=0))
    if n == 0:
        return bind("full", shape=(k,), dtype=dtype_of(x), value=fill_value)
    safe = bind("select", hit, pos, bind("full", shape=(k,), dtype=dtypes.int64, value=0))
    picked = bind("take", flat_x, safe, axis=0)
    return bind("select", hit, picked, bind("full", shape=(k,), dtype=dtype_of(x), value=fill_value))


def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """The distinct elements (sorted), or the distinct slices along `dim`; optionally the int64
    inverse indices (input position -> output position) and counts. Eager only: the result shape
    depends on the data (an error names the transform under vmap or tp.compile).

    >>> import tensorplay as tp
    >>> out, inverse = tp.unique(tp.tensor([3, 1, 3, 2]), return_inverse=True)
    >>> out.tolist(), inverse.tolist()
    ([1, 2, 3], [2, 0, 2, 1])
    """
    x = _arg(input)
    arr = np.asarray(x._concrete(_why("unique")))
    if dim is not None:
        from ._common import normalize_dim

        dim = normalize_dim(dim, arr.ndim, "unique")
    values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True, axis=dim)
    if dim is None:
        inverse = inverse.reshape(arr.shape)
    outs = [Tensor._wrap(np.ascontiguousarray(values))]
    if return_inverse:
        outs.append(Tensor._wrap(inverse.astype(np.int64)))
    if return_counts:
        outs.append(Tensor._wrap(counts.astype(np.int64)))
    return outs[0] if len(outs) == 1 else tuple(outs)


# === the op table ===================================================================================
for _name in ("nonzero", "argwhere", "masked_select", "unique"):
    op(_name, globals()[_name], method=True)

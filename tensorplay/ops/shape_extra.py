"""More shape and combination ops PyTorch programs use: ravel, fliplr/flipud/rot90, atleast_1d/2d/3d,
dstack/column_stack, diff, take_along_dim, block_diag, cartesian_prod, meshgrid, kron, tril/triu_indices,
vander. Each is a composite of existing ops (every transform applies), except the index constructors,
whose results are constants.

>>> import tensorplay as tp
>>> tp.rot90(tp.tensor([[1, 2], [3, 4]])).tolist()
[[2, 4], [1, 3]]
>>> tp.diff(tp.tensor([1, 4, 9, 16])).tolist()
[3, 5, 7]
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes

from .._tensor import Tensor
from . import elementwise as ew
from . import shape as sh
from ._common import as_tensor_operand, normalize_dim, result_type, convert
from ._table import op


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def ravel(input) -> Tensor:
    """The elements as one dim, in C order (a view when possible).

    >>> import tensorplay as tp
    >>> tp.ones(2, 3).ravel().shape
    tensorplay.Size(6)
    """
    return sh.reshape(_t(input), (-1,))


def fliplr(input) -> Tensor:
    """Reverse dim 1 (needs at least 2 dims).

    >>> import tensorplay as tp
    >>> tp.fliplr(tp.tensor([[1, 2], [3, 4]])).tolist()
    [[2, 1], [4, 3]]
    """
    x = _t(input)
    if x.ndim < 2:
        raise ValueError(f"fliplr: input must be >= 2-d, got shape {tuple(x.shape)}")
    return sh.flip(x, (1,))


def flipud(input) -> Tensor:
    """Reverse dim 0 (needs at least 1 dim).

    >>> import tensorplay as tp
    >>> tp.flipud(tp.tensor([1, 2, 3])).tolist()
    [3, 2, 1]
    """
    x = _t(input)
    if x.ndim < 1:
        raise ValueError("flipud: input must be >= 1-d, got a 0-d tensor")
    return sh.flip(x, (0,))


def rot90(input, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees `k` times in the plane of `dims` (from the first toward the second).

    >>> import tensorplay as tp
    >>> tp.rot90(tp.tensor([[1, 2], [3, 4]]), 2).tolist()
    [[4, 3], [2, 1]]
    """
    x = _t(input)
    dims = tuple(dims)
    if len(dims) != 2 or x.ndim < 2:
        raise ValueError(f"rot90: expected two dims and an input of >= 2 dims, got dims {dims} and shape "
                         f"{tuple(x.shape)}")
    d0, d1 = (normalize_dim(d, x.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise ValueError(f"rot90: the two dims must differ, got {dims}")
    k %= 4
    if k == 0:
        from ._common import copy

        return copy(x)
    if k == 1:
        return sh.transpose(sh.flip(x, (d1,)), d0, d1)
    if k == 2:
        return sh.flip(x, (d0, d1))
    return sh.flip(sh.transpose(x, d0, d1), (d1,))


def _atleast(n: int, name: str):
    def fn(*tensors):
        items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)) else tensors
        out = []
        for t in items:
            t = _t(t)
            if t.ndim < n:
                shape = tuple(t.shape)
                if n == 3:  # as numpy/torch: (L,) -> (1, L, 1), (H, W) -> (H, W, 1)
                    shape = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
                else:
                    shape = (1,) * (n - len(shape)) + shape
                t = sh.reshape(t, shape)
            out.append(t)
        return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (tuple, list)) else tuple(out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Each input with at least {n} dims (leading unit dims added); one tensor in, one out.

    >>> import tensorplay as tp
    >>> tp.{name}(tp.tensor(1.0)).shape
    tensorplay.Size({", ".join(["1"] * n)})
    """
    return fn


atleast_1d = _atleast(1, "atleast_1d")
atleast_2d = _atleast(2, "atleast_2d")
atleast_3d = _atleast(3, "atleast_3d")


def dstack(tensors) -> Tensor:
    """Concatenate along dim 2, after making every input at least 3-d.

    >>> import tensorplay as tp
    >>> tp.dstack([tp.tensor([1, 2]), tp.tensor([3, 4])]).shape
    tensorplay.Size(1, 2, 2)
    """
    return sh.cat(list(atleast_3d(tuple(tensors))), 2)


def column_stack(tensors) -> Tensor:
    """Stack 1-d inputs as columns (2-d inputs are concatenated along dim 1).

    >>> import tensorplay as tp
    >>> tp.column_stack([tp.tensor([1, 2]), tp.tensor([3, 4])]).tolist()
    [[1, 3], [2, 4]]
    """
    cols = [sh.reshape(_t(t), (-1, 1)) if _t(t).ndim < 2 else _t(t) for t in tensors]
    return sh.cat(cols, 1)


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The `n`-th forward difference along `dim` (bools: `!=`), with optional `prepend`/`append` values.

    >>> import tensorplay as tp
    >>> tp.diff(tp.tensor([1.0, 2.0, 4.0]), prepend=tp.tensor([0.0])).tolist()
    [1.0, 1.0, 2.0]
    """
    x = _t(input)
    if x.ndim == 0:
        raise ValueError("diff: expected at least 1-dimensional tensor")
    d = normalize_dim(dim, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        parts = [_t(p) for p in parts]
        parts = [sh.reshape(p, tuple(x.shape[:d]) + (1,) + tuple(x.shape[d + 1:])) if p.ndim == 0 else p
                 for p in parts]
        x = sh.cat(parts, d)
    for _ in range(int(n)):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = sh.narrow(x, d, 1, m - 1), sh.narrow(x, d, 0, m - 1)
        x = ew.ne(hi, lo) if x.dtype.is_bool else ew.sub(hi, lo)
    return x


def take_along_dim(input, indices, dim=None) -> Tensor:
    """Values of `input` at `indices` along `dim` (broadcasting the other dims); no dim: on the flattened input.

    >>> import tensorplay as tp
    >>> x = tp.tensor([[10, 30, 20]])
    >>> tp.take_along_dim(x, tp.argsort(x, dim=1), dim=1).tolist()
    [[10, 20, 30]]
    """
    from .indexing import gather

    x, idx = _t(input), _t(indices)
    if dim is None:
        return gather(sh.reshape(x, (-1,)), 0, sh.reshape(idx, (-1,)))
    d = normalize_dim(dim, x.ndim, "take_along_dim")
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_dim: input {tuple(x.shape)} and indices {tuple(idx.shape)} should have the "
                         f"same number of dimensions")
    from ._common import broadcast_shapes

    xs, ids = list(x.shape), list(idx.shape)
    xs[d], ids[d] = 1, 1
    b = broadcast_shapes(tuple(xs), tuple(ids), op="take_along_dim")
    xb = list(b)
    xb[d] = x.shape[d]
    ib = list(b)
    ib[d] = idx.shape[d]
    return gather(sh.expand(x, tuple(xb)), d, sh.expand(idx, tuple(ib)))


def block_diag(*tensors) -> Tensor:
    """The inputs (0-d, 1-d as a row, or 2-d) placed on the diagonal of one matrix.

    >>> import tensorplay as tp
    >>> tp.block_diag(tp.tensor([[1, 2]]), tp.tensor(3)).tolist()
    [[1, 2, 0], [0, 0, 3]]
    """
    from ..nn.functional import pad

    mats = []
    for t in tensors:
        t = _t(t)
        if t.ndim > 2:
            raise ValueError(f"block_diag: input tensors must have 2 or fewer dimensions, got shape {tuple(t.shape)}")
        mats.append(sh.reshape(t, (1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1 else tuple(t.shape)))
    if not mats:
        from .creation import zeros

        return zeros(1, 0)
    dtype = result_type(*mats, op="block_diag")
    total = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        w = m.shape[1]
        rows.append(pad(convert(m, dtype), (left, total - left - w)))
        left += w
    return sh.cat(rows, 0)


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids from 1-d inputs: ``indexing="ij"`` (torch's default) or ``"xy"`` (first two swapped).

    >>> import tensorplay as tp
    >>> a, b = tp.meshgrid(tp.tensor([1, 2]), tp.tensor([3, 4, 5]), indexing="ij")
    >>> tuple(a.shape), b[0].tolist()
    ((2, 3), [3, 4, 5])
    """
    items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)) else tensors
    items = [_t(t) for t in items]
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in items:
        if t.ndim > 1:
            raise ValueError(f"meshgrid: expected 0-d or 1-d tensors, got shape {tuple(t.shape)}")
    items = [sh.reshape(t, (-1,)) for t in items]
    swap = indexing == "xy" and len(items) >= 2
    if swap:
        items[0], items[1] = items[1], items[0]
    shape = tuple(t.shape[0] for t in items)
    n = len(items)
    grids = [sh.expand(sh.reshape(t, (1,) * i + (-1,) + (1,) * (n - i - 1)), shape) for i, t in enumerate(items)]
    if swap:  # "xy": the grids of the swapped inputs, handed back in the caller's order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element per 1-d input, as rows (a 1-d input alone is returned as is).

    >>> import tensorplay as tp
    >>> tp.cartesian_prod(tp.tensor([1, 2]), tp.tensor([3, 4])).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    if len(tensors) == 1:
        return _t(tensors[0])
    grids = meshgrid(*tensors, indexing="ij")
    return sh.stack([sh.reshape(g, (-1,)) for g in grids], 1)


def kron(input, other) -> Tensor:
    """The Kronecker product (inputs padded to the same number of dims with leading unit dims).

    >>> import tensorplay as tp
    >>> tp.kron(tp.tensor([[1, 2]]), tp.tensor([[1], [10]])).tolist()
    [[1, 2], [10, 20]]
    """
    a, b = _t(input), _t(other)
    n = max(a.ndim, b.ndim)
    a = sh.reshape(a, (1,) * (n - a.ndim) + tuple(a.shape))
    b = sh.reshape(b, (1,) * (n - b.ndim) + tuple(b.shape))
    a_e = sh.reshape(a, tuple(x for d in a.shape for x in (d, 1)))
    b_e = sh.reshape(b, tuple(x for d in b.shape for x in (1, d)))
    return sh.reshape(ew.mul(a_e, b_e), tuple(p * q for p, q in zip(a.shape, b.shape)))


def _tri_indices(row: int, col: int, offset: int, upper: bool, dtype) -> Tensor:
    from .creation import tensor

    r, c = (np.triu_indices if upper else np.tril_indices)(int(row), int(offset), int(col))
    return tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or dtypes.int64)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) coordinates of the lower triangle of a row x col matrix (diagonal shifted by `offset`).

    >>> import tensorplay as tp
    >>> tp.tril_indices(2, 2).tolist()
    [[0, 1, 1], [0, 0, 1]]
    """
    from .._device import check_device

    check_device(device, "tril_indices")
    return _tri_indices(row, col, offset, False, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) coordinates of the upper triangle of a row x col matrix (diagonal shifted by `offset`).

    >>> import tensorplay as tp
    >>> tp.triu_indices(2, 3, 1).tolist()
    [[0, 0, 1], [1, 2, 2]]
    """
    from .._device import check_device

    check_device(device, "triu_indices")
    return _tri_indices(row, col, offset, True, dtype)


def vander(x, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-d `x`: columns are powers ``x**(N-1) ... x**0`` (or increasing).

    >>> import tensorplay as tp
    >>> tp.vander(tp.tensor([1, 2, 3]), 3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    from .creation import arange

    v = _t(x)
    if v.ndim != 1:
        raise ValueError(f"vander: x must be a one-dimensional tensor, got shape {tuple(v.shape)}")
    n = v.shape[0] if N is None else int(N)
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    if v.dtype.is_bool:
        v = convert(v, dtypes.int64)
    powers = arange(n, dtype=v.dtype if v.dtype.is_floating_point else dtypes.int64)
    if not increasing:
        powers = sh.flip(powers, (0,))
    if not v.dtype.is_floating_point:
        v = convert(v, dtypes.int64)
    return ew.pow(sh.unsqueeze(v, 1), sh.unsqueeze(powers, 0))


for _name, _fn, _method in (
    ("ravel", ravel, True), ("fliplr", fliplr, True), ("flipud", flipud, True), ("rot90", rot90, True),
    ("atleast_1d", atleast_1d, False), ("atleast_2d", atleast_2d, False), ("atleast_3d", atleast_3d, False),
    ("dstack", dstack, False), ("column_stack", column_stack, False), ("diff", diff, True),
    ("take_along_dim", take_along_dim, True), ("block_diag", block_diag, False), ("meshgrid", meshgrid, False),
    ("cartesian_prod", cartesian_prod, False), ("kron", kron, True), ("tril_indices", tril_indices, False),
    ("triu_indices", triu_indices, False), ("vander", vander, False),
):
    op(_name, _fn, method=_method)

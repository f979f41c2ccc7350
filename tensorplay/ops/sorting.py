"""Sorting and searching: sort, argsort, msort, topk, kthvalue, searchsorted, bucketize.

Everything sorts through one primitive, `argsort` (stable; NaN above every
number, so last ascending and first descending, as in PyTorch). Values are
gathered along the sorted dim with that permutation, so gradients flow to the
elements that were picked, and every transform applies (vmap, jvp, grad,
tp.compile). `searchsorted`/`bucketize` count the boundaries that come before
each value in the same order, a broadcast compare and a sum.

>>> import tensorplay as tp
>>> tp.sort(tp.tensor([3.0, 1.0, 2.0])).indices.tolist()
[1, 2, 0]
"""
from __future__ import annotations

from collections import namedtuple

from tensorplay.ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, convert, copy, dtype_of, normalize_dim, shape_of
from ._table import op

values_indices = namedtuple("values_indices", ["values", "indices"])


def _arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _permutation(x: Tensor, dim: int, descending: bool, op_name: str) -> tuple[Tensor, int]:
    """The stable sorting permutation of `x` along `dim` (0-d: the index 0) and the normalised dim."""
    shape = shape_of(x)
    if not shape:
        normalize_dim(dim, 0, op_name)
        return bind("full", shape=(), dtype=dtypes.int64, value=0), 0
    d = normalize_dim(dim, len(shape), op_name)
    return bind("argsort", x, axis=d, descending=bool(descending)), d


def _take_along(x: Tensor, idx: Tensor, d: int) -> Tensor:
    from .indexing import gather

    return copy(x) if not shape_of(x) else gather(x, d, idx)


def sort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):
    """Sorted values and their original positions (int64) along `dim`.

    The sort is always stable (equal elements keep their order), so `stable` only
    documents intent. NaN sorts as the largest value.

    >>> import tensorplay as tp
    >>> v, i = tp.sort(tp.tensor([[2.0, float("nan"), 1.0]]), descending=True)
    >>> v.tolist(), i.tolist()
    ([[nan, 2.0, 1.0]], [[1, 0, 2]])
    """
    x = _arg(input)
    idx, d = _permutation(x, dim, descending, "sort")
    return values_indices(_take_along(x, idx, d), idx)


def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The int64 positions that sort `input` along `dim` (stable; NaN largest).

    >>> import tensorplay as tp
    >>> tp.argsort(tp.tensor([1, 0, 1, 0]), descending=True).tolist()
    [0, 2, 1, 3]
    """
    return _permutation(_arg(input), dim, descending, "argsort")[0]


def msort(input) -> Tensor:
    """`input` sorted along its first dim (``sort(input, dim=0).values``).

    >>> import tensorplay as tp
    >>> tp.msort(tp.tensor([[2, 1], [1, 3]])).tolist()
    [[1, 1], [2, 3]]
    """
    return sort(input, dim=0).values


def _narrow_first(t: Tensor, d: int, k: int) -> Tensor:
    from .shape import narrow

    return narrow(t, d, 0, k)


def _check_k(x: Tensor, k, dim: int, lowest: int, op_name: str):
    """`x`'s shape, once `k` is checked to be an int in [lowest, size of `dim`]."""
    shape = shape_of(x)
    n = shape[normalize_dim(dim, len(shape), op_name)] if shape else 1
    if not isinstance(k, int) or isinstance(k, bool) or not lowest <= k <= n:
        raise RuntimeError(f"{op_name}: k={k!r} must be an int in [{lowest}, {n}] for dim {dim} of shape "
                           f"{tuple(shape)}")
    return shape


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The `k` largest (or smallest) values along `dim` and their positions, largest first.

    >>> import tensorplay as tp
    >>> tp.topk(tp.tensor([1.0, 5.0, 3.0, 4.0]), 2)
    values_indices(values=tensor([5., 4.]), indices=tensor([1, 3]))
    """
    x = _arg(input)
    shape = _check_k(x, k, dim, 0, "topk")
    idx, d = _permutation(x, dim, largest, "topk")
    if shape:
        idx = _narrow_first(idx, d, k)
    elif k == 0:
        raise RuntimeError("topk: k=0 is out of range for a 0-d tensor")
    return values_indices(_take_along(x, idx, d), idx)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):
    """The `k`-th smallest value (k counts from 1) along `dim` and its position.

    >>> import tensorplay as tp
    >>> tp.kthvalue(tp.tensor([3.0, 1.0, 2.0]), 2)
    values_indices(values=tensor(2.), indices=tensor(2))
    """
    x = _arg(input)
    shape = _check_k(x, k, dim, 1, "kthvalue")
    idx, d = _permutation(x, dim, False, "kthvalue")
    if not shape:
        return values_indices(copy(x), idx)
    from .shape import narrow, squeeze

    idx = narrow(idx, d, k - 1, 1)
    values = _take_along(x, idx, d)
    if keepdim:
        return values_indices(values, idx)
    return values_indices(squeeze(values, d), squeeze(idx, d))


# --- searching --------------------------------------------------------------------------------------
def _before(a: Tensor, b: Tensor) -> Tensor:
    """a sorts strictly before b, with NaN above every number (the order `sort` uses)."""
    from .elementwise import isnan, logical_and, logical_not, logical_or, lt

    if not dtype_of(a).is_floating_point:
        return lt(a, b)
    return logical_or(lt(a, b), logical_and(isnan(b), logical_not(isnan(a))))


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side=None,
                 sorter=None) -> Tensor:
    """Positions at which the values of `input` would be inserted into `sorted_sequence` (along its
    last dim) to keep it sorted: the first such place, or with `right` (``side='right'``) the last.

    `sorted_sequence` is 1-d, or has the leading dims of `input`; `sorter` (int) sorts it first.
    A scalar `input` gives a 0-d result.

    >>> import tensorplay as tp
    >>> tp.searchsorted(tp.tensor([1.0, 2.0, 2.0, 4.0]), tp.tensor([2.0, 3.0, 9.0])).tolist()
    [1, 3, 4]
    >>> tp.searchsorted(tp.tensor([1.0, 2.0, 2.0, 4.0]), 2.0, right=True).item()
    3
    """
    from .elementwise import logical_not
    from .reduction import sum as _sum
    from .shape import unsqueeze

    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise RuntimeError("searchsorted: side='left' and right=True contradict each other")
        right = side == "right"
    seq = _arg(sorted_sequence)
    scalar = not isinstance(input, Tensor)
    vals = as_tensor_operand(input, dtype_of(seq) if scalar else None)
    sshape, vshape = shape_of(seq), shape_of(vals)
    if not sshape:
        raise RuntimeError("searchsorted: sorted_sequence must have at least one dim, got a 0-d tensor")
    if len(sshape) > 1 and (scalar or sshape[:-1] != vshape[:-1]):
        raise RuntimeError(f"searchsorted: sorted_sequence {tuple(sshape)} must be 1-d or have the leading dims "
                           f"of input {tuple(vshape)}")
    if sorter is not None:
        seq = _take_along(seq, _arg(sorter), len(sshape) - 1)
    if dtype_of(seq) != dtype_of(vals):
        from ._common import result_type

        common = result_type(seq, vals)
        seq, vals = convert(seq, common), convert(vals, common)
    if len(sshape) == 1:
        s = seq
        for _ in vshape:
            s = unsqueeze(s, 0)
    else:
        s = unsqueeze(seq, -2)
    v = unsqueeze(vals, -1)  # (..., m, 1) against (..., 1, n)
    counted = logical_not(_before(v, s)) if right else _before(s, v)
    out = _sum(counted, -1)
    return convert(out, dtypes.int32 if out_int32 else dtypes.int64)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each value of `input` among the sorted 1-d `boundaries`: i with
    boundaries[i-1] < x <= boundaries[i] (with `right`: boundaries[i-1] <= x < boundaries[i]).

    >>> import tensorplay as tp
    >>> tp.bucketize(tp.tensor([0.5, 1.0, 3.5]), tp.tensor([1.0, 2.0, 3.0])).tolist()
    [0, 0, 3]
    """
    b = _arg(boundaries)
    if len(shape_of(b)) != 1:
        raise RuntimeError(f"bucketize: boundaries must be 1-d, got shape {tuple(shape_of(b))}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


# === the op table ===================================================================================
for _name, _method in (("sort", True), ("argsort", True), ("msort", True), ("topk", True), ("kthvalue", True),
                       ("searchsorted", False), ("bucketize", False)):
    op(_name, globals()[_name], method=_method)

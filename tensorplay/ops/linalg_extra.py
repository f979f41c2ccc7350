"""Fused multiply-adds and distances: addmm, addmv, addbmm, baddbmm, cross, dist, cdist, as composites
of matmul and elementwise ops (every transform applies).

>>> import tensorplay as tp
>>> tp.addmm(tp.ones(2, 2), tp.eye(2), tp.ones(2, 2), beta=0.5, alpha=2.0).tolist()
[[2.5, 2.5], [2.5, 2.5]]
>>> tp.cdist(tp.tensor([[0.0, 0.0]]), tp.tensor([[3.0, 4.0], [0.0, 1.0]])).tolist()
[[5.0, 1.0]]
"""
from __future__ import annotations

from .._tensor import Tensor
from . import elementwise as ew
from . import linalg as la
from . import reduction as red
from . import shape as sh
from ._common import as_tensor_operand, normalize_dim
from ._table import op


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _scaled_sum(input, product, beta, alpha) -> Tensor:
    """``beta * input + alpha * product``; beta == 0 ignores `input` (NaN in it does not propagate), as torch."""
    prod = product if alpha == 1 else ew.mul(product, alpha)
    if beta == 0:
        return _broadcast_like(prod, input)
    base = _t(input) if beta == 1 else ew.mul(_t(input), beta)
    return ew.add(base, prod)


def _broadcast_like(prod: Tensor, input) -> Tensor:
    from ._common import broadcast_shapes

    shape = broadcast_shapes(tuple(_t(input).shape), tuple(prod.shape), op="addmm")
    return sh.expand(prod, shape) if tuple(prod.shape) != shape else prod


def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for 2-d `mat1`, `mat2` (`input` broadcasts).

    >>> import tensorplay as tp
    >>> tp.addmm(tp.zeros(2), tp.ones(2, 3), tp.ones(3, 2)).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    return _scaled_sum(input, la.mm(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``.

    >>> import tensorplay as tp
    >>> tp.addmv(tp.ones(2), tp.eye(2), tp.tensor([1.0, 2.0])).tolist()
    [2.0, 3.0]
    """
    return _scaled_sum(input, la.mv(mat, vec), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``.

    >>> import tensorplay as tp
    >>> tp.baddbmm(tp.zeros(2, 1, 1), tp.ones(2, 1, 3), tp.ones(2, 3, 1)).flatten().tolist()
    [3.0, 3.0]
    """
    return _scaled_sum(input, la.bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``.

    >>> import tensorplay as tp
    >>> tp.addbmm(tp.zeros(1, 1), tp.ones(2, 1, 3), tp.ones(2, 3, 1)).tolist()
    [[6.0]]
    """
    return _scaled_sum(input, red.sum(la.bmm(batch1, batch2), 0), beta, alpha)


def cross(input, other, dim=None) -> Tensor:
    """The cross product of 3-vectors along `dim` (default: the first dim of size 3, as torch.cross).

    >>> import tensorplay as tp
    >>> tp.cross(tp.tensor([1.0, 0.0, 0.0]), tp.tensor([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    a, b = _t(input), _t(other)
    from ._common import broadcast_shapes

    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape), op="cross")
    a, b = sh.expand(a, shape), sh.expand(b, shape)
    if dim is None:
        dims = [i for i, n in enumerate(shape) if n == 3]
        if not dims:
            raise ValueError(f"cross: no dimension of size 3 in input of shape {shape}")
        d = dims[0]
    else:
        d = normalize_dim(dim, len(shape), "cross")
        if shape[d] != 3:
            raise ValueError(f"cross: dimension {dim} does not have size 3 (shape {shape})")
    a0, a1, a2 = sh.unbind(a, d)
    b0, b1, b2 = sh.unbind(b, d)
    return sh.stack([ew.sub(ew.mul(a1, b2), ew.mul(a2, b1)), ew.sub(ew.mul(a2, b0), ew.mul(a0, b2)),
                     ew.sub(ew.mul(a0, b1), ew.mul(a1, b0))], d)


def dist(input, other, p=2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), a 0-d tensor.

    >>> import tensorplay as tp
    >>> tp.dist(tp.tensor([0.0, 0.0]), tp.tensor([3.0, 4.0])).item()
    5.0
    """
    return red.norm(ew.sub(_t(input), _t(other)), p)


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distances between every row of `x1` (``(*, P, M)``) and every row of `x2` (``(*, R, M)``).

    Euclidean distances are computed from differences (not the matmul expansion), so they are exact at 0.

    >>> import tensorplay as tp
    >>> tp.cdist(tp.tensor([[0.0], [1.0]]), tp.tensor([[3.0]]), p=1).tolist()
    [[3.0], [2.0]]
    """
    a, b = _t(x1), _t(x2)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cdist: expected x1 (*, P, M) and x2 (*, R, M) with the same M, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if p < 0:
        raise ValueError(f"cdist only supports non-negative p values, got {p}")
    diff = ew.sub(sh.unsqueeze(a, -2), sh.unsqueeze(b, -3))  # (*, P, R, M)
    if p == 2:
        sq = red.sum(ew.mul(diff, diff), -1)
        # sqrt with a zero-safe gradient: d sqrt(s) at s = 0 is taken as 0, as torch's cdist backward
        safe = ew.where(ew.eq(sq, 0.0), 1.0, sq)
        return ew.where(ew.eq(sq, 0.0), 0.0, ew.sqrt(safe))
    return red.norm(diff, p, -1)


for _name, _fn in (("addmm", addmm), ("addmv", addmv), ("baddbmm", baddbmm), ("addbmm", addbmm),
                   ("cross", cross), ("dist", dist), ("cdist", cdist)):
    op(_name, _fn, method=_name != "cdist")

"""`tp.linalg`: norms, solves, inverses, determinants and the decompositions of torch.linalg.

The decompositions are primitives (`ir/prims/decompositions.py`) with JVP rules
(so also grad, jacrev, ...) and batching rules; leading dims are a batch, and
compiled code calls LAPACK from numpy's bundled OpenBLAS. The rest are
compositions of them: `inv` solves against the identity, `det` is
``sign * exp(logabsdet)``, `lstsq` goes through QR, and the norms are
reductions (matrix 2-norms and the nuclear norm through singular values).

>>> import tensorplay as tp
>>> a = tp.tensor([[4.0, 1.0], [1.0, 3.0]])
>>> tp.linalg.solve(a, tp.tensor([1.0, 2.0])).tolist()
[0.09090909361839294, 0.6363636255264282]
"""
from __future__ import annotations

import builtins
from collections import namedtuple

from tensorplay.ir import dtypes
from tensorplay.ir.prims.decompositions import LinAlgError

from ._tensor import Tensor
from ._trace import bind
from .ops._common import as_tensor_operand, broadcast_shapes, broadcast_to_shape, convert, dtype_of, shape_of

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "cholesky", "qr",
           "eigh", "eigvalsh", "svd", "svdvals", "lstsq"]

slogdet_result = namedtuple("slogdet_result", ["sign", "logabsdet"])
qr_result = namedtuple("qr_result", ["Q", "R"])
eigh_result = namedtuple("eigh_result", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("svd_result", ["U", "S", "Vh"])
lstsq_result = namedtuple("lstsq_result", ["solution", "residuals", "rank", "singular_values"])


def _matrix_arg(A, op: str, square: bool = True) -> Tensor:
    x = A if isinstance(A, Tensor) else as_tensor_operand(A)
    shape = shape_of(x)
    if len(shape) < 2:
        raise RuntimeError(f"linalg.{op}: A must have at least 2 dimensions, got shape {tuple(shape)}")
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, got shape {tuple(shape)}")
    if not dtype_of(x).is_floating_point:
        raise TypeError(f"linalg.{op}: expected a floating point tensor, got {dtype_of(x).name}")
    return x


def _mT(x: Tensor) -> Tensor:
    from .ops.shape import transpose

    return transpose(x, -2, -1)


# --- solves ----------------------------------------------------------------------------------------
def solve(A, B, *, left: bool = True) -> Tensor:
    """The solution X of A @ X = B (with ``left=False``: X @ A = B) for square, invertible A.

    B is a vector when it is 1-d or has A's dims but the last; leading dims broadcast.
    A singular A raises LinAlgError.

    >>> import tensorplay as tp
    >>> tp.linalg.solve(tp.tensor([[2.0, 0.0], [0.0, 4.0]]), tp.tensor([[2.0], [2.0]])).tolist()
    [[1.0], [0.5]]
    """
    a = _matrix_arg(A, "solve")
    b = B if isinstance(B, Tensor) else as_tensor_operand(B)
    if dtype_of(b) != dtype_of(a):
        raise TypeError(f"linalg.solve: A ({dtype_of(a).name}) and B ({dtype_of(b).name}) must have one dtype")
    if not left:
        return _mT(solve(_mT(a), _mT(b)))
    sa, sb = shape_of(a), shape_of(b)
    vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and tuple(sb) == tuple(sa[:-1]))
    if vector:
        from .ops.shape import unsqueeze

        b = unsqueeze(b, -1)
        sb = shape_of(b)
    if sb[-2] != sa[-1]:
        raise RuntimeError(f"linalg.solve: incompatible shapes of A {tuple(sa)} and B {tuple(shape_of(B))}")
    lead = broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]), op="linalg.solve")
    a = broadcast_to_shape(a, lead + tuple(sa[-2:]), "linalg.solve")
    b = broadcast_to_shape(b, lead + tuple(sb[-2:]), "linalg.solve")
    x = bind("linalg_solve", a, b)
    if vector:
        from .ops.shape import squeeze

        return squeeze(x, -1)
    return x


def _eye_like(a: Tensor) -> Tensor:
    from .ops.creation import eye

    n = shape_of(a)[-1]
    return broadcast_to_shape(convert(eye(n), dtype_of(a)), tuple(shape_of(a)), "linalg.inv")


def inv(A) -> Tensor:
    """The inverse of square, invertible matrices (a solve against the identity).

    >>> import tensorplay as tp
    >>> tp.linalg.inv(tp.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    a = _matrix_arg(A, "inv")
    return bind("linalg_solve", a, _eye_like(a))


# --- determinants ----------------------------------------------------------------------------------
def slogdet(A):
    """(sign, log|det|) of square matrices: sign is -1, 0 or 1; log|det| is -inf for singular A.

    >>> import tensorplay as tp
    >>> s, l = tp.linalg.slogdet(tp.tensor([[0.0, 2.0], [3.0, 0.0]]))
    >>> s.item(), round(l.item(), 5)
    (-1.0, 1.79176)
    """
    a = _matrix_arg(A, "slogdet")
    return slogdet_result(bind("slogdet", a, part="sign"), bind("slogdet", a, part="logabsdet"))


def det(A) -> Tensor:
    """The determinant of square matrices, ``sign * exp(log|det|)`` from one LU factorisation.

    >>> import tensorplay as tp
    >>> round(tp.linalg.det(tp.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 5)
    -2.0
    """
    from .ops.elementwise import exp, mul

    sign, logabs = slogdet(A)
    return mul(sign, exp(logabs))


# --- decompositions --------------------------------------------------------------------------------
def cholesky(A, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices: lower L with L @ L^T = A (reads the
    lower triangle), or with `upper` the upper factor U = L^T. Raises LinAlgError otherwise.

    >>> import tensorplay as tp
    >>> tp.linalg.cholesky(tp.tensor([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    a = _matrix_arg(A, "cholesky")
    low = bind("cholesky", a)
    return _mT(low) if upper else low


def qr(A, mode: str = "reduced"):
    """Q, R with A = Q @ R, Q with orthonormal columns and R upper triangular (Householder, LAPACK's
    signs). `mode`: "reduced" (Q is (m, k), R (k, n), k = min(m, n)), "r" (R only; Q is empty), or
    "complete" for m <= n (where it equals "reduced").

    >>> import tensorplay as tp
    >>> q, r = tp.linalg.qr(tp.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [round(v, 4) for v in r.flatten().tolist()]
    [-5.0, -2.2, 0.0, 0.4]
    """
    a = _matrix_arg(A, "qr", square=False)
    m, n = shape_of(a)[-2:]
    if mode not in ("reduced", "r", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'r' or 'complete', got {mode!r}")
    if mode == "complete" and m > n:
        raise NotImplementedError(f"linalg.qr: mode='complete' for a matrix with more rows than columns "
                                  f"({tuple(shape_of(a))}) is not supported; use mode='reduced'")
    r = bind("qr", a, part="r")
    if mode == "r":
        from .ops.creation import empty

        return qr_result(empty(0, dtype=dtype_of(a)), r)
    return qr_result(bind("qr", a, part="q"), r)


def eigh(A, UPLO: str = "L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices, reading
    the lower (`UPLO`="L") or upper triangle.

    >>> import tensorplay as tp
    >>> w, v = tp.linalg.eigh(tp.tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> [round(x, 5) for x in w.tolist()]
    [1.0, 3.0]
    """
    a = _matrix_arg(A, "eigh")
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if UPLO == "U":
        a = _mT(a)
    return eigh_result(bind("eigh", a, part="eigenvalues"), bind("eigh", a, part="eigenvectors"))


def eigvalsh(A, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of symmetric matrices (see `eigh`).

    >>> import tensorplay as tp
    >>> [round(x, 5) for x in tp.linalg.eigvalsh(tp.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()]
    [1.0, 2.0]
    """
    return eigh(A, UPLO).eigenvalues


def svd(A, full_matrices: bool = True):
    """U, S, Vh with A = U @ diag(S) @ Vh, S descending. The reduced factors (U (m, k), Vh (k, n)) with
    ``full_matrices=False``; the full ones for square A (other shapes: use full_matrices=False).

    >>> import tensorplay as tp
    >>> u, s, vh = tp.linalg.svd(tp.tensor([[3.0, 0.0], [0.0, -4.0]]))
    >>> [round(x, 5) for x in s.tolist()]
    [4.0, 3.0]
    """
    a = _matrix_arg(A, "svd", square=False)
    m, n = shape_of(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(f"linalg.svd: full_matrices=True for a non-square matrix {tuple(shape_of(a))} is "
                                  f"not supported; use full_matrices=False")
    return svd_result(*(bind("svd", a, part=p) for p in ("u", "s", "vh")))


def svdvals(A) -> Tensor:
    """The singular values of matrices, descending.

    >>> import tensorplay as tp
    >>> [round(x, 5) for x in tp.linalg.svdvals(tp.tensor([[0.0, 2.0], [1.0, 0.0]])).tolist()]
    [2.0, 1.0]
    """
    return bind("svd", _matrix_arg(A, "svdvals", square=False), part="s")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X minimising ||A @ X - B|| for full-rank A (for wide A, the
    minimum-norm one), through QR; `rank` counts the singular values above rcond * max(S) (rcond
    defaults to eps * max(m, n)). As with torch's default CPU driver ('gelsy'), `residuals` and
    `singular_values` are empty.

    >>> import tensorplay as tp
    >>> a = tp.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> [round(v, 5) for v in tp.linalg.lstsq(a, tp.tensor([[1.0], [1.0], [3.0]])).solution.flatten().tolist()]
    [1.33333, 1.33333]
    """
    import numpy as np

    from .ops.creation import empty
    from .ops.elementwise import gt, mul
    from .ops.reduction import amax, sum as _sum

    if driver not in (None, "gelsy", "gels", "gelsd", "gelss"):
        raise ValueError(f"linalg.lstsq: unknown driver {driver!r}")
    a = _matrix_arg(A, "lstsq", square=False)
    b = B if isinstance(B, Tensor) else as_tensor_operand(B)
    vector = len(shape_of(b)) == len(shape_of(a)) - 1
    if vector:
        from .ops.shape import unsqueeze

        b = unsqueeze(b, -1)
    m, n = shape_of(a)[-2:]
    if shape_of(b)[-2] != m:
        raise RuntimeError(f"linalg.lstsq: A {tuple(shape_of(a))} and B {tuple(shape_of(B))} need the same number "
                           f"of rows")
    if m >= n:
        q, r = qr(a)
        x = solve(r, _mT(q) @ b)
    else:
        q, r = qr(_mT(a))
        x = q @ solve(_mT(r), b)
    if vector:
        from .ops.shape import squeeze

        x = squeeze(x, -1)
    s = svdvals(a)
    tol = (float(np.finfo(dtype_of(a).np).eps) * builtins.max(m, n)) if rcond is None else float(rcond)
    rank = _sum(gt(s, mul(amax(s, -1, keepdim=True), tol)) if builtins.min(m, n) else convert(s, dtypes.int64), -1)
    return lstsq_result(x, empty(0, dtype=dtype_of(a)), convert(rank, dtypes.int64), empty(0, dtype=dtype_of(a)))


# --- norms -----------------------------------------------------------------------------------------
def _dims(dim, ndim: int):
    if dim is None:
        return None
    return (dim,) if isinstance(dim, int) else tuple(dim)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The vector `ord`-norm over `dim` (every element when None): ord is any float, inf or -inf
    (0 counts non-zeros).

    >>> import tensorplay as tp
    >>> tp.linalg.vector_norm(tp.tensor([[3.0, 4.0], [0.0, 0.0]]), dim=1).tolist()
    [5.0, 0.0]
    """
    from .ops.reduction import norm as _norm

    t = x if isinstance(x, Tensor) else as_tensor_operand(x)
    if dtype is not None:
        t = convert(t, dtype)
    if isinstance(ord, str):
        raise ValueError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if not shape_of(t) and dim is not None:
        dim = None
    return _norm(t, ord, _dims(dim, len(shape_of(t))), keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """The matrix norm over the two dims `dim`: "fro", "nuc" (sum of singular values), 2 / -2
    (largest / smallest singular value), 1 / -1 (largest / smallest column abs-sum), inf / -inf
    (rows).

    >>> import tensorplay as tp
    >>> a = tp.tensor([[1.0, -2.0], [3.0, 4.0]])
    >>> tp.linalg.matrix_norm(a, 1).item(), tp.linalg.matrix_norm(a, float("inf")).item()
    (6.0, 7.0)
    """
    from .ops.elementwise import abs as _abs
    from .ops.reduction import amax, amin, sum as _sum
    from .ops.shape import movedim, unsqueeze

    a = A if isinstance(A, Tensor) else as_tensor_operand(A)
    if dtype is not None:
        a = convert(a, dtype)
    nd = len(shape_of(a))
    if nd < 2:
        raise RuntimeError(f"linalg.matrix_norm: A must have at least 2 dimensions, got shape {tuple(shape_of(a))}")
    d0, d1 = (d % nd for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different, got {tuple(dim)}")
    if ord == "fro":
        return vector_norm(a, 2, (d0, d1), keepdim)
    inf = float("inf")
    if ord in (1, -1, inf, -inf):
        summed_dim, reduced_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = _sum(_abs(a), summed_dim, keepdim=True)
        out = (amax if ord > 0 else amin)(sums, reduced_dim, keepdim=True)
        return out if keepdim else _squeeze2(out, d0, d1)
    if ord not in ("nuc", 2, -2):
        raise ValueError(f"linalg.matrix_norm: unsupported ord {ord!r}")
    s = svdvals(movedim(_matrix_arg(a, "matrix_norm", square=False), (d0, d1), (-2, -1)))
    out = _sum(s, -1) if ord == "nuc" else (amax if ord == 2 else amin)(s, -1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = unsqueeze(out, d)
    return out


def _squeeze2(t: Tensor, d0: int, d1: int) -> Tensor:
    from .ops.shape import squeeze

    for d in sorted((d0, d1), reverse=True):
        t = squeeze(t, d)
    return t


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """torch.linalg.norm: with `ord` None, the 2-norm of the flattened input (or over `dim`); otherwise
    a vector norm for 1-d input or an int `dim`, a matrix norm for 2-d input or a pair `dim`.

    >>> import tensorplay as tp
    >>> tp.linalg.norm(tp.tensor([[3.0, 0.0], [0.0, 4.0]])).item(), tp.linalg.norm(tp.tensor([3.0, 4.0]), 1).item()
    (5.0, 7.0)
    """
    a = A if isinstance(A, Tensor) else as_tensor_operand(A)
    dims = _dims(dim, len(shape_of(a)))
    if ord is None:
        return vector_norm(a, 2, dims, keepdim, dtype=dtype)
    if dims is None:
        if len(shape_of(a)) == 1:
            return vector_norm(a, ord, None, keepdim, dtype=dtype)
        if len(shape_of(a)) == 2:
            return matrix_norm(a, ord, (-2, -1), keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: with ord={ord!r}, A must be 1-d or 2-d unless dim is given, "
                           f"got shape {tuple(shape_of(a))}")
    if len(dims) == 1:
        return vector_norm(a, ord, dims, keepdim, dtype=dtype)
    return matrix_norm(a, ord, dims, keepdim, dtype=dtype)


# --- composites over the functions above (issue 16): every transform applies ------------------------
def matmul(input, other) -> Tensor:
    """``input @ other`` (as `tp.matmul`).

    >>> import tensorplay as tp
    >>> tp.linalg.matmul(tp.eye(2), tp.tensor([1.0, 2.0])).tolist()
    [1.0, 2.0]
    """
    from .ops.linalg import matmul as _matmul

    return _matmul(input, other)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of a batch of matrices (the last two dims by default).

    >>> import tensorplay as tp
    >>> tp.linalg.diagonal(tp.tensor([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    from .ops.shape import diagonal as _diagonal

    return _diagonal(as_tensor_operand(A), offset, dim1, dim2)


def vecdot(x, y, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along `dim` (inputs broadcast).

    >>> import tensorplay as tp
    >>> tp.linalg.vecdot(tp.tensor([[1.0, 2.0]]), tp.tensor([3.0, 4.0])).tolist()
    [11.0]
    """
    from .ops import elementwise as ew, reduction as red

    return red.sum(ew.mul(as_tensor_operand(x), as_tensor_operand(y)), dim)


def cross(input, other, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along `dim` (default the last; inputs broadcast).

    >>> import tensorplay as tp
    >>> tp.linalg.cross(tp.tensor([0.0, 1.0, 0.0]), tp.tensor([0.0, 0.0, 1.0])).tolist()
    [1.0, 0.0, 0.0]
    """
    from .ops.linalg_extra import cross as _cross

    return _cross(input, other, dim)


def matrix_power(A, n: int) -> Tensor:
    """``A`` multiplied by itself `n` times (n = 0: the identity; n < 0: powers of the inverse).

    >>> import tensorplay as tp
    >>> tp.linalg.matrix_power(tp.tensor([[1.0, 1.0], [0.0, 1.0]]), 3).tolist()
    [[1.0, 3.0], [0.0, 1.0]]
    """
    from .ops.linalg import matmul as _matmul

    a = _matrix_arg(A, "matrix_power")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        return broadcast_to_shape(_eye_like(a), shape_of(a))
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:  # square-and-multiply
        if n & 1:
            result = base if result is None else _matmul(result, base)
        n >>= 1
        if n:
            base = _matmul(base, base)
    return result


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices (the first may be a vector, as may the last).

    >>> import tensorplay as tp
    >>> tp.linalg.multi_dot([tp.tensor([1.0, 2.0]), tp.eye(2), tp.tensor([[1.0], [1.0]])]).tolist()
    [3.0]
    """
    from .ops.linalg import matmul as _matmul

    items = [as_tensor_operand(t) for t in tensors]
    if len(items) < 2:
        raise ValueError(f"multi_dot(): expected at least 2 tensors but got {len(items)}")
    for i, t in enumerate(items):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, len(items) - 1)):
            raise ValueError(f"multi_dot(): tensor {i} must be 2-d (only the first and last may be 1-d), got shape "
                             f"{tuple(t.shape)}")
    out = items[0]
    for t in items[1:]:
        out = _matmul(out, t)
    return out


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse from the SVD: singular values at most
    ``max(atol, rtol * largest)`` are dropped (default rtol: ``eps * max(m, n)``).

    >>> import tensorplay as tp
    >>> tp.linalg.pinv(tp.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    import numpy as np

    from .ops import elementwise as ew, reduction as red, shape as sh
    from .ops.linalg import matmul as _matmul

    a = _matrix_arg(A, "pinv", square=False)
    m, n = shape_of(a)[-2:]
    u, s, vh = svd(a, full_matrices=False)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(a.dtype.np).eps) * builtins.max(m, n)
    largest = red.amax(s, -1, keepdim=True) if s.shape[-1] else s
    cutoff = ew.maximum(ew.mul(largest, float(rtol)), float(atol or 0.0))
    keep = ew.gt(s, cutoff)
    s_inv = ew.where(keep, ew.div(1.0, ew.where(keep, s, 1.0)), 0.0)
    return _matmul(ew.mul(_mT(vh), sh.unsqueeze(s_inv, -2)), _mT(u))


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (int64).

    >>> import tensorplay as tp
    >>> tp.linalg.matrix_rank(tp.tensor([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    import numpy as np

    from .ops import elementwise as ew, reduction as red

    a = _matrix_arg(A, "matrix_rank", square=False)
    m, n = shape_of(a)[-2:]
    s = svdvals(a)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(a.dtype.np).eps) * builtins.max(m, n)
    largest = red.amax(s, -1, keepdim=True) if s.shape[-1] else s
    cutoff = ew.maximum(ew.mul(largest, float(rtol)), float(atol or 0.0))
    return red.sum(convert(ew.gt(s, cutoff), dtypes.int64), -1)


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """X with ``A @ X = B`` (``X @ A = B`` when not `left`) for triangular A: only A's `upper` or lower
    triangle is read (and its diagonal taken as ones when `unitriangular`).

    >>> import tensorplay as tp
    >>> tp.linalg.solve_triangular(tp.tensor([[2.0, 9.0], [1.0, 4.0]]), tp.tensor([[2.0], [9.0]]), upper=False).tolist()
    [[1.0], [2.0]]
    """
    from .ops import elementwise as ew
    from .ops.matrix import tril, triu

    a = _matrix_arg(A, "solve_triangular")
    t = triu(a) if upper else tril(a)
    if unitriangular:
        eye = _eye_like(a)
        t = ew.add(ew.mul(t, ew.sub(1.0, eye)), eye)
    return solve(t, B, left=left)


__all__ += ["matmul", "diagonal", "vecdot", "cross", "matrix_power", "multi_dot", "pinv", "matrix_rank",
            "solve_triangular"]

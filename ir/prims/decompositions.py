"""Dense linear algebra on the last two axes (leading axes are a batch): `linalg_solve`,
`cholesky`, `slogdet`, `qr`, `eigh`, `svd`.

A decomposition with several results is one primitive with a `part` attribute
naming the result (``qr`` part ``"q"`` or ``"r"``): each part is one node, the
JVP of one part emits the other parts it needs, and identical nodes are shared.
The rules are the standard matrix-calculus formulas (as in JAX's `lax.linalg`);
`linalg_solve` is linear in its right-hand side, so it also has a transpose.
Failures (a singular matrix, one that is not positive-definite) raise
`LinAlgError`, a RuntimeError, in the impl and in compiled code. Both compute in
double precision and round float32 results once.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..rules import is_undefined, materialize
from ..types import TensorType
from . import _matrix as mx
from ._util import check_dtypes, fail


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (torch.linalg.LinAlgError)."""


def _matrices(op: str, x: TensorType, square: bool = True) -> None:
    check_dtypes(op, x, dt.FLOATS, low_precision=False)  # LAPACK has no 16-bit routines (nor has torch on the CPU)
    if x.ndim < 2:
        fail(op, f"expected a (..., m, n) operand with at least 2 dims, got {x}")
    if square and x.shape[-1] != x.shape[-2]:
        fail(op, f"expected square matrices, got {x}")


def _part(op: str, part, parts) -> None:
    if part not in parts:
        fail(op, f"part must be one of {parts}, got {part!r}")


def _leading_batch(prim: Primitive):
    """Batching rule of a primitive over (..., m, n) operands: the batch axis becomes the first leading axis."""
    def rule(ctx, values, dims, **attrs):
        vals = [materialize(ctx, v, d, 0) for v, d in zip(values, dims)]
        return ctx.emit(prim, *vals, **attrs), 0
    return rule


def _declare(name, type_rule, impl, doc, n=1):
    prim = register(Primitive(name, type_rule, impl, num_operands=n, family="contraction", doc=doc))
    prim.def_batch(_leading_batch(prim))
    return prim


def _lapack(op: str, fn, x, *args):
    """`fn(x, *args)` in double precision (float32 operands are widened, as in compiled code)."""
    try:
        with np.errstate(all="ignore"):
            return fn(np.asarray(x, np.float64), *args)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"{op}: {e}") from None


# --- solve -----------------------------------------------------------------------------------------
def _solve_type(a: TensorType, rhs: TensorType) -> TensorType:
    _matrices("linalg_solve", a)
    _matrices("linalg_solve", rhs, square=False)
    if a.dtype is not rhs.dtype:
        fail("linalg_solve", f"operand dtypes {a.dtype.name} and {rhs.dtype.name} must be equal", TypeError)
    if rhs.shape[:-2] != a.shape[:-2] or rhs.shape[-2] != a.shape[-1]:
        fail("linalg_solve", f"right-hand side {rhs} does not match the matrices {a} (same leading axes, "
                             f"{a.shape[-1]} rows)")
    return rhs


def _solve_impl(a, rhs):
    if a.size == 0 or rhs.size == 0:
        return np.zeros(rhs.shape, rhs.dtype)
    out = _lapack("linalg_solve", np.linalg.solve, a, rhs.astype(np.float64))
    if not np.all(np.isfinite(out)) and np.all(np.isfinite(a)) and np.all(np.isfinite(rhs)):
        raise LinAlgError("linalg_solve: the solver failed because the input matrix is singular")
    return out.astype(rhs.dtype, copy=False)


linalg_solve = _declare("linalg_solve", _solve_type, _solve_impl, "X with A @ X = B for square A (LU, pivoting)", 2)
linalg_solve.failure = "the solver failed because the input matrix is singular"


@linalg_solve.def_jvp
def _solve_jvp(b, primals, tangents):
    (a, rhs), (ta, tr) = primals, tangents
    x = b.linalg_solve(a, rhs)
    if ta is None and tr is None:
        return x, None
    t = tr if ta is None else (b.neg(mx.matmul(b, ta, x)) if tr is None else b.sub(tr, mx.matmul(b, ta, x)))
    return x, b.linalg_solve(a, t)


@linalg_solve.def_transpose
def _solve_transpose(b, ct, ops):
    a, rhs = ops
    if is_undefined(a):
        raise NotImplementedError("transpose: linalg_solve is linear in its right-hand side only")
    return [None, b.linalg_solve(mx.mT(b, a), ct)]


# --- cholesky --------------------------------------------------------------------------------------
def _cholesky_type(a: TensorType) -> TensorType:
    _matrices("cholesky", a)
    return a


def _cholesky_impl(a):
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    return _lapack("cholesky", np.linalg.cholesky, sym).astype(a.dtype, copy=False)


cholesky = _declare("cholesky", _cholesky_type, _cholesky_impl,
                    "lower Cholesky factor L (L @ L^T = A) of symmetric positive-definite A (reads its lower triangle)")
cholesky.failure = "the input is not positive-definite"


@cholesky.def_jvp
def _cholesky_jvp(b, primals, tangents):
    (a,), (t,) = primals, tangents
    low = b.cholesky(a)
    if t is None:
        return low, None
    sym = mx.symmetrize_lower(b, t)
    inner = mx.mT(b, b.linalg_solve(low, mx.mT(b, b.linalg_solve(low, sym))))  # L^-1 dA L^-T
    half = b.select(mx.eye_mask(b, inner.shape), b.mul(inner, b.const_like(inner, 0.5)), inner)
    return low, mx.matmul(b, low, mx.triangle(b, half, 0, True))


# --- slogdet ---------------------------------------------------------------------------------------
SLOGDET_PARTS = ("sign", "logabsdet")


def _slogdet_type(a: TensorType, *, part) -> TensorType:
    _matrices("slogdet", a)
    _part("slogdet", part, SLOGDET_PARTS)
    return TensorType(a.shape[:-2], a.dtype)


def _slogdet_impl(a, *, part):
    if a.shape[-1]:
        sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    else:
        sign, logabs = np.ones(a.shape[:-2]), np.zeros(a.shape[:-2])
    return np.asarray(sign if part == "sign" else logabs, dtype=a.dtype)


slogdet = _declare("slogdet", _slogdet_type, _slogdet_impl, "sign or log|det| of square matrices (`part`), by LU")


@slogdet.def_jvp
def _slogdet_jvp(b, primals, tangents, *, part):
    (a,), (t,) = primals, tangents
    out = b.slogdet(a, part=part)
    if t is None or part == "sign":  # the sign is piecewise constant
        return out, None
    return out, mx.trace(b, b.linalg_solve(a, t))  # d log|det A| = tr(A^-1 dA)


# --- qr --------------------------------------------------------------------------------------------
QR_PARTS = ("q", "r")


def _qr_type(a: TensorType, *, part) -> TensorType:
    _matrices("qr", a, square=False)
    _part("qr", part, QR_PARTS)
    m, n = a.shape[-2:]
    k = min(m, n)
    return TensorType(a.shape[:-2] + ((m, k) if part == "q" else (k, n)), a.dtype)


def _qr_impl(a, *, part):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        shape = a.shape[:-2] + ((m, k) if part == "q" else (k, n))
        return np.eye(m, k, dtype=a.dtype) * np.ones(shape, a.dtype) if part == "q" else np.zeros(shape, a.dtype)
    q, r = np.linalg.qr(a.astype(np.float64), mode="reduced")
    return (q if part == "q" else r).astype(a.dtype, copy=False)


qr = _declare("qr", _qr_type, _qr_impl, "reduced QR factor Q (m, k) or R (k, n) (`part`), Householder")


@qr.def_jvp
def _qr_jvp(b, primals, tangents, *, part):
    (a,), (t,) = primals, tangents
    out = b.qr(a, part=part)
    if t is None:
        return out, None
    m, n = a.shape[-2:]
    if m < n:
        raise NotImplementedError(f"jvp of qr: only for matrices with at least as many rows as columns, got {a.type}")
    q, r = b.qr(a, part="q"), b.qr(a, part="r")
    dx_rinv = mx.mT(b, b.linalg_solve(mx.mT(b, r), mx.mT(b, t)))  # dA R^-1
    qt_dx_rinv = mx.matmul(b, mx.mT(b, q), dx_rinv)
    low = mx.triangle(b, qt_dx_rinv, -1, True)
    omega = b.sub(low, mx.mT(b, low))  # skew-symmetric
    if part == "q":
        return out, b.add(mx.matmul(b, q, b.sub(omega, qt_dx_rinv)), dx_rinv)
    return out, mx.matmul(b, b.sub(qt_dx_rinv, omega), r)


# --- eigh ------------------------------------------------------------------------------------------
EIGH_PARTS = ("eigenvalues", "eigenvectors")


def _eigh_type(a: TensorType, *, part) -> TensorType:
    _matrices("eigh", a)
    _part("eigh", part, EIGH_PARTS)
    return TensorType(a.shape[:-1], a.dtype) if part == "eigenvalues" else a


def _eigh_impl(a, *, part):
    if a.size == 0:
        return np.zeros(a.shape[:-1] if part == "eigenvalues" else a.shape, a.dtype)
    w, v = _lapack("eigh", np.linalg.eigh, a, "L")
    return (w if part == "eigenvalues" else v).astype(a.dtype, copy=False)


eigh = _declare("eigh", _eigh_type, _eigh_impl,
                "ascending eigenvalues or orthonormal eigenvectors (`part`) of symmetric A (reads its lower triangle)")


@eigh.def_jvp
def _eigh_jvp(b, primals, tangents, *, part):
    (a,), (t,) = primals, tangents
    out = b.eigh(a, part=part)
    if t is None:
        return out, None
    w, v = b.eigh(a, part="eigenvalues"), b.eigh(a, part="eigenvectors")
    vdv = mx.matmul(b, mx.matmul(b, mx.mT(b, v), mx.symmetrize_lower(b, t)), v)  # V^T dA V
    if part == "eigenvalues":
        return out, mx.diagonal(b, vdv)
    n = a.ndim
    wj = b.broadcast_in_dim(w, shape=a.shape, broadcast_dimensions=tuple(range(n - 2)) + (n - 1,))
    wi = b.broadcast_in_dim(w, shape=a.shape, broadcast_dimensions=tuple(range(n - 1)))
    diag = mx.eye_mask(b, a.shape)
    gaps = b.select(diag, b.const_like(a, 1.0), b.sub(wj, wi))
    f = b.select(diag, b.zeros_like(a), b.div(b.const_like(a, 1.0), gaps))  # 1 / (w_j - w_i) off the diagonal
    return out, mx.matmul(b, v, b.mul(f, vdv))


# --- svd -------------------------------------------------------------------------------------------
SVD_PARTS = ("u", "s", "vh")


def _svd_type(a: TensorType, *, part) -> TensorType:
    _matrices("svd", a, square=False)
    _part("svd", part, SVD_PARTS)
    m, n = a.shape[-2:]
    k = min(m, n)
    lead = a.shape[:-2]
    return TensorType(lead + {"u": (m, k), "s": (k,), "vh": (k, n)}[part], a.dtype)


def _svd_impl(a, *, part):
    m, n = a.shape[-2:]
    k = min(m, n)
    lead = a.shape[:-2]
    if a.size == 0:
        eye = {"u": np.eye(m, k), "vh": np.eye(k, n)}
        shape = lead + {"u": (m, k), "s": (k,), "vh": (k, n)}[part]
        return (eye[part] * np.ones(shape) if part != "s" else np.zeros(shape)).astype(a.dtype)
    u, s, vh = _lapack("svd", np.linalg.svd, a, False)
    return {"u": u, "s": s, "vh": vh}[part].astype(a.dtype, copy=False)


svd = _declare("svd", _svd_type, _svd_impl, "reduced SVD factor U, S (descending) or Vh (`part`)")


@svd.def_jvp
def _svd_jvp(b, primals, tangents, *, part):
    (a,), (t,) = primals, tangents
    out = b.svd(a, part=part)
    if t is None:
        return out, None
    u, s, vh = (b.svd(a, part=p) for p in SVD_PARTS)
    v = mx.mT(b, vh)
    ds_mat = mx.matmul(b, mx.matmul(b, mx.mT(b, u), t), v)  # U^T dA V (k, k)
    if part == "s":
        return out, mx.diagonal(b, ds_mat)
    kk = ds_mat
    nd = kk.ndim
    sj = b.broadcast_in_dim(s, shape=kk.shape, broadcast_dimensions=tuple(range(nd - 2)) + (nd - 1,))
    si = b.broadcast_in_dim(s, shape=kk.shape, broadcast_dimensions=tuple(range(nd - 1)))
    diag = mx.eye_mask(b, kk.shape)
    diffs = b.mul(b.add(sj, si), b.sub(sj, si))  # s_j^2 - s_i^2
    f = b.select(diag, b.zeros_like(kk), b.div(b.const_like(kk, 1.0), b.select(diag, b.const_like(kk, 1.0), diffs)))
    m, n = a.shape[-2:]
    if part == "u":
        dss = b.mul(sj, ds_mat)  # column j scaled by s_j
        du = mx.matmul(b, u, b.mul(f, b.add(dss, mx.mT(b, dss))))
        if m > n:
            dav = mx.matmul(b, t, v)
            du = b.add(du, _scale_by_inverse(b, b.sub(dav, mx.matmul(b, u, mx.matmul(b, mx.mT(b, u), dav))), s))
        return out, du
    sds = b.mul(si, ds_mat)  # row i scaled by s_i
    dv = mx.matmul(b, v, b.mul(f, b.add(sds, mx.mT(b, sds))))
    if n > m:
        dahu = mx.matmul(b, mx.mT(b, t), u)
        dv = b.add(dv, _scale_by_inverse(b, b.sub(dahu, mx.matmul(b, v, mx.matmul(b, vh, dahu))), s))
    return out, mx.mT(b, dv)


def _scale_by_inverse(b, x, s):
    """x (..., r, k) with column j divided by s_j."""
    n = x.ndim
    return b.div(x, b.broadcast_in_dim(s, shape=x.shape, broadcast_dimensions=tuple(range(n - 2)) + (n - 1,)))

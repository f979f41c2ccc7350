"""tp.linalg (issue 16, item 3): values against torch.linalg where installed (numpy otherwise),
gradients against float64 central differences, vmap against a loop, tp.compile (LAPACK)
against eager, and the errors torch raises."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, jacfwd, jacrev, vmap

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
RNG = np.random.default_rng(3)


def _matrix(*shape):
    x = RNG.uniform(-1, 1, shape)
    k = min(shape[-2:])
    x[..., range(k), range(k)] += np.linspace(2.0, 4.0, k)
    return x


def _spd(*shape):
    x = RNG.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + np.diag(np.linspace(1.0, 4.0, shape[-1]))


A, S, W, B = _matrix(2, 3, 3), _spd(2, 3, 3), _matrix(4, 3), RNG.standard_normal((2, 3, 2))
CASES = [  # (id, call(lib, x), input): values compared as is (decompositions: sign-free quantities)
    ("solve", lambda m, a: m.linalg.solve(a, m.tensor(B).to(a.dtype) if m is tp else torch.tensor(B).to(a.dtype)), A),
    ("solve_vector", lambda m, a: m.linalg.solve(a, a[..., 0] * 2), A),
    ("solve_right", lambda m, a: m.linalg.solve(a, a[..., :2, :], left=False), A),
    ("inv", lambda m, a: m.linalg.inv(a), A),
    ("det", lambda m, a: m.linalg.det(a), A),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), A),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), S),
    ("cholesky_upper", lambda m, a: m.linalg.cholesky(a, upper=True), S),
    ("qr", lambda m, a: tuple(m.linalg.qr(a)), W),
    ("qr_r", lambda m, a: m.linalg.qr(a, mode="r")[1], W),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), S),
    ("eigh_projector", lambda m, a: (lambda w, v: v @ (v * w[..., None, :]).transpose(-2, -1))(*m.linalg.eigh(a)), S),
    ("eigh_upper", lambda m, a: m.linalg.eigh(a, UPLO="U")[0], S),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), W),
    ("svd_product", lambda m, a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*m.linalg.svd(a, full_matrices=False)), W),
    ("lstsq", lambda m, a: m.linalg.lstsq(a, a[:, :1] + 1.0).solution, W),
    ("norm", lambda m, a: m.linalg.norm(a), W),
    ("norm_ord1", lambda m, a: m.linalg.norm(a, 1), W),
    ("vector_norm", lambda m, a: m.linalg.vector_norm(a, 3, dim=-1), W),
    ("vector_norm_inf", lambda m, a: m.linalg.vector_norm(a, float("inf")), W),
    ("matrix_norm_fro", lambda m, a: m.linalg.matrix_norm(a), A),
    ("matrix_norm_nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), A),
    ("matrix_norm_2", lambda m, a: m.linalg.matrix_norm(a, 2, keepdim=True), A),
    ("matrix_norm_-2", lambda m, a: m.linalg.matrix_norm(a, -2), A),
    ("matrix_norm_inf", lambda m, a: m.linalg.matrix_norm(a, float("-inf"), dim=(0, 2)), A),
]


def _np(out):
    return [_np(o) for o in out] if isinstance(out, tuple) else out.numpy()


@needs_torch
@pytest.mark.parametrize("name,call,x", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_against_torch(name, call, x, dtype):
    got = _np(call(tp, tp.tensor(x.astype(dtype))))
    want = _np(call(torch, torch.tensor(x.astype(dtype))))
    tol = 1e-4 if dtype == "float32" else 1e-10
    for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,call,x", CASES, ids=[c[0] for c in CASES])
def test_compiled_and_vmap_match_eager(name, call, x):
    f = lambda a: call(tp, a)  # noqa: E731
    eager = _np(f(tp.tensor(x)))
    compiled = _np(tp.compile(f)(tp.tensor(x)))
    for g, w in zip(compiled if isinstance(compiled, list) else [compiled], eager if isinstance(eager, list) else [eager]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    xs = tp.tensor(np.stack([x, x * 1.1, x * 0.9]))
    first = lambda t: t[0] if isinstance(t, tuple) else t  # noqa: E731
    loop = np.stack([first(f(v)).numpy() for v in xs])
    np.testing.assert_allclose(first(vmap(f)(xs)).numpy(), loop, rtol=1e-12, atol=1e-12)


GRADS = [c for c in CASES if c[0] not in ("slogdet", "qr")] + [
    ("slogdet_logabs", lambda m, a: m.linalg.slogdet(a).logabsdet, A),
    ("qr_q", lambda m, a: m.linalg.qr(a).Q, W),
    ("qr_r_only", lambda m, a: m.linalg.qr(a).R, W),
    ("eigenvectors_abs", lambda m, a: m.abs(m.linalg.eigh(a).eigenvectors), S),
    ("svd_u_wide", lambda m, a: m.abs(m.linalg.svd(a, full_matrices=False).U), W.T.copy()),
]


@pytest.mark.parametrize("name,call,x", GRADS, ids=[c[0] for c in GRADS])
def test_grad_against_finite_differences(name, call, x):
    f = lambda a: call(tp, a)  # noqa: E731
    w = RNG.standard_normal(f(tp.tensor(x)).shape)
    loss = lambda a: (f(a) * tp.tensor(w)).sum()  # noqa: E731
    got = grad(loss)(tp.tensor(x)).numpy()
    want = np.zeros_like(x)
    eps = 1e-6
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        want[i] = (loss(tp.tensor(hi)).item() - loss(tp.tensor(lo)).item()) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jacfwd(f)(tp.tensor(x)).numpy(), jacrev(f)(tp.tensor(x)).numpy(), rtol=1e-9, atol=1e-10)


def test_empty_and_batched_shapes():
    assert tuple(tp.linalg.inv(tp.zeros(0, 3, 3)).shape) == (0, 3, 3)
    assert tp.linalg.det(tp.zeros(0, 0)).item() == 1.0
    assert tuple(tp.linalg.svdvals(tp.zeros(2, 3, 0)).shape) == (2, 0)
    x = tp.tensor(A).transpose(-2, -1)  # non-contiguous
    np.testing.assert_allclose(tp.linalg.inv(x).numpy(), np.linalg.inv(np.swapaxes(A, -1, -2)), rtol=1e-12)
    np.testing.assert_allclose(tp.linalg.solve(tp.tensor(A[0]), tp.tensor(B)).numpy(),
                               np.linalg.solve(A[0], B), rtol=1e-12)  # A broadcasts over B's batch


def test_errors_follow_torch():
    singular = tp.tensor([[1.0, 2.0], [2.0, 4.0]])
    for f in (tp.linalg.inv, tp.linalg.cholesky, tp.compile(tp.linalg.inv), tp.compile(tp.linalg.cholesky)):
        with pytest.raises(tp.linalg.LinAlgError):
            f(singular)
    assert issubclass(tp.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="square"):
        tp.linalg.inv(tp.ones(2, 3))
    with pytest.raises(TypeError, match="floating point"):
        tp.linalg.det(tp.ones(2, 2, dtype=tp.int64))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        tp.linalg.svd(tp.ones(3, 2))
    assert tp.linalg.slogdet(singular).sign.item() == 0.0


def test_docstring_examples():
    import doctest

    import tensorplay.linalg as module

    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0

"""addmm/addmv/baddbmm/addbmm/cross/dist/cdist and the tp.linalg composites against torch (float64), with
gradients and vmap vs loop-and-stack."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, vmap

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(2)


def arr(*shape):
    return RNG.standard_normal(shape)


def same(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


CASES = [
    ("addmm", lambda: (arr(2, 4), arr(2, 3), arr(3, 4)), dict(beta=0.5, alpha=2.0)),
    ("addmm", lambda: (arr(4), arr(2, 3), arr(3, 4)), {}),
    ("addmv", lambda: (arr(2), arr(2, 3), arr(3)), dict(alpha=-1.0)),
    ("baddbmm", lambda: (arr(5, 2, 4), arr(5, 2, 3), arr(5, 3, 4)), dict(beta=2.0)),
    ("addbmm", lambda: (arr(2, 4), arr(5, 2, 3), arr(5, 3, 4)), {}),
    ("cross", lambda: (arr(4, 3), arr(4, 3)), {}),
    ("cross", lambda: (arr(3, 5), arr(3, 5)), dict(dim=0)),
    ("dist", lambda: (arr(3, 4), arr(4)), {}),
    ("dist", lambda: (arr(3, 4), arr(3, 4)), dict(p=1)),
    ("cdist", lambda: (arr(5, 3), arr(4, 3)), {}),
    ("cdist", lambda: (arr(2, 5, 3), arr(2, 4, 3)), dict(p=1.0)),
    ("cdist", lambda: (arr(5, 3), arr(4, 3)), dict(p=3.0)),
]


@pytest.mark.parametrize("name, make, kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch_with_grads(name, make, kw):
    args = make()
    same(getattr(tp, name)(*[tp.tensor(a) for a in args], **kw), getattr(torch, name)(*[torch.tensor(a) for a in args], **kw))
    targs = [torch.tensor(a, requires_grad=True) for a in args]
    (getattr(torch, name)(*targs, **kw) ** 2).sum().backward()
    gs = grad(lambda *xs: (getattr(tp, name)(*xs, **kw) ** 2).sum(), argnums=tuple(range(len(args))))(
        *[tp.tensor(a) for a in args])
    for g, t in zip(gs, targs):
        same(g, t.grad, 1e-8)


def test_beta_zero_ignores_nan_input_and_cdist_zero_distance_grad():
    x = np.full((2, 2), np.nan)
    m = arr(2, 2)
    same(tp.addmm(tp.tensor(x), tp.tensor(m), tp.tensor(m), beta=0), torch.addmm(torch.tensor(x), torch.tensor(m),
                                                                               torch.tensor(m), beta=0))
    a = arr(3, 2)
    ta = torch.tensor(a, requires_grad=True)
    torch.cdist(ta, ta).sum().backward()
    g = grad(lambda t: tp.cdist(t, t).sum())(tp.tensor(a))
    assert np.all(np.isfinite(g.numpy()))
    same(g, ta.grad, 1e-8)


def test_vmap_matches_loop():
    xs, ys = tp.tensor(arr(4, 5, 3)), tp.tensor(arr(4, 2, 3))
    for f in (tp.cdist, lambda a, b: tp.cross(a[:2], b, dim=1), lambda a, b: tp.addmm(a[:2, :2], a[:2], b.t())):
        np.testing.assert_allclose(vmap(f)(xs, ys).numpy(), tp.stack([f(xs[i], ys[i]) for i in range(4)]).numpy(),
                                   rtol=1e-12, atol=1e-12)


def test_linalg_composites_match_torch():
    A, B = arr(4, 4), arr(4, 2)
    tA, tB = torch.tensor(A), torch.tensor(B)
    L = tp.linalg
    same(L.matmul(tp.tensor(A), tp.tensor(B)), torch.linalg.matmul(tA, tB))
    D = arr(2, 3, 3)
    same(L.diagonal(tp.tensor(D), offset=1), torch.linalg.diagonal(torch.tensor(D), offset=1))
    same(L.vecdot(tp.tensor(A), tp.tensor(A[0])), torch.linalg.vecdot(tA, tA[0]))
    c1, c2 = arr(2, 3), arr(2, 3)
    same(L.cross(tp.tensor(c1), tp.tensor(c2)), torch.linalg.cross(torch.tensor(c1), torch.tensor(c2)))
    for n in (0, 1, 2, 5, -1, -3):
        same(L.matrix_power(tp.tensor(A), n), torch.linalg.matrix_power(tA, n), 1e-8)
    same(L.multi_dot([tp.tensor(A[0]), tp.tensor(A), tp.tensor(B)]), torch.linalg.multi_dot([tA[0], tA, tB]))
    R = arr(5, 3) @ arr(3, 4)  # rank 3
    same(L.pinv(tp.tensor(R)), torch.linalg.pinv(torch.tensor(R)), 1e-8)
    same(L.pinv(tp.tensor(B)), torch.linalg.pinv(tB), 1e-8)
    assert L.matrix_rank(tp.tensor(R)).item() == torch.linalg.matrix_rank(torch.tensor(R)).item() == 3
    assert L.matrix_rank(tp.tensor(R), atol=1e3).item() == 0
    for upper in (True, False):
        for left in (True, False):
            for unit in (True, False):
                rhs = B if left else B.T
                same(L.solve_triangular(tp.tensor(A), tp.tensor(rhs), upper=upper, left=left, unitriangular=unit),
                     torch.linalg.solve_triangular(tA, torch.tensor(rhs), upper=upper, left=left,
                                                   unitriangular=unit), 1e-8)


def test_linalg_composites_grads_and_errors():
    A = arr(3, 3) + 3 * np.eye(3)
    tA = torch.tensor(A, requires_grad=True)
    torch.linalg.matrix_power(tA, 3).sum().backward()
    same(grad(lambda a: tp.linalg.matrix_power(a, 3).sum())(tp.tensor(A)), tA.grad, 1e-8)
    tA.grad = None
    torch.linalg.pinv(tA).sum().backward()
    same(grad(lambda a: tp.linalg.pinv(a).sum())(tp.tensor(A)), tA.grad, 1e-7)
    with pytest.raises(ValueError, match="at least 2"):
        tp.linalg.multi_dot([tp.eye(2)])
    with pytest.raises(TypeError, match="int"):
        tp.linalg.matrix_power(tp.eye(2), 1.5)
    with pytest.raises(ValueError, match="size 3"):
        tp.cross(tp.ones(2, 2), tp.ones(2, 2))
    with pytest.raises(ValueError, match="cdist"):
        tp.cdist(tp.ones(2, 3), tp.ones(2, 4))

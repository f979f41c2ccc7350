"""jacrev / jacfwd / hessian: values against float64 central finite differences (and torch.func
when installed), the one-hot basis built inside the graph (never a dense identity input), and
hessian's peak memory of the order of its output."""
import tracemalloc

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import hessian, jacfwd, jacrev

RNG = np.random.default_rng(1)
A = RNG.standard_normal((7, 5))
W = tp.from_numpy(A)


def f(x):  # R^5 -> R^7, float64
    return tp.tanh(W @ x) * x.sum()


def g(x):  # R^5 -> R
    return (tp.sin(W @ x) ** 2).sum()


def fd_jacobian(fn, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        hi = np.asarray(fn(tp.from_numpy(x + e)).numpy())
        lo = np.asarray(fn(tp.from_numpy(x - e)).numpy())
        cols.append((hi - lo) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(fn(tp.from_numpy(x)).numpy()) + x.shape)


X = RNG.standard_normal(5)


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_matches_finite_differences(jac):
    got = jac(f)(tp.from_numpy(X)).numpy()
    np.testing.assert_allclose(got, fd_jacobian(f, X), rtol=1e-6, atol=1e-8)


def test_hessian_matches_finite_differences_of_the_gradient():
    got = hessian(g)(tp.from_numpy(X)).numpy()
    want = fd_jacobian(lambda x: jacrev(g)(x), X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, got.T, rtol=1e-10, atol=1e-12)


def test_hessian_equals_reverse_over_reverse():
    x = tp.from_numpy(X)
    np.testing.assert_allclose(hessian(g)(x).numpy(), jacrev(jacrev(g))(x).numpy(), rtol=1e-10, atol=1e-12)


def test_values_match_torch_func():
    torch = pytest.importorskip("torch")
    wt = torch.from_numpy(A)
    tf = lambda x: torch.tanh(wt @ x) * x.sum()  # noqa: E731
    tg = lambda x: (torch.sin(wt @ x) ** 2).sum()  # noqa: E731
    xt, x = torch.from_numpy(X), tp.from_numpy(X)
    np.testing.assert_allclose(jacrev(f)(x).numpy(), torch.func.jacrev(tf)(xt).numpy(), rtol=1e-10)
    np.testing.assert_allclose(jacfwd(f)(x).numpy(), torch.func.jacfwd(tf)(xt).numpy(), rtol=1e-10)
    np.testing.assert_allclose(hessian(g)(x).numpy(), torch.func.hessian(tg)(xt).numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("transform", [jacrev, jacfwd, hessian], ids=["jacrev", "jacfwd", "hessian"])
def test_the_basis_is_not_a_graph_input(transform):
    """Compiled, the whole transform takes x and the captured W only: no (n, n) identity input."""
    fn = g if transform is hessian else f
    closed = tp.compile(transform(fn)).get_graph(tp.from_numpy(X))
    shapes = [v.shape for v in closed.graph.inputs]
    assert shapes == [(5,), (7, 5)], shapes
    # built from iotas, or simplified away (a product with the identity reads the other operand:
    # `_dot_of_identity` in ir/passes/simplify.py); never a dense constant either
    assert not any(n.prim.name == "constant" for n in closed.graph.nodes)
    if transform is not hessian:
        assert any(n.prim.name == "iota" for n in closed.graph.nodes)


def test_plain_call_graph_has_no_basis_input():
    """The executable a plain call caches has the same inputs: arguments and captures only."""
    from tensorplay.func import _pipeline

    _pipeline.clear()
    jacrev(f)(tp.from_numpy(X))
    (entry,) = list(_pipeline._OUTERMOST._data.values())
    assert [v.shape for v in entry.closed.graph.inputs] == [(5,), (7, 5)]


def test_hessian_peak_memory_is_of_the_order_of_its_output():
    """R^256 -> R^16: the output is 16 x 256 x 256 float32 (4 MiB); the dense basis of
    reverse-over-reverse was a 4096 x 4096 identity (64 MiB). Peak traced allocation stays
    within a few outputs."""
    n, m = 256, 16
    w = tp.from_numpy((RNG.standard_normal((m, n)) / np.sqrt(n)).astype(np.float32))
    h = hessian(lambda x: tp.tanh(w @ x))
    x = tp.from_numpy(RNG.standard_normal(n).astype(np.float32))
    h(x)  # compile outside the measurement
    out_bytes = m * n * n * 4
    tracemalloc.start()
    try:
        got = h(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tuple(got.shape) == (m, n, n)
    assert peak < 6 * out_bytes, f"peak {peak / 2**20:.1f} MiB for a {out_bytes / 2**20:.1f} MiB Hessian"
    # spot-check values: H[k] = W_k^T W_k * d2 tanh(W x)_k
    z = w.numpy().astype(np.float64) @ x.numpy()
    d2 = -2 * np.tanh(z) * (1 - np.tanh(z) ** 2)
    wn = w.numpy().astype(np.float64)
    for k in (0, m - 1):
        np.testing.assert_allclose(got.numpy()[k], d2[k] * np.outer(wn[k], wn[k]), rtol=2e-3, atol=1e-5)


@pytest.mark.parametrize("fn", [f, g], ids=["vector output", "scalar output"])
def test_hessian_nesting_choice_keeps_the_values(fn):
    """hessian picks forward-over-reverse or forward-over-forward by the cost of the whole graph;
    either way the values are the spec's (reverse-over-reverse), at top level, nested and compiled."""
    x = tp.from_numpy(X)
    want = jacrev(jacrev(fn))(x).numpy()
    np.testing.assert_allclose(hessian(fn)(x).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tp.compile(hessian(fn))(x).numpy(), want, rtol=1e-10, atol=1e-12)
    from tensorplay.func import vmap

    xs = tp.from_numpy(np.stack([X, 2 * X]))
    got = vmap(hessian(fn))(xs).numpy()
    np.testing.assert_allclose(got[1], jacrev(jacrev(fn))(tp.from_numpy(2 * X)).numpy(), rtol=1e-10, atol=1e-12)


def test_hessian_nesting_by_cost():
    """A scalar loss is differentiated forward-over-reverse; tanh(W x) with more inputs than outputs,
    whose reverse basis would meet W as a dense one-hot product, forward-over-forward."""
    from tensorplay.func import _ad

    w = tp.from_numpy(RNG.standard_normal((4, 32)))
    x = tp.from_numpy(RNG.standard_normal(32))
    pick = lambda fn: _ad._cheaper_nesting(fn, 0, (x,), {}, "hessian(argnums=0)")  # noqa: E731
    assert pick(lambda x: (tp.sin(w @ x) ** 2).sum()) is jacrev
    assert pick(lambda x: tp.tanh(w @ x)) is jacfwd


def test_hessian_runs_the_function_once_per_call():
    """Both nestings are built from one trace of the function: its Python side effects happen once."""
    calls = []

    def h(x):
        calls.append(1)
        return tp.tanh(W @ x)

    x = tp.from_numpy(X)
    for k in range(3):
        hessian(h)(x)
        assert len(calls) == k + 1
    tp.compile(lambda x: hessian(h)(x) * 2)(x)
    assert len(calls) == 4

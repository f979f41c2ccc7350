"""Data that only parameterises values enters a plain transform's graph as inputs: captured views
(their offsets), slices of captured tensors and Python scalars. The graph's structure, and so
the compiled code, does not change with them; values and in-place semantics stay right."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay._exec import backend
from tensorplay._trace import trace_function
from tensorplay.codegen.cache import compile_count
from tensorplay.func import grad, vmap

compiled_only = pytest.mark.skipif(backend() != "compiled", reason="compile counts need the compiled backend")


def f64(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


X = np.arange(40.0).reshape(10, 4) / 7
W = np.array([0.5, -1.0, 2.0, 0.25])


def loss_on_views(x, i, s):
    v = x[i]                                   # a view made outside the function
    return lambda w: (w * v).sum() * s + (w * x[i + 1]).sum() + (w * x[:, 1][i]).sum() - s


def structure(fn, *args):
    return trace_function(fn, args, transform="grad(argnums=0)").graph.structural_key()


def test_structure_does_not_change_with_offsets_or_scalars():
    x, w = f64(X), f64(W)
    keys = {structure(loss_on_views(x, i, 0.5 + i), w) for i in range(8)}
    assert len(keys) == 1


@pytest.mark.parametrize("i", [0, 3, 8])
def test_values_with_captured_views(i):
    x, w = f64(X), f64(W)
    s = 1.5 + i
    got = grad(loss_on_views(x, i, s))(w).numpy()
    np.testing.assert_allclose(got, X[i] * s + X[i + 1] + X[i, 1])


@compiled_only
def test_compile_count_does_not_grow_with_changing_offsets():
    x, w = f64(X), f64(W)
    for i in range(2):
        grad(loss_on_views(x, i, 1.0 + i))(w)
        vmap(lambda r: (r * x[i]).sum() * (i + 0.5))(x)
    before = compile_count()
    for k in range(100):
        i = k % 9
        g = grad(loss_on_views(x, i, 0.25 * k))(w)
        out = vmap(lambda r: (r * x[i]).sum() * (i + 0.5))(x)
        if k % 20 == 0:
            np.testing.assert_allclose(g.numpy(), X[i] * 0.25 * k + X[i + 1] + X[i, 1])
            np.testing.assert_allclose(out.numpy(), (X * X[i]).sum(1) * (i + 0.5))
    assert compile_count() == before


def test_write_through_a_captured_view_reaches_its_base():
    x, w = f64(X), f64(W)
    v = x[2]

    def f(t):
        v.add_(1)
        return (t * v).sum()

    np.testing.assert_allclose(grad(f)(w).numpy(), X[2] + 1)
    want = X.copy()
    want[2] += 1
    np.testing.assert_array_equal(x.numpy(), want)


def test_captured_view_is_read_after_its_base_is_written():
    x, w = f64(X), f64(W)
    v = x[3]

    def f(t):
        before = (t * v).sum()          # reads the view as it was
        x.mul_(2)                       # writes the base: the view sees it, as eagerly
        return before + (t * v).sum()

    np.testing.assert_allclose(grad(f)(w).numpy(), X[3] + 2 * X[3])
    np.testing.assert_array_equal(x.numpy(), 2 * X)


def test_compile_still_reads_captured_views_at_every_call():
    x, w = f64(X), f64(W)
    f = tp.compile(lambda t: (t * x[1]).sum())
    assert float(f(w)) == pytest.approx(float(W @ X[1]))
    x.add_(1)
    assert float(f(w)) == pytest.approx(float(W @ (X[1] + 1)))


def test_signed_zero_scalars_stay_distinct_inputs():
    # atan2(+0, -1) = pi but atan2(-0, -1) = -pi: 0.0 and -0.0 must not share one scalar input
    neg = tp.tensor(-1.0, dtype=tp.float64)
    out = vmap(lambda r: tp.atan2(r * 0.0, neg) + tp.atan2(r * -0.0, neg) * 2)(f64([[1.0], [-1.0]]))
    zeros = np.array([[0.0], [-0.0]])
    np.testing.assert_allclose(out.numpy(), np.arctan2(zeros, -1.0) + np.arctan2(-zeros, -1.0) * 2)

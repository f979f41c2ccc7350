"""The plain call's prepared argument types (round 8, psmall): a cached argument signature hands
the trace each leaf's TensorType, so the trace looks none up. Every test alternates calls whose
types differ only in one part (dtype, shape, order, size-1 / empty / 0-d, layout) and checks the
values against numpy by hand; a record that gave the wrong types would trace the wrong graph."""
import numpy as np

import tensorplay as tp
from tensorplay.func import _pipeline, grad, jacfwd, jacrev

RNG = np.random.default_rng(8)


def _t(a, dtype=np.float32):
    return tp.from_numpy(np.ascontiguousarray(a, dtype=dtype))


def _lin(x, w):  # w @ x: d/dx = w
    return w @ x


def _quad(x, w):  # sum(w * x^2): d/dx = 2 w x
    return (w * x * x).sum()


def test_signature_records_hold_the_types_of_their_leaves():
    x, w = _t(RNG.standard_normal(3)), _t(RNG.standard_normal((2, 3)), np.float64)
    for args in [(x.double(), w), (x, w.float()), (x.double(), w)]:
        jacrev(_lin)(*args)
        sig = next(reversed(_pipeline._SIGNATURES._data.values()))  # the newest record: this call's
        assert sig.types == [a._type() for a in args]


def test_dtype_order_and_shapes_follow_the_arguments():
    for _ in range(3):
        for n in (1, 3, 4):
            a, b = RNG.standard_normal(n), RNG.standard_normal(n)
            g1 = grad(_quad)(_t(a, np.float64), _t(b))  # float64 x, float32 w
            g2 = grad(_quad)(_t(a), _t(b, np.float64))  # swapped dtypes: another signature
            assert g1.dtype == tp.float64 and g2.dtype == tp.float32  # (a gradient has its input's dtype)
            np.testing.assert_allclose(g1.numpy(), 2 * b.astype(np.float32) * a, rtol=1e-6)
            np.testing.assert_allclose(g2.numpy(), 2 * b * a.astype(np.float32), rtol=1e-5, atol=1e-6)
            g3 = grad(_quad)(_t(a), _t(b))
            assert g3.dtype == tp.float32
            np.testing.assert_allclose(g3.numpy(), 2 * b * a, rtol=1e-5, atol=1e-6)


def test_jacobians_of_0d_size1_and_empty_arguments():
    for _ in range(2):
        for m, n in [(1, 1), (2, 3), (3, 2), (2, 0), (0, 2)]:
            w = RNG.standard_normal((m, n))
            x = RNG.standard_normal(n)
            for jac in (jacrev, jacfwd):
                j = jac(_lin)(_t(x), _t(w))
                assert tuple(j.shape) == (m, n)
                np.testing.assert_allclose(j.numpy(), w, rtol=1e-6, atol=1e-7)
        s = RNG.standard_normal(())
        np.testing.assert_allclose(grad(lambda x: x * x * x)(_t(s)).numpy(), 3 * s * s, rtol=1e-5)


def test_contiguous_views_with_size1_axes_and_strided_views():
    base = RNG.standard_normal((3, 4)).astype(np.float32)
    row = tp.from_numpy(base)[1:2, 1:]  # (1, 3): C-contiguous, its first stride is not C order's
    assert row._data.flags.c_contiguous and row._data.strides != (12, 4)
    col = tp.from_numpy(base)[:, 1:2]  # (3, 1): strided, the general signature
    for _ in range(3):
        w = RNG.standard_normal((1, 3)).astype(np.float32)
        np.testing.assert_allclose(grad(_quad)(row, _t(w)).numpy(), 2 * w * base[1:2, 1:], rtol=1e-5)
        wc = RNG.standard_normal((3, 1)).astype(np.float32)
        np.testing.assert_allclose(grad(_quad)(col, _t(wc)).numpy(), 2 * wc * base[:, 1:2], rtol=1e-5)
        np.testing.assert_allclose(grad(_quad)(_t(base[1:2, 1:]), _t(w)).numpy(), 2 * w * base[1:2, 1:], rtol=1e-5)


def test_nested_containers_keep_each_leaf_type():
    def f(x, ps):
        (w1, b1), (w2, b2) = ps
        return (w2 @ tp.tanh(w1 @ x + b1) + b2).sum()

    for _ in range(2):
        for dt in (np.float32, np.float64):
            w1, b1 = RNG.standard_normal((4, 3)), RNG.standard_normal(4)
            w2, b2 = RNG.standard_normal((2, 4)), RNG.standard_normal(2)
            x = RNG.standard_normal(3)
            g = grad(f)(_t(x, dt), [(_t(w1, dt), _t(b1, dt)), (_t(w2, dt), _t(b2, dt))])
            h = np.tanh(w1 @ x + b1)
            expect = w1.T @ ((1 - h * h) * w2.sum(0))
            assert g.dtype == (tp.float32 if dt is np.float32 else tp.float64)
            np.testing.assert_allclose(g.numpy(), expect, rtol=1e-4 if dt is np.float32 else 1e-10, atol=1e-5)

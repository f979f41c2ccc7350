"""The keys of the plain call's fast path (round 7): shared transform specs, the argument
signature records and the trace key. Every test alternates calls that a too-coarse key would
confuse, and checks each result against numpy by hand (float64) or finite differences; a wrong
cache hit returns another call's structure or values."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import _pipeline, grad, grad_and_value, hessian, jacfwd, jacrev, vmap

RNG = np.random.default_rng(12)


def _t(a, dtype=np.float32):
    return tp.from_numpy(np.ascontiguousarray(a, dtype=dtype))


def _quad(x, w):  # sum(w * x^2): d/dx = 2 w x, d/dw = x^2
    return (w * x * x).sum()


def test_argument_order_shapes_and_dtypes_are_separate_entries():
    for _ in range(3):
        for shape in [(), (1,), (3,), (2, 3)]:
            a, b = RNG.standard_normal(shape), RNG.standard_normal(shape)
            ga = grad(_quad)(_t(a), _t(b)).numpy()
            gb = grad(_quad)(_t(b), _t(a)).numpy()  # swapped: another value, same signature
            np.testing.assert_allclose(ga, 2 * b * a, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(gb, 2 * a * b, rtol=1e-5, atol=1e-6)
        x64 = RNG.standard_normal(3)
        g64 = grad(_quad)(_t(x64, np.float64), _t(np.ones(3), np.float64))
        assert g64.dtype == tp.float64
        np.testing.assert_allclose(g64.numpy(), 2 * x64, rtol=1e-12)
        g32 = grad(_quad)(_t(x64), _t(np.ones(3)))
        assert g32.dtype == tp.float32


def test_empty_and_non_contiguous_arguments_take_their_own_entries():
    base = RNG.standard_normal((4, 3))
    for _ in range(2):
        xt = _t(base).T  # non-contiguous: the general signature
        w = _t(np.ones((3, 4)))
        np.testing.assert_allclose(grad(_quad)(xt, w).numpy(), 2 * base.T, rtol=1e-5)
        xc = _t(base.T)   # the same values, contiguous: the fast signature
        np.testing.assert_allclose(grad(_quad)(xc, w).numpy(), 2 * base.T, rtol=1e-5)
        e = grad(_quad)(_t(np.zeros((0, 2))), _t(np.zeros((0, 2))))
        assert tuple(e.shape) == (0, 2)


def test_containers_static_arguments_and_kwargs_are_in_the_key():
    x = RNG.standard_normal(3)

    def f(p, scale=1.0):
        if isinstance(p, dict):
            return (p["a"] * p["b"]).sum() * scale
        a, b = p
        return (a * b * b).sum() * scale

    a, b = _t(x), _t(2 * np.ones(3))
    for _ in range(3):
        gt = grad(f)((a, b))
        gl = grad(f)([a, b])
        assert isinstance(gt, tuple) and isinstance(gl, list)
        np.testing.assert_allclose(gt[0].numpy(), 4 * np.ones(3), rtol=1e-6)
        np.testing.assert_allclose(gl[1].numpy(), 4 * x, rtol=1e-5)
        gd = grad(f)({"a": a, "b": b})
        gd2 = grad(f)({"b": b, "a": a})  # the other insertion order: another tree
        assert list(gd) == ["a", "b"] and list(gd2) == ["b", "a"]
        np.testing.assert_allclose(gd2["b"].numpy(), x, rtol=1e-6)
        for s in (2.0, 3.0):  # a static argument: part of the key
            np.testing.assert_allclose(grad(f)((a, b), s)[0].numpy(), 4 * s * np.ones(3), rtol=1e-6)
            np.testing.assert_allclose(grad(f)((a, b), scale=s)[0].numpy(), 4 * s * np.ones(3), rtol=1e-6)


def test_argnums_and_has_aux_are_separate_transforms():
    x, w = RNG.standard_normal(3), RNG.standard_normal(3)
    xt, wt = _t(x), _t(w)
    for _ in range(3):
        np.testing.assert_allclose(grad(_quad, argnums=0)(xt, wt).numpy(), 2 * w * x, rtol=1e-5)
        np.testing.assert_allclose(grad(_quad, argnums=1)(xt, wt).numpy(), x * x, rtol=1e-5)
        g0, g1 = grad(_quad, argnums=(0, 1))(xt, wt)
        np.testing.assert_allclose(g1.numpy(), x * x, rtol=1e-5)
        (h,) = grad(_quad, argnums=(1,))(xt, wt)
        np.testing.assert_allclose(h.numpy(), x * x, rtol=1e-5)
        g, aux = grad(lambda a, b: (_quad(a, b), a * 2), has_aux=True)(xt, wt)
        np.testing.assert_allclose(aux.numpy(), 2 * x, rtol=1e-6)
        g, v = grad_and_value(_quad)(xt, wt)
        np.testing.assert_allclose(v.numpy(), (w * x * x).sum(), rtol=1e-5)
    # a bool is not an int here: argnums=False stays an error after argnums=0 was cached
    with pytest.raises(TypeError, match="argnums"):
        grad(_quad, argnums=False)(xt, wt)
    a = grad(_quad, has_aux=1)
    b = grad(_quad, has_aux=True)
    assert a._tp_chain[0][0] is b._tp_chain[0][0]
    assert grad(_quad, argnums=0)._tp_chain[0][0] is not grad(_quad, argnums=(0,))._tp_chain[0][0]


def test_in_dims_are_separate_entries():
    W = RNG.standard_normal((4, 3))
    X = RNG.standard_normal((4, 3))
    for _ in range(3):
        g0 = vmap(grad(_quad), in_dims=(0, 0))(_t(X), _t(W))
        np.testing.assert_allclose(g0.numpy(), 2 * W * X, rtol=1e-5)
        gs = vmap(grad(_quad), in_dims=(0, None))(_t(X), _t(W[0]))
        np.testing.assert_allclose(gs.numpy(), 2 * W[0] * X, rtol=1e-5)
        g1 = vmap(grad(_quad), in_dims=(1, 1))(_t(X.T), _t(W.T))
        np.testing.assert_allclose(g1.numpy(), 2 * W * X, rtol=1e-5)
        o1 = vmap(grad(_quad), in_dims=(0, 0), out_dims=1)(_t(X), _t(W))
        np.testing.assert_allclose(o1.numpy(), (2 * W * X).T, rtol=1e-5)


def test_equal_graphs_with_different_captures_read_their_own():
    x = RNG.standard_normal(3)
    caps = [_t(RNG.standard_normal(3)) for _ in range(3)]
    fns = [(lambda c: (lambda v: (c * v * v).sum()))(c) for c in caps]
    for _ in range(3):
        for c, f in zip(caps, fns):
            np.testing.assert_allclose(grad(f)(_t(x)).numpy(), 2 * c.numpy() * x, rtol=1e-5)
            np.testing.assert_allclose(jacrev(f)(_t(x)).numpy(), 2 * c.numpy() * x, rtol=1e-5)
    # an in-place update of a capture is seen (the capture is read at each call)
    c = _t(np.ones(3))
    f = lambda v: (c * v).sum()  # noqa: E731
    np.testing.assert_allclose(grad(f)(_t(x)).numpy(), np.ones(3))
    c.mul_(3.0)
    np.testing.assert_allclose(grad(f)(_t(x)).numpy(), 3 * np.ones(3))


def test_chains_of_equal_parameters_share_one_plan_and_other_chains_do_not():
    f = lambda v: (v ** 3).sum()  # noqa: E731
    x = RNG.standard_normal(3)
    for _ in range(3):
        np.testing.assert_allclose(jacrev(grad(f))(_t(x)).numpy(), np.diag(6 * x), rtol=1e-5)
        np.testing.assert_allclose(jacfwd(grad(f))(_t(x)).numpy(), np.diag(6 * x), rtol=1e-5)
        np.testing.assert_allclose(hessian(f)(_t(x)).numpy(), np.diag(6 * x), rtol=1e-5)
        np.testing.assert_allclose(grad(f)(_t(x)).numpy(), 3 * x * x, rtol=1e-5)
    assert jacrev(grad(f))._tp_chain[0] == jacrev(grad(f))._tp_chain[0]
    assert jacrev(grad(f))._tp_chain[0] != jacfwd(grad(f))._tp_chain[0]


def test_outputs_static_leaves_and_random_keys_are_in_the_trace_key():
    x = _t(RNG.standard_normal(3))
    for k in (1, 2, 1, 2):
        g, aux = grad(lambda v: ((v * v).sum(), k), has_aux=True)(x)
        assert aux == k
    vals = [jacrev(lambda v: (v * 2, v))(x), jacrev(lambda v: [v * 2, v])(x)]
    assert isinstance(vals[0], tuple) and isinstance(vals[1], list)


def test_a_repeated_call_is_a_hit_and_a_new_signature_a_miss():
    f = lambda v: (v * v).sum()  # noqa: E731
    x = _t(np.ones(5))
    grad(f)(x)
    hits, misses, _ = _pipeline.stats()["outermost"]
    for _ in range(5):
        grad(f)(x)
    h2, m2, _ = _pipeline.stats()["outermost"]
    assert h2 - hits == 5 and m2 == misses
    grad(f)(_t(np.ones(6)))
    assert _pipeline.stats()["outermost"][1] == misses + 1

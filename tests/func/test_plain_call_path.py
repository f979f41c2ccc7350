"""The plain transforms' call path (round 6): the cached outermost entry's result builder, the
vmap wrapper's metadata, and `jvp_fn`'s direct executable call. Values are checked against numpy
by hand (float64) and against the uncached path; a wrong cache hit would give another entry's
structure or values."""
import functools

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import _pipeline, _vmap, grad, jacrev, jvp, linearize, vmap

RNG = np.random.default_rng(3)


def _t(a):
    return tp.from_numpy(np.ascontiguousarray(a, dtype=np.float32))


# --- the outermost entry's generated result builder -------------------------------------------------
def test_cached_results_keep_each_output_structure():
    """Two functions of one graph that differ only in how they package the outputs (tuple, list,
    dict, a Python number beside the tensors) are separate entries, each rebuilt as it returns."""
    x = _t(RNG.standard_normal(3))
    xs = x.numpy().astype(np.float64)

    def as_tuple(v):
        return (v * v).sum()

    shapes = {
        "tuple": lambda v: (v * 2, v * 3),
        "list": lambda v: [v * 2, v * 3],
        "nested": lambda v: [(v * 2,), {"b": v * 3}],
    }
    for _ in range(3):  # later calls are cache hits
        g = jacrev(shapes["tuple"])(x)
        assert isinstance(g, tuple) and len(g) == 2
        np.testing.assert_allclose(g[0].numpy(), 2 * np.eye(3))
        g = jacrev(shapes["list"])(x)
        assert isinstance(g, list) and len(g) == 2
        np.testing.assert_allclose(g[1].numpy(), 3 * np.eye(3))
        np.testing.assert_allclose(grad(as_tuple)(x).numpy(), 2 * xs, rtol=1e-6)
        g = jacrev(shapes["nested"])(x)  # a list holding a tuple and a dict
        assert isinstance(g, list) and isinstance(g[0], tuple) and isinstance(g[1], dict)
        np.testing.assert_allclose(g[1]["b"].numpy(), 3 * np.eye(3))
        h, aux = grad(lambda v: ((v * v).sum(), {"k": 7, "n": None, "t": v * 2}), has_aux=True)(x)
        np.testing.assert_allclose(h.numpy(), 2 * xs, rtol=1e-6)
        assert aux["k"] == 7 and aux["n"] is None
        np.testing.assert_allclose(aux["t"].numpy(), 2 * xs, rtol=1e-6)
        h2, aux2 = grad(lambda v: ((v * v).sum(), {"k": 8, "n": None, "t": v * 2}), has_aux=True)(x)
        assert aux2["k"] == 8  # a static output is part of the key: no hit on the k=7 entry


def test_cached_grad_of_pytree_arguments_has_their_structure_and_values():
    """grad of a list of (W, b) pairs: the cached entry returns fresh tensors in that structure,
    equal to the hand-written float64 gradient, on every call (also after the inputs change)."""
    def loss(ps, x):
        h = x
        for w, b in ps:
            h = h @ w + b
        return (h * h).sum()

    for step in range(3):
        ps_np = [(RNG.standard_normal((3, 4)), RNG.standard_normal(4)), (RNG.standard_normal((4, 2)), RNG.standard_normal(2))]
        x_np = RNG.standard_normal((5, 3))
        ps = [(_t(w), _t(b)) for w, b in ps_np]
        g = grad(loss)(ps, _t(x_np))
        (w1, b1), (w2, b2) = [(w.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64))
                              for w, b in ps_np]
        x64 = x_np.astype(np.float32).astype(np.float64)
        h1 = x64 @ w1 + b1
        h2 = h1 @ w2 + b2
        d2 = 2 * h2
        d1 = d2 @ w2.T
        want = [(x64.T @ d1, d1.sum(0)), (h1.T @ d2, d2.sum(0))]
        assert isinstance(g, list) and all(isinstance(p, tuple) for p in g)
        for (gw, gb), (ww, wb) in zip(g, want):
            np.testing.assert_allclose(gw.numpy(), ww, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(gb.numpy(), wb, rtol=1e-4, atol=1e-4)
        assert g[0][0]._data is not ps[0][0]._data  # fresh buffers, never the caller's


def test_cached_outputs_are_fresh_tensors_that_can_be_written():
    x = _t([1.0, 2.0])
    a = grad(lambda v: (v * v).sum())(x)
    b = grad(lambda v: (v * v).sum())(x)
    a.add_(1)
    np.testing.assert_array_equal(b.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(a.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 3)])
def test_cached_vmap_grad_of_edge_shapes(shape):
    """0-d, size-1, empty and 2-d samples through the cached vmap(grad) entry vs numpy."""
    xb = RNG.standard_normal((4,) + shape).astype(np.float32)
    for _ in range(2):
        g = vmap(grad(lambda v: (v * v * v).sum()))(_t(xb))
        np.testing.assert_allclose(g.numpy(), 3 * xb.astype(np.float64) ** 2, rtol=1e-5)


def test_cached_vmap_grad_of_a_non_contiguous_batch():
    base = RNG.standard_normal((3, 8)).astype(np.float32)
    xb = tp.from_numpy(base).T  # (8, 3), not C-contiguous
    for _ in range(2):
        g = vmap(grad(lambda v: (v * v).sum()))(xb)
        np.testing.assert_allclose(g.numpy(), 2 * base.T, rtol=1e-6)


# --- the vmap wrapper -------------------------------------------------------------------------------
def _documented(x, y: int = 1) -> "tp.Tensor":
    """Docs of the mapped function."""
    return x * y


def test_vmap_wrapper_has_the_metadata_functools_wraps_gives():
    _documented.extra = "kept"
    try:
        for kw in ({}, {"chunk_size": 2}):
            w = vmap(_documented, **kw)
            ref = functools.wraps(_documented)(lambda *a: None)
            for attr in ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__", "__wrapped__"):
                assert getattr(w, attr) == getattr(ref, attr), attr
            assert w.extra == "kept"
            np.testing.assert_array_equal(w(tp.ones(4, 2)).numpy(), np.ones((4, 2)))
    finally:
        del _documented.extra


def test_vmap_of_a_transform_does_not_carry_its_chain_attributes():
    """vmap(grad(f)) is a vmap: grad's transform attributes are not copied onto it (else
    jacrev(vmap(grad(f))) would be computed as jacrev(grad(f)))."""
    g = grad(lambda v: (v * v).sum())
    w = vmap(g)
    assert "_tp_transform" not in w.__dict__
    assert w._tp_chain[0][0].key[0] == "vmap"
    assert w.__wrapped__ is g

    def f(x):  # not separable: jacrev of the map differs from jacrev of the per-sample grad
        return (x.sum() * x).sum()

    x = _t(RNG.standard_normal((2, 3)))
    got = jacrev(vmap(grad(f)))(x).numpy()
    s = x.numpy().astype(np.float64)
    # grad f(v) = 2 * sum(v) * ones, so d/dv_j of grad_i = 2 for every i, j within a row
    want = np.zeros((2, 3, 2, 3))
    for r in range(2):
        want[r, :, r, :] = 2.0
    assert s.shape == (2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("in_dims", [0, 1, (0, None), (None, 0), [0, None], {"a": 0}])
def test_vmap_names_and_keys_of_in_dims(in_dims):
    """The memoised name is the repr of in_dims; tuple and list in_dims are different keys."""
    spec = vmap(lambda *a, **k: a[0], in_dims=in_dims)._tp_chain[0][0]
    assert spec.name == f"vmap(in_dims={in_dims!r})"
    assert spec.key[1] == ("out_dims", _vmap._freeze_dims(in_dims))


def test_vmap_tuple_and_list_in_dims_are_different_keys_with_the_same_values():
    x, y = _t(RNG.standard_normal((3, 2))), _t(RNG.standard_normal(2))
    a = vmap(lambda u, v: u * v, in_dims=(0, None))
    b = vmap(lambda u, v: u * v, in_dims=[0, None])
    assert a._tp_chain[0][0].key != b._tp_chain[0][0].key
    for _ in range(2):
        np.testing.assert_allclose(a(x, y).numpy(), x.numpy() * y.numpy())
        np.testing.assert_allclose(b(x, y).numpy(), x.numpy() * y.numpy())
    c = vmap(lambda u, v: u * v, in_dims=(None, 0))  # the other argument mapped: another entry
    np.testing.assert_allclose(c(y, x).numpy(), x.numpy() * y.numpy())


def test_vmap_errors_still_name_the_transform_under_the_lean_per_sample_wrapper():
    def bad(v):
        return v @ tp.ones(5)

    with pytest.raises((ValueError, TypeError), match="vmap"):
        vmap(bad)(tp.ones(3, 2))


# --- jvp_fn's direct call ---------------------------------------------------------------------------
def _mlp(ws):
    def f(x):
        h = x
        for w in ws:
            h = tp.tanh(w @ h)
        return h

    return f


def _mlp_jvp_np(ws, x, t):
    h, dh = x.astype(np.float64), t.astype(np.float64)
    for w in ws:
        w = w.astype(np.float64)
        z, dz = w @ h, w @ dh
        h = np.tanh(z)
        dh = (1 - h * h) * dz
    return dh


def test_jvp_fn_matches_numpy_on_many_tangents():
    ws_np = [RNG.standard_normal((6, 5)).astype(np.float32) * 0.5, RNG.standard_normal((4, 6)).astype(np.float32) * 0.5]
    x_np = RNG.standard_normal(5).astype(np.float32)
    _, jvp_fn = linearize(_mlp([_t(w) for w in ws_np]), _t(x_np))
    for _ in range(5):
        t_np = RNG.standard_normal(5).astype(np.float32)
        np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), _mlp_jvp_np(ws_np, x_np, t_np), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 3)])
def test_jvp_fn_of_edge_shapes(shape):
    x_np = RNG.standard_normal(shape).astype(np.float32)
    _, jvp_fn = linearize(lambda v: tp.sin(v) * 2, _t(x_np))
    for _ in range(2):
        t_np = RNG.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), 2 * np.cos(x_np.astype(np.float64)) * t_np,
                                   rtol=1e-5, atol=1e-6)


def test_jvp_fn_of_a_non_contiguous_tangent():
    x_np = RNG.standard_normal(4).astype(np.float32)
    _, jvp_fn = linearize(lambda v: v * v, _t(x_np))
    base = RNG.standard_normal((4, 2)).astype(np.float32)
    t = tp.from_numpy(base)[:, 1]  # strided
    np.testing.assert_allclose(jvp_fn(t).numpy(), 2 * x_np * base[:, 1], rtol=1e-6)


def test_jvp_fn_results_are_fresh_and_independent():
    x = _t([1.0, 2.0])
    _, jvp_fn = linearize(lambda v: v * 3, x)  # the tangent output could be a scaled input only
    t = _t([1.0, 1.0])
    a, b = jvp_fn(t), jvp_fn(t)
    a.add_(1)
    np.testing.assert_array_equal(b.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0])
    _, ident = linearize(lambda v: v, x)  # the tangent itself is the result: a copy, not the caller's tensor
    r = ident(t)
    r.add_(5)
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0])


def test_jvp_fn_several_primals_and_bad_tangents():
    a_np, b_np = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    _, jvp_fn = linearize(lambda a, b: a * b, _t(a_np), _t(b_np))
    ta, tb = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(jvp_fn(_t(ta), _t(tb)).numpy(), ta * b_np + a_np * tb, rtol=1e-5, atol=1e-6)
    with pytest.raises((TypeError, ValueError)):
        jvp_fn(_t(ta))  # one tangent for two primals
    with pytest.raises(ValueError, match="shape"):
        jvp_fn(_t(ta), tp.ones(4))
    with pytest.raises(TypeError, match="dtype"):
        jvp_fn(_t(ta), tp.ones(3, dtype=tp.float64))


def test_jvp_fn_sees_the_weights_as_they_were_at_linearize_time():
    """The spec: "the primal evaluation happens once, here" (as jax.linearize). An in-place update
    of a captured weight or of the primal between linearize and jvp_fn -- through the tensor or
    through a numpy view of its storage -- does not change jvp_fn: the residuals are the values at
    linearize time, so the forward graph must keep returning (copying) the weights it passes through.
    (torch.func.linearize reads closed-over tensors at its first jvp_fn call, an artefact of its lazy
    trace, and the primal at linearize time; with no update in between all three agree.)"""
    w_np = np.array([[2.0, 0.0], [0.0, 3.0]], np.float32)
    w, x, t = _t(w_np.copy()), _t([1.0, 1.0]), _t([1.0, 0.5])
    _, jvp_fn = linearize(lambda v: tp.tanh(w @ v), x)
    want = _mlp_jvp_np([w_np], np.ones(2, np.float32), np.array([1.0, 0.5], np.float32))
    w.mul_(0.25)
    x.mul_(-1)
    w.numpy()[0, 1] = 0.7  # a write through the numpy view of the same storage
    np.testing.assert_allclose(jvp_fn(t).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(jvp_fn(t).numpy(), want, rtol=1e-5)
    _, fresh = linearize(lambda v: tp.tanh(w @ v), x)  # a new linearization reads the new values
    np.testing.assert_allclose(fresh(t).numpy(), _mlp_jvp_np([w.numpy()], x.numpy(), t.numpy()), rtol=1e-4, atol=1e-6)

    torch = pytest.importorskip("torch")
    tw, tx, tt = torch.tensor(w_np), torch.ones(2), torch.tensor([1.0, 0.5])
    _, tj = torch.func.linearize(lambda v: torch.tanh(tw @ v), tx)
    np.testing.assert_allclose(jvp_fn(t).numpy(), tj(tt).numpy(), rtol=1e-4, atol=1e-6)


def test_jvp_fn_under_a_transform_takes_the_general_path():
    x_np = RNG.standard_normal(3).astype(np.float32)
    _, jvp_fn = linearize(lambda v: v * v, _t(x_np))
    tb = RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(vmap(jvp_fn)(_t(tb)).numpy(), 2 * x_np * tb, rtol=1e-6)
    np.testing.assert_allclose(grad(lambda t: jvp_fn(t).sum())(_t(tb[0])).numpy(), 2 * x_np, rtol=1e-6)
    np.testing.assert_allclose(jvp(jvp_fn, (_t(tb[0]),), (_t(tb[1]),))[1].numpy(), 2 * x_np * tb[1], rtol=1e-6)


def test_clear_then_calls_rebuild_the_entries():
    x = _t([1.0, 2.0])
    grad(lambda v: (v * v).sum())(x)
    _pipeline.clear()
    np.testing.assert_array_equal(grad(lambda v: (v * v).sum())(x).numpy(), [2.0, 4.0])


def test_lru_keeps_recency_order_with_repeated_hits():
    """A repeated hit of the newest entry skips moving it (it is the newest already); any other hit
    still moves its entry, so the least recently used one is evicted."""
    c = _pipeline.LRU("test-recency", maxsize=3)
    try:
        for k in "abc":
            c.put(k, [k])
        assert c.get("a") == ["a"] and c.get("a") == ["a"]  # a is the newest now
        c.put("d", ["d"])  # evicts b, the least recently used
        assert c.get("b") is None and c.get("c") == ["c"] and c.get("a") == ["a"]
        c.put("e", ["e"])  # evicts d (c and a were used after it)
        assert c.get("d") is None and [c.get(k) for k in "cae"] == [["c"], ["a"], ["e"]]
        c.clear()
        assert c.get("e") is None and len(c) == 0
        c.put("x", ["x"])
        assert c.get("x") == ["x"] and c.hits >= 1
    finally:
        _pipeline._CACHES.remove(c)

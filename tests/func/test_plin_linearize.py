"""`linearize` called at top level (round 8, `_ad._linearize_plain`): one trace per call, then a
per-structure plan -- the forward executable without the residuals it passes through (their
copies in reused buffers), the linear executable bound to each linearization's residuals.

Values are checked against numpy by hand in float64, finite differences and `jvp`; the plan's
reuse against compile and pipeline-miss counts; the buffer reuse against live jvp_fns holding
their own residuals (a wrong reuse gives another linearization's values)."""
import gc
import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen
from tensorplay.func import _ad, _pipeline, grad, jvp, linearize, vmap
from tests.tanh_mlp import mlp, mlp_jvp_np, mlp_np

RNG = np.random.default_rng(8)


def _t(a, dtype=np.float32):
    return tp.from_numpy(np.array(a, dtype=dtype))  # (a C-contiguous copy; 0-d stays 0-d)


def _mlp_params(sizes, dtype=np.float32):
    return [(_t(RNG.standard_normal((a, b)) / np.sqrt(a), dtype), _t(0.1 * RNG.standard_normal(b), dtype))
            for a, b in zip(sizes[:-1], sizes[1:])]


def _misses() -> int:
    return sum(m for _, m, _ in _pipeline.stats().values())


# --- values ----------------------------------------------------------------------------------------
def test_mlp_with_captured_weights_matches_numpy_and_jvp():
    ps = _mlp_params([16, 12, 8])
    x_np = RNG.standard_normal(16).astype(np.float32)
    for _ in range(3):  # the first call builds the plan, the others use it
        out, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))
        np.testing.assert_allclose(out.numpy(), mlp_np(ps, x_np), rtol=1e-5, atol=1e-6)
        for _ in range(4):
            t_np = RNG.standard_normal(16).astype(np.float32)
            got = jvp_fn(_t(t_np))
            assert got.shape == (8,) and got.dtype is tp.float32
            np.testing.assert_allclose(got.numpy(), mlp_jvp_np(ps, x_np, t_np), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(got.numpy(), jvp(lambda x: mlp(ps, x), (_t(x_np),), (_t(t_np),))[1].numpy(),
                                       rtol=1e-5, atol=1e-6)


def test_values_match_finite_differences_in_float64():
    ps = _mlp_params([5, 4, 3], np.float64)
    x_np = RNG.standard_normal(5)
    f = lambda x: tp.sin(mlp(ps, x)) * 2  # noqa: E731
    _, jvp_fn = linearize(f, _t(x_np, np.float64))
    eps = 1e-6
    for _ in range(3):
        t_np = RNG.standard_normal(5)
        fd = (f(_t(x_np + eps * t_np, np.float64)).numpy() - f(_t(x_np - eps * t_np, np.float64)).numpy()) / (2 * eps)
        np.testing.assert_allclose(jvp_fn(_t(t_np, np.float64)).numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 2), (1, 4)])
def test_edge_shapes(shape):
    w = _t(RNG.standard_normal(shape))
    x_np = RNG.standard_normal(shape).astype(np.float32)
    for _ in range(2):
        out, jvp_fn = linearize(lambda v: tp.tanh(v * w) + v, _t(x_np))
        np.testing.assert_allclose(out.numpy(), np.tanh(x_np * w.numpy()) + x_np, rtol=1e-6, atol=1e-7)
        t_np = RNG.standard_normal(shape).astype(np.float32)
        want = (1 - np.tanh(x_np * w.numpy()) ** 2) * w.numpy() * t_np + t_np
        got = jvp_fn(_t(t_np))
        assert got.shape == shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_non_contiguous_primal_tangent_and_capture():
    base_x = RNG.standard_normal((6, 2)).astype(np.float32)
    base_w = RNG.standard_normal((4, 6)).astype(np.float32)
    x, w = tp.from_numpy(base_x)[:, 1], tp.from_numpy(base_w).T  # strided primal, transposed capture
    xs, ws = base_x[:, 1].astype(np.float64), base_w.T.astype(np.float64)
    for _ in range(2):
        out, jvp_fn = linearize(lambda v: tp.tanh(v @ w), x)
        np.testing.assert_allclose(out.numpy(), np.tanh(xs @ ws), rtol=1e-5, atol=1e-6)
        tb = RNG.standard_normal((6, 3)).astype(np.float32)
        t = tp.from_numpy(tb)[:, 2]  # a strided tangent
        want = (1 - np.tanh(xs @ ws) ** 2) * (tb[:, 2] @ ws)
        np.testing.assert_allclose(jvp_fn(t).numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jvp_fn(_t(tb[:, 2])).numpy(), want, rtol=1e-5, atol=1e-6)


def test_several_primals_and_tree_outputs():
    a_np, b_np = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    ta, tb = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    outs = {
        "one": (lambda a, b: a * b, lambda: ta * b_np + a_np * tb),
        "tuple": (lambda a, b: (a * b, tp.sin(a)), lambda: (ta * b_np + a_np * tb, np.cos(a_np) * ta)),
        "dict": (lambda a, b: {"p": a * b, "s": (a + b).sum()}, lambda: {"p": ta * b_np + a_np * tb,
                                                                          "s": (ta + tb).sum()}),
    }
    for _ in range(2):
        for name, (f, want) in outs.items():
            out, jvp_fn = linearize(f, _t(a_np), _t(b_np))
            got = jvp_fn(_t(ta), _t(tb))
            w = want()
            if name == "one":
                np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-6)
            elif name == "tuple":
                assert isinstance(got, tuple) and isinstance(out, tuple) and len(got) == 2
                for g, e in zip(got, w):
                    np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-6)
            else:
                assert isinstance(got, dict) and set(got) == {"p", "s"} and set(out) == {"p", "s"}
                for k in w:
                    np.testing.assert_allclose(got[k].numpy(), w[k], rtol=1e-5, atol=1e-6)


def test_the_function_runs_once_per_linearize():
    calls = []

    def f(x):
        calls.append(1)
        return tp.sin(x) * x

    x = _t([0.5, -1.0])
    for k in range(1, 4):
        _, jvp_fn = linearize(f, x)
        jvp_fn(x)
        jvp_fn(tp.ones(2))
        assert len(calls) == k


# --- errors ----------------------------------------------------------------------------------------
def test_wrong_tangents_are_clear_errors_naming_linearize():
    ps = _mlp_params([4, 3])
    _, jvp_fn = linearize(lambda x: mlp(ps, x), _t(np.ones(4)))
    with pytest.raises(ValueError, match=r"linearize: tangents leaf 0 has shape \(5,\).*shape \(4,\)"):
        jvp_fn(tp.ones(5))
    with pytest.raises(TypeError, match="linearize: tangents leaf 0 has dtype float64.*float32"):
        jvp_fn(tp.ones(4, dtype=tp.float64))
    with pytest.raises(ValueError, match="linearize: tangents must have the same structure"):
        jvp_fn(tp.ones(4), tp.ones(4))
    with pytest.raises(ValueError, match="linearize: tangents must have the same structure"):
        jvp_fn()
    with pytest.raises(ValueError, match="linearize: tangents must have the same structure"):
        jvp_fn([tp.ones(4)])
    with pytest.raises(TypeError, match="linearize: tangents leaf 0 is a float"):
        jvp_fn(1.0)
    np.testing.assert_allclose(jvp_fn(tp.zeros(4)).numpy(), np.zeros(3))  # still usable after the errors


def test_bad_primals_and_outputs_are_reported_as_before():
    with pytest.raises(TypeError, match=r"linearize: cannot differentiate with respect to argument 0.*int64"):
        linearize(lambda a: a * 2, tp.tensor([1, 2]))
    with pytest.raises(TypeError, match="linearize: func must return tensors"):
        linearize(lambda a: 3.0, tp.ones(2))
    with pytest.raises(TypeError, match="linearize: func must return tensors"):
        linearize(lambda a: (), tp.ones(2))


# --- the plan is made once per structure -----------------------------------------------------------
def test_no_recompile_and_no_pass_rerun_over_100_linearizations():
    ps = _mlp_params([8, 8, 8])
    x_np = RNG.standard_normal(8).astype(np.float32)
    t = _t(RNG.standard_normal(8))
    _, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))
    first = jvp_fn(t).numpy()
    c0, m0 = codegen.compile_count(), _misses()
    for _ in range(100):
        _, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))  # a fresh lambda every time, as users write it
        for _ in range(3):
            again = jvp_fn(t)
    assert codegen.compile_count() == c0, "linearize recompiled an executable on a repeated call"
    assert _misses() == m0, "a pass pipeline or plan was rebuilt on a repeated call"
    np.testing.assert_array_equal(again.numpy(), first)


def test_a_jvp_fn_never_called_compiles_no_linear_executable():
    w = _t(RNG.standard_normal(7))
    f = lambda x: tp.cos(x * w) * 3.5  # noqa: E731  (a structure no other test uses)
    c0 = codegen.compile_count()
    linearize(f, _t(np.ones(7)))
    after_linearize = codegen.compile_count()
    _, jvp_fn = linearize(f, _t(np.ones(7)))
    assert codegen.compile_count() == after_linearize  # the forward is compiled once, on the first call
    jvp_fn(tp.ones(7))
    assert codegen.compile_count() == after_linearize + 1 > c0


def test_a_changed_capture_global_or_function_is_seen():
    state = {"scale": 2.0}
    w = _t([1.0, 2.0, 3.0])
    x, t = _t([0.3, -0.2, 0.1]), _t([1.0, 1.0, 1.0])

    def f(v):
        return tp.sin(v * w) * state["scale"]

    def want(scale, wv):
        return scale * np.cos(x.numpy() * wv) * wv * t.numpy()

    np.testing.assert_allclose(linearize(f, x)[1](t).numpy(), want(2.0, w.numpy()), rtol=1e-5)
    w.mul_(-0.5)  # an in-place update of a captured tensor: the next linearize reads it
    np.testing.assert_allclose(linearize(f, x)[1](t).numpy(), want(2.0, w.numpy()), rtol=1e-5)
    state["scale"] = -3.0  # a changed global (a Python scalar: data, same plan)
    np.testing.assert_allclose(linearize(f, x)[1](t).numpy(), want(-3.0, w.numpy()), rtol=1e-5)
    w2 = _t([0.5, 0.5, 0.5])
    np.testing.assert_allclose(linearize(lambda v: tp.sin(v * w2) * 2.0, x)[1](t).numpy(),
                               want(2.0, w2.numpy()), rtol=1e-5)  # another capture of the same structure
    np.testing.assert_allclose(linearize(lambda v: tp.cos(v * w2) * 2.0, x)[1](t).numpy(),
                               -2.0 * np.sin(x.numpy() * 0.5) * 0.5, rtol=1e-5)  # another structure


# --- residual snapshots in reused buffers ----------------------------------------------------------
def test_live_jvp_fns_keep_their_own_residuals_while_buffers_are_reused():
    """Residual copies of passed-through weights live in buffers reused once no jvp_fn holds them:
    live jvp_fns of earlier linearizations (the weights changed in place in between) keep giving
    their own values, dropped ones free their buffers for the next linearization."""
    w = _t(RNG.standard_normal((6, 6)))
    x = _t(RNG.standard_normal(6))
    t = _t(RNG.standard_normal(6))
    f = lambda v: tp.tanh(v @ w) @ w  # noqa: E731  (w is passed through as a residual)

    def want(wv):
        h = np.tanh(x.numpy().astype(np.float64) @ wv)
        return ((1 - h * h) * (t.numpy() @ wv)) @ wv + h @ np.zeros_like(wv)

    live, wants = [], []
    for k in range(5):
        _, jvp_fn = linearize(f, x)
        wants.append(want(w.numpy().astype(np.float64)))
        if k % 2 == 0:
            live.append((jvp_fn, wants[-1]))  # kept alive
        del jvp_fn  # (the odd ones are dropped: their buffers are free again)
        gc.collect()
        w.mul_(0.9)
        w.numpy()[0, 0] += 0.25  # a write through numpy, which no hook sees
        for fn, expected in live:
            np.testing.assert_allclose(fn(t).numpy(), expected, rtol=1e-4, atol=1e-5)
    plan = next(p for p in _ad._LIN_PLANS._data.values() if p.pools and p.sigs == (((6,), np.dtype(np.float32)),)
                and p.n_main == 1)
    assert all(len(pool) <= 2 for pool in plan.pools)


def test_concurrent_linearizations_of_one_structure():
    w = _t(RNG.standard_normal((16, 16)))
    f = lambda v: tp.tanh(v @ w) @ w  # noqa: E731
    xs = [_t(RNG.standard_normal(16)) for _ in range(4)]
    t = _t(RNG.standard_normal(16))
    wants = [jvp(f, (x,), (t,))[1].numpy() for x in xs]
    errors = []

    def work(k):
        try:
            for _ in range(30):
                _, jvp_fn = linearize(f, xs[k])
                np.testing.assert_allclose(jvp_fn(t).numpy(), wants[k], rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


# --- the general path: other calls and transforms --------------------------------------------------
def test_jvp_fn_under_transforms_and_compile():
    ps = _mlp_params([5, 4])
    x_np = RNG.standard_normal(5).astype(np.float32)
    _, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))
    tb = RNG.standard_normal((3, 5)).astype(np.float32)
    want = np.stack([mlp_jvp_np(ps, x_np, r) for r in tb])
    np.testing.assert_allclose(vmap(jvp_fn)(_t(tb)).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tp.compile(jvp_fn)(_t(tb[0])).numpy(), want[0], rtol=1e-5, atol=1e-6)
    w_sum = ps[0][0].numpy().sum(axis=1)  # d/dt sum(t @ W) = W @ 1
    np.testing.assert_allclose(grad(lambda t: jvp_fn(t).sum())(_t(tb[0])).numpy(), w_sum, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jvp_fn(_t(tb[1])).numpy(), want[1], rtol=1e-5, atol=1e-6)  # fast again after


def test_calls_the_plan_does_not_cover_take_the_general_path():
    x_np = RNG.standard_normal(3).astype(np.float32)
    t_np = RNG.standard_normal(3).astype(np.float32)
    buf = _t(np.zeros(3))

    def writes(v):  # an in-place write into a capture: the general path stores it back
        buf.copy_(v * 2)
        return tp.sin(v)

    out, jvp_fn = linearize(writes, _t(x_np))
    np.testing.assert_allclose(buf.numpy(), 2 * x_np, rtol=1e-6)
    np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), np.cos(x_np) * t_np, rtol=1e-5)
    out, ident = linearize(lambda v: v, _t(x_np))  # the output is the primal itself (an alias)
    np.testing.assert_array_equal(ident(_t(t_np)).numpy(), t_np)
    tree_out, tree_fn = linearize(lambda d: d["a"] * d["b"], {"a": _t(x_np), "b": _t(t_np)})  # a pytree primal
    got = tree_fn({"a": _t(np.ones(3)), "b": _t(np.zeros(3))})
    np.testing.assert_allclose(got.numpy(), t_np, rtol=1e-6)
    r = _t(x_np).requires_grad_()
    out, jvp_fn = linearize(lambda v: v * v, r)
    np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), 2 * x_np * t_np, rtol=1e-6)


def test_random_draws_are_made_at_linearize_time():
    tp.manual_seed(4)
    x = _t(np.ones(4))
    out, jvp_fn = linearize(lambda v: v * tp.rand(4), x)
    drawn = out.numpy()  # out = the draw itself (x = 1)
    np.testing.assert_allclose(jvp_fn(_t(np.full(4, 2.0))).numpy(), 2 * drawn, rtol=1e-6)
    out2, _ = linearize(lambda v: v * tp.rand(4), x)
    assert not np.array_equal(out2.numpy(), drawn)


def test_interpreter_backend_takes_the_general_path(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    ps = _mlp_params([4, 3])
    x_np, t_np = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    for _ in range(2):
        _, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))
        np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), mlp_jvp_np(ps, x_np, t_np), rtol=1e-5, atol=1e-6)


def test_jvp_fn_results_are_fresh_buffers():
    w = _t([2.0, 3.0])
    x, t = _t([1.0, 2.0]), _t([1.0, 1.0])
    _, jvp_fn = linearize(lambda v: v * w, x)
    a, b = jvp_fn(t), jvp_fn(t)
    a.add_(1)
    np.testing.assert_array_equal(b.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0])


# --- Executable.bound_call -------------------------------------------------------------------------
def _exe():
    from tensorplay.ir import GraphBuilder, TensorType, float32

    b = GraphBuilder()
    x = b.add_input(TensorType((3,), float32))
    y = b.add_input(TensorType((3,), float32))
    return codegen.compile_graph(b.build([b.mul(x, y), x, b.add(x, y)]))


def test_bound_call_matches_the_plain_call_and_checks_the_rest():
    exe = _exe()
    p = np.array([1.0, 2.0, 3.0], np.float32)
    call = exe.bound_call((p.copy(),))
    y = np.array([0.5, -1.0, 4.0], np.float32)
    got = call(y)
    want = exe(p, y)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1] is not p  # an output that is a bound input is a copy
    got[1][0] = 99.0
    np.testing.assert_array_equal(call(y)[1], p)
    strided = np.zeros(6, np.float32)
    strided[::2] = y
    np.testing.assert_array_equal(call(strided[::2])[0], p * y)  # coerced by the general path
    with pytest.raises(TypeError, match="input 1"):
        call(np.ones(4, np.float32))
    assert exe.bound_call((np.ones(4, np.float32),)) is None  # a prefix of another type
    assert exe.bound_call((np.ones(6, np.float32)[::2],)) is None  # or another layout
    both = exe.bound_call((p, y))
    np.testing.assert_array_equal(both()[2], p + y)


def test_bound_call_keeps_its_prefix_alive():
    exe = _exe()
    call = exe.bound_call((np.array([1.0, 2.0, 3.0], np.float32),))  # no other reference to the array
    gc.collect()
    for _ in range(3):
        np.testing.assert_array_equal(call(np.full(3, 2.0, np.float32))[0], [2.0, 4.0, 6.0])


def test_alternating_structures_and_a_reset():
    """The latest plan is compared before the LRU is consulted: alternating structures (and shapes,
    and dtypes) each get their own plan; `tp.compiler.reset()` forgets it (the next call compiles)."""
    x3, x4 = _t([0.1, 0.2, 0.3]), _t([0.1, 0.2, 0.3, 0.4])
    x3d = _t([0.1, 0.2, 0.3], np.float64)
    cases = [(lambda v: tp.sin(v) * v, x3, lambda a: np.cos(a) * a + np.sin(a)),
             (lambda v: tp.cos(v) * v, x3, lambda a: -np.sin(a) * a + np.cos(a)),
             (lambda v: tp.sin(v) * v, x4, lambda a: np.cos(a) * a + np.sin(a)),
             (lambda v: tp.sin(v) * v, x3d, lambda a: np.cos(a) * a + np.sin(a))]
    for _ in range(3):
        for f, x, d in cases:
            out, jvp_fn = linearize(f, x)
            got = jvp_fn(tp.ones_like(x))
            assert got.dtype is x.dtype and got.shape == x.shape
            np.testing.assert_allclose(got.numpy(), d(x.numpy().astype(np.float64)), rtol=1e-5)
    f, x, d = cases[0]
    linearize(f, x)[1](x)
    tp.compiler.reset()
    c0 = codegen.compile_count()
    np.testing.assert_allclose(linearize(f, x)[1](tp.ones_like(x)).numpy(), d(x.numpy().astype(np.float64)), rtol=1e-5)
    assert codegen.compile_count() > c0


def test_bound_call_keeps_its_executable_alive():
    """A bound call runs the executable's machine code: dropping every other reference to the
    executable (here: one made outside the compile cache) must not free that code."""
    from tensorplay.ir import GraphBuilder, TensorType, float32

    b = GraphBuilder()
    x = b.add_input(TensorType((3,), float32))
    y = b.add_input(TensorType((3,), float32))
    exe = codegen.Executable(b.build([b.mul(x, y)]))
    call = exe.bound_call((np.array([1.0, 2.0, 3.0], np.float32),))
    del exe
    gc.collect()
    np.testing.assert_array_equal(call(np.full(3, 2.0, np.float32))[0], [2.0, 4.0, 6.0])


# --- replays ---------------------------------------------------------------------------------------
def test_repeated_linearizations_replay_their_trace_and_see_new_weights(replays):
    """A repeated linearize of a function over captured weights replays its last trace (no node
    recorded); a weight written in place between calls is read by the next linearization, while
    an earlier jvp_fn keeps the values of its own."""
    ps = _mlp_params([6, 5, 4])
    x_np = RNG.standard_normal(6).astype(np.float32)
    t_np = RNG.standard_normal(6).astype(np.float32)
    kept = []
    for k in range(5):
        out, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))
        np.testing.assert_allclose(out.numpy(), mlp_np(ps, x_np), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), mlp_jvp_np(ps, x_np, t_np), rtol=1e-4, atol=1e-5)
        kept.append((jvp_fn, mlp_jvp_np(ps, x_np, t_np)))
        ps[0][0].mul_(1.5)  # the next linearization sees it; this one does not
    assert replays["replayed"] >= 3 and replays["left"] == 0
    for jvp_fn, want in kept:
        np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), want, rtol=1e-4, atol=1e-5)
    ps[1] = (_t(RNG.standard_normal((5, 3))), ps[1][1][:3].clone())  # another output shape: traced anew
    out, jvp_fn = linearize(lambda x: mlp(ps, x), _t(x_np))
    assert out.shape == (3,)
    np.testing.assert_allclose(jvp_fn(_t(t_np)).numpy(), mlp_jvp_np(ps, x_np, t_np), rtol=1e-4, atol=1e-5)


def test_compiler_reset_forgets_the_replay_templates_of_linearize():
    ps = _mlp_params([4, 3])
    x = _t(np.ones(4))
    for _ in range(3):
        linearize(lambda x: mlp(ps, x), x)
    assert _ad._LINEARIZE_SIGNATURES.last is not None and _ad._LINEARIZE_SIGNATURES.last.templates
    tp.compiler.reset()
    assert _ad._LINEARIZE_SIGNATURES.last is None
    out, jvp_fn = linearize(lambda x: mlp(ps, x), x)  # and works as a first call again
    np.testing.assert_allclose(jvp_fn(_t(np.ones(4))).numpy(), mlp_jvp_np(ps, np.ones(4, np.float32),
                                                                         np.ones(4, np.float32)), rtol=1e-4, atol=1e-5)

"""The plain transforms' pipeline cache: repeated calls only trace and look up; fresh Python
semantics are kept (a changed global, an in-place update of a captured tensor, a fresh random
draw); nested transforms hit the cache too; `_pipeline.clear()` empties it."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen
from tensorplay.func import _pipeline, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp, vmap

RNG = np.random.default_rng(0)
W = tp.from_numpy(RNG.standard_normal((4, 3)).astype(np.float32))
X = tp.from_numpy(RNG.standard_normal(3).astype(np.float32))
XB = tp.from_numpy(RNG.standard_normal((5, 3)).astype(np.float32))


def loss(x):
    return (tp.tanh(W @ x) ** 2).sum()


def layer(x):
    return tp.tanh(W @ x)


def misses() -> int:
    return sum(m for _, m, _ in _pipeline.stats().values())


CALLS = {
    "grad": lambda: grad(loss)(X),
    "grad_and_value": lambda: grad_and_value(loss)(X),
    "jacrev": lambda: jacrev(layer)(X),
    "jacfwd": lambda: jacfwd(layer)(X),
    "hessian": lambda: hessian(loss)(X),
    "vmap(grad)": lambda: vmap(grad(loss))(XB),
    "jacfwd(jacrev)": lambda: jacfwd(jacrev(layer))(X),
    "vmap(jacrev)": lambda: vmap(jacrev(layer))(XB),
    "grad(grad)": lambda: grad(lambda x: grad(loss)(x).sum())(X),
    "jvp": lambda: jvp(layer, (X,), (X,)),
    "vjp": lambda: vjp(layer, X)[1](tp.ones(4)),
    "linearize": lambda: linearize(layer, X)[1](X),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_repeated_plain_calls_do_not_recompile(name):
    """Fresh transform objects each call (as in a loop body): the compile and pipeline-miss counts
    stop growing after the first call."""
    call = CALLS[name]
    first = call()
    c0, m0 = codegen.compile_count(), misses()
    for _ in range(100):
        again = call()
    assert codegen.compile_count() == c0, f"{name}: recompiled on a repeated call"
    assert misses() == m0, f"{name}: a pass pipeline ran again on a repeated call"
    for a, b in zip(_leaves(first), _leaves(again)):
        np.testing.assert_array_equal(a, b)


def _leaves(x):
    if isinstance(x, tp.Tensor):
        return [x.numpy()]
    if isinstance(x, (tuple, list)):
        return [a for y in x for a in _leaves(y)]
    return []


SCALE = 2.0


def scaled(x):
    return SCALE * (x * x).sum()


def test_a_changed_global_is_seen():
    global SCALE
    g = grad(scaled)
    SCALE = 2.0
    np.testing.assert_allclose(g(X).numpy(), 4.0 * X.numpy(), rtol=1e-6)
    SCALE = 3.0
    np.testing.assert_allclose(g(X).numpy(), 6.0 * X.numpy(), rtol=1e-6)
    SCALE = 2.0
    np.testing.assert_allclose(g(X).numpy(), 4.0 * X.numpy(), rtol=1e-6)


def test_a_captured_tensor_updated_in_place_is_seen_without_recompiling():
    w = tp.from_numpy(np.ones((4, 3), np.float32))

    def f(x):
        return (w @ x).sum()

    j = jacrev(lambda x: w @ x)
    np.testing.assert_allclose(grad(f)(X).numpy(), np.ones(3) * 4, rtol=1e-6)
    np.testing.assert_allclose(j(X).numpy(), np.ones((4, 3)), rtol=1e-6)
    c0 = codegen.compile_count()
    w.mul_(3.0)
    np.testing.assert_allclose(grad(f)(X).numpy(), np.ones(3) * 12, rtol=1e-6)
    np.testing.assert_allclose(j(X).numpy(), 3 * np.ones((4, 3)), rtol=1e-6)
    assert codegen.compile_count() == c0


def test_a_different_captured_tensor_of_the_same_shape_is_read():
    """Same graph structure, different closure: the cached executable reads the tensor of this call."""
    for k in range(3):
        w = tp.full((4, 3), float(k + 1))
        got = jacrev(lambda x: w @ x)(X)
        np.testing.assert_allclose(got.numpy(), np.full((4, 3), k + 1.0))


def test_random_draws_are_fresh_on_every_cached_call():
    f = grad(lambda x: (x * tp.rand(3)).sum())
    a, b = f(X).numpy(), f(X).numpy()
    assert not np.array_equal(a, b)
    assert ((a >= 0) & (a < 1)).all() and ((b >= 0) & (b < 1)).all()


def test_in_place_writes_of_the_function_reach_the_caller_on_cached_calls():
    def f(x, buf):
        buf.add_(1.0)
        return (x * x).sum()

    buf = tp.zeros(2)
    for k in range(3):
        np.testing.assert_allclose(grad(f)(X, buf).numpy(), 2 * X.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(buf.numpy(), np.full(2, k + 1.0))


def test_keyword_and_static_arguments_are_part_of_the_key():
    def f(x, *, p, scale):
        return scale * (x ** p).sum()

    for p, scale in [(2.0, 1.0), (3.0, 1.0), (2.0, 5.0)]:
        got = grad(f)(X, p=p, scale=scale)
        np.testing.assert_allclose(got.numpy(), scale * p * X.numpy() ** (p - 1), rtol=1e-5)


class _Unhashable:
    __hash__ = None

    def __init__(self, k):
        self.k = k


def test_an_unhashable_static_argument_falls_back_to_the_uncached_call():
    for k in (2.0, 3.0):
        got = grad(lambda x, opts: (x * opts.k).sum())(X, _Unhashable(k))
        np.testing.assert_allclose(got.numpy(), np.full(3, k))


def test_clear_empties_every_cache():
    grad(loss)(X)
    assert any(n for _, _, n in _pipeline.stats().values())
    _pipeline.clear()
    assert not any(n for _, _, n in _pipeline.stats().values())
    m0 = misses()
    np.testing.assert_allclose(grad(loss)(X).numpy(), grad(loss)(X).numpy())
    assert misses() > m0


def test_errors_are_raised_on_every_call_not_cached():
    f = grad(lambda x: x * 2)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="single-element"):
            f(X)


def test_lru_is_bounded():
    c = _pipeline.LRU("test-bounded", maxsize=3)
    for k in range(10):
        c.put(k, k)
    assert len(c) == 3 and c.get(9) == 9 and c.get(0) is None
    _pipeline._CACHES.remove(c)


def test_vmap_out_dims_are_checked_on_every_call():
    """A resolved out_dims is cached per structure; an invalid one is still reported afterwards."""
    f = lambda x: (x * 2, tp.ones(2))  # noqa: E731
    out = vmap(f, out_dims=(0, None))(XB)
    np.testing.assert_allclose(out[0].numpy(), 2 * XB.numpy())
    np.testing.assert_array_equal(out[1].numpy(), np.ones(2))
    for bad in [(0, True), {"a": None}, (0, 1.0)]:
        with pytest.raises((TypeError, ValueError)):
            vmap(f, out_dims=bad)(XB)
    out = vmap(f, out_dims=[1, 0])(XB)
    assert tuple(out[0].shape) == (3, 5) and tuple(out[1].shape) == (5, 2)


def test_a_wrapper_that_copies_a_transforms_attributes_is_not_that_transform():
    """functools.wraps copies __dict__, so vmap(grad(f)) carries grad's transform attributes: the
    outer chain must still see the vmap (per-sample gradients of sum(x)^2 are 2, not 2 * sum(x))."""
    def f(x):
        return x.sum() ** 2

    x = tp.tensor([1.0, 2.0])
    expected = np.diag([2.0, 2.0])
    for _ in range(2):  # the cached call too
        np.testing.assert_allclose(jacrev(vmap(grad(f)))(x).numpy(), expected)
        np.testing.assert_allclose(jacfwd(vmap(grad(f)))(x).numpy(), expected)
    np.testing.assert_allclose(tp.compile(jacrev(vmap(grad(f))))(x).numpy(), expected)


def test_top_level_vmap_is_one_cached_executable():
    """vmap(grad(f)) at top level traces f once per call (per sample) and runs one executable;
    the values match the loop over samples, on the first and the cached calls."""
    g = vmap(grad(loss))
    first = g(XB).numpy()
    entries = _pipeline.stats()["outermost"][2]
    again = g(XB).numpy()
    assert _pipeline.stats()["outermost"][2] == entries
    loop = np.stack([grad(loss)(XB[i]).numpy() for i in range(XB.shape[0])])
    np.testing.assert_allclose(first, loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(first, again)


def test_top_level_vmap_random_draws_match_the_uncached_map():
    """randomness='different' / 'same' through the cached call draw the keys the uncached
    (chunked) call draws: same generator state, same values; the next call draws afresh."""
    def noisy(x):
        return x + tp.rand(3)

    for randomness in ("different", "same"):
        fast = vmap(noisy, randomness=randomness)
        chunked = vmap(noisy, randomness=randomness, chunk_size=2)
        fast(XB)  # build the cached entry
        tp.manual_seed(7)
        a = fast(XB).numpy()
        b = fast(XB).numpy()
        tp.manual_seed(7)
        c = chunked(XB).numpy()
        np.testing.assert_array_equal(a, c)
        assert not np.array_equal(a, b)
        rows_equal = np.allclose(a - XB.numpy(), (a - XB.numpy())[0])
        assert rows_equal == (randomness == "same")


def test_top_level_vmap_errors_name_the_callers_arguments_on_every_call():
    """A mapping error found while building the cached call is the uncached call's error."""
    y = tp.zeros(3)

    def write(x, y):
        y.add_(x)
        return x

    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"in-place write into args\[1\] \(in_dim None\)"):
            vmap(write, in_dims=(0, None))(XB, y)
    np.testing.assert_array_equal(y.numpy(), np.zeros(3, np.float32))


def test_linearize_jvp_fn_calls_its_executable_directly_and_still_checks():
    """Concrete tangents of the primal's type run the linear executable directly: values equal
    jvp's; a tangent of another shape or dtype is still reported; traced tangents (jvp_fn under
    vmap) take the general path and match the loop over samples."""
    out, jvp_fn = linearize(layer, X)
    for t in (X, tp.ones(3), tp.zeros(3)):
        np.testing.assert_allclose(jvp_fn(t).numpy(), jvp(layer, (X,), (t,))[1].numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        jvp_fn(tp.ones(4))
    with pytest.raises(TypeError, match="dtype"):
        jvp_fn(tp.ones(3, dtype=tp.float64))
    batched = vmap(jvp_fn)(XB).numpy()
    loop = np.stack([jvp_fn(XB[i]).numpy() for i in range(XB.shape[0])])
    np.testing.assert_allclose(batched, loop, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("wrap", ["grad", "vmap"])
def test_draws_from_a_user_generator_are_fresh_on_cached_calls(wrap):
    """A draw from a user's tp.Generator (a RandomKey subclass) is read on every cached call:
    the gradient of sum(x * rand) is the draw itself, the same as drawing eagerly after a reseed."""
    g = tp.Generator()

    def f(x):
        return (x * tp.rand(3, generator=g)).sum()

    call = (lambda: grad(f)(X)) if wrap == "grad" else (lambda: vmap(grad(f), randomness="same")(XB)[0])
    call()
    g.manual_seed(3)
    a = call().numpy()
    b = call().numpy()
    g.manual_seed(3)
    eager = tp.rand(3, generator=g).numpy()
    np.testing.assert_array_equal(a, eager)
    assert not np.array_equal(a, b)


def test_compiler_reset_clears_the_tracing_memos_and_pipeline_caches():
    from tensorplay import _trace

    grad(lambda x: (x * x).sum())(tp.ones(3))
    hessian(lambda x: (x * x * x).sum())(tp.ones(3))
    assert _trace._TYPES and _trace._ARG_TYPES and any(n for _, _, n in _pipeline.stats().values())
    tp.compiler.reset()
    assert not _trace._TYPES and not _trace._ARG_TYPES and not _pipeline._IN_TREES
    assert all(n == 0 for _, _, n in _pipeline.stats().values())
    np.testing.assert_allclose(grad(lambda x: (x * x).sum())(tp.ones(3)).numpy(), [2.0, 2.0, 2.0])


def test_no_wrong_cache_hit_for_attributes_equal_under_python_equality():
    """pad values 0.0 and -0.0 are equal in Python but not in the result: each call gets its own
    executable (the plain call's key compares attributes exactly), in any order, repeatedly."""
    import tensorplay.nn.functional as F

    xs = tp.ones(2, 3)
    for _ in range(2):
        for v in (0.0, -0.0, float("nan"), 2.0):
            got = vmap(lambda x: F.pad(x, (1, 1), value=v))(xs).numpy()
            want = np.pad(np.ones((2, 3), np.float32), ((0, 0), (1, 1)), constant_values=v)
            np.testing.assert_array_equal(got, want)
            assert np.signbit(got[0, 0]) == np.signbit(v)
            g = jacrev(lambda x: F.pad(x * x, (1, 1), value=v).sum() + F.pad(x, (1, 0), value=v)[0])(tp.ones(3))
            np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])

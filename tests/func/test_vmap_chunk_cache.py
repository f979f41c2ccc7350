"""The chunked map through the pipeline cache (`_pipeline.call_outermost_chunked`): the user's
function is traced on every call (a changed global, a tensor updated in place are seen), the
chunk programs are built once per structure and replayed, and the values are those of the
uncached chunked map (`chunk_vmap`, which always traces, batches and runs) bit for bit."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import _pipeline, chunk_vmap, grad, vmap
from tensorplay.func._chunks import ChunkError
from tests.func.chunk_data import T, _data


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(2) as ex:
        yield ex


def misses() -> int:
    return _pipeline.stats()["outermost_chunked"][1]


SCALE = T(np.float32(2.0))


def scaled(x):
    return (x * SCALE).tanh().sum()


def test_a_changed_global_is_seen_and_an_unchanged_structure_is_not_rebuilt(pool):
    global SCALE
    x = T(_data(6, 3))
    f = vmap(scaled, chunk_size=2, executor=pool)
    old = SCALE
    try:
        first = f(x).numpy()
        np.testing.assert_allclose(first, np.tanh(x.numpy() * 2.0).sum(1), rtol=1e-5)
        before = misses()
        SCALE = T(np.float32(-0.5))  # a new tensor, same structure: a cache hit reading the new value
        np.testing.assert_allclose(f(x).numpy(), np.tanh(x.numpy() * -0.5).sum(1), rtol=1e-5)
        SCALE.mul_(4)  # updated in place
        np.testing.assert_allclose(f(x).numpy(), np.tanh(x.numpy() * -2.0).sum(1), rtol=1e-5)
        assert misses() == before
    finally:
        SCALE = old


def test_a_changed_global_function_changes_the_structure(pool):
    global ACT
    x = T(_data(5, 3, seed=1))
    f = vmap(lambda r: ACT(r).sum(), chunk_size=2, executor=pool)
    ACT = tp.tanh
    np.testing.assert_allclose(f(x).numpy(), np.tanh(x.numpy()).sum(1), rtol=1e-5)
    ACT = tp.exp
    np.testing.assert_allclose(f(x).numpy(), np.exp(x.numpy()).sum(1), rtol=1e-5)


def _loss(w, b, x, y):
    return ((x @ w + b).tanh() - y).square().sum()


@pytest.mark.parametrize("executor", ["threads", None])
@pytest.mark.parametrize("size, chunk", [(1, 1), (7, 3), (8, 4), (5, 8)])
def test_per_sample_grads_equal_the_uncached_chunked_map_bit_for_bit(pool, executor, size, chunk):
    w, b = T(_data(3, 4, seed=2)), T(_data(4, seed=3))
    x, y = T(_data(size, 3, seed=4)), T(_data(size, 4, seed=5))
    ex = pool if executor else None
    f = vmap(grad(_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0), chunk_size=chunk, executor=ex)
    oracle = chunk_vmap(grad(_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0),
                        chunks=-(-size // chunk))(w, b, x, y)
    for _ in range(2):  # the miss, then the hit
        got = f(w, b, x, y)
        for g, o in zip(got, oracle):
            np.testing.assert_array_equal(g.numpy(), o.numpy())
    # against finite differences of one sample's loss, for the first sample
    eps, i = 1e-3, 0
    wn = w.numpy().astype(np.float64)
    num = np.zeros_like(wn)
    for j in np.ndindex(*wn.shape):
        for s in (1, -1):
            wp = wn.copy()
            wp[j] += s * eps
            num[j] += s * ((np.tanh(x.numpy()[i] @ wp + b.numpy()) - y.numpy()[i]) ** 2).sum() / (2 * eps)
    np.testing.assert_allclose(got[0].numpy()[i], num, rtol=2e-2, atol=2e-3)


def test_new_arguments_of_the_same_signature_are_read_at_every_call(pool):
    f = vmap(grad(_loss), in_dims=(None, None, 0, 0), chunk_size=2, executor=pool)
    x, y = T(_data(4, 3, seed=6)), T(_data(4, 4, seed=7))
    for seed in (8, 9):
        w, b = T(_data(3, 4, seed=seed)), T(_data(4, seed=seed + 10))
        oracle = chunk_vmap(grad(_loss), in_dims=(None, None, 0, 0), chunks=2)(w, b, x, y)
        np.testing.assert_array_equal(f(w, b, x, y).numpy(), oracle.numpy())


WB = T(_data(3, 4, seed=11))


def test_an_argument_that_is_also_a_captured_global_is_not_confused_with_it(pool):
    global WB
    x = T(_data(4, 3, seed=12))

    def g(w, r):
        return (r @ w).tanh().sum() + (r @ WB).tanh().sum() * 2

    f = vmap(grad(g), in_dims=(None, 0), chunk_size=2, executor=pool)
    f(WB, x)  # the argument is the global itself
    other = T(_data(3, 4, seed=13))
    got = f(other, x).numpy()
    np.testing.assert_array_equal(got, chunk_vmap(grad(g), in_dims=(None, 0), chunks=2)(other, x).numpy())
    # d/dw of tanh(r @ w).sum() is r (outer) 1 - tanh(r @ w)^2
    xn = x.numpy()
    oracle = xn[:, :, None] * (1 - np.tanh(xn @ other.numpy()) ** 2)[:, None, :]
    np.testing.assert_allclose(got, oracle, rtol=1e-5, atol=1e-6)


def test_randomness_different_draws_afresh_at_every_call_and_matches_the_unchunked_map(pool):
    x = T(np.zeros((6, 3), np.float32))

    def f(a):
        return a + tp.randn(3)

    for ex in (pool, None):
        g = vmap(f, randomness="different", chunk_size=4, executor=ex)
        tp.manual_seed(5)
        first, second = g(x).numpy(), g(x).numpy()
        tp.manual_seed(5)
        full = vmap(f, randomness="different")
        np.testing.assert_array_equal(first, full(x).numpy())
        np.testing.assert_array_equal(second, full(x).numpy())
        assert not np.array_equal(first, second)


def test_randomness_same_shares_one_draw_per_call(pool):
    x = T(np.zeros((5, 2), np.float32))
    g = vmap(lambda a: a + tp.randn(2), randomness="same", chunk_size=2, executor=pool)
    tp.manual_seed(1)
    first = g(x).numpy()
    tp.manual_seed(1)
    np.testing.assert_array_equal(first, vmap(lambda a: a + tp.randn(2), randomness="same")(x).numpy())
    assert (first == first[0]).all()


def test_edge_inputs_empty_size_one_non_contiguous_and_kwargs(pool):
    f = vmap(lambda r, k: (r * k).sum(), chunk_size=2, executor=pool)
    k = T(np.float32(3.0))
    empty = f(T(np.zeros((0, 3), np.float32)), k=k)
    assert tuple(empty.shape) == (0,)
    np.testing.assert_array_equal(f(T(np.ones((1, 3), np.float32)), k=k).numpy(), [9.0])
    base = _data(3, 5, seed=14)
    nc = T(base).T  # (5, 3), not contiguous
    np.testing.assert_allclose(f(nc, k=k).numpy(), (base.T * 3).sum(1), rtol=1e-5)
    np.testing.assert_allclose(vmap(lambda r: r * 2, chunk_size=1, executor=pool)(T(_data(3, seed=15))).numpy(),
                               _data(3, seed=15) * 2)  # 0-d samples


def test_a_failing_chunk_still_names_the_chunk_and_leaves_the_inputs_unchanged(pool):
    x = T(_data(6, 2, seed=16))
    before = x.numpy().copy()
    f = vmap(lambda r: r.mul_(2).sum(), chunk_size=2, executor=pool)
    np.testing.assert_array_equal(f(x).numpy(), (before * 2).sum(1))  # the write-back reaches the caller
    np.testing.assert_array_equal(x.numpy(), before * 2)
    from tensorplay.func import _chunks

    real = _chunks.run_here

    def fail_third(program, arrays, placement=None):
        if placement is not None and placement.start == 4:
            raise RuntimeError("boom")
        return real(program, arrays, placement)

    _chunks.run_here = fail_third
    try:
        with pytest.raises(ChunkError, match=r"chunk 2 of 3 \(samples 4 to 5\).*boom"):
            f(x)
    finally:
        _chunks.run_here = real
    np.testing.assert_array_equal(x.numpy(), before * 2)


def test_bad_calls_raise_the_uncached_calls_errors(pool):
    f = vmap(lambda a, b: (a * b).sum(), chunk_size=2, executor=pool)
    with pytest.raises(ValueError, match="different sizes"):
        f(T(np.ones((3, 2), np.float32)), T(np.ones((4, 2), np.float32)))
    with pytest.raises(RuntimeError, match="randomness='error'"):
        vmap(lambda a: a + tp.randn(2), chunk_size=2, executor=pool)(T(np.ones((3, 2), np.float32)))

"""Property tests over shapes (size-1, empty batch, 0-d per-sample values) and dims, and a jax.vmap check."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tensorplay import ir
import tensorplay as tp
from tensorplay.ir.passes.batching import batch_graph
from tensorplay.func import vmap
from vmap_testutil import assert_same, loop_and_stack, verify


def _flip_all(x):
    return x.flip(tuple(range(x.ndim))) if x.ndim else x


FUNCTIONS = {
    "elementwise_and_sum": lambda x, y: tp.sin(x) * 2 + (x * y).sum(),
    "product": lambda x, y: x * y - y,
    "transpose": lambda x, y: x.permute(*reversed(range(x.ndim))) + 0 * y.sum(),
    "reshape": lambda x, y: (x + y).reshape(-1),
    "flip_where": lambda x, y: tp.where(x > y, _flip_all(x), y),
    "max_or_zero": lambda x, y: x.amax() + y.sum() if x.numel() else x.sum() + y.sum(),
    "outer": lambda x, y: tp.outer(x.reshape(-1), y.reshape(-1)),
}

shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def cases(draw):
    shape = draw(shapes)
    size = draw(st.integers(0, 4))
    xd = draw(st.integers(-(len(shape) + 1), len(shape)))
    yd = draw(st.one_of(st.none(), st.integers(0, len(shape))))
    name = draw(st.sampled_from(sorted(FUNCTIONS)))
    chunk = draw(st.one_of(st.none(), st.integers(1, 5)))
    seed = draw(st.integers(0, 2 ** 16))
    return shape, size, xd, yd, name, chunk, seed


def _batched(rng, shape, size, d):
    if d is None:
        return np.asarray(rng.normal(size=shape), np.float32)
    d %= len(shape) + 1
    return np.asarray(rng.normal(size=shape[:d] + (size,) + shape[d:]), np.float32)


@given(cases())
def test_vmap_equals_loop_and_stack(case):
    shape, size, xd, yd, name, chunk, seed = case
    fn = FUNCTIONS[name]
    rng = np.random.default_rng(seed)
    x, y = _batched(rng, shape, size, xd), _batched(rng, shape, size, yd)
    tx, ty = tp.from_numpy(x), tp.from_numpy(y)
    dims = [xd % (len(shape) + 1), yd]
    per = [fn(tp.from_numpy(np.asarray(np.take(x, i, axis=dims[0]))),
              tp.from_numpy(np.asarray(y if yd is None else np.take(y, i, axis=yd)))).numpy() for i in range(size)]
    out_rank = np.ndim(fn(tp.from_numpy(np.zeros(shape, np.float32)), tp.from_numpy(np.zeros(shape, np.float32))))
    od = seed % (out_rank + 1)
    expected = np.stack(per, axis=od) if per else None
    out = vmap(fn, in_dims=(xd, yd), out_dims=od)(tx, ty)
    if expected is None:
        assert out.shape[od] == 0
    else:
        assert_same(out.numpy(), expected, f"{name} shape={shape} size={size} dims={dims}")
    if chunk is not None:
        chunked = vmap(fn, in_dims=(xd, yd), out_dims=od, chunk_size=chunk)(tx, ty)
        if os.environ.get("TENSORPLAY_BACKEND") == "interpreter":
            # numpy's reductions may sum in a layout-dependent order, so a differently sized
            # batch can round differently by an ulp; compiled kernels reduce each sample identically
            np.testing.assert_allclose(chunked.numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(chunked.numpy(), out.numpy())


@given(shapes, st.integers(0, 3), st.data())
def test_pass_on_reduction_graphs(shape, size, data):
    """Raw graphs: reduce over any subset of axes, with the batch axis anywhere."""
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))) if shape else ()))
    d = data.draw(st.integers(0, len(shape)))
    b = ir.GraphBuilder()
    x = b.add_input(ir.TensorType(shape, ir.float64))
    g = b.build([b.reduce_sum(b.exp(x), axes=axes)])
    bg = batch_graph(g, [d], size, out_dims=-1)
    verify(bg)
    arr = np.asarray(np.random.default_rng(size).normal(size=shape[:d] + (size,) + shape[d:]))
    out_rank = len(shape) - len(axes)
    assert_same(ir.interpret(bg, [arr])[0], loop_and_stack(g, [arr], [d], size, out_rank)[0])


def test_matches_jax_vmap():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4, 5)).astype(np.float32)
    w = rng.normal(size=(5, 2)).astype(np.float32)

    def ours(x, m):
        return tp.softmax(x @ m, dim=-1).sum(0)

    def theirs(x, m):
        return jax.nn.softmax(x @ m, axis=-1).sum(0)

    for d in (0, 1):  # in_dims=2 would leave (3, 4) @ (5, 2) per sample
        got = vmap(ours, in_dims=(d, None))(tp.from_numpy(a), tp.from_numpy(w)).numpy()
        want = np.asarray(jax.vmap(theirs, in_axes=(d, None))(jnp.asarray(a), jnp.asarray(w)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

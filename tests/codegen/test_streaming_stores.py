"""Streaming (non-temporal) stores for large graph outputs written once (`irutil.streaming`,
`KernelContext.streamed`, `dot._axpy_streamed`): the per-sample outer products of vmap(grad).

Only how the values are stored changes, never what: every result is compared bit for bit with
the same graph compiled with regular stores (TENSORPLAY_STREAM_MIN_BYTES=off) and with the
interpreter. Sizes sit around the threshold; size-1, empty, misaligned and non-contiguous
outputs, and an output a later kernel reads (never streamed), are covered. Whether the machine
code has non-temporal stores is checked on x86-64 only (elsewhere nothing streams)."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import ir
from tensorplay.codegen import host, irutil
from tensorplay.codegen.executable import Executable
from tensorplay.ir import TensorType, dtypes as dt, interpret


@pytest.fixture
def stream_min(monkeypatch):
    """Set TENSORPLAY_STREAM_MIN_BYTES for the test (the settings are read once: reset around it)."""
    def set_(value):
        monkeypatch.setenv("TENSORPLAY_STREAM_MIN_BYTES", str(value))
        irutil.reset_streaming()

    yield set_
    monkeypatch.delenv("TENSORPLAY_STREAM_MIN_BYTES", raising=False)
    irutil.reset_streaming()


def _triple_x86() -> bool:
    from tensorplay.codegen import jit
    return jit.engine().tm.triple.startswith(("x86_64", "amd64"))


def _outer(b_: int, m: int, n: int, dtype=dt.float32, then_sum: bool = False) -> ir.Graph:
    """vmap's per-sample outer product: (B, 1, M) x (B, 1, N) contracted over the size-1 axis."""
    g = ir.GraphBuilder()
    x = g.add_input(TensorType((b_, 1, m), dtype))
    y = g.add_input(TensorType((b_, 1, n), dtype))
    o = g.dot_general(x, y, contract=((1,), (1,)), batch=((0,), (0,)))
    return g.build([g.reduce_sum(o, axes=(1,)), g.neg(x)] if then_sum else [o, g.neg(x)])


def _inputs(graph: ir.Graph, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for v in graph.inputs:
        a = rng.standard_normal(v.type.shape) * 3
        a[..., ::5] = 0.0  # zeros and negative zeros: fma(x, y, +0) signs are kept as the plain form's
        a[..., 1::7] = -0.0
        out.append(a.astype(v.dtype.np) if v.dtype.is_floating_point else np.rint(a).astype(v.dtype.np))
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.size else a


def _streams(exe: Executable) -> bool:
    return "movnt" in exe.asm


def _compare(graph, stream_min, threshold, out=None, exact=True):
    """Compile `graph` streaming at `threshold` bytes and with regular stores; both runs' results,
    bit for bit equal, and equal to the interpreter's values. Returns the streaming executable."""
    args = _inputs(graph)
    stream_min("off")
    plain = Executable(graph)
    assert not _streams(plain)
    want = plain(*args)
    stream_min(threshold)
    exe = Executable(graph)
    got = exe(*args, out=out) if out is not None else exe(*args)
    for g_, w, r in zip(got, want, interpret(graph, args)):
        assert g_.shape == w.shape and g_.dtype == w.dtype
        np.testing.assert_array_equal(_bits(g_), _bits(w))
        if exact:  # a product with one term rounds once either way (-0.0 == 0.0 here: numpy has no fma)
            np.testing.assert_array_equal(g_, np.asarray(r))
        else:  # sums: the interpreter adds in another order
            np.testing.assert_allclose(g_, np.asarray(r), rtol=1e-5)
    return exe


@pytest.mark.parametrize("n", [1, 3, 8, 10, 128, 1030])
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.int32, dt.int64])
def test_outer_products_stream_with_the_same_bits(stream_min, n, dtype):
    g = _outer(5, 7, n, dtype)
    exe = _compare(g, stream_min, 1)
    row_fits = n * dtype.itemsize <= 4096  # rows wider than the scratch block keep regular stores
    if _triple_x86():
        assert _streams(exe) == row_fits
        assert ("sfence" in exe.asm) == row_fits


def test_threshold_is_the_output_size_in_bytes(stream_min):
    g = _outer(6, 9, 11)
    nbytes = 6 * 9 * 11 * 4
    for threshold, streamed in ((nbytes - 1, True), (nbytes, True), (nbytes + 1, False)):
        exe = _compare(g, stream_min, threshold)
        if _triple_x86():
            assert _streams(exe) == streamed, threshold


def test_size_one_and_empty_outputs(stream_min):
    for shape in ((1, 1, 1), (0, 3, 4), (2, 0, 5), (3, 4, 0)):
        exe = _compare(_outer(*shape), stream_min, 1)
        if _triple_x86():  # one element: LLVM may fold the scratch copy into one plain store
            assert ("sfence" in exe.asm) == (shape == (1, 1, 1))


@pytest.mark.parametrize("offset", [0, 1, 3, 7])
def test_misaligned_and_non_contiguous_out_arrays(stream_min, offset):
    g = _outer(4, 13, 17)
    t = g.out_types[0]
    block = np.full(t.size + 16, np.nan, np.float32)
    direct = block[offset:offset + t.size].reshape(t.shape)  # contiguous, aligned to 4 bytes only
    wide = np.full(t.shape[:-1] + (t.shape[-1] * 2,), np.nan, np.float32)
    strided = wide[..., ::2]  # not contiguous: the executable writes a copy
    for out0 in (direct, strided):
        neg = np.empty(g.out_types[1].shape, np.float32)
        _compare(g, stream_min, 1, out=[out0, neg])
        assert not np.isnan(out0).any()
    assert np.isnan(block[:offset]).all() and np.isnan(block[offset + t.size:]).all()  # nothing outside
    assert np.isnan(wide[..., 1::2]).all()


def test_non_contiguous_inputs(stream_min):
    g = _outer(3, 8, 24)
    args = _inputs(g)
    views = [np.asfortranarray(a) for a in args]  # the executable copies them to its layout
    stream_min("off")
    want = Executable(g)(*args)
    stream_min(1)
    got = Executable(g)(*views)
    for r, w in zip(got, want):
        np.testing.assert_array_equal(_bits(r), _bits(w))


def test_an_output_a_later_kernel_reads_is_not_streamed(stream_min):
    g = ir.GraphBuilder()
    x = g.add_input(TensorType((4, 1, 16), dt.float32))
    y = g.add_input(TensorType((4, 1, 32), dt.float32))
    o = g.dot_general(x, y, contract=((1,), (1,)), batch=((0,), (0,)))
    graph = g.build([o, g.reduce_sum(o, axes=(2,))])  # o is an output and read by the sum
    exe = _compare(graph, stream_min, 1, exact=False)
    assert not _streams(exe)
    exe = _compare(_outer(4, 16, 32, then_sum=True), stream_min, 1, exact=False)  # an intermediate: never
    assert not _streams(exe)


def test_the_chunk_of_per_sample_grads_streams_its_outer_products(stream_min):
    """vmap(grad) of a 2-layer MLP: the per-sample weight gradients are the streamed outer products."""
    import tensorplay as tp
    from tensorplay.func import grad, vmap

    rng = np.random.default_rng(1)
    w1 = tp.tensor(rng.standard_normal((6, 40)).astype(np.float32))
    w2 = tp.tensor(rng.standard_normal((40, 3)).astype(np.float32))
    x = tp.tensor(rng.standard_normal((9, 6)).astype(np.float32))

    def loss(ps, xi):
        h = tp.tanh(xi @ ps[0])
        return (h @ ps[1]).sum()

    stream_min("off")
    want = vmap(grad(loss), in_dims=(None, 0))((w1, w2), x)
    tp.compiler.reset()
    stream_min(1)
    got = vmap(grad(loss), in_dims=(None, 0))((w1, w2), x)
    tp.compiler.reset()
    for r, w in zip(got, want):
        np.testing.assert_array_equal(_bits(r.numpy()), _bits(w.numpy()))


def test_bad_threshold_names_the_variable(stream_min):
    stream_min("lots")
    with pytest.raises(ValueError, match="TENSORPLAY_STREAM_MIN_BYTES"):
        irutil.streaming()


def test_default_threshold_is_the_hosts_l2_cache(monkeypatch):
    monkeypatch.delenv("TENSORPLAY_STREAM_MIN_BYTES", raising=False)
    irutil.reset_streaming()
    try:
        lo, width = irutil.streaming()
        l2 = host.cache_bytes(2)
        if _triple_x86() and l2 is not None:
            assert lo == l2 and width in (16, 32)
        else:
            assert (lo, width) == (None, None)
    finally:
        irutil.reset_streaming()

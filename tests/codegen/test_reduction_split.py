"""Large full reductions run in fixed blocks on the thread pool (`codegen.threads`): checked
against the interpreter and numpy in float64, and bit for bit across thread counts (the pool size
is patched in this process; tests/codegen/test_thread_count.py does the same in fresh processes)."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import executable as ce
from tensorplay.codegen import threads
from tensorplay.ir import dtypes as dt
from tensorplay.ir import interpret
from tensorplay.ir.types import TensorType

N = 3 * threads.REDUCE_BLOCK + threads.REDUCE_SPLIT_MIN + 77  # a short last block


def _graph(n, dtype, prim, producer=None, shape=None):
    b = ir.GraphBuilder("red")
    x = b.add_input(TensorType(shape or (n,), dtype))
    y = producer(b, x) if producer else x
    return b.build([b.emit(prim, y, axes=tuple(range(len(shape or (n,)))))])


def _run_with_threads(g, arrays, n_threads, monkeypatch):
    """Compile `g` afresh with a pool of `n_threads` (the block ranges are fixed at compile time)."""
    monkeypatch.setattr(ce, "_THREADS", n_threads)
    exe = ce.Executable(g)
    ranges = exe._block_chunks()
    assert 1 <= len(ranges) <= n_threads and (len(ranges) > 1) == (n_threads > 1)
    assert [lo for lo, _ in ranges[1:]] == [hi for _, hi in ranges[:-1]] and ranges[-1][1] == exe._blocks
    return exe(*arrays)[0]


@pytest.mark.parametrize("prim", threads.SPLIT_KINDS)
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.int32])
def test_split_reduction_matches_the_interpreter(prim, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    if dtype.is_floating_point:
        x = rng.standard_normal(N).astype(dtype.np)
        if prim == "reduce_prod":
            x = (1 + x * 1e-4).astype(dtype.np)  # a product that stays finite
    else:
        x = rng.integers(-50, 50, N).astype(dtype.np)
    g = _graph(N, dtype, prim)
    exe = codegen.compile_graph(g)
    assert exe._blocks == -(-N // threads.REDUCE_BLOCK)
    got = [_run_with_threads(g, [x], t, monkeypatch) for t in (1, 2, 3, 5)]
    for other in got[1:]:
        assert other.tobytes() == got[0].tobytes()
    want = interpret(g, [x])[0]
    if dtype.is_floating_point:
        exact = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max,
                 "reduce_min": np.min}[prim](x.astype(np.float64))
        if prim == "reduce_prod":
            # Rounding a product of values near 1 is biased, and the bias grows with the number of
            # partial products, i.e. with the host's vector width and interleave: only the a-priori
            # bound of N roundings, (1 + u)^N - 1 ~ N u, holds on every host.
            rtol = N * np.finfo(dtype.np).eps / 2
        else:
            rtol = 1e-6 if dtype is dt.float32 else 1e-12
        np.testing.assert_allclose(got[0], exact, rtol=rtol, atol=1e-3 if prim != "reduce_prod" else 0)
        np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-2)
    else:
        assert got[0] == want  # integer sums and products wrap the same in any order


def test_fused_producers_and_a_huge_trig_argument(monkeypatch):
    x = np.random.default_rng(1).standard_normal(N).astype(np.float32) * 10
    x[N - 5] = 3e30  # only the last block sees it: the fast-trig re-run covers every block
    g = _graph(N, dt.float32, "reduce_sum", lambda b, v: b.mul(b.sin(v), b.exp(b.neg(b.abs(v)))))
    exe = codegen.compile_graph(g)
    assert exe._blocks
    one = _run_with_threads(g, [x], 1, monkeypatch)
    three = _run_with_threads(g, [x], 3, monkeypatch)
    assert one.tobytes() == three.tobytes()
    exact = (np.sin(x.astype(np.float64)) * np.exp(-np.abs(x.astype(np.float64)))).sum()
    np.testing.assert_allclose(one, exact, rtol=1e-5)


def test_nan_propagates_through_max_and_sum(monkeypatch):
    x = np.ones(N, np.float32)
    x[12345] = np.nan
    for prim in ("reduce_max", "reduce_sum"):
        assert np.isnan(_run_with_threads(_graph(N, dt.float32, prim), [x], 2, monkeypatch))


def test_multi_axis_and_non_contiguous_input(monkeypatch):
    shape = (N // 64 + 1, 64)
    x = np.random.default_rng(2).standard_normal((shape[1], shape[0])).astype(np.float64).T  # a strided view
    g = _graph(0, dt.float64, "reduce_sum", shape=shape)
    exe = codegen.compile_graph(g)
    assert exe._blocks
    got = [_run_with_threads(g, [x], t, monkeypatch) for t in (1, 4)]
    assert got[0].tobytes() == got[1].tobytes()
    np.testing.assert_allclose(got[0], x.sum(), rtol=1e-12)


def test_serial_calls_run_in_one_piece(monkeypatch):
    x = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    monkeypatch.setattr(ce, "_THREADS", 4)
    exe = ce.Executable(_graph(N, dt.float32, "reduce_sum"))
    with ce.serial_calls():
        assert exe._block_chunks() == [(0, exe._blocks)]
        inside = exe(x)[0]
    assert len(exe._block_chunks()) == 4
    assert inside.tobytes() == exe(x)[0].tobytes()


@pytest.mark.parametrize("n", [0, 1, threads.REDUCE_SPLIT_MIN - 1])
def test_small_and_empty_reductions_are_not_split(n):
    x = np.arange(n, dtype=np.float32)
    g = _graph(n, dt.float32, "reduce_sum")
    exe = codegen.compile_graph(g)
    assert not exe._blocks
    np.testing.assert_allclose(exe(x)[0], interpret(g, [x])[0], rtol=1e-5)


def test_partial_reductions_and_extra_outputs_are_not_split():
    b = ir.GraphBuilder("rows")
    x = b.add_input(TensorType((N // 8, 8), dt.float32))
    assert codegen.compile_graph(b.build([b.emit("reduce_sum", x, axes=(1,))]))._blocks == 0
    b = ir.GraphBuilder("two")
    x = b.add_input(TensorType((N,), dt.float32))
    y = b.exp(x)
    assert codegen.compile_graph(b.build([b.emit("reduce_sum", y, axes=(0,)), y]))._blocks == 0


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(threads)
    assert result.attempted >= 2 and result.failed == 0


def test_disk_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "1")
    monkeypatch.setenv("TENSORPLAY_CACHE_DIR", str(tmp_path))
    x = np.random.default_rng(4).standard_normal(N).astype(np.float32)
    g = _graph(N, dt.float32, "reduce_min", lambda b, v: b.tanh(v))
    cold = ce.Executable(g)
    warm = ce.Executable(g)
    assert (cold.stats["source"], warm.stats["source"]) == ("compiled", "disk cache")
    assert warm(x)[0].tobytes() == cold(x)[0].tobytes()
    np.testing.assert_allclose(warm(x)[0], np.tanh(x.astype(np.float64)).min(), rtol=1e-6)


def test_a_reduction_of_a_gemm_is_not_split():
    """The pool never runs BLAS (so OpenBLAS's own threads never nest inside the pool's): a
    reduction whose operand comes out of a gemm is a second kernel, and only one-kernel
    executables are split."""
    b = ir.GraphBuilder("gemm_sum")
    x = b.add_input(TensorType((1024, 512), dt.float32))
    w = b.add_input(TensorType((512, 1024), dt.float32))
    y = b.emit("dot_general", x, w, contract=((1,), (0,)), batch=((), ()))
    exe = codegen.compile_graph(b.build([b.emit("reduce_sum", b.tanh(y), axes=(0, 1))]))
    assert not exe._blocks and exe._size == 0
    rng = np.random.default_rng(5)
    xs, ws = rng.standard_normal((1024, 512)).astype(np.float32), rng.standard_normal((512, 1024)).astype(np.float32)
    np.testing.assert_allclose(exe(xs, ws)[0], np.tanh(xs.astype(np.float64) @ ws).sum(), rtol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (0, 5), (5, 0), (7, 1000), (2, 3, 257)])
def test_widening_row_sums_match_the_interpreter(shape):
    """float32 sums accumulated in float64 carry a 16-lane vectorisation hint (`widening_lanes`):
    values against the interpreter and float64 numpy, with size-1, empty and strided operands."""
    from tensorplay.codegen.lowerings.reduce import widening_lanes

    assert widening_lanes(dt.float32, dt.float64) == 16 and widening_lanes(dt.float64, dt.float64) is None
    b = ir.GraphBuilder("rows")
    v = b.add_input(TensorType(shape, dt.float32))
    g = b.build([b.emit("reduce_sum", b.tanh(b.sin(v)), axes=(len(shape) - 1,))])
    exe = codegen.compile_graph(g)
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape[::-1]).astype(np.float32).transpose()  # a transposed (strided) view
    assert x.shape == shape
    for arr in (x, np.ascontiguousarray(x)):
        got = exe(arr)[0]
        np.testing.assert_allclose(got, interpret(g, [np.ascontiguousarray(arr)])[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, np.tanh(np.sin(arr.astype(np.float64))).sum(-1), rtol=1e-5, atol=1e-5)


def test_a_split_reduction_loads_from_the_disk_cache(tmp_path, monkeypatch):
    """A disk-cache entry of a split reduction carries its block count and combining entry: a fresh
    process-level cache links both and gives the same bits as the compiled original."""
    monkeypatch.setenv("TENSORPLAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORPLAY_DISK_CACHE", raising=False)
    codegen.clear_cache()
    g = _graph(N, dt.float32, "reduce_sum")
    x = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    first = codegen.compile_graph(g)
    assert first.stats["source"] == "compiled" and first._blocks
    want = first(x)[0]
    codegen.clear_cache()
    again = codegen.compile_graph(g)
    assert again.stats["source"] == "disk cache"
    assert again._blocks == first._blocks and again._finish is not None
    assert again(x)[0].tobytes() == want.tobytes()
    codegen.clear_cache()

"""vmap's chunks on executors (issue 17): values against loop-and-stack and the unchunked map,
ordering, randomness, failures naming the chunk, bad arguments, what is shipped (pickled with the
standard library, as a remote worker gets it), and chunk_size="auto" within max_memory."""
from __future__ import annotations

import concurrent.futures as cf
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay.func import _chunks, _shared, chunk_vmap, grad, jacrev, vmap
from tensorplay._exec import backend
from tensorplay.func._chunks import ChunkError
from tests.func.chunk_data import T, _data


W = T(_data(4, 3, seed=1))


def per_sample(x, y):
    """Small products (no BLAS), transcendentals, a capture and a reduction."""
    return (W @ x).tanh() * y.sum() + x.exp().sum()


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(2) as ex:
        yield ex


class Remote(cf.Executor):
    """Runs each submitted call as a remote worker would: pickled and unpickled with the standard
    library (no cloudpickle: a closure of the user's function could not be shipped), here, at once."""

    def __init__(self):
        self.shipped: list[bytes] = []

    def submit(self, fn, /, *args, **kwargs):
        blob = pickle.dumps((fn, args, kwargs))
        self.shipped.append(blob)
        fn, args, kwargs = pickle.loads(blob)
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as e:
            future.set_exception(e)
        return future

    def chunk_sizes(self) -> list[int]:
        return [pickle.loads(b)[1][1][0].shape[0] for b in self.shipped]


class Reversed(cf.Executor):
    """Holds every submission until `expect` have arrived, then completes them last first."""

    _max_workers = 64  # so that the map submits all of its chunks before it waits

    def __init__(self, expect: int):
        self.expect = expect
        self.held: list = []

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        self.held.append((future, fn, args))
        if len(self.held) == self.expect:
            for f, fn_, args_ in reversed(self.held):
                f.set_result(fn_(*args_))
        return future


class Dying(cf.Executor):
    """An executor whose worker dies while running chunk `dies_at`."""

    def __init__(self, dies_at: int):
        self.dies_at = dies_at
        self.count = 0

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        if self.count == self.dies_at:
            future.set_exception(cf.BrokenExecutor("worker 1 died unexpectedly"))
        else:
            future.set_result(fn(*args, **kwargs))
        self.count += 1
        return future


# --- values ----------------------------------------------------------------------------------------
@settings(max_examples=12)
@given(size=st.integers(1, 7), chunk=st.integers(1, 4), executor=st.sampled_from(["threads", "remote", None]))
def test_chunks_on_an_executor_match_loop_and_stack_and_the_unchunked_map_bit_for_bit(pool, size, chunk, executor):
    x, y = T(_data(size, 3, seed=size)), T(_data(size, 2, seed=size + 9))
    ex = pool if executor == "threads" else Remote() if executor == "remote" else None
    out = vmap(per_sample, chunk_size=chunk, executor=ex)(x, y).numpy()
    oracle = np.stack([per_sample(x[i], y[i]).numpy() for i in range(size)])
    np.testing.assert_allclose(out, oracle, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out, vmap(per_sample, chunk_size=chunk)(x, y).numpy())  # the serial chunks
    if backend() == "compiled":  # generated code for small products: bits independent of the chunk size
        np.testing.assert_array_equal(out, vmap(per_sample)(x, y).numpy())
    else:  # the interpreter's numpy matmul rounds per batch shape
        np.testing.assert_allclose(out, vmap(per_sample)(x, y).numpy(), rtol=1e-6, atol=1e-6)


def test_pytrees_in_dims_out_dims_and_unbatched_outputs_on_threads(pool):
    x = T(_data(3, 5))
    w = T(_data(3))

    def f(a, params):
        return {"s": (a * params["w"]).sum(), "t": a.sin()}, params["w"] * 2

    in_dims, out_dims = (1, None), ({"s": 0, "t": 1}, None)
    full = vmap(f, in_dims, out_dims)(x, {"w": w})
    part = vmap(f, in_dims, out_dims, chunk_size=2, executor=pool)(x, {"w": w})
    for a, b in [(full[0]["s"], part[0]["s"]), (full[0]["t"], part[0]["t"]), (full[1], part[1])]:
        assert a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert part[0]["t"].shape == (3, 5)


def test_results_are_assembled_in_sample_order_whatever_order_the_chunks_complete_in():
    x = T(np.arange(14, dtype=np.float32).reshape(7, 2))
    ex = Reversed(expect=4)
    out = vmap(lambda r: r * 10 + r.sum(), chunk_size=2, executor=ex)(x).numpy()
    np.testing.assert_array_equal(out, x.numpy() * 10 + x.numpy().sum(1, keepdims=True))


def test_chunk_vmap_and_per_sample_grads_on_threads(pool):
    x, y = T(_data(6, 3)), T(_data(6, 2))
    full = vmap(per_sample)(x, y).numpy()
    np.testing.assert_array_equal(chunk_vmap(per_sample, chunks=4, executor=pool)(x, y).numpy(), full)
    loss = lambda w, a: ((w @ a).tanh() ** 2).sum()  # noqa: E731
    g_full = vmap(grad(loss), in_dims=(None, 0))(W, x).numpy()
    g = vmap(grad(loss), in_dims=(None, 0), chunk_size=4, executor=pool)(W, x).numpy()
    np.testing.assert_array_equal(g, g_full)


def test_per_parameter_grads_written_in_production_order_are_returned_in_argument_order(pool):
    """Backprop computes the last layer's gradient first: the chunk program returns its outputs in
    that order (so the compiled code writes them into place) and the map puts them back."""
    from tensorplay.func import _pipeline

    _pipeline.clear()  # the batched graphs looked at below are this test's only
    w1, w2 = T(_data(3, 4, seed=3)), T(_data(4, 2, seed=4))
    x = T(_data(7, 3, seed=5))

    def loss(p, a):
        return ((a @ p[0]).tanh() @ p[1]).sin().sum()

    full = vmap(grad(loss), in_dims=(None, 0))((w1, w2), x)
    serial = vmap(grad(loss), in_dims=(None, 0), chunk_size=3)((w1, w2), x)  # the executors' bit-for-bit reference
    expected = [np.stack([grad(loss)((w1, w2), x[i])[k].numpy() for i in range(7)]) for k in range(2)]
    for ex in (pool, Remote(), None):
        chunked = vmap(grad(loss), in_dims=(None, 0), chunk_size=3, executor=ex)((w1, w2), x)
        for k in range(2):
            assert chunked[k].shape == (7,) + (w1, w2)[k].shape
            np.testing.assert_array_equal(chunked[k].numpy(), serial[k].numpy())
            np.testing.assert_allclose(chunked[k].numpy(), full[k].numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(chunked[k].numpy(), expected[k], rtol=1e-5, atol=1e-6)
    from tensorplay.func._vmap import _BATCHED

    programs = [_chunks.ChunkProgram.of(g) for key, g in _BATCHED._data.items() if key[2] == 3 and len(g.outputs) == 2]
    assert programs and all(p.order == (1, 0) for p in programs)  # the second gradient is computed first
    position = {n.out: i for i, n in enumerate(programs[0].graph().nodes)}
    assert [position[v] for v in programs[0].graph().outputs] == sorted(position[v] for v in programs[0].graph().outputs)
    again = pickle.loads(pickle.dumps(programs[0]))
    assert again.order == (1, 0) and again.digest == programs[0].digest
    assert [t[0] for t in again.output_types()] == [(3, 3, 4), (3, 4, 2)]  # in the map's order

def test_jacrev_rows_on_an_executor_equal_jacrev(pool):
    x = T(_data(3))
    f = lambda v: (W @ v).sin()  # noqa: E731
    expected = jacrev(f)(x).numpy()
    for ex in (pool, Remote()):
        np.testing.assert_array_equal(jacrev(f, chunk_size=3, executor=ex)(x).numpy(), expected)
    batched = vmap(jacrev(f, chunk_size=2, executor=pool))(T(_data(2, 3)))  # under vmap: one graph, inlined
    np.testing.assert_array_equal(batched.numpy()[1], jacrev(f)(T(_data(2, 3))[1]).numpy())


def test_under_an_enclosing_transform_the_chunks_are_inlined(pool):
    x = T(_data(5, 3))

    def loss(w, executor):
        return vmap(lambda r: (w @ r).tanh().sum(), chunk_size=2, executor=executor)(x).sum()

    np.testing.assert_array_equal(grad(loss)(W, pool).numpy(), grad(loss)(W, None).numpy())


def test_randomness_different_is_independent_of_chunks_and_executor(pool):
    x = T(np.zeros((6, 3), np.float32))

    def f(a):
        return a + tp.randn(3)

    tp.manual_seed(3)
    full = vmap(f, randomness="different")(x).numpy()
    for ex in (pool, Remote()):
        tp.manual_seed(3)
        np.testing.assert_array_equal(vmap(f, randomness="different", chunk_size=4, executor=ex)(x).numpy(), full)
    assert len({tuple(r) for r in full}) == 6


def test_inplace_writes_reach_the_caller_only_after_every_chunk(pool):
    x = T(_data(5, 2))
    before = x.numpy().copy()
    out = vmap(lambda r: r.mul_(2).sum(), chunk_size=2, executor=pool)(x)
    np.testing.assert_array_equal(x.numpy(), before * 2)
    np.testing.assert_array_equal(out.numpy(), (before * 2).sum(1))


# --- failures --------------------------------------------------------------------------------------
@pytest.mark.parametrize("executor", ["threads", "remote", None])
def test_a_chunk_that_raises_fails_the_whole_map_naming_the_chunk(pool, executor):
    ex = pool if executor == "threads" else Remote() if executor == "remote" else None
    x = T(_data(8, 3))
    idx = T(np.array([0, 1, 2, 0, 1, 7, 0, 1], np.int64))  # sample 5 reads out of range
    before = x.numpy().copy()

    def f(row, i):
        return row.add_(1)[i]

    with pytest.raises(ChunkError, match=r"chunk 2 of 4 \(samples 4 to 5\) failed: IndexError") as info:
        vmap(f, chunk_size=2, executor=ex)(x, idx)
    assert isinstance(info.value.__cause__, IndexError)
    assert "vmap(f, in_dims=0)" in str(info.value)
    np.testing.assert_array_equal(x.numpy(), before)  # the in-place add never reached the caller


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_on_threads_the_first_failing_chunk_in_order_is_named_and_no_later_chunk_starts(threads):
    """The pool threads take chunks in order: when chunks 3 and 5 would fail, chunk 3 is named
    (chunk 5 may have failed first on another thread), and no chunk is taken after a failure."""
    x = T(np.arange(16, dtype=np.float32).reshape(8, 2))
    idx = T(np.array([0, 1, 0, 9, 0, 9, 0, 1], np.int64))  # samples 3 and 5 read out of range
    started: list[int] = []
    run_here = _chunks.run_here

    def recording(program, arrays, placement=None):
        started.append(placement.start)
        return run_here(program, arrays, placement)

    _chunks.run_here = recording
    try:
        with ThreadPoolExecutor(threads) as ex, pytest.raises(ChunkError, match=r"chunk 3 of 8 \(samples 3 to 3\)"):
            vmap(lambda r, i: r[i], chunk_size=1, executor=ex)(x, idx)
    finally:
        _chunks.run_here = run_here
    assert sorted(started) == list(range(len(started)))  # in order, none skipped
    assert 3 <= max(started) < 3 + threads  # after chunk 3 failed, at most the chunks already taken


def _threads_running_chunks(executor, chunk_size: int, size: int = 8):
    """(the map's result, the thread of every chunk run) of a chunked map of `size` samples on `executor`."""
    import threading

    ran: list = []
    run_here = _chunks.run_here

    def recording(program, arrays, placement=None):
        ran.append(threading.get_ident())
        return run_here(program, arrays, placement)

    _chunks.run_here = recording
    try:
        out = vmap(lambda r: (r * 2.0).sum(), chunk_size=chunk_size, executor=executor)(T(_data(size, 3)))
    finally:
        _chunks.run_here = run_here
    return out, ran


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_calling_thread_is_one_of_the_pools_runners(threads):
    """A pool of n threads runs at most n chunks at once: n - 1 of its threads and the calling
    thread, which takes chunks instead of waiting (on a 1-thread pool it runs all of them)."""
    import threading

    with ThreadPoolExecutor(threads) as ex:
        out, ran = _threads_running_chunks(ex, chunk_size=1)
        pool_threads = {t.ident for t in ex._threads}
    np.testing.assert_allclose(out.numpy(), (_data(8, 3).astype(np.float64) * 2.0).sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(out.numpy(), vmap(lambda r: (r * 2.0).sum())(T(_data(8, 3))).numpy())
    assert len(ran) == 8
    assert set(ran) <= pool_threads | {threading.get_ident()}
    assert len(set(ran) - {threading.get_ident()}) <= threads - 1  # never more than n at once
    assert len(pool_threads) <= threads - 1 or threads == 1 and not pool_threads


def test_a_map_called_from_the_pools_own_threads_does_not_wait_for_itself():
    """Every thread of the pool calls a chunked map on the same pool: the runners each submits
    cannot start (the pool is busy with the callers), so each caller runs its chunks itself and
    the runners never started are cancelled."""
    x = T(_data(6, 3))
    want = vmap(tp.sin)(x).numpy()
    np.testing.assert_allclose(want, np.sin(_data(6, 3)), rtol=1e-6, atol=1e-7)
    with ThreadPoolExecutor(2) as ex:
        f = vmap(tp.sin, chunk_size=2, executor=ex)
        barrier = __import__("threading").Barrier(2, timeout=30)

        def nested():
            barrier.wait()  # both pool threads busy before either map submits
            return f(x).numpy()

        for future in [ex.submit(nested) for _ in range(2)]:
            np.testing.assert_array_equal(future.result(timeout=60), want)


def test_an_interrupt_in_the_calling_thread_propagates_and_no_runner_writes_afterwards():
    """A KeyboardInterrupt while the calling thread runs a chunk is not a chunk failure: it
    propagates as it is, after the pool's runners stopped taking chunks and finished theirs."""
    import threading
    import time

    main = threading.get_ident()
    finished: list = []
    run_here = _chunks.run_here

    def interrupted(program, arrays, placement=None):
        if threading.get_ident() == main:
            raise KeyboardInterrupt
        time.sleep(0.001)  # lets the calling thread take a chunk (tiny chunks: one thread could take them all)
        result = run_here(program, arrays, placement)
        finished.append(placement.start)
        return result

    _chunks.run_here = interrupted
    try:
        with ThreadPoolExecutor(2) as ex, pytest.raises(KeyboardInterrupt):
            vmap(tp.sin, chunk_size=1, executor=ex)(T(_data(64, 3)))
        count = len(finished)
    finally:
        _chunks.run_here = run_here
    assert count == len(finished) and count < 64  # none after the map raised; not every chunk ran


def test_a_worker_that_dies_fails_the_whole_map_naming_the_chunk():
    x = T(_data(7, 2))
    before = x.numpy().copy()
    with pytest.raises(ChunkError, match=r"chunk 1 of 3 \(samples 3 to 5\) failed: BrokenExecutor") as info:
        vmap(lambda r: r.mul_(3).sum(), chunk_size=3, executor=Dying(dies_at=1))(x)
    assert isinstance(info.value.__cause__, cf.BrokenExecutor)
    np.testing.assert_array_equal(x.numpy(), before)


def test_an_executor_that_is_shut_down_fails_naming_the_first_chunk():
    ex = ThreadPoolExecutor(1)
    ex.shutdown()
    with pytest.raises(ChunkError, match=r"chunk 0 of 2 \(samples 0 to 1\) failed: RuntimeError"):
        vmap(tp.sin, chunk_size=2, executor=ex)(T(_data(3)))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(chunk_size=0), ValueError, r"vmap: chunk_size must be a positive int, 'auto' or None, got 0"),
    (dict(chunk_size=-2), ValueError, r"chunk_size must be .* got -2"),
    (dict(chunk_size=True), ValueError, r"chunk_size must be .* got True"),
    (dict(chunk_size="big"), ValueError, r"chunk_size must be .* got 'big'"),
    (dict(chunk_size=2, executor="threads"), TypeError, r"vmap: executor must be a concurrent.futures.Executor"),
    (dict(executor=ThreadPoolExecutor(1)), ValueError, r"vmap: executor needs chunk_size"),
    (dict(chunk_size=2, max_memory="1MB"), ValueError, r"vmap: max_memory is only used with chunk_size='auto'"),
    (dict(max_memory=10), ValueError, r"max_memory is only used with chunk_size='auto'"),
    (dict(chunk_size="auto"), ValueError, r"vmap: chunk_size='auto' needs max_memory"),
    (dict(chunk_size="auto", max_memory=-5), ValueError, r"vmap: max_memory must be positive, got -5"),
    (dict(chunk_size="auto", max_memory=0), ValueError, r"max_memory must be positive"),
    (dict(chunk_size="auto", max_memory="12 parsecs"), ValueError, r"vmap: max_memory '12 parsecs' is not a size"),
    (dict(chunk_size="auto", max_memory="MB"), ValueError, r"max_memory 'MB' is not a size"),
    (dict(chunk_size="auto", max_memory="-1MB"), ValueError, r"max_memory '-1MB' is not a size"),
    (dict(chunk_size="auto", max_memory=1.5e9), TypeError, r"vmap: max_memory must be a number of bytes"),
    (dict(chunk_size="auto", max_memory=[1]), TypeError, r"max_memory must be a number of bytes"),
])
def test_bad_arguments_name_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        vmap(tp.sin, **kwargs)


def test_bad_arguments_of_chunk_vmap_and_jacrev():
    with pytest.raises(TypeError, match=r"chunk_vmap: executor must be a concurrent.futures.Executor"):
        chunk_vmap(tp.sin, chunks=2, executor=object())
    with pytest.raises(ValueError, match=r"jacrev\(argnums=0\): executor needs chunk_size"):
        jacrev(tp.sin, executor=ThreadPoolExecutor(1))
    with pytest.raises(ValueError, match=r"jacrev\(argnums=0\): chunk_size must be a positive int or None"):
        jacrev(tp.sin, chunk_size=0)

    class NotAnExecutor:  # looks like a dask Client: the hint says what to pass
        def get_executor(self):
            return None

    with pytest.raises(TypeError, match=r"for dask, pass client.get_executor\(\)"):
        vmap(tp.sin, chunk_size=2, executor=NotAnExecutor())


@pytest.mark.parametrize("text, size", [("512MB", 512 * 10 ** 6), ("1.5GiB", 3 * 2 ** 29), ("2 kib", 2048),
                                        ("100", 100), ("7B", 7), (".5 KB", 500), (4096, 4096)])
def test_memory_sizes(text, size):
    assert _chunks.parse_memory("vmap", text) == size


# --- what is shipped -------------------------------------------------------------------------------
def test_what_ships_is_ir_text_and_arrays_and_workers_parse_each_program_once():
    x, y = T(_data(7, 3)), T(_data(7, 2))
    ex = Remote()
    _chunks._WORKER_PROGRAMS.clear()  # as on a fresh worker
    before = _chunks._WORKER_PROGRAMS.misses
    out = vmap(per_sample, chunk_size=3, executor=ex)(x, y)
    np.testing.assert_array_equal(out.numpy(), vmap(per_sample)(x, y).numpy())
    assert len(ex.shipped) == 3 and ex.chunk_sizes() == [3, 3, 1]
    fn, (program, arrays, placement), _ = pickle.loads(ex.shipped[0])
    assert fn is _chunks.run_chunk
    assert isinstance(placement.shared, _shared.SharedRef) and placement.outs is None  # a reference, not the outputs
    assert placement.attach() is None  # the map is over: its shared outputs are gone, a late worker sends results back
    assert program.__getstate__().keys() == {"text", "digest", "order"}  # the IR text, and the order of its outputs
    assert program.text.startswith("func @per_sample(")
    assert all(type(a) is np.ndarray for a in arrays)
    np.testing.assert_array_equal(arrays[-1], W.numpy())  # the captured tensor, shipped whole
    assert b"per_sample" not in ex.shipped[0].replace(program.text.encode(), b"")  # no reference to the function
    assert _chunks._WORKER_PROGRAMS.misses - before == 2  # sizes 3 and 1: parsed once each
    vmap(per_sample, chunk_size=3, executor=ex)(x, y)
    assert _chunks._WORKER_PROGRAMS.misses - before == 2


# --- memory budgets --------------------------------------------------------------------------------
def _mlp_sample(x):
    h = (x * 1.5).tanh()
    return (h.exp() * h.sin()).sum() + h.cumsum(0).max()


def _chunk_footprints(size: int, chunk: int) -> list[int]:
    """The footprint of each chunk of a chunk_size=`chunk` map, from the executable's reported sizes."""
    ex = Remote()
    vmap(_mlp_sample, chunk_size=chunk, executor=ex)(T(_data(size, 64)))
    return [_chunks.footprint(_graph_of(b)) for b in ex.shipped]


def _graph_of(blob: bytes):
    from tensorplay.ir.text import parse_graph

    return parse_graph(pickle.loads(blob)[1][0].text)


@pytest.mark.parametrize("budget_chunks", [1, 3, 10])
def test_auto_chunk_size_is_the_largest_whose_working_set_fits_the_budget(budget_chunks):
    size = 23
    budget = max(_chunk_footprints(size, budget_chunks)) + 5  # a budget that admits chunks of `budget_chunks`
    ex = Remote()
    x = T(_data(size, 64))
    out = vmap(_mlp_sample, chunk_size="auto", max_memory=budget, executor=ex)(x)
    np.testing.assert_array_equal(out.numpy(), vmap(_mlp_sample)(x).numpy())
    chosen = ex.chunk_sizes()[0]
    assert chosen >= budget_chunks
    assert max(_chunks.footprint(_graph_of(b)) for b in ex.shipped) <= budget  # every chunk fits
    if chosen < size:
        assert max(_chunk_footprints(size, chosen + 1)) > budget  # and a larger chunk would not


def test_auto_chunk_size_without_an_executor_and_too_small_a_budget():
    x = T(_data(9, 64))
    one = _chunk_footprints(9, 1)[0]
    np.testing.assert_array_equal(vmap(_mlp_sample, chunk_size="auto", max_memory=f"{one}B")(x).numpy(),
                                  vmap(_mlp_sample)(x).numpy())
    with pytest.raises(ValueError, match=rf"max_memory={one - 1} bytes is too small for one sample: a chunk of "
                                         rf"one sample needs {one} bytes"):
        vmap(_mlp_sample, chunk_size="auto", max_memory=one - 1)(x)
    assert vmap(_mlp_sample, chunk_size="auto", max_memory=1)(T(np.zeros((0, 64), np.float32))).shape == (0,)


def test_auto_chunk_size_rule():
    assert _chunks.auto_chunk_size("vmap", 100, 1000, lambda n: 200 + 30 * n) == 26
    assert _chunks.auto_chunk_size("vmap", 10, 10 ** 6, lambda n: 200 + 30 * n) == 10
    # a working set that grows faster than the linear estimate: checked, then shrunk until it fits
    quadratic = lambda n: 100 + 10 * n + n * n // 4  # noqa: E731
    n = _chunks.auto_chunk_size("vmap", 1000, 5000, quadratic)
    largest = max(k for k in range(1, 1001) if quadratic(k) <= 5000 and quadratic(1000 % k or k) <= 5000)
    assert quadratic(n) <= 5000 and quadratic(1000 % n) <= 5000 and n >= largest * 15 // 16


# --- output memory -----------------------------------------------------------------------------------
@pytest.fixture
def small_blocks(monkeypatch):
    """Recycle output blocks from 1 KiB, so that small maps exercise it (a fresh pool per test)."""
    pool_ = _shared.Recycled()
    monkeypatch.setattr(_shared.Recycled, "MIN_BYTES", 1024)
    monkeypatch.setattr(_chunks, "RECYCLED", pool_)
    return pool_


@pytest.mark.parametrize("executor", ["threads", None])
def test_a_dropped_result_gives_its_memory_to_the_next_map_and_a_kept_one_is_never_reused(pool, small_blocks,
                                                                                           executor):
    ex = pool if executor == "threads" else None
    f = vmap(per_sample, chunk_size=8, executor=ex)
    x, y = T(_data(64, 3, seed=1)), T(_data(64, 2, seed=2))
    expected = vmap(per_sample)(x, y).numpy()
    first = f(x, y)
    address = first.numpy().ctypes.data
    np.testing.assert_array_equal(first.numpy(), expected)
    kept_view = first.numpy()[5:9]  # a view of the result keeps its block alive
    del first
    x2, y2 = T(_data(64, 3, seed=3)), T(_data(64, 2, seed=4))
    second = f(x2, y2)
    assert second.numpy().ctypes.data != address and small_blocks.hits == 0
    np.testing.assert_array_equal(kept_view, expected[5:9])  # not overwritten by the second map
    del kept_view
    third = f(x2, y2)  # the first block is free now
    assert third.numpy().ctypes.data == address and small_blocks.hits == 1
    np.testing.assert_array_equal(third.numpy(), second.numpy())
    np.testing.assert_array_equal(second.numpy(), vmap(per_sample)(x2, y2).numpy())


def test_recycled_blocks_fit_the_size_and_the_free_list_is_bounded(monkeypatch):
    pool_ = _shared.Recycled()
    monkeypatch.setattr(_shared.Recycled, "MIN_BYTES", 1024)
    monkeypatch.setattr(_shared.Recycled, "MAX_BLOCK_BYTES", 20000)
    a, none, b = pool_.arrays([((2, 512), np.float32), None, ((3,), np.int64)])
    assert none is None and a.shape == (2, 512) and b.dtype == np.int64 and a.flags.c_contiguous
    assert a.ctypes.data % 64 == 0 and b.ctypes.data % 64 == 0
    a[...] = 1.5
    b[...] = 7
    assert a.sum() == 1536.0 and b.tolist() == [7, 7, 7]  # the arrays do not overlap
    del a, b
    small, = pool_.arrays([((100,), np.float32)])  # 400 bytes: below MIN_BYTES, a plain array
    big, = pool_.arrays([((8192,), np.uint8)])     # more than twice as large: not the free block
    assert pool_.hits == 0 and pool_.misses == 2
    huge, = pool_.arrays([((20001,), np.uint8)])  # over MAX_BLOCK_BYTES: a plain array, never kept
    assert pool_.misses == 2 and huge.base is None
    blocks = [pool_.arrays([((4096,), np.uint8)])[0] for _ in range(5)]
    assert pool_.hits == 1  # the first of them reused the block of `a` and `b`
    del blocks, big, small, huge
    assert len(pool_._free) == _shared.Recycled.MAX_FREE_BLOCKS  # the oldest free blocks were dropped
    pool_.clear()
    assert not pool_._free


# --- chunks started while the call traces (speculation) -------------------------------------------
class _Spy:
    """Counts the maps whose chunks started before their trace, and those run the usual way."""

    def __init__(self):
        self.started = self.run = 0

    def __enter__(self):
        self._start, self._run = _chunks.start_on_threads, _chunks.run_map

        def start(*a, **k):
            runners = self._start(*a, **k)
            self.started += runners is not None
            return runners

        def run(*a, **k):
            self.run += 1
            return self._run(*a, **k)

        _chunks.start_on_threads, _chunks.run_map = start, run
        return self

    def __exit__(self, *exc):
        _chunks.start_on_threads, _chunks.run_map = self._start, self._run


def _loss(ps, x, y):
    w, b = ps
    return ((x @ w + b).tanh() - y).pow(2).sum()


def test_a_repeated_call_starts_its_chunks_before_the_trace_and_gives_the_serial_maps_bits():
    ps = (T(_data(3, 4, seed=2)), T(_data(4, seed=3)))
    x, y = T(_data(10, 3)), T(_data(10, 4, seed=4))
    want = vmap(grad(_loss), in_dims=(None, 0, 0), chunk_size=3)(ps, x, y)
    with ThreadPoolExecutor(2) as ex, _Spy() as spy:
        f = vmap(grad(_loss), in_dims=(None, 0, 0), chunk_size=3, executor=ex)
        got = [f(ps, x, y) for _ in range(3)]
    assert (spy.started, spy.run) == (2, 1)  # the first call has no previous entry to start
    for g in got:
        for a, b in zip(g, want):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("change", ["rebound global", "global updated in place", "other structure"])
def test_chunks_started_for_a_call_whose_trace_differs_are_dropped(change):
    """The trace captures another tensor or leads to another entry: the chunks started on the
    previous call's captures are abandoned, and the map runs on what the trace saw (a capture
    updated in place before the call is copied as it is then: the chunks started are kept)."""
    g = {"W": T(_data(4, 3, seed=1)), "square": False}

    def f(v):
        out = (g["W"] @ v).sin()
        return out * out if g["square"] else out

    x = T(_data(9, 3))
    with ThreadPoolExecutor(2) as ex, _Spy() as spy:
        m = vmap(f, chunk_size=2, executor=ex)
        m(x)
        if change == "rebound global":
            g["W"] = T(_data(4, 3, seed=7))
        elif change == "global updated in place":
            g["W"].numpy()[...] += 1.0
        else:
            g["square"] = True
        got = m(x).numpy()
        # started, then run again the usual way; updated before the call, the bytes copied are the new ones
        assert (spy.started, spy.run) == ((1, 1) if change == "global updated in place" else (1, 2))
    want = vmap(f, chunk_size=2)(x).numpy()
    np.testing.assert_array_equal(got, want)
    ref = np.sin(_data(9, 3).astype(np.float64) @ g["W"].numpy().astype(np.float64).T)
    np.testing.assert_allclose(got, ref * ref if g["square"] else ref, rtol=1e-5, atol=1e-6)


def test_a_function_that_writes_into_its_own_argument_while_traced_gets_the_written_values():
    """The chunks started before the trace read the argument's old bytes; the trace changes them
    (through numpy, which no tape sees): the map must compute on the new ones."""
    x = T(_data(8, 3))

    def f(v):
        x.numpy()[0, 0] += 1.0  # a side effect on the map's own input, each time the function runs
        return v.exp()

    with ThreadPoolExecutor(2) as ex, _Spy() as spy:
        m = vmap(f, chunk_size=2, executor=ex)
        m(x)
        got = m(x).numpy()
        assert spy.started == 1 and spy.run == 2
    np.testing.assert_array_equal(got, vmap(tp.exp)(x).numpy())  # x as it is now, after both calls wrote
    np.testing.assert_allclose(got, np.exp(x.numpy()), rtol=1e-6)


@pytest.mark.parametrize("threads, randomness", [(1, "error"), (2, "different"), (2, "same")])
def test_no_chunk_starts_early_on_one_thread_or_with_random_draws(threads, randomness):
    x = T(_data(6, 3))
    fn = (lambda v: v.sin()) if randomness == "error" else (lambda v: v + tp.randn(3))
    with ThreadPoolExecutor(threads) as ex, _Spy() as spy:
        m = vmap(fn, chunk_size=2, executor=ex, randomness=randomness)
        for _ in range(3):
            m(x)
    assert (spy.started, spy.run) == (0, 3)


def test_a_chunk_started_early_that_fails_fails_the_map_naming_it_and_inputs_are_unchanged():
    x = T(_data(8, 2))
    idx = T(np.array([0, 1, 0, 9, 0, 1, 0, 1], np.int64))
    before = x.numpy().copy()
    with ThreadPoolExecutor(2) as ex, _Spy() as spy:
        m = vmap(lambda r, i: r.mul_(2.0)[i], chunk_size=1, executor=ex)
        for _ in range(2):
            with pytest.raises(ChunkError, match=r"chunk 3 of 8 \(samples 3 to 3\) failed: IndexError"):
                m(x, idx)
        assert spy.started == 1
    np.testing.assert_array_equal(x.numpy(), before)


def test_an_interrupt_while_tracing_drops_the_chunks_started():
    import threading

    x = T(_data(64, 3))
    state = {"interrupt": False}
    running = []
    run_here = _chunks.run_here

    def recording(program, arrays, placement=None):
        running.append(threading.get_ident())
        result = run_here(program, arrays, placement)
        running.pop()
        return result

    def f(v):
        if state["interrupt"]:
            raise KeyboardInterrupt
        return v.cos()

    _chunks.run_here = recording
    try:
        with ThreadPoolExecutor(2) as ex, _Spy() as spy:
            m = vmap(f, chunk_size=1, executor=ex)
            m(x)
            state["interrupt"] = True
            with pytest.raises(KeyboardInterrupt):
                m(x)
            assert spy.started == 1 and not running  # nothing still runs once the map raised
            state["interrupt"] = False
            np.testing.assert_array_equal(m(x).numpy(), vmap(tp.cos)(x).numpy())
    finally:
        _chunks.run_here = run_here


@pytest.mark.parametrize("case", ["0-d", "empty", "non-contiguous", "size-1 batch"])
def test_chunks_started_early_on_edge_inputs_give_the_serial_maps_bits(case):
    """A 0-d and an empty unbatched argument, a non-contiguous batched one (a transposed view):
    copied and compared as they are. A batch of one sample is one chunk: nothing starts early."""
    s = T(np.float32(1.5)) if case == "0-d" else T(np.zeros(0, np.float32) if case == "empty" else _data(3))
    x = T(_data(3, 9)).T if case == "non-contiguous" else T(_data(1 if case == "size-1 batch" else 9, 3))

    def f(v, c):
        return (v.sin() * (c.sum() + 1.0)).exp()

    want = vmap(f, in_dims=(0, None), chunk_size=2)(x, s).numpy()
    np.testing.assert_allclose(want, np.exp(np.sin(x.numpy()) * (s.numpy().sum() + 1.0)), rtol=1e-5)
    with ThreadPoolExecutor(2) as ex, _Spy() as spy:
        m = vmap(f, in_dims=(0, None), chunk_size=2, executor=ex)
        got = [m(x, s).numpy() for _ in range(3)]
    assert spy.started == (0 if case == "size-1 batch" else 2)
    for g in got:
        np.testing.assert_array_equal(g, want)

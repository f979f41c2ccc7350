"""Chunk results of worker processes written into shared memory (issue 17, `_shared`): the values
are those of the unchunked map bit for bit, workers on this machine send nothing back, a worker
that cannot map the outputs sends its results instead, nothing is left in /dev/shm, and failures
still name the chunk without touching the caller's tensors."""
from __future__ import annotations

import concurrent.futures as cf
import glob
import multiprocessing as mp
import os
import pickle

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import _chunks, _shared, grad, vmap
from tensorplay.func._chunks import ChunkError
from tests.func.chunk_data import T, _data

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this system")


def _leftovers() -> set[str]:
    return set(glob.glob(f"/dev/shm/tensorplay-{os.getpid()}-*"))


class Recording(cf.Executor):
    """Delegates to `inner`, keeping what every chunk returned (None entries: placed by the worker)."""

    def __init__(self, inner: cf.Executor):
        self.inner = inner
        self.returned: list = []

    def submit(self, fn, /, *args, **kwargs):
        future = self.inner.submit(fn, *args, **kwargs)
        future.add_done_callback(lambda f: self.returned.append(f.exception() or f.result()))
        return future


class Pickling(cf.Executor):
    """Runs each call here after `hops` pickle round trips, as a worker process on this machine gets
    it (through a scheduler that unpickles and pickles the task again, with hops=2)."""

    def __init__(self, hops: int = 1):
        self.hops = hops

    def submit(self, fn, /, *args, **kwargs):
        for _ in range(self.hops):
            fn, args, kwargs = pickle.loads(pickle.dumps((fn, args, kwargs)))
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as e:
            future.set_exception(e)
        return future


@pytest.fixture(scope="module")
def processes():
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
        yield ex


def loss(w, x):
    return ((w @ x).tanh() ** 2).sum()


def test_worker_processes_write_their_results_into_shared_memory(processes):
    w, x = T(_data(5, 3, seed=1)), T(_data(13, 3))
    # bit for bit against the serial chunks (the interpreter's numpy matmul rounds per batch shape)
    expected = vmap(grad(loss), in_dims=(None, 0), chunk_size=4)(w, x).numpy()
    wn, xn = w.numpy().astype(np.float64), x.numpy().astype(np.float64)
    t = np.tanh(xn @ wn.T)  # d/dw sum(tanh(w x)^2) = 2 t (1 - t^2) x^T, per sample
    np.testing.assert_allclose(expected, (2 * t * (1 - t * t))[:, :, None] * xn[:, None, :], rtol=1e-5, atol=1e-6)
    rec = Recording(processes)
    before = _leftovers()
    got = vmap(grad(loss), in_dims=(None, 0), chunk_size=4, executor=rec)(w, x)
    np.testing.assert_array_equal(got.numpy(), expected)
    assert len(rec.returned) == 4 and all(r == [None] for r in rec.returned)  # nothing came back but None
    assert _leftovers() == before  # the file is gone, the result is still readable
    got.add_(1.0)  # an ordinary writable tensor
    np.testing.assert_array_equal(got.numpy(), expected + 1.0)


def _mapped_in_worker(caller: int) -> list[str]:
    with open("/proc/self/maps") as f:
        return [line for line in f if f"tensorplay-{caller}-" in line]


def test_worker_processes_unmap_the_outputs_after_each_chunk(processes):
    x = T(_data(16, 3))
    vmap(lambda r: r.cos(), chunk_size=4, executor=processes)(x)
    for _ in range(4):  # ask every worker (there are two; some may be asked twice)
        assert processes.submit(_mapped_in_worker, os.getpid()).result(timeout=60) == []


@pytest.mark.parametrize("hops", [1, 2])
def test_unbatched_outputs_are_sent_back_and_batched_ones_placed(hops):
    x = T(_data(6, 3))
    rec = Recording(Pickling(hops))
    def f(r):
        return r.exp(), W2.sum(), r.sum()

    out = vmap(f, out_dims=(1, None, 0), chunk_size=4, executor=rec)(x)
    expected = vmap(f, out_dims=(1, None, 0))(x)
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_allclose(out[0].numpy(), np.exp(x.numpy()).T, rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), W2.numpy().sum(), rtol=1e-6)
    assert [(r[0], type(r[1]), r[2]) for r in rec.returned] == [(None, np.ndarray, None)] * 2


W2 = T(_data(2, 2, seed=3))


def test_a_worker_that_cannot_map_the_outputs_sends_its_results_back(monkeypatch):
    monkeypatch.setattr(_shared.SharedRef, "attach", lambda self: None)  # as on another machine
    w, x = T(_data(5, 3, seed=1)), T(_data(9, 3))
    rec = Recording(Pickling())
    got = vmap(grad(loss), in_dims=(None, 0), chunk_size=4, executor=rec)(w, x).numpy()
    np.testing.assert_array_equal(got, vmap(grad(loss), in_dims=(None, 0), chunk_size=4)(w, x).numpy())
    np.testing.assert_allclose(got, vmap(grad(loss), in_dims=(None, 0))(w, x).numpy(), rtol=1e-5, atol=1e-6)
    assert [r[0].shape for r in rec.returned] == [(4, 5, 3), (4, 5, 3), (1, 5, 3)]


def test_without_shared_memory_the_outputs_are_plain_arrays(monkeypatch):
    monkeypatch.setattr(_shared, "_DIR", "/nonexistent/shm")
    x = T(_data(9, 3))
    rec = Recording(Pickling())
    got = vmap(lambda r: r.sin() * 2, chunk_size=4, executor=rec)(x).numpy()
    np.testing.assert_array_equal(got, vmap(lambda r: r.sin() * 2)(x).numpy())
    assert all(type(r[0]) is np.ndarray for r in rec.returned)


def test_a_file_of_the_same_name_without_the_nonce_is_not_attached():
    shared = _shared.SharedOutputs.create([((3,), np.dtype(np.float64))])
    try:
        ref = shared.ref
        other = _shared.SharedRef(ref.path, b"x" * len(ref.nonce), ref.size, ref.layout)
        assert other.attach() is None
        assert _shared.SharedRef(ref.path, ref.nonce, ref.size + 1, ref.layout).attach() is None
        attached = ref.attach()
        attached.arrays[0][:] = [1.0, 2.0, 3.0]
        attached.close()
        np.testing.assert_array_equal(shared.arrays[0], [1.0, 2.0, 3.0])
    finally:
        shared.close()
    assert shared.ref.attach() is None  # unlinked: nobody attaches any more
    assert shared.arrays[0].tolist() == [1.0, 2.0, 3.0]


def test_a_failing_chunk_in_a_worker_process_names_the_chunk_and_leaves_nothing_behind(processes):
    x = T(_data(8, 3))
    idx = T(np.array([0, 1, 2, 0, 1, 7, 0, 1], np.int64))  # sample 5 reads out of range
    before, files = x.numpy().copy(), _leftovers()
    with pytest.raises(ChunkError, match=r"chunk 2 of 4 \(samples 4 to 5\) failed: IndexError") as info:
        vmap(lambda r, i: r.add_(1)[i], chunk_size=2, executor=processes)(x, idx)
    assert isinstance(info.value.__cause__, IndexError)
    np.testing.assert_array_equal(x.numpy(), before)
    assert _leftovers() == files


def test_placements_pickle_small():
    """A chunk's placement is a path, a nonce and a layout, however large the outputs."""
    shared = _shared.SharedOutputs.create([((4096, 256), np.dtype(np.float32))])
    try:
        placement = _chunks.Placement(shared.arrays, [0], 0, 2048, shared.ref)
        assert len(pickle.dumps(placement)) < 1000
    finally:
        shared.close()


@pytest.mark.parametrize("module", [_chunks, _shared])
def test_docstring_examples_run(module):
    import doctest

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --- large outputs: the file is reused across maps -------------------------------------------------
BIG = 131072  # floats per sample: 8 samples are 4 MiB of output, a pooled file


def test_a_dropped_result_gives_its_file_to_the_next_map_and_a_kept_result_is_never_overwritten():
    _shared.SHARED_POOL.clear()
    x = T(_data(8, BIG))
    f = vmap(lambda r: r * 2, chunk_size=3, executor=Pickling())
    first = f(x)
    np.testing.assert_array_equal(first.numpy(), x.numpy() * 2)
    files = _leftovers()
    assert len(files) == 1  # pooled: it stays while its result lives (and is reused after)
    kept = first.numpy().copy()
    second = f(x + 1)  # `first` is alive: a new file
    assert len(_leftovers()) == 2
    np.testing.assert_array_equal(first.numpy(), kept)  # never overwritten
    np.testing.assert_array_equal(second.numpy(), (x.numpy() + 1) * 2)
    del first
    hits = _shared.SHARED_POOL.hits
    third = f(x - 1)  # the file of the dropped `first`, with a fresh nonce
    assert _shared.SHARED_POOL.hits == hits + 1 and files <= _leftovers() and len(_leftovers()) == 2  # no third file
    np.testing.assert_array_equal(third.numpy(), (x.numpy() - 1) * 2)
    np.testing.assert_array_equal(second.numpy(), (x.numpy() + 1) * 2)
    del second, third
    _shared.SHARED_POOL.clear()
    assert _leftovers() == set()


def test_a_reused_file_is_not_attached_with_an_earlier_maps_nonce():
    pool = _shared.SharedPool()
    types = [((8, BIG), np.dtype(np.float32))]
    shared = pool.take(types)
    old = shared.ref
    pool.finish(shared, ok=True)
    del shared
    again = pool.take(types)
    try:
        assert again.ref.path == old.path and again.ref.nonce != old.nonce
        assert old.attach() is None  # a chunk of the earlier map would not write into this one
        attached = again.ref.attach()
        attached.arrays[0][0, :3] = 5.0
        attached.close()
        assert again.arrays[0][0, :3].tolist() == [5.0] * 3
    finally:
        pool.finish(again, ok=False)
        pool.clear()
    assert not os.path.exists(old.path)


def test_a_failed_maps_file_is_unlinked_at_once_and_never_reused():
    _shared.SHARED_POOL.clear()
    x = T(_data(8, BIG))
    idx = T(np.array([0, 1, 2, 0, 1, BIG + 9, 0, 1], np.int64))
    with pytest.raises(ChunkError, match=r"chunk 1 of 3 \(samples 3 to 5\) failed: IndexError"):
        vmap(lambda r, i: r[i] * r, chunk_size=3, executor=Pickling())(x, idx)
    assert _leftovers() == set()
    misses = _shared.SHARED_POOL.misses
    ok = vmap(lambda r: r * 3, chunk_size=3, executor=Pickling())(x)
    np.testing.assert_array_equal(ok.numpy(), x.numpy() * 3)
    assert _shared.SHARED_POOL.misses == misses + 1
    del ok
    _shared.SHARED_POOL.clear()


def _kept_in_worker(caller: int) -> int:
    with open("/proc/self/maps") as f:
        return sum(f"tensorplay-{caller}-" in line for line in f)


def test_worker_processes_keep_the_mapping_of_a_pooled_file_and_drop_it_when_the_file_goes(processes):
    _shared.SHARED_POOL.clear()
    x = T(_data(8, BIG))
    f = vmap(lambda r: r.cos(), chunk_size=2, executor=processes)
    for _ in range(3):
        out = f(x)
        np.testing.assert_array_equal(out.numpy(), vmap(lambda r: r.cos())(x).numpy())
        del out
    assert len(_leftovers()) == 1  # one file served every map
    assert max(processes.submit(_kept_in_worker, os.getpid()).result(timeout=60) for _ in range(4)) >= 1
    _shared.SHARED_POOL.clear()
    assert _leftovers() == set()


def test_a_kept_mapping_goes_at_the_next_attach_once_its_file_is_removed():
    _shared.SHARED_POOL.clear()
    x = T(_data(8, BIG))
    out = vmap(lambda r: r * 2, chunk_size=4, executor=Pickling())(x)  # this process attaches, as a worker does
    del out
    assert any(key[0].startswith(f"/dev/shm/tensorplay-{os.getpid()}-") for key in _shared._kept)
    _shared.SHARED_POOL.clear()
    vmap(lambda r: r * 2, chunk_size=4, executor=Pickling())(T(_data(8, 3)))  # a small map's attach sweeps
    assert not any(key[0].startswith(f"/dev/shm/tensorplay-{os.getpid()}-") for key in _shared._kept)

"""vmap's chunks on a real dask.distributed cluster (issue 17): two worker processes on this
machine rebuild the executables from IR text; the results are those of the unchunked map.

Skipped when dask.distributed is absent (``pip install -e '.[test,distributed]'`` installs it).
The cluster starts once for the module (a few seconds on 2 cores: worker processes import
tensorplay); every call is guarded by a timeout so a sick cluster fails the test, never hangs it.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import threading

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (extra 'distributed')")

import tensorplay as tp  # noqa: E402
from tensorplay.func import _chunks, grad, jacrev, vmap  # noqa: E402
from tensorplay.func._chunks import ChunkError  # noqa: E402
from tests.func.chunk_data import T, _data  # noqa: E402

TIMEOUT_S = 120


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
    client = distributed.Client(cluster, timeout=f"{TIMEOUT_S}s")
    try:
        client.wait_for_workers(2, timeout=TIMEOUT_S)
        yield client
    finally:
        client.close(timeout=30)
        cluster.close(timeout=30)


def within_timeout(fn, *args):
    """`fn(*args)` on a helper thread, failing the test after TIMEOUT_S seconds instead of hanging."""
    result: cf.Future = cf.Future()

    def run():
        try:
            result.set_result(fn(*args))
        except BaseException as e:
            result.set_exception(e)

    threading.Thread(target=run, daemon=True).start()
    return result.result(timeout=TIMEOUT_S)


def test_round_trip_on_two_worker_processes(client):
    ex = client.get_executor()
    w = T(_data(4, 3, seed=1))
    x = T(_data(9, 3))
    loss = lambda w, a: ((w @ a).tanh() ** 2).sum()  # noqa: E731  (its closure is never shipped)
    expected = vmap(grad(loss), in_dims=(None, 0))(w, x).numpy()
    got = within_timeout(lambda: vmap(grad(loss), in_dims=(None, 0), chunk_size=2, executor=ex)(w, x).numpy())
    np.testing.assert_array_equal(got, expected)

    def noisy(a):
        return a.sin() + tp.randn(3)

    tp.manual_seed(5)
    full = vmap(noisy, randomness="different")(x).numpy()
    tp.manual_seed(5)
    np.testing.assert_array_equal(
        within_timeout(lambda: vmap(noisy, randomness="different", chunk_size=4, executor=ex)(x).numpy()), full)

    f = lambda v: (w @ v).sin()  # noqa: E731
    np.testing.assert_array_equal(within_timeout(lambda: jacrev(f, chunk_size=2, executor=ex)(x[0]).numpy()),
                                  jacrev(f)(x[0]).numpy())
    # every worker keeps what it parsed, keyed by the text's digest
    cached = client.run(lambda: len(_chunks._WORKER_PROGRAMS))
    assert len(cached) == 2 and sum(cached.values()) >= 2


def test_a_failing_chunk_on_a_worker_fails_the_map_naming_the_chunk(client):
    ex = client.get_executor()
    x = T(_data(6, 3))
    before = x.numpy().copy()
    idx = T(np.array([0, 1, 2, 9, 1, 0], np.int64))  # sample 3 reads out of range
    with pytest.raises(ChunkError, match=r"chunk 1 of 2 \(samples 3 to 5\) failed: IndexError") as info:
        within_timeout(lambda: vmap(lambda r, i: r.mul_(2)[i], chunk_size=3, executor=ex)(x, idx))
    assert isinstance(info.value.__cause__, IndexError)
    np.testing.assert_array_equal(x.numpy(), before)


def test_one_task_per_worker_programs_scattered_once_and_results_placed_in_shared_memory(client, monkeypatch):
    import glob
    import os

    maps = []
    real_map = client.map

    def recording_map(fn, *iterables, **kwargs):  # what the map hands to dask, and what dask returns
        futures = real_map(fn, *iterables, **kwargs)
        maps.append((fn, [list(it) for it in iterables], kwargs, futures))
        return futures

    monkeypatch.setattr(client, "map", recording_map)
    ex = client.get_executor()  # pure is not given: the map makes its tasks impure itself
    w = T(_data(200, 100, seed=1))  # 80 kB: known by its content
    b = T(_data(200, seed=2))       # 800 bytes
    x = T(_data(10, 100))
    loss = lambda w, a: ((w @ a + b).tanh() ** 2).sum()  # noqa: E731
    # the serial chunked map is the reference (its 200 x 100 products go to BLAS, which rounds per chunk size)
    expected = vmap(grad(loss), in_dims=(None, 0), chunk_size=3)(w, x).numpy()
    got = within_timeout(lambda: vmap(grad(loss), in_dims=(None, 0), chunk_size=3, executor=ex)(w, x).numpy())
    np.testing.assert_array_equal(got, expected)
    assert len(maps) == 1  # every chunk in one submission
    fn, (programs, commons, chunks, placements), kwargs, futures = maps[0]
    # 4 chunks (3, 3, 3, 1 samples) in one task per worker thread: chunks 0-1 and 2-3
    assert fn is _chunks.run_chunks and kwargs["pure"] is False and len(futures) == 2
    assert [len(p) for p in programs] == [2, 2] and [len(c) for c in chunks] == [2, 2]
    flat = [p for ps in programs for p in ps]
    assert all(isinstance(p, distributed.Future) for p in flat) and len({p.key for p in flat}) == 2
    programs_first = flat
    # the unbatched inputs travel once per task (seen for the first time: as arrays), never with each chunk
    common = commons[0]
    assert commons[1] is common or commons[1] == common
    assert sorted(a.shape for a in common if a is not None and a.ndim) == [(200,), (200, 100)]  # and 0-d constants
    assert all(type(a) is np.ndarray for a in common if a is not None)
    assert all(sum(a is not None for a in arrays) == 1 for task in chunks for arrays in task)  # x's slice only
    if os.path.isdir("/dev/shm"):  # the workers run on this machine: they write into the caller's memory
        assert all(f.result() == [[None], [None]] for f in futures)
        assert not glob.glob(f"/dev/shm/tensorplay-{os.getpid()}-*")
    # w seen again: scattered once and kept on the workers: the tasks carry its future
    got = within_timeout(lambda: vmap(grad(loss), in_dims=(None, 0), chunk_size=5, executor=ex)(w, x).numpy())
    np.testing.assert_array_equal(got, vmap(grad(loss), in_dims=(None, 0), chunk_size=5)(w, x).numpy())
    _, (programs, commons, _, _), _, _ = maps[1]
    assert all(isinstance(p, distributed.Future) for ps in programs for p in ps)  # programs: scattered once per client
    kept = [a for a in commons[0] if isinstance(a, distributed.Future)]
    assert len(kept) == 1 and [a.shape for a in commons[0] if type(a) is np.ndarray and a.ndim] == [(200,)]
    # a later map of the same programs with new weights scatters nothing: the workers keep the
    # programs, and weights seen for the first time travel with the tasks
    scattered = []
    real_scatter = client.scatter
    monkeypatch.setattr(client, "scatter", lambda data, **kw: scattered.append(data) or real_scatter(data, **kw))
    w2 = T(_data(200, 100, seed=3))
    got = within_timeout(lambda: vmap(grad(loss), in_dims=(None, 0), chunk_size=3, executor=ex)(w2, x).numpy())
    np.testing.assert_array_equal(got, vmap(grad(loss), in_dims=(None, 0), chunk_size=3)(w2, x).numpy())
    assert scattered == []
    _, (programs2, commons2, _, _), _, _ = maps[2]
    assert [p.key for ps in programs2 for p in ps] == [p.key for p in programs_first]
    assert any(type(a) is np.ndarray and a.shape == (200, 100) and np.array_equal(a, w2.numpy()) for a in commons2[0])


def test_a_chunk_failing_in_the_middle_of_a_task_names_that_chunk_and_no_later_chunk_runs(client):
    ex = client.get_executor()
    x = T(_data(8, 3))
    idx = T(np.array([0, 1, 2, 0, 1, 0, 9, 1], np.int64))  # sample 6: chunk 3 (the second of the second task)
    before = x.numpy().copy()
    with pytest.raises(ChunkError, match=r"chunk 3 of 4 \(samples 6 to 7\) failed: IndexError") as info:
        within_timeout(lambda: vmap(lambda r, i: r.mul_(2)[i], chunk_size=2, executor=ex)(x, idx))
    assert isinstance(info.value.__cause__, IndexError)
    np.testing.assert_array_equal(x.numpy(), before)
    idx = T(np.array([0, 9, 2, 0, 1, 0, 9, 1], np.int64))  # chunks 0 and 3 fail: the first in order is named
    with pytest.raises(ChunkError, match=r"chunk 0 of 4 \(samples 0 to 1\) failed: IndexError"):
        within_timeout(lambda: vmap(lambda r, i: r.mul_(2)[i], chunk_size=2, executor=ex)(x, idx))
    np.testing.assert_array_equal(x.numpy(), before)


def test_a_shut_down_dask_executor_fails_naming_the_first_chunk(client):
    ex = client.get_executor()
    ex.shutdown(wait=False)
    with pytest.raises(ChunkError, match=r"chunk 0 of 2 \(samples 0 to 1\) failed: RuntimeError: cannot schedule"):
        within_timeout(lambda: vmap(tp.sin, chunk_size=2, executor=ex)(T(_data(3))))


def test_weights_seen_again_are_kept_on_the_workers_and_changed_weights_are_never_stale(client, monkeypatch):
    maps, scattered = [], []
    real_map, real_scatter = client.map, client.scatter
    monkeypatch.setattr(client, "map", lambda fn, *its, **kw: maps.append([list(i) for i in its]) or real_map(fn, *its, **kw))
    monkeypatch.setattr(client, "scatter", lambda data, **kw: scattered.append(data) or real_scatter(data, **kw))
    ex = client.get_executor()
    w = T(_data(100, 200, seed=7))  # 80 kB, two chunks on two workers: nothing to scatter for one map
    x = T(_data(4, 200))
    f = lambda a: (w @ a).tanh().sum()  # noqa: E731
    expected = vmap(f, chunk_size=2)(x).numpy()

    def shipped_w():  # how the last map's chunks carried w: the array itself, or a future
        return [next(v for v in arrays if getattr(v, "shape", None) == (100, 200) or isinstance(v, distributed.Future))
                for arrays in maps[-1][1]]

    for call in range(3):
        np.testing.assert_array_equal(within_timeout(lambda: vmap(f, chunk_size=2, executor=ex)(x).numpy()), expected)
        carried = shipped_w()
        if call == 0:  # seen for the first time: it travels with the chunks
            assert all(type(v) is np.ndarray for v in carried)
        else:  # seen again: scattered once (call 1), then the workers' copy is used (call 2)
            assert all(isinstance(v, distributed.Future) for v in carried)
    assert sum(any(type(d) is np.ndarray and d.shape == (100, 200) for d in batch) for batch in scattered) == 1
    w.add_(1.0)  # the same tensor, other values: never the workers' stale copy
    changed = vmap(f, chunk_size=2)(x).numpy()
    assert not np.array_equal(changed, expected)
    np.testing.assert_array_equal(within_timeout(lambda: vmap(f, chunk_size=2, executor=ex)(x).numpy()), changed)
    assert all(type(v) is np.ndarray for v in shipped_w())

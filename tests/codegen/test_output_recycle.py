"""Recycled output buffers (`codegen.recycle`): a large output the caller dropped is reused by a later
call; one anybody still reaches (the result, a view, `Tensor.numpy()`, a memoryview, a DLPack or
ctypes export, a weak reference) never is, on every call path (the generated fast call, a bound
call, the general and threaded call, `out=`), from several threads at once. Values are checked
against the interpreter or numpy by hand."""
from __future__ import annotations

import ctypes
import gc
import threading
import weakref

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen, ir
from tensorplay.codegen import executable as ce, recycle
from tensorplay.ir import TensorType, dtypes as dt, interpret

N = recycle.MIN_BYTES // 4  # float32 elements of the smallest recycled output


@pytest.fixture(autouse=True)
def _empty_pool():
    recycle.clear()
    yield
    recycle.clear()


def _graph(n=N, dtype=dt.float32):
    """y = x * x + x over n elements."""
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((n,), dtype))
    return b.build([b.add(b.mul(x, x), x)])


def _compile(g, threads=1):
    """The executable of `g` built for `threads` threads (bypassing the cache, which is keyed by the
    graph alone): 1 takes the generated fast call, 2 the general call split over the pool."""
    saved, ce._THREADS = ce._THREADS, threads
    try:
        exe = ce.Executable(g)
    finally:
        ce._THREADS = saved
    assert (exe._fast is None) == (threads > 1)
    return exe


PATHS = pytest.mark.parametrize("threads", [1, 2], ids=["fast call", "threaded call"])


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _x(seed, n=N, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def _expect(x):
    return x * x + x  # (exact up to a fused multiply-add: compared with a tolerance)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@PATHS
def test_a_dropped_output_is_reused_with_correct_values(threads):
    g = _graph()
    exe = _compile(g, threads)
    assert exe._recycled == [True]
    r = exe(_x(0))[0]
    addr = _addr(r)
    del r
    for seed in (1, 2, 3):
        x = _x(seed)
        r = exe(x)[0]
        assert _addr(r) == addr  # the same buffer, rewritten
        np.testing.assert_array_equal(r, interpret(g, [x])[0])
        del r


@PATHS
def test_outputs_below_the_threshold_are_not_tracked(threads):
    # the guard: one element less than MIN_BYTES takes np.empty, and nothing is kept
    exe = _compile(_graph(N - 1), threads)
    assert exe._recycled == [False]
    x = _x(0, N - 1)
    for _ in range(3):
        _close(exe(x)[0], _expect(x))
    assert recycle.tracked_bytes() == 0


def _holders():
    """(name, make(result) -> holder, read(holder) -> the array values it sees)."""
    def dlpack(r):
        return np.from_dlpack(r)

    def ctypes_export(r):
        return np.ctypeslib.as_ctypes(r)

    return [
        ("result", lambda r: r, lambda h: h),
        ("view", lambda r: r[1::3], lambda h: h),
        ("reshaped view", lambda r: r.reshape(8, -1), lambda h: h.reshape(-1)),
        ("memoryview", memoryview, np.asarray),
        ("frombuffer", lambda r: np.frombuffer(r, np.float32), lambda h: h),
        ("as_strided", lambda r: np.lib.stride_tricks.as_strided(r, (N // 2,), (8,)), lambda h: h),
        ("dlpack", dlpack, lambda h: h),
        ("ctypes", ctypes_export, lambda h: np.ctypeslib.as_array(h)),
        ("ctypes attribute", lambda r: (r.ctypes, r.ctypes.data), lambda h: np.ctypeslib.as_array(
            (ctypes.c_float * N).from_address(h[1]))),
        ("weakref", weakref.ref, lambda h: h()),  # the array lives on in the pool: reachable
    ]


@PATHS
@pytest.mark.parametrize("name,make,read", _holders(), ids=[h[0] for h in _holders()])
def test_an_output_still_reachable_is_never_reused(name, make, read, threads):
    exe = _compile(_graph(), threads)
    r = exe(_x(0))[0]
    holder = make(r)
    seen = read(holder).copy()
    addr = _addr(r)
    del r
    gc.collect()
    kept = []
    for seed in (1, 2, 3, 4):  # drop some results, keep others
        x = _x(seed)
        out = exe(x)[0]
        if read(holder) is not None:  # (a weak reference dies once the pool stops tracking the array)
            assert _addr(out) != addr
        _close(out, _expect(x))
        if seed % 2:
            kept.append((out, _expect(x)))
        del out
    if read(holder) is not None:
        np.testing.assert_array_equal(read(holder), seen)  # the held values stayed put
    for out, want in kept:
        np.testing.assert_array_equal(out, want)


def test_tensor_numpy_and_held_tensors_stay_put():
    f = tp.compile(lambda t: t * t + t)
    x0, x1 = _x(0), _x(1)
    t0 = f(tp.from_numpy(x0))
    a0 = t0.numpy()
    del t0  # the array from .numpy() still holds the buffer
    t1 = f(tp.from_numpy(x1))
    assert _addr(t1.numpy()) != _addr(a0)
    for seed in range(2, 6):
        f(tp.from_numpy(_x(seed)))  # results dropped at once: they recycle among themselves
    _close(a0, _expect(x0))
    _close(t1.numpy(), _expect(x1))


@PATHS
def test_in_place_changes_of_a_dropped_array_block_its_reuse(threads):
    exe = _compile(_graph(), threads)
    for change in ("shape", "dtype", "readonly"):
        recycle.clear()
        r = exe(_x(0))[0]
        if change == "shape":
            r.shape = (2, N // 2)
        elif change == "dtype":
            r.dtype = np.int32
        else:
            r.flags.writeable = False
        addr = _addr(r)
        del r
        x = _x(1)
        out = exe(x)[0]
        assert _addr(out) != addr
        assert out.shape == (N,) and out.dtype == np.float32 and out.flags.writeable
        _close(out, _expect(x))


@PATHS
def test_an_output_fed_back_as_the_input(threads):
    g = _graph()
    exe = _compile(g, threads)
    y = _x(0) * np.float32(1e-3)
    want = y.copy()
    addrs = set()
    for _ in range(8):  # y = f(y): the input is the caller's, so the previous buffer is reused
        y = exe(y)[0]
        want = _expect(want)
        addrs.add(_addr(y))
        _close(y, want)
    assert len(addrs) <= 3


@PATHS
def test_out_arrays_are_never_tracked(threads):
    exe = _compile(_graph(), threads)
    o = np.full(N, np.nan, np.float32)
    x = _x(0)
    got = exe(x, out=[o])[0]
    assert got is o and recycle.tracked_bytes() == 0
    for seed in (1, 2):
        exe(_x(seed))
    _close(o, _expect(x))
    # the call writing into out= does not hand out a tracked buffer it was given back either
    r = exe(_x(3))[0]
    o2 = r  # the caller passes a recycled result back as out=
    exe(x, out=[o2])
    del r
    _close(o2, _expect(x))
    y = exe(_x(4))[0]
    assert _addr(y) != _addr(o2)
    _close(o2, _expect(x))


def test_several_outputs_repeats_and_inputs():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((N,), dt.float32))
    e = b.neg(x)
    s = b.mul(x, x)
    g = b.build([e, s, e, x, s])
    exe = _compile(g, 1)
    held = []
    for seed in range(4):
        xv = _x(seed)
        outs = exe(xv)
        assert len({_addr(o) for o in outs} | {_addr(xv)}) == 6  # all distinct buffers
        for o, w in zip(outs, interpret(g, [xv])):
            np.testing.assert_array_equal(o, w)
        if seed % 2 == 0:
            held.append((outs, [o.copy() for o in outs]))
    for outs, copies in held:
        for o, c in zip(outs, copies):
            np.testing.assert_array_equal(o, c)


def test_a_bound_call_recycles_and_keeps_held_results():
    b = ir.GraphBuilder()
    w = b.add_input(TensorType((N,), dt.float32))
    x = b.add_input(TensorType((N,), dt.float32))
    g = b.build([b.mul(w, x)])
    exe = _compile(g, 1)
    wv = _x(9)
    call = exe.bound_call((wv,))
    r = call(_x(0))[0]
    addr = _addr(r)
    del r
    x1 = _x(1)
    r1 = call(x1)[0]
    assert _addr(r1) == addr
    x2 = _x(2)
    r2 = call(x2)[0]
    assert _addr(r2) != addr
    np.testing.assert_array_equal(r1, interpret(g, [wv, x1])[0])
    np.testing.assert_array_equal(r2, interpret(g, [wv, x2])[0])


@PATHS
def test_concurrent_calls_never_share_a_buffer(threads):
    exe = _compile(_graph(), threads)
    xs = [_x(s) for s in range(4)]
    wants = [_expect(x) for x in xs]
    errors = []
    live = {}  # id -> addresses of the results a thread holds now
    lock = threading.Lock()

    def work(t):
        try:
            held = []
            for k in range(30):
                i = (t + k) % 4
                out = exe(xs[i])[0]
                with lock:  # a thread drops a result only after taking it out of `live`
                    if any(_addr(out) in v for v in live.values()):
                        errors.append("a buffer in use was handed out")
                    live[t] = live.get(t, set()) | {_addr(out)}
                held.append((out, i))
                del out
                if len(held) > 2:
                    old = held.pop(0)
                    with lock:
                        live[t] = {_addr(o) for o, _ in held}
                    del old
                for o, j in held:
                    if not np.array_equal(o, wants[j]):
                        errors.append("a held result changed")
            with lock:  # (before this thread's results are dropped)
                live[t] = set()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def test_reset_frees_the_pool():
    exe = codegen.compile_graph(_graph())
    r = exe(_x(0))[0]
    dead = weakref.finalize(r, lambda: None)  # a finalizer, not a weak reference: it does not block reuse
    del r
    assert dead.alive and recycle.tracked_bytes() == N * 4  # the pool keeps it
    tp.compiler.reset()
    assert not dead.alive and recycle.tracked_bytes() == 0


def test_the_pool_is_bounded(monkeypatch):
    monkeypatch.setattr(recycle, "MAX_BYTES", 3 * recycle.MIN_BYTES)
    exes = [codegen.compile_graph(_graph(N + k)) for k in range(5)]
    for k, exe in enumerate(exes):
        exe(_x(k, N + k))
        assert recycle.tracked_bytes() <= recycle.MAX_BYTES
    shapes = [a.shape for a in recycle._items]
    assert shapes == [(N + 3,), (N + 4,)]  # oldest dropped first (each holds a bit more than 1 MiB)
    held = [exes[0](_x(0, N))[0] for _ in range(6)]  # results kept: at most PER_SHAPE tracked
    assert sum(a.shape == (N,) for a in recycle._items) == recycle.PER_SHAPE
    assert len({_addr(h) for h in held}) == 6


@pytest.mark.parametrize("lib", ["torch", "jax"])
def test_zero_copy_exports_to_torch_and_jax_stay_put(lib):
    mod = pytest.importorskip(lib)
    exe = _compile(_graph(), 1)
    x0 = _x(0)
    r = exe(x0)[0]
    if lib == "torch":
        held = mod.from_numpy(r)  # shares r's memory
        read = lambda: held.numpy()  # noqa: E731
    else:
        import jax.numpy as jnp

        held = jnp.asarray(r)  # may alias r's memory on the CPU
        read = lambda: np.asarray(held)  # noqa: E731
    seen = read().copy()
    addr = _addr(r)
    shared = held.data_ptr() == addr if lib == "torch" else held.unsafe_buffer_pointer() == addr
    del r
    for seed in (1, 2, 3):
        x = _x(seed)
        out = exe(x)[0]
        if shared:  # (a copying export lets the pool reuse the dropped array: no address to check)
            assert _addr(out) != addr
        _close(out, _expect(x))
        del out
    np.testing.assert_array_equal(read(), seen)

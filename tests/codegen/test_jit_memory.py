"""Memory is given back: each executable owns one LLJIT, disposed when the last reference goes
(or when the in-memory cache evicts it and nothing else holds it), and compiling keeps next to
nothing (llvmlite's pass managers are deleted, each module has its own LLVMContext).

Bounds are in bytes of heap still in use (glibc's mallinfo2, exact and free of the allocator's
page caching) or of RSS, derived from the issue's target (+50 MB over 5,000 graphs, i.e. 10 KB per
graph) with a fixed allowance for allocator noise. The end-to-end soak through `tp.compile` is the
gated test of tools/fuzz (tests/fuzz/test_fuzz.py); `tools/bench/bench_soak.py` measures it."""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import weakref

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

TARGET_BYTES_PER_GRAPH = 50e6 / 5000
NOISE_BYTES = 8e6


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except OSError:
        pytest.skip("needs /proc/self/statm")


def distinct_graph(k: int) -> ir.Graph:
    """Graph number k: a small fused kernel and a reduction, unlike every other k."""
    b = ir.GraphBuilder(f"soak{k % 7}")
    x = b.add_input(TensorType((16 + k % 5,), dt.float32))
    y = b.add(b.mul(b.tanh(x), b.const(1.0 + k * 1e-3, x.shape)), x)
    return b.build([y, b.emit("reduce_sum", y, axes=(0,))])


def test_dropping_an_executable_disposes_its_jit():
    exe = codegen.Executable(distinct_graph(0))
    jm = exe._jit
    assert jm._jit is not None
    ref = weakref.ref(exe)
    del exe
    gc.collect()
    assert ref() is None and jm._jit is None and jm._tracker is None


def test_eviction_frees_machine_code(monkeypatch):
    monkeypatch.setattr(codegen.cache, "MAX_ENTRIES", 4)
    jms = []
    for k in range(10):
        jms.append(codegen.compile_graph(distinct_graph(1000 + k))._jit)
    gc.collect()
    assert sum(j._jit is None for j in jms) >= 6  # evicted and unreferenced: freed
    codegen.clear_cache()


def test_rss_stays_bounded_over_many_loaded_modules():
    """Loading machine code and dropping it, 1,500 times: the LLJIT per module gives it all back
    (a shared LLJIT kept ~9 KB per library, MCJIT ~150 KB per graph)."""
    from tensorplay.codegen import jit

    exe = codegen.Executable(distinct_graph(7))
    obj, entry = exe._jit.objects, next(iter(exe._jit.addresses))
    x = np.linspace(-1, 1, exe.graph.inputs[0].shape[0]).astype(np.float32)
    want = exe(x)

    def cycle(n):
        for _ in range(n):
            jm = jit.link_object(obj, [entry])
            assert jm.addresses[entry]
            jm.release()

    cycle(200)
    gc.collect()
    before = _rss()
    n = 1500
    cycle(n)
    gc.collect()
    grown = _rss() - before
    assert grown <= TARGET_BYTES_PER_GRAPH * n / 4 + NOISE_BYTES / 4, f"RSS grew {grown / 1e6:.1f} MB over {n} modules"
    for a, b in zip(exe(x), want):
        np.testing.assert_array_equal(a, b)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def _heap_in_use():
    """Bytes malloc has handed out and not had back (glibc), or None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    m = mallinfo2()
    return m.uordblks + m.hblkhd


def _heap_growth_per_call(fn, n: int, warm: int = 20) -> float:
    if _heap_in_use() is None:
        pytest.skip("needs glibc's mallinfo2")
    for i in range(warm):
        fn(i)
    gc.collect()
    before = _heap_in_use()
    for i in range(warm, warm + n):
        fn(i)
    gc.collect()
    return (_heap_in_use() - before) / n


def test_the_o3_pipeline_is_freed_after_each_run():
    """Building and running llvmlite's O3 pipeline kept ~92 KB per run (its pass managers were never
    deleted); now only the pass builder's instrumentation (~1.5 KB) stays."""
    from tensorplay.codegen import jit

    text = codegen.Executable(distinct_graph(3)).llvm_ir.split("; ModuleID", 2)[1]  # its first module
    text = "; ModuleID" + text

    def run(_):
        with jit._parsed(text) as mod:
            jit.run_pipeline(mod)

    assert _heap_growth_per_call(run, 60) < 8_000


def test_compiling_distinct_graphs_keeps_almost_nothing(monkeypatch):
    """Schedule, lower, optimise, emit, link and drop: new constants each time (they would pile up in
    a shared LLVMContext)."""
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")

    def compile_and_run(k):
        exe = codegen.Executable(distinct_graph(50_000 + k))
        exe(np.ones(exe.graph.inputs[0].shape, np.float32))

    assert _heap_growth_per_call(compile_and_run, 40) < TARGET_BYTES_PER_GRAPH / 2


def test_clear_cache_frees_what_nothing_else_holds(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    codegen.clear_cache()
    kept = codegen.compile_graph(distinct_graph(2000))
    dropped = [codegen.compile_graph(distinct_graph(2001 + k))._jit for k in range(3)]
    x = np.linspace(-1, 1, kept.graph.inputs[0].shape[0]).astype(np.float32)
    want = kept(x)
    codegen.clear_cache()
    gc.collect()
    assert all(j._jit is None for j in dropped)
    assert kept._jit._jit is not None  # still referenced here: still runs, same results
    for a, b in zip(kept(x), want):
        np.testing.assert_array_equal(a, b)



def test_machine_code_is_freed_without_the_cycle_collector(monkeypatch):
    """A graph run through `tensorplay._exec` keeps its runner (the executable) on itself; the
    executable must not hold that graph object back, or the pair is a cycle and its machine code
    waits for a full collection (hundreds of dead LLJITs piled up under pytest that way)."""
    import tensorplay as tp
    from tensorplay._exec import runner

    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    codegen.clear_cache()
    gc.collect()
    gc.disable()
    try:
        g = distinct_graph(3000)
        run, fresh = runner(g)
        x = np.linspace(-1, 1, g.inputs[0].shape[0]).astype(np.float32)
        want = ir.interpret(g, [x])
        for a, b in zip(run(x), want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        jm = run._jit
        assert fresh and jm._jit is not None
        del run
        codegen.clear_cache()
        assert jm._jit is not None  # still reachable through the graph's runner
        del g
        assert jm._jit is None  # freed by reference counting alone

        f = tp.compile(lambda t: tp.tanh(t * 1.2345).sum())
        t = tp.ones(4)
        assert abs(f(t).item() - 4 * np.tanh(1.2345)) < 1e-5
        jm = codegen.compile_graph(f.get_graph(t).graph)._jit
        del f
        codegen.clear_cache()
        assert jm._jit is None
    finally:
        gc.enable()

"""The METH_FASTCALL entry of the generated calls (`codegen.fastcall`, the trampoline each module
defines: `module._emit_fastcall`): the same results as the ctypes entry, errors through it, no
reference leaks, a wrong argument count refused, the ctypes fallback when no builtin can be made,
and a disk-cache hit that links it without llvmlite."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tensorplay import ir
from tensorplay.codegen import executable as ce, fastcall
from tensorplay.ir import TensorType, dtypes as dt

needs_fastcall = pytest.mark.skipif(fastcall._NEW is None, reason="no CPython C API here")


def _graph():
    b = ir.GraphBuilder("fc")
    x = b.add_input(TensorType((5,), dt.float32))
    y = b.add_input(TensorType((5,), dt.float32))
    return b.build([b.add(b.mul(x, y), x), b.sub(x, y)])


def _take_graph():
    b = ir.GraphBuilder("take")
    x = b.add_input(TensorType((4,), dt.float32))
    i = b.add_input(TensorType((3,), dt.int32))
    return b.build([b.take(x, i, axis=0)])


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(5).astype(np.float32) for _ in range(2)]


@needs_fastcall
def test_fast_and_bound_calls_use_it_and_match_the_interpreter(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    g = _graph()
    exe = ce.Executable(g)
    assert exe._object_entry is not None
    x, y = _args()
    want = ir.interpret(g, [x, y])
    for got in (exe(x, y), exe._fast((x, y)), exe.bound_call((x,))(y)):
        for a, w in zip(got, want):
            np.testing.assert_array_equal(a, w)
    # the general path (a strided argument: coerced) still calls the ctypes entry, same values
    xs = np.repeat(x, 2)[::2]
    for a, w in zip(exe(xs, y), want):
        np.testing.assert_array_equal(a, w)


@needs_fastcall
def test_an_error_status_raises_through_it(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    exe = ce.Executable(_take_graph())
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(exe(x, np.array([3, 0, 1], np.int32))[0], [3.0, 0.0, 1.0])
    with pytest.raises(IndexError, match="take: index out of range"):
        exe(x, np.array([0, 4, 1], np.int32))
    with pytest.raises(IndexError, match="take: index out of range"):
        exe.bound_call((x,))(np.array([0, 1, -9], np.int32))


@needs_fastcall
def test_no_reference_is_leaked_or_lost(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    exe = ce.Executable(_graph())
    x, y = _args(1)
    before = sys.getrefcount(x), sys.getrefcount(y)
    for _ in range(100):
        exe(x, y)
        exe._fast((x, y))
    assert (sys.getrefcount(x), sys.getrefcount(y)) == before
    o = [np.empty(5, np.float32), np.empty(5, np.float32)]
    f = exe._object_entry
    refs = [sys.getrefcount(a) for a in (x, y, *o)]
    for _ in range(100):
        assert f(x, y, *o) == 0
    assert [sys.getrefcount(a) for a in (x, y, *o)] == refs
    np.testing.assert_array_equal(o[1], x - y)


@needs_fastcall
def test_a_wrong_argument_count_is_refused_not_run():
    exe = ce.Executable(_graph())
    x, y = _args(2)
    with pytest.raises(SystemError):
        exe._object_entry(x, y)  # (the trampoline returns NULL before touching anything)
    o = [np.empty(5, np.float32), np.empty(5, np.float32)]
    with pytest.raises(SystemError):
        exe._object_entry(x, y, *o, o[0])


def test_without_a_trampoline_the_calls_keep_ctypes(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    monkeypatch.setattr(fastcall, "builtin", lambda address: None)
    g = _graph()
    exe = ce.Executable(g)
    assert exe._object_entry is None
    x, y = _args(3)
    want = ir.interpret(g, [x, y])
    for got in (exe(x, y), exe._fast((x, y)), exe.bound_call((x,))(y)):
        for a, w in zip(got, want):
            np.testing.assert_array_equal(a, w)
    bad = ce.Executable(_take_graph())
    with pytest.raises(IndexError, match="take: index out of range"):
        bad(np.arange(4, dtype=np.float32), np.array([7, 0, 0], np.int32))


def test_a_second_process_links_the_trampoline_from_the_disk_cache(cache_dir):
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        import tensorplay as tp
        from tensorplay import codegen
        f = tp.compile(lambda x, y: x * y + 1)
        out = f(tp.ones(6), tp.ones(6) * 2).numpy()
        exe = next(iter(codegen.cache._entries.values()))
        print(json.dumps({"out": out.tolist(), "source": exe.stats["source"], "loader": type(exe._jit).__name__,
                          "fastcall": exe._object_entry is not None, "llvm": "llvmlite.binding" in sys.modules}))
    """)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                      env=dict(os.environ), timeout=300).stdout.strip().splitlines()[-1])
            for _ in range(2)]
    assert runs[0]["out"] == runs[1]["out"] == [3.0] * 6
    assert [r["source"] for r in runs] == ["compiled", "disk cache"]
    assert runs[1]["llvm"] is False and runs[1]["loader"] == "LoadedCode"
    assert runs[0]["fastcall"] == runs[1]["fastcall"] == (fastcall._NEW is not None)


def test_compile_calls_the_generated_call_and_its_refusals_are_coerced():
    """`tp.compile`'s hot path hands a tuple of arrays to the executable's generated call; a
    C-contiguous array whose size-1 axis has another stride passes the compile's walk but not the
    generated call's exact check, and goes to the general call (coerced), with the same values."""
    import tensorplay as tp

    f = tp.compile(lambda x, y: x * y + 1)
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    y = np.full((1, 4), 2.0, np.float32)
    want = x * y + 1
    np.testing.assert_array_equal(f(tp.from_numpy(x), tp.from_numpy(y)).numpy(), want)
    odd = np.lib.stride_tricks.as_strided(x.copy(), shape=(1, 4), strides=(4, 4))  # size-1 axis, odd stride
    assert odd.flags.c_contiguous and odd.strides != x.strides
    for _ in range(2):
        np.testing.assert_array_equal(f(tp.from_numpy(odd), tp.from_numpy(y)).numpy(), want)
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32).reshape(1, 4))


def test_ranged_and_split_entries_have_no_trampoline(monkeypatch):
    from tensorplay.codegen import module

    layout = {"entry": "tp_f_entry", "size": 0, "blocks": 0}
    assert ce._fastcall_name(layout) == module.fastcall_name("tp_f_entry") == "tp_f_fastcall"
    assert ce._fastcall_name({**layout, "size": 1 << 20}) is None
    assert ce._fastcall_name({**layout, "blocks": 4}) is None
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    n = ce.PARALLEL_MIN_ELEMENTS
    b = ir.GraphBuilder("threaded")
    x = b.add_input(TensorType((n,), dt.float32))
    g = b.build([b.add(b.mul(x, x), x)])
    monkeypatch.setattr(ce, "_THREADS", 2)
    exe = ce.Executable(g)
    assert exe._fast is None and exe._object_entry is None and ce._fastcall_name({**layout, "size": exe._size}) is None
    xs = np.linspace(-2, 2, n).astype(np.float32)
    np.testing.assert_array_equal(exe(xs)[0], ir.interpret(g, [xs])[0])

"""The persistent object-code cache: a second process (or a fresh in-memory cache) loads the
object code instead of running LLVM, with bit-identical results; corrupt, truncated, foreign and
stale entries are ignored and rebuilt; writes are atomic; the size is bounded; the off switch
works; tests use a private directory (tests/conftest.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import disk_cache
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def _graph(scale: float = 1.5, n: int = 37) -> ir.Graph:
    b = ir.GraphBuilder("cached")
    x = b.add_input(TensorType((n,), dt.float32))
    y = b.add(b.mul(b.sin(x), b.const(scale, (n,))), x)
    return b.build([y, b.emit("reduce_sum", b.exp(x), axes=(0,))])


X = np.linspace(-3, 3, 37).astype(np.float32)


def _files(d) -> list:
    """The entries (host records aside)."""
    return sorted(p for p in d.rglob("*") if p.is_file() and p.parent.name != "hosts")


def test_tests_never_use_the_developers_cache():
    home = os.path.join(os.path.expanduser("~"), ".cache", "tensorplay")
    assert os.path.abspath(disk_cache.directory()) != os.path.abspath(home)
    assert os.environ.get("TENSORPLAY_CACHE_DIR")


def test_a_fresh_memory_cache_loads_from_disk(cache_dir):
    first = codegen.compile_graph(_graph())
    assert first.stats["source"] == "compiled"
    want = first(X)
    assert len(_files(cache_dir)) == 1
    codegen.clear_cache()
    again = codegen.compile_graph(_graph())
    assert again is not first and again.stats["source"] == "disk cache"
    assert again.stats["llvm_opt_s"] == 0.0
    for a, b in zip(again(X), want):
        np.testing.assert_array_equal(a, b)
    assert again.llvm_ir == first.llvm_ir  # introspection survives the round trip


def test_a_second_process_skips_llvm(cache_dir):
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        import tensorplay as tp
        from tensorplay import codegen
        f = tp.compile(lambda x: tp.tanh(x) * 3 + tp.cos(x).sum())
        out = f(tp.tensor(np.linspace(-2, 2, 11, dtype=np.float32))).numpy()
        exe = next(iter(codegen.cache._entries.values()))
        print(json.dumps({"source": exe.stats["source"], "out": out.tolist()}))
    """)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                      env=dict(os.environ), timeout=300).stdout.strip().splitlines()[-1])
            for _ in range(2)]
    assert [r["source"] for r in runs] == ["compiled", "disk cache"]
    assert runs[0]["out"] == runs[1]["out"]


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign", "empty", "other_key"])
def test_damaged_entries_are_ignored_and_rebuilt(cache_dir, damage):
    want = codegen.compile_graph(_graph())(X)
    (path,) = _files(cache_dir)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "flip":
        pos = len(data) - 100
        path.write_bytes(data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:])
    elif damage == "foreign":
        path.write_bytes(b"\x7fELF" + os.urandom(500))
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a valid entry of another graph under this name
        codegen.clear_cache()
        other = codegen.compile_graph(_graph(2.5))
        (other_path,) = [p for p in _files(cache_dir) if p != path]
        path.write_bytes(other_path.read_bytes())
        del other
    codegen.clear_cache()
    exe = codegen.compile_graph(_graph())
    assert exe.stats["source"] == "compiled"
    for a, b in zip(exe(X), want):
        np.testing.assert_array_equal(a, b)
    codegen.clear_cache()
    assert codegen.compile_graph(_graph()).stats["source"] == "disk cache"  # rewritten


def test_the_key_covers_graph_options_host_and_sources(monkeypatch):
    base = disk_cache.make_key("graph", "opts", "host")
    assert len({base, disk_cache.make_key("graph2", "opts", "host"), disk_cache.make_key("graph", "o", "host"),
                disk_cache.make_key("graph", "opts", "other cpu")}) == 4
    monkeypatch.setattr(disk_cache, "source_fingerprint", lambda: "edited codegen")
    assert disk_cache.make_key("graph", "opts", "host") != base
    monkeypatch.setattr(disk_cache, "tensorplay_version", lambda: "9.9")
    assert disk_cache.make_key("graph", "opts", "host") != base


def test_a_different_graph_name_or_constant_is_another_entry(cache_dir):
    codegen.compile_graph(_graph(1.5))
    codegen.compile_graph(_graph(1.25))
    codegen.compile_graph(_graph(1.5, n=38))
    assert len(_files(cache_dir)) == 3


def test_off_switch(cache_dir, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    exe = codegen.compile_graph(_graph(3.0))
    assert exe.stats["source"] == "compiled"
    assert not cache_dir.exists() or not _files(cache_dir)


def test_writes_are_atomic_and_leave_no_temporary_files(cache_dir):
    for k in range(5):
        disk_cache.store(f"{k:064x}", os.urandom(1000), "ir text")
    files = _files(cache_dir)
    assert len(files) == 5 and not any(p.name.startswith(".tmp-") for p in files)
    assert disk_cache.load(f"{3:064x}")[1] == "ir text"


def test_the_size_is_bounded(cache_dir, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_CACHE_MAX_MB", "0.05")  # 52 KB
    for k in range(40):
        disk_cache.store(f"{k:064x}", os.urandom(4000), "")
    disk_cache.trim()
    total = sum(p.stat().st_size for p in _files(cache_dir))
    assert total <= disk_cache.max_bytes()
    assert disk_cache.load(f"{39:064x}") is not None  # the newest entry survives


def test_the_key_settings_defaults_are_the_modules_defaults():
    # a disk-cache key reads a setting from its module if imported, else this default: they must agree
    import importlib

    from tensorplay.codegen import executable

    for module, name, default in executable.KEY_SETTINGS:
        assert getattr(importlib.import_module(f"tensorplay.codegen.{module}"), name) == default, (module, name)


def test_a_changed_setting_is_another_entry(cache_dir, monkeypatch):
    from tensorplay.codegen import module

    codegen.compile_graph(_graph(1.5))
    codegen.clear_cache()
    monkeypatch.setattr(module, "VECTOR_WIDTH", 128)
    exe = codegen.compile_graph(_graph(1.5))
    assert exe.stats["source"] == "compiled" and len(_files(cache_dir)) == 2
    np.testing.assert_allclose(exe(X)[0], np.sin(X) * np.float32(1.5) + X, rtol=1e-6, atol=1e-6)


def test_the_in_place_gemm_switch_is_another_entry(cache_dir, monkeypatch):
    monkeypatch.delenv("TENSORPLAY_INPLACE_GEMM", raising=False)
    codegen.compile_graph(_graph(1.5))
    codegen.clear_cache()
    monkeypatch.setenv("TENSORPLAY_INPLACE_GEMM", "0")  # the opt-out: OpenBLAS's code, another entry
    exe = codegen.compile_graph(_graph(1.5))
    assert exe.stats["source"] == "compiled" and len(_files(cache_dir)) == 2
    codegen.clear_cache()
    monkeypatch.setenv("TENSORPLAY_INPLACE_GEMM", "1")  # the default spelled out: the first entry
    assert codegen.compile_graph(_graph(1.5)).stats["source"] == "disk cache"


def test_an_entry_whose_layout_does_not_read_is_rebuilt(cache_dir):
    want = codegen.compile_graph(_graph(1.5))(X)
    (path,) = _files(cache_dir)
    key = path.name[:-len(disk_cache.SUFFIX)]
    obj, llvm_ir, layout = disk_cache.load(key)
    for bad in ("not python", "{'entry': 'x'}", "[1, 2]", "__import__('os')"):
        disk_cache.store(key, obj, llvm_ir, bad)  # well-formed entry (checksum fine), unusable layout
        codegen.clear_cache()
        exe = codegen.compile_graph(_graph(1.5))
        assert exe.stats["source"] == "compiled"
        for a, b in zip(exe(X), want):
            np.testing.assert_array_equal(a, b)
    codegen.clear_cache()
    assert codegen.compile_graph(_graph(1.5)).stats["source"] == "disk cache"


def test_a_hit_keeps_kernels_outputs_and_error_messages(cache_dir):
    import tensorplay as tp

    def f(x, i):
        return tp.gather(x, 1, i) * 2, x, x.sum()

    x = tp.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    good, bad = tp.tensor([[3], [0], [-1]]), tp.tensor([[0], [4], [0]])
    runs = []
    for _ in range(2):
        tp.compiler.reset()
        g = tp.compile(f)
        outs = [o.numpy() for o in g(x, good)]
        with pytest.raises(IndexError) as err:
            g(x, bad)
        exe = next(iter(codegen.cache._entries.values()))
        runs.append((exe.stats["source"], exe.kernels, exe.stats["kernels"], exe.stats["nodes"], outs, str(err.value)))
    (s0, k0, n0, m0, o0, e0), (s1, k1, n1, m1, o1, e1) = runs
    assert (s0, s1) == ("compiled", "disk cache")
    assert k0 == k1 and n0 == n1 and m0 == m1 and e0 == e1 and "index out of range" in e0
    np.testing.assert_array_equal(o1[0], np.take_along_axis(np.arange(12.0).reshape(3, 4), np.array([[3], [0], [3]]), 1) * 2)
    for a, b in zip(o0, o1):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(o1[1], np.arange(12.0).reshape(3, 4))  # an output that is an input


def test_a_threaded_entry_is_threaded_after_a_hit(cache_dir):
    from tensorplay.codegen import executable

    n = executable.PARALLEL_MIN_ELEMENTS
    b = ir.GraphBuilder("threaded")
    x = b.add_input(TensorType((n,), dt.float32))
    g = b.build([b.add(b.sin(x), x)])
    xs = np.linspace(-5, 5, n).astype(np.float32)
    first = codegen.compile_graph(g)
    want = first(xs)[0]
    codegen.clear_cache()
    again = codegen.compile_graph(g)
    assert again.stats["source"] == "disk cache" and again.stats["threads"] == first.stats["threads"]
    np.testing.assert_array_equal(again(xs)[0], want)
    np.testing.assert_array_equal(again(xs[::-1].copy())[0], first(xs[::-1].copy())[0])


def test_a_hit_in_a_second_process_needs_no_scheduler_lowerings_or_llvmlite(cache_dir):
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        import tensorplay as tp
        from tensorplay import codegen
        f = tp.compile(lambda x, w: tp.tanh(x @ w).sum(0))
        out = f(tp.ones(70, 40), tp.ones(40, 30) / 40).numpy()
        exe = next(iter(codegen.cache._entries.values()))
        heavy = [m for m in ("schedule", "lower", "lowerings", "module", "vecmath", "dot", "context", "jit")
                 if "tensorplay.codegen." + m in sys.modules]
        heavy += [m for m in ("llvmlite.binding", "llvmlite.ir") if m in sys.modules]
        print(json.dumps({"source": exe.stats["source"], "out": out.tolist(), "heavy": heavy,
                          "loader": type(exe._jit).__name__}))
    """)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                      env=dict(os.environ), timeout=300).stdout.strip().splitlines()[-1])
            for _ in range(2)]
    assert [r["source"] for r in runs] == ["compiled", "disk cache"]
    assert runs[0]["out"] == runs[1]["out"]
    np.testing.assert_allclose(runs[1]["out"], np.full(30, 70 * np.tanh(1.0)), rtol=1e-5)
    assert runs[0]["heavy"] and runs[1]["heavy"] == []  # a hit never imports llvmlite.binding
    assert runs[1]["loader"] == "LoadedCode"  # linked by codegen.object_loader


def test_a_hit_reports_the_merged_functions_of_the_compile(cache_dir):
    b = ir.GraphBuilder("twins")  # two fused reductions with the same code: merged at compile time
    x, y = b.add_input(TensorType((4, 5), dt.float32)), b.add_input(TensorType((4, 5), dt.float32))
    s1, s2 = b.emit("reduce_sum", b.tanh(x), axes=(1,)), b.emit("reduce_sum", b.tanh(y), axes=(1,))
    g = b.build([s1, s2])
    first = codegen.compile_graph(g)
    assert first.stats["source"] == "compiled" and first.stats["merged_functions"] == 1
    codegen.clear_cache()
    again = codegen.compile_graph(g)
    assert again.stats["source"] == "disk cache" and again.stats["merged_functions"] == 1


def test_host_fingerprint_while_another_thread_is_still_importing_the_jit(monkeypatch):
    """Two threads making a process's first executables at once: one may see `codegen.jit` in
    sys.modules before its module body ran (no `_engine` yet). The fingerprint is still the host's."""
    import types

    from tensorplay.codegen import jit

    want = jit.host_fingerprint()
    monkeypatch.setitem(sys.modules, jit.__name__, types.ModuleType(jit.__name__))  # (no globals yet)
    monkeypatch.setattr(disk_cache, "_hosts", {})
    assert disk_cache.host_fingerprint() == want

"""The shape-generic in-place gemm (`gemm_kernel.emit_generic_inplace`, `gemm_library`): called
directly against numpy in float64 and bit for bit against the per-shape kernel
(`gemm_kernel.emit_gemm_inplace`, the same fma chains) over edges, size 1, strided and transposed
operands, both orientations from one function (entry points `_nn` / `_nt`), its transposes with
and without AVX-512's permutes; compiled once per process whatever the shapes and orientations;
linked by symbol, so that a second process loads a graph calling it from the disk cache; and not
taken on an AVX2-only host or with the opt-out."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from llvmlite import ir as llir

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import dot, gemm_kernel, gemm_library, jit
from tensorplay.codegen import irutil as u
from tensorplay.codegen.lowerings.reduce import fix_loop_ids
from codegen_testutil import dot_graph, run_fresh

needs_fma = pytest.mark.skipif(not gemm_kernel.host_supported(), reason="the host has no AVX + FMA")
needs_blas = pytest.mark.skipif(dot.find_blas() is None, reason="no BLAS plans here")
_SIG = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * 3, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                        ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
TILES = {"8x32": gemm_kernel.AVX512_TILE, "6x16": gemm_kernel.AVX2_TILE}


def test_the_library_tiles_are_the_kernel_tiles():
    for name, tile in TILES.items():
        assert gemm_library.TILES[name] == (tile.mr, tile.nv, tile.lanes)
        for trans in (False, True):
            assert gemm_library.parse(gemm_kernel.generic_symbol(tile, trans)) == (tile.mr, tile.nv, tile.lanes, trans)
    for bad in ("tp_gemm_f32_8x32_tn", "tp_gemm_f64_8x32_nn", "tp_gemm_f32_4x4_nn", "sgemm"):
        assert gemm_library.parse(bad) is None and gemm_library.address(bad) is None


def _generic(tile, trans_b):
    return _SIG(gemm_library.address(gemm_kernel.generic_symbol(tile, trans_b)))


def _per_shape(tile, m, n, k, trans_a, trans_b, copy):
    """The per-shape kernel of the same product (constants baked in): (code, run(a, b, c))."""
    mod = llir.Module("s")
    mod.triple, mod.data_layout = jit.host_triple_and_layout()
    fn = llir.Function(mod, llir.FunctionType(llir.VoidType(), [u.PTR] * 3), "s")
    b = llir.IRBuilder(fn.append_basic_block())
    panel = None
    if trans_b or copy:
        panel = b.alloca(u.F32, size=u.i64(gemm_kernel.inplace_panel_elements(k, tile)), name="panel")
    strides = (1, m) if trans_a else (k, 1)
    gemm_kernel.emit_gemm_inplace(b, fn.args[0], strides, fn.args[1], k if trans_b else n, fn.args[2], n, m, n, k,
                                  tile, trans_b, panel)
    b.ret_void()
    code = jit.compile_ir(fix_loop_ids(str(mod)), ["s"])
    return code, ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3)(code.addresses["s"])


# the last three: k in two, three and four blocks of `GENERIC_PANEL_K` (equal blocks, the last shorter)
SHAPES = [(1, 16, 1), (7, 16, 3), (8, 32, 1), (13, 48, 7), (9, 96, 40), (64, 256, 200), (17, 80, 33),
          (9, 48, 257), (13, 80, 601), (17, 96, 784)]


@needs_fma
@pytest.mark.parametrize("tile", list(TILES.values()), ids=list(TILES))
@pytest.mark.parametrize("trans_b", [False, True], ids=["nn", "nt"])
@pytest.mark.parametrize("trans_a", [False, True], ids=["a", "a_t"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_generic_function_matches_numpy_and_the_per_shape_kernel(shape, trans_a, trans_b, tile):
    """Edges (m % mr, a last panel of one vector, k below one transposed block), m below one tile
    and size 1; A read transposed and with a leading dimension wider than its rows, C with rows
    wider than n (columns past n untouched); both panel modes."""
    m, n, k = shape
    rng = np.random.default_rng(m * 1000 + n + k)
    pad = 3
    a_full = (rng.standard_normal((k, m + pad)) if trans_a else rng.standard_normal((m, k + pad))).astype(np.float32)
    a = a_full[:, :m] if trans_a else a_full[:, :k]
    b = (rng.standard_normal((n, k)) if trans_b else rng.standard_normal((k, n))).astype(np.float32)
    a_rs, a_cs = (1, m + pad) if trans_a else (k + pad, 1)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    run = _generic(tile, trans_b)
    outs = []
    for flags in (0, gemm_kernel.GENERIC_COPY_PANEL):
        c = np.full((m + 2, n + 5), 7.0, np.float32)
        run(m, n, k, a_full.ctypes.data, a_rs, a_cs, b.ctypes.data, k if trans_b else n, c.ctypes.data, n + 5, flags)
        assert (c[:, n:] == 7.0).all() and (c[m:] == 7.0).all()  # nothing written past n, nor past row m
        np.testing.assert_allclose(c[:m, :n], want, rtol=1e-5, atol=1e-4 * np.sqrt(k))
        outs.append(c[:m, :n].copy())
    np.testing.assert_array_equal(outs[0], outs[1])  # the copied panel holds exact copies
    a_full = np.ascontiguousarray(a)  # the per-shape kernel reads A contiguous
    code, per_shape = _per_shape(tile, m, n, k, trans_a, trans_b, copy=False)
    c = np.empty((m, n), np.float32)
    per_shape(a_full.ctypes.data, b.ctypes.data, c.ctypes.data)
    np.testing.assert_array_equal(outs[0], c)


@needs_fma
def test_a_transposed_b_longer_than_the_stack_panel():
    """k above `GENERIC_PANEL_K`: the transposed panel is copied a block of k at a time, into the
    same stack panel (the values of the product, the bits of B^T stored untransposed)."""
    m, n, k = 16, 64, gemm_kernel.GENERIC_PANEL_K + 37
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    bt = rng.standard_normal((n, k)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    _generic(gemm_kernel.AVX512_TILE, True)(m, n, k, a.ctypes.data, k, 1, bt.ctypes.data, k, c.ctypes.data, n, 0)
    np.testing.assert_allclose(c, a.astype(np.float64) @ bt.T.astype(np.float64), rtol=1e-5, atol=1e-3)
    nn = np.empty((m, n), np.float32)  # B^T stored row-major, untransposed: the same fma chains
    b = np.ascontiguousarray(bt.T)
    _generic(gemm_kernel.AVX512_TILE, False)(m, n, k, a.ctypes.data, k, 1, b.ctypes.data, n, nn.ctypes.data, n, 1)
    np.testing.assert_array_equal(c, nn)


@needs_fma
@pytest.mark.parametrize("tile", list(TILES.values()), ids=list(TILES))
def test_the_entry_points_fix_the_orientation(tile):
    """`_nn` and `_nt` are one function (`emit_generic_inplace`) with the `GENERIC_TRANS_B` bit set
    by the entry point: a caller's flags cannot flip it."""
    m, n, k = 9, 2 * tile.nr, 21
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bt = np.ascontiguousarray(b.T)
    outs = []
    for trans_b, operand, ldb in ((False, b, n), (True, bt, k)):
        for flags in (0, gemm_kernel.GENERIC_TRANS_B, gemm_kernel.GENERIC_TRANS_B | gemm_kernel.GENERIC_COPY_PANEL):
            c = np.empty((m, n), np.float32)
            _generic(tile, trans_b)(m, n, k, a.ctypes.data, k, 1, operand.ctypes.data, ldb, c.ctypes.data, n, flags)
            outs.append(c)
    for c in outs[1:]:
        np.testing.assert_array_equal(c, outs[0])  # the same fma chains whichever way B is read
    np.testing.assert_allclose(outs[0], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@needs_fma
@pytest.mark.parametrize("avx512", [True, False], ids=["permutes", "shuffles"])
def test_the_transposed_panel_with_and_without_the_avx512_permutes(avx512, monkeypatch):
    """The 16-lane transposes are vpermi2ps with masks loaded from the module's constant array on an
    AVX-512 host only (`gemm_kernel._transposed_panel_text`); otherwise (forced here) shufflevectors.
    Both modules give the bits of the process's function: k below one block, k % 16 != 0, a
    narrow last panel."""
    if avx512 and not gemm_kernel.target_avx512():
        pytest.skip("not an AVX-512 host")
    from tensorplay.codegen import object_loader

    tile = gemm_kernel.AVX512_TILE
    monkeypatch.setattr(gemm_kernel, "target_avx512", lambda: avx512)
    text = gemm_kernel.generic_module_text(tile)
    assert ("vpermi2var" in text) == avx512 and ("tp_gemm_tmasks" in text) == avx512
    names = [gemm_kernel.generic_symbol(tile, t) for t in (False, True)]
    obj, llvm_ir = jit.compile_object(text, gemm_library.COMPILE_LEVEL, gemm_library.CODEGEN_LEVEL)
    code = object_loader.load([obj], names, object_loader.Resolver([]), llvm_ir)
    try:
        mine = _SIG(code.addresses[names[1]])
        rng = np.random.default_rng(12)
        for m, n, k in ((5, 32, 3), (20, 48, 37), (9, 96, 16)):
            a = rng.standard_normal((m, k)).astype(np.float32)
            bt = rng.standard_normal((n, k)).astype(np.float32)
            got, want = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
            mine(m, n, k, a.ctypes.data, k, 1, bt.ctypes.data, k, got.ctypes.data, n, 0)
            _generic(tile, True)(m, n, k, a.ctypes.data, k, 1, bt.ctypes.data, k, want.ctypes.data, n, 0)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_allclose(got, a.astype(np.float64) @ bt.T, rtol=1e-5, atol=1e-4)
    finally:
        code.release()


def _graph(ls, rs, contract=((1,), (0,)), name="dot"):
    return dot_graph(ls, rs, contract, name=name)


@pytest.fixture
def fresh_library(monkeypatch):
    """A process state in which no generic function is loaded yet (restored afterwards)."""
    monkeypatch.setattr(gemm_library, "_addresses", {})
    monkeypatch.setattr(gemm_library, "_compiles", [])
    monkeypatch.setattr(gemm_library, "_pending", {})
    monkeypatch.setattr(gemm_library, "_errors", {})
    imports = jit.engine().imports
    saved = {name: imports.pop(name) for name in list(imports) if name.startswith(gemm_library.PREFIX)}
    yield
    for name in [n for n in imports if n.startswith(gemm_library.PREFIX)]:
        del imports[name]
    imports.update(saved)


@needs_fma
@needs_blas
def test_graphs_of_different_shapes_compile_the_function_once(fresh_library, monkeypatch):
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: True)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    monkeypatch.delenv(dot.INPLACE_GEMM_ENV, raising=False)
    made = []
    real = gemm_kernel.generic_module_text
    monkeypatch.setattr(gemm_kernel, "generic_module_text", lambda *a: (made.append(a), real(*a))[1])
    rng = np.random.default_rng(4)
    codegen.clear_cache()
    try:
        for ls, rs in (((64, 784), (784, 256)), ((96, 512), (512, 192)), ((40, 400), (400, 288))):
            exe = codegen.compile_graph(_graph(ls, rs))
            assert exe.stats["source"] == "compiled" and "tp_gemm_f32_8x32_nn" in exe.llvm_ir
            x, w = rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)
            np.testing.assert_allclose(exe(x, w)[0], x.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    finally:
        codegen.clear_cache()
    assert gemm_library.compiled() == 1 and len(made) == 1


@needs_fma
def test_both_orientations_come_from_one_compile(fresh_library, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    nn, nt = (gemm_library.address(gemm_kernel.generic_symbol(gemm_kernel.AVX512_TILE, t)) for t in (False, True))
    assert nn and nt and nn != nt
    assert gemm_library.compiled() == 1 and gemm_library._compiles == ["tp_gemm_f32_8x32"]
    gemm_library.prefetch("tp_gemm_f32_8x32_nt")  # made: no second thread, no second compile
    assert gemm_library.compiled() == 1 and list(gemm_library._pending) == ["tp_gemm_f32_8x32"]
    assert gemm_library.module_of("tp_gemm_f32_6x16_nt") == "tp_gemm_f32_6x16" and gemm_library.module_of("f") is None


@needs_fma
def test_a_failure_in_the_prefetch_thread_is_raised_where_the_function_is_needed(fresh_library, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    real = gemm_library._compile
    monkeypatch.setattr(gemm_library, "_compile", lambda name: (_ for _ in ()).throw(RuntimeError("no LLVM today")))
    gemm_library.prefetch("tp_gemm_f32_8x32_nn")
    with pytest.raises(RuntimeError, match="no LLVM today"):
        gemm_library.address("tp_gemm_f32_8x32_nn")
    monkeypatch.setattr(gemm_library, "_compile", real)
    assert gemm_library.address("tp_gemm_f32_8x32_nn") and gemm_library.compiled() == 1  # a retry makes it


@needs_fma
@needs_blas
def test_the_function_is_stored_in_and_loaded_from_the_disk_cache(fresh_library, monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORPLAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "1")
    name = "tp_gemm_f32_8x32_nt"
    first = gemm_library.address(name)
    assert gemm_library.compiled() == 1
    monkeypatch.setattr(gemm_library, "_addresses", {})
    second = gemm_library.address(name)  # the same process forgets it: the entry answers, no LLVM
    assert gemm_library.compiled() == 1 and second != first
    assert gemm_library.address("tp_gemm_f32_8x32_nn")  # the other entry point came with it
    from tensorplay.codegen import disk_cache

    entries = [disk_cache.load(disk_cache.symbol_key(n)) for n in ("tp_gemm_f32_8x32_nn", "tp_gemm_f32_8x32_nt")]
    assert entries[0] is not None and entries[0][0] == entries[1][0]  # one module under both keys
    rng = np.random.default_rng(2)
    a, bt = rng.standard_normal((24, 40)).astype(np.float32), rng.standard_normal((48, 40)).astype(np.float32)
    outs = []
    for address in (first, second):
        c = np.empty((24, 48), np.float32)
        _SIG(address)(24, 48, 40, a.ctypes.data, 40, 1, bt.ctypes.data, 40, c.ctypes.data, 48, 0)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], a.astype(np.float64) @ bt.T, rtol=1e-5, atol=1e-4)


@needs_fma
@needs_blas
@pytest.mark.skipif(not (gemm_kernel.host_supported() and gemm_kernel.host_avx512()), reason="not an AVX-512 host")
def test_a_second_process_loads_the_graph_and_the_function_from_disk(tmp_path):
    """The graph's object code names the function (no absolute address): a second process links
    it from the disk cache through `object_loader.Resolver`, without compiling anything or
    importing llvmlite."""
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        from tensorplay import codegen, ir
        from tensorplay.codegen import gemm_library
        from tensorplay.ir import dtypes as dt
        from tensorplay.ir.types import TensorType
        b = ir.GraphBuilder("mm")
        x = b.add_input(TensorType((64, 256), dt.float32)); w = b.add_input(TensorType((256, 256), dt.float32))
        g = b.build([b.dot_general(x, w, contract=((1,), (1,)), batch=((), ()))])  # x @ w^T
        exe = codegen.compile_graph(g)
        rng = np.random.default_rng(0)
        xs, ws = rng.standard_normal((64, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
        out = exe(xs, ws)[0]
        heavy = [m for m in ("codegen.jit", "codegen.dot", "codegen.gemm_kernel", "codegen.module")
                 if "tensorplay." + m in sys.modules]
        heavy += [m for m in ("llvmlite.binding", "llvmlite.ir") if m in sys.modules]
        print(json.dumps({"source": exe.stats["source"], "compiled": gemm_library.compiled(), "heavy": heavy,
                          "loader": type(exe._jit).__name__,
                          "calls": sorted(gemm_library.referenced(exe._jit.objects)),
                          "err": float(np.abs(out - xs.astype(np.float64) @ ws.T).max()),
                          "sum": float(out.astype(np.float64).sum())}))
    """)
    env = dict(os.environ, TENSORPLAY_CACHE_DIR=str(tmp_path), TENSORPLAY_DISK_CACHE="1")
    env.pop(dot.INPLACE_GEMM_ENV, None)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                      env=env, timeout=300).stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert [r["source"] for r in runs] == ["compiled", "disk cache"]
    assert [r["compiled"] for r in runs] == [1, 0]
    assert runs[0]["calls"] == runs[1]["calls"] == ["tp_gemm_f32_8x32_nt"]
    assert runs[0]["err"] < 1e-2 and runs[0]["sum"] == runs[1]["sum"]
    assert runs[0]["heavy"] and runs[1]["heavy"] == []  # the hit never starts LLVM, for the graph nor the gemm
    assert runs[1]["loader"] == "LoadedCode"


@needs_fma
@needs_blas
def test_cached_images_linked_by_the_jit_resolve_the_function(fresh_library, monkeypatch):
    """The loader's fallback (`jit.link_object` of cached images) imports the function they call."""
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: True)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    monkeypatch.delenv(dot.INPLACE_GEMM_ENV, raising=False)
    codegen.clear_cache()
    exe = codegen.compile_graph(_graph((64, 784), (784, 256)))
    codegen.clear_cache()
    imports = jit.engine().imports
    del imports["tp_gemm_f32_8x32_nn"]  # as in a process that has not emitted a call of it
    entry = exe._jit.addresses and next(iter(exe._jit.addresses))
    code = jit.link_object(exe._jit.objects, [entry])
    assert "tp_gemm_f32_8x32_nn" in imports and code.addresses[entry]
    code.release()


@needs_fma
@needs_blas
@pytest.mark.parametrize("host", ["avx2", "no_fma"])
def test_hosts_without_avx512_keep_openblas(host, monkeypatch):
    """With the host check forced off the rule's products call OpenBLAS, never the function."""
    if host == "avx2":
        monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: False)
    else:
        monkeypatch.setattr(gemm_kernel, "host_supported", lambda: False)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    monkeypatch.delenv(dot.INPLACE_GEMM_ENV, raising=False)
    rng = np.random.default_rng(5)
    codegen.clear_cache()
    try:
        for ls, rs, contract in (((64, 784), (784, 256), ((1,), (0,))), ((64, 256), (256, 256), ((1,), (1,)))):
            exe = codegen.compile_graph(_graph(ls, rs, contract))
            assert gemm_library.PREFIX not in exe.llvm_ir and dot.find_blas().sgemm in exe.llvm_ir
            x, w = rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)
            want = x.astype(np.float64) @ (w.T if contract[1] == (1,) else w)
            np.testing.assert_allclose(exe(x, w)[0], want, rtol=1e-4, atol=1e-3)
    finally:
        codegen.clear_cache()


@needs_fma
@needs_blas
def test_the_mlp_products_run_in_place_by_default(monkeypatch):
    """The MLP 784-256-256-10 loss+grad at B=64 under the real thresholds: x @ W1, h @ W2, the
    weight gradients x^T @ dh and dh @ W2^T call the function (forced AVX-512 host), against the
    interpreter; the same graph with the opt-out calls none."""
    import tensorplay as tp
    from tensorplay.func import grad

    def loss(ps, x):
        for i, (w, bias) in enumerate(ps):
            x = x @ w + bias
            if i < len(ps) - 1:
                x = tp.relu(x)
        return (x * x).mean()

    rng = np.random.default_rng(6)
    sizes = [784, 256, 256, 10]
    ps = [(tp.from_numpy((rng.standard_normal((a, c)) / np.sqrt(a)).astype(np.float32)),
           tp.from_numpy((0.1 * rng.standard_normal(c)).astype(np.float32))) for a, c in zip(sizes, sizes[1:])]
    x = tp.from_numpy(rng.standard_normal((64, sizes[0])).astype(np.float32))
    graph = tp.compile(grad(loss)).lower(ps, x).graph
    flat = [np.asarray(a.numpy()) for w, bias in ps for a in (w, bias)] + [np.asarray(x.numpy())]
    want = ir.interpret(graph, flat)
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: True)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    for value in ("1", "0"):
        monkeypatch.setenv(dot.INPLACE_GEMM_ENV, value)
        exe, got = run_fresh(graph, flat)
        calls = len([line for line in exe.llvm_ir.splitlines() if "call void @" in line and "tp_gemm_f32" in line])
        assert (calls >= 4) if value == "1" else calls == 0
        for a, w in zip(got, want):
            np.testing.assert_allclose(a, w, rtol=2e-4, atol=1e-5)


@needs_fma
@needs_blas
@pytest.mark.parametrize("ls, rs, contract, blas_avx512, taken", [
    ((300, 1200), (1200, 64), ((1,), (0,)), False, True),   # A of 1.4 MB untransposed, m >= 256: B's panels copied
    ((300, 1200), (1200, 64), ((1,), (0,)), True, False),   # the same where OpenBLAS runs its AVX-512 kernel
    ((1200, 300), (1200, 64), ((0,), (0,)), False, False),  # the same A transposed: OpenBLAS
], ids=["a_large", "a_large_avx512_blas", "a_t_large"])
def test_a_large_untransposed_lhs_runs_in_place(ls, rs, contract, blas_avx512, taken, monkeypatch):
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: True)
    monkeypatch.setattr(dot, "blas_runs_avx512", lambda: blas_avx512)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    monkeypatch.delenv(dot.INPLACE_GEMM_ENV, raising=False)
    g = _graph(ls, rs, contract)
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)]
    exe, (got,) = run_fresh(g, args)
    assert ("tp_gemm_f32_8x32_nn" in exe.llvm_ir) == taken
    np.testing.assert_allclose(got, ir.interpret(g, args)[0], rtol=1e-4, atol=1e-3)

"""The generated gemm that reads one product's operands in place (the generic function of
`gemm_kernel.emit_generic_inplace`, called by graph code through `gemm_library`;
`dot.GemmPlan.inplace_kernel`): which plans take it, its values vs the interpreter, bit for bit vs
the axpy loop nest (the same fma chain), the same bits in either tile, and the plans that must
keep OpenBLAS or the loops."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tensorplay import ir
from tensorplay.codegen import dot, gemm_kernel
from tensorplay.ir import dtypes as dt
from codegen_testutil import dot_graph, run_fresh

needs_kernel = pytest.mark.skipif(dot.find_blas() is None or not gemm_kernel.host_supported(),
                                  reason="no BLAS plans here, or the host has no AVX + FMA")

MM = (((1,), (0,)), ((), ()))    # x @ w
TA = (((0,), (0,)), ((), ()))    # x^T @ w (the lhs k-major: dW = x^T dh)
TB = (((1,), (1,)), ((), ()))    # x @ w^T

# (lhs shape, rhs shape, (contract, batch)): single products the rule takes once forced
CASES = [
    ((64, 40), (40, 64), MM),        # whole 8 x 32 tiles
    ((13, 7), (7, 48), MM),          # m remainder 5, a last panel of one 16-lane vector
    ((8, 1), (1, 32), MM),           # k = 1, one tile
    ((9, 20), (9, 32), TA),          # A^T, m remainder 1 (8-row tile) or 3 (6-row tile)
    ((40, 24), (40, 80), TA),        # A^T, n = 2 panels + 16
    ((30, 17), (17, 16), MM),        # n = 16: only the narrow panel
    ((11, 600), (600, 48), MM),      # k in three blocks (`GENERIC_PANEL_K`), a narrow last panel
]


def _graph(ls, rs, spec, dtype=dt.float32):
    return dot_graph(ls, rs, *spec, dtype=dtype)


def _args(case, seed=0, strided=False, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if strided:  # every argument a non-contiguous view (every other element of a larger array)
        return [(rng.standard_normal(s + (2,)) * 3).astype(dtype)[..., 1] for s in case[:2]]
    return [(rng.standard_normal(s) * 3).astype(dtype) for s in case[:2]]


def _run(g, args, monkeypatch, *, blas_min=0, inplace_min=0, avx512=True, tile=None, every=False):
    """Compile and run `g` with these thresholds and host flag (the rule's AVX-512 test forced);
    `tile` forces the tile. Returns (executable, first result or `every` result, dot_generals
    emitted in place)."""
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", blas_min)
    monkeypatch.setattr(dot, "INPLACE_MIN_FLOPS", inplace_min)
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: avx512)
    if tile is not None:
        monkeypatch.setattr(dot, "inplace_tile", lambda: tile)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")  # emit every time (the spy below counts)
    monkeypatch.setenv(dot.INPLACE_GEMM_ENV, "1")
    emitted = []
    real = dot.emit_dot_inplace
    monkeypatch.setattr(dot, "emit_dot_inplace", lambda *a: (emitted.append(a[1]), real(*a)))
    try:
        exe, out = run_fresh(g, args)
    finally:
        monkeypatch.undo()
    return exe, out if every else out[0], len(emitted)


def test_the_rule_is_shapes_dtype_and_host_only():
    x_w1 = dot.GemmPlan((), 64, 256, 784, False, 784, False, 256, 256)      # the MLP's x @ W1
    dw1 = dot.GemmPlan((), 784, 256, 64, True, 784, False, 256, 256)        # x^T @ dh
    for plan in (x_w1, dw1):
        assert plan.inplace_kernel(dt.float32, host_avx512=True)
        assert not plan.inplace_kernel(dt.float32, host_avx512=False)      # measured on AVX-512 only
        assert not plan.inplace_kernel(dt.float64, host_avx512=True)
        assert not plan.inplace_kernel(dt.float16, host_avx512=True)
    dh_wt = dot.GemmPlan((), 64, 256, 256, False, 256, True, 256, 256)          # dh @ W^T: a 32 KB panel
    assert dh_wt.inplace_kernel(dt.float32, host_avx512=True)
    long_k = dot.GemmPlan((), 64, 256, 784, False, 784, True, 784, 256)         # x @ W1^T: blocks of k
    assert long_k.inplace_kernel(dt.float32, host_avx512=True)
    looped = dot.GemmPlan(((10, 0, 200704, 256),), 64, 256, 784, False, 784, False, 256, 2560)
    assert not looped.inplace_kernel(dt.float32, host_avx512=True)           # a loop of calls
    assert not dot.GemmPlan((), 64, 250, 784, False, 784, False, 250, 250).inplace_kernel(dt.float32, host_avx512=True)
    assert not dot.GemmPlan((), 7, 256, 4096, False, 4096, False, 256, 256).inplace_kernel(dt.float32, host_avx512=True)
    small = dot.GemmPlan((), 64, 128, 128, False, 128, False, 128, 128)       # 2.1 MFLOP: OpenBLAS ties
    assert 2 * 64 * 128 ** 2 < dot.INPLACE_MIN_FLOPS and not small.inplace_kernel(dt.float32, host_avx512=True)
    step = dot.GemmPlan((), 32, 512, 128, False, 128, True, 128, 512)         # an LSTM step's h @ W_hh^T
    assert step.inplace_kernel(dt.float32, host_avx512=True)
    big_b = dot.GemmPlan((), 64, 1024, 1024, False, 1024, False, 1024, 1024)  # B of 4 MB
    assert not big_b.inplace_kernel(dt.float32, host_avx512=True)
    big_a = dot.GemmPlan((), 2048, 256, 256, False, 256, False, 256, 256)     # A of 2 MB, B's panels copied
    assert big_a.inplace_kernel(dt.float32, host_avx512=True, blas_avx512=False)
    assert not big_a.inplace_kernel(dt.float32, host_avx512=True, blas_avx512=True)  # OpenBLAS's own AVX-512 kernel
    assert dh_wt.inplace_kernel(dt.float32, host_avx512=True, blas_avx512=True)     # (A in L2: in place either way)
    big_a_t = dot.GemmPlan((), 784, 256, 1024, True, 784, False, 256, 256)    # A^T of 3 MB: OpenBLAS
    assert not big_a_t.inplace_kernel(dt.float32, host_avx512=True)
    few_rows = dot.GemmPlan((), 200, 64, 2048, False, 2048, False, 64, 64)    # A of 1.6 MB, m < 256
    assert not few_rows.inplace_kernel(dt.float32, host_avx512=True)


@needs_kernel
@pytest.mark.parametrize("tile", [None, gemm_kernel.AVX2_TILE, gemm_kernel.AVX512_TILE],
                         ids=["chosen", "avx2_tile", "avx512_tile"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_matches_interpreter_and_the_loop_nest_bit_for_bit(case, strided, tile, monkeypatch):
    """Each tile (a 512-bit one is split in two on an AVX2 host: slower, same values) against the
    interpreter, and bit for bit against the axpy loop nest (no BLAS plan at all)."""
    g = _graph(*case)
    args = _args(case, seed=3, strided=strided)
    exe, got, emitted = _run(g, args, monkeypatch, tile=tile)
    assert emitted == 1
    blas = dot.find_blas()
    assert blas.sgemm not in exe.llvm_ir and blas.sgemv not in exe.llvm_ir
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    _, loops, emitted_loops = _run(g, args, monkeypatch, blas_min=float("inf"))
    assert emitted_loops == 0
    np.testing.assert_array_equal(got, loops)
    for a, fresh in zip(args, _args(case, seed=3, strided=strided)):  # the caller's arrays untouched
        np.testing.assert_array_equal(a, fresh)


# B^T (the rhs contracted on its last axis): each column panel copied transposed to the stack
TB_CASES = [
    ((64, 256), (256, 256), TB),     # the MLP's dh @ W2^T: k = 256, one block of k
    ((24, 601), (64, 601), TB),      # k in three blocks, each block's columns transposed into the panel
    ((13, 37), (48, 37), TB),        # k remainder 5 (16-lane blocks) / 5 (8-lane), m remainder
    ((8, 3), (16, 3), TB),           # k below one block: every column copied alone
    ((20, 9), (32, 20)),             # A^T and B^T (x^T @ w^T)
]


@needs_kernel
@pytest.mark.parametrize("tile", [gemm_kernel.AVX2_TILE, gemm_kernel.AVX512_TILE], ids=["avx2_tile", "avx512_tile"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", TB_CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_transposed_rhs_has_the_bits_of_the_rhs_stored_transposed(case, strided, tile, monkeypatch):
    """x @ w^T through the transposed panel copy == x @ (w^T stored row-major) in place, bit for
    bit (the copy is exact), and ~ the interpreter."""
    if len(case) == 3:
        g = _graph(*case)
        args = _args(case, seed=8, strided=strided)
        lhs_t = False
    else:
        ls, rs = case[0], case[1]
        g = _graph(ls, rs, (((0,), (1,)), ((), ())))
        args = _args((ls, rs), seed=8, strided=strided)
        lhs_t = True
    exe, got, emitted = _run(g, args, monkeypatch, tile=tile)
    assert emitted == 1 and dot.find_blas().sgemm not in exe.llvm_ir
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    w_t = np.ascontiguousarray(args[1].T)
    g_nn = _graph(args[0].shape, w_t.shape, (TA if lhs_t else MM))
    _, nn, emitted_nn = _run(g_nn, [args[0], w_t], monkeypatch, tile=tile)
    assert emitted_nn == 1
    np.testing.assert_array_equal(got, nn)


@needs_kernel
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", CASES + [((64, 300), (64, 48), TA)], ids=lambda c: f"{c[0]}x{c[1]}")
def test_the_copied_panel_has_the_bits_of_b_read_in_place(case, strided, monkeypatch):
    """B's column panel copied to the stack (forced for every product; by default for m >= 256, the
    last case, and for k over one block, the case before) == B read where it is, bit for bit."""
    g = _graph(*case)
    args = _args(case, seed=9, strided=strided)
    m = g.outputs[0].type.shape[0]
    k = case[0][0] if case[2] == TA else case[0][1]
    default = dot.GemmPlan.copies_b_panel
    outs = {}
    for name, rule in (("copied", lambda plan: True), ("direct", lambda plan: False), ("default", default)):
        monkeypatch.setattr(dot.GemmPlan, "copies_b_panel", rule)
        exe, outs[name], emitted = _run(g, args, monkeypatch)
        calls = re.findall(r'call void @"?tp_gemm_f32_8x32_nn"?\(.*, i64 (\d+)\)', exe.llvm_ir)
        assert emitted == 1 and len(calls) == 1
        copies = m >= dot.COPY_PANEL_MIN_ROWS or k > gemm_kernel.GENERIC_PANEL_K
        assert (calls[0] == "1") == (name == "copied" or name == "default" and copies)
    np.testing.assert_array_equal(outs["copied"], outs["direct"])
    np.testing.assert_array_equal(outs["default"], outs["direct"])


@needs_kernel
def test_the_two_tiles_give_the_same_bits(monkeypatch):
    case = ((64, 96), (96, 256), MM)
    g = _graph(*case)
    args = _args(case, seed=4)
    outs = [_run(g, args, monkeypatch, tile=t)[1] for t in (gemm_kernel.AVX2_TILE, gemm_kernel.AVX512_TILE)]
    np.testing.assert_array_equal(outs[0], outs[1])


@needs_kernel
@pytest.mark.parametrize("case, dtype, avx512", [
    (((64, 784), (784, 10), MM), dt.float32, True),      # n = 10
    (((7, 784), (784, 256), MM), dt.float32, True),      # m < 8
    (((1, 784), (784, 256), MM), dt.float32, True),      # m = 1: gemv
    (((0, 784), (784, 256), MM), dt.float32, True),      # empty output: no call
    (((64, 0), (0, 256), MM), dt.float32, True),         # empty contraction: zeros
    (((64, 784), (784, 256), MM), dt.float64, True),     # float64
    (((64, 784), (784, 256), MM), dt.float16, True),     # float16: sgemm on copies
    (((64, 784), (784, 256), MM), dt.float32, False),    # an AVX2 host
], ids=["n10", "m7", "m1", "m0", "k0", "f64", "f16", "avx2_host"])
def test_plans_outside_the_rule_keep_their_path(case, dtype, avx512, monkeypatch):
    g = _graph(*case, dtype)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(s).astype(dtype.np) for s in case[:2]]
    _, got, emitted = _run(g, args, monkeypatch, blas_min=dot.BLAS_MIN_FLOPS, avx512=avx512)
    assert emitted == 0
    want = ir.interpret(g, args)[0]
    tol = {dt.float32: 1e-4, dt.float64: 1e-12, dt.float16: 1e-2}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 10)


@needs_kernel
def test_below_the_threshold_openblas_keeps_it(monkeypatch):
    """64x128 @ 128x128 is under INPLACE_MIN_FLOPS with the real threshold: OpenBLAS; forced to 0:
    in place."""
    case = ((64, 128), (128, 128), MM)
    g = _graph(*case)
    args = _args(case, seed=5)
    exe, got, emitted = _run(g, args, monkeypatch, blas_min=dot.BLAS_MIN_FLOPS, inplace_min=dot.INPLACE_MIN_FLOPS)
    assert emitted == 0 and dot.find_blas().sgemm in exe.llvm_ir
    _, forced, emitted_forced = _run(g, args, monkeypatch, blas_min=dot.BLAS_MIN_FLOPS)
    assert emitted_forced == 1
    np.testing.assert_allclose(forced, got, rtol=1e-4, atol=1e-3)


@needs_kernel
def test_mlp_grad_through_tp_compile(monkeypatch):
    """tp.compile(grad(mlp loss)): the forward x @ W and the backward x^T @ dh run in place (the
    thresholds forced down to this small model), against the same graph interpreted."""
    import tensorplay as tp
    from tensorplay.func import grad

    def loss(ps, x):
        for i, (w, bias) in enumerate(ps):
            x = x @ w + bias
            if i < len(ps) - 1:
                x = tp.relu(x)
        return (x * x).mean()

    rng = np.random.default_rng(6)
    sizes = [24, 32, 48, 16]
    ps = [(tp.from_numpy((rng.standard_normal((a, c)) / np.sqrt(a)).astype(np.float32)),
           tp.from_numpy((0.1 * rng.standard_normal(c)).astype(np.float32))) for a, c in zip(sizes, sizes[1:])]
    x = tp.from_numpy(rng.standard_normal((16, sizes[0])).astype(np.float32))
    low = tp.compile(grad(loss)).lower(ps, x)
    flat = [np.asarray(a.numpy()) for w, bias in ps for a in (w, bias)] + [np.asarray(x.numpy())]
    _, got, emitted = _run(low.graph, flat, monkeypatch, every=True)
    assert emitted >= 5  # x @ W, x^T @ dh and dh @ W^T (n = 16 or more)
    want = ir.interpret(low.graph, flat)
    assert len(got) == len(want) == 6
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-5)


@needs_kernel
def test_the_in_place_gemm_is_on_by_default_and_can_be_turned_off(monkeypatch):
    """Unset (or 1) the rule's products run in place; TENSORPLAY_INPLACE_GEMM=0 keeps them on
    OpenBLAS, with the same values to rounding."""
    g = _graph((64, 784), (784, 256), MM)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((64, 784)).astype(np.float32), rng.standard_normal((784, 256)).astype(np.float32)]
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: True)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    emitted = []
    real = dot.emit_dot_inplace
    monkeypatch.setattr(dot, "emit_dot_inplace", lambda *a: (emitted.append(a[1]), real(*a)))
    for value, count in ((None, 1), ("", 2), ("1", 3), ("0", 3), (" 0 ", 3)):
        if value is None:
            monkeypatch.delenv(dot.INPLACE_GEMM_ENV, raising=False)
        else:
            monkeypatch.setenv(dot.INPLACE_GEMM_ENV, value)
        exe, (out,) = run_fresh(g, args)
        assert len(emitted) == count, value
        assert ("tp_gemm_f32_8x32_nn" in exe.llvm_ir) == (value not in ("0", " 0 "))
        assert (dot.find_blas().sgemm in exe.llvm_ir) == (value in ("0", " 0 "))
        np.testing.assert_allclose(out, args[0].astype(np.float64) @ args[1], rtol=1e-4, atol=1e-3)

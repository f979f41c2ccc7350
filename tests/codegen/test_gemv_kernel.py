"""The generated matrix-vector product (`gemv_kernel`, taken by `dot.emit_dot_blas` for the axpy-form
gemv calls): which calls take it, its values vs the interpreter and float64 numpy, bit for bit vs
the axpy loop nest, in either vector width, and the calls that must stay on cblas gemv."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import ir
from tensorplay.codegen import dot, gemm_kernel, gemv_kernel
from tensorplay.codegen import irutil as u
from tensorplay.ir import dtypes as dt
from codegen_testutil import dot_graph, run_fresh

needs_kernel = pytest.mark.skipif(dot.find_blas() is None or not dot.find_blas().sgemv
                                  or not gemm_kernel.host_supported(),
                                  reason="no BLAS gemv plans here, or the host has no AVX + FMA")

VEC = (((0,), (0,)), ((), ()))   # v @ w (v 1-D: contracted with w's rows)
MM = (((1,), (0,)), ((), ()))    # x @ w
MV = (((1,), (0,)), ((), ()))    # w @ v (v 1-D): the dot form, rows of w contracted

# (lhs shape, rhs shape, (contract, batch), whether the loop nest has the same fma chain)
TAKEN = [
    ((256,), (256, 256), VEC, True),       # linearize's jvp_fn of the R^256 MLP: t @ W
    ((1, 256), (256, 144), MM, True),      # m = 1 of a 2-D product; 144 = 9 x 16 = 18 x 8 lanes
    ((96,), (96, 400), VEC, True),         # 400 columns: blocks of 16 + 9 zmm, or 4 x 12 + 2 ymm
    ((3, 256), (3, 256, 128), (((1,), (1,)), ((0,), (0,))), True),   # a loop of 3 gemv calls
    ((256, 144), (256,), VEC, False),      # A^T v (n = 1): the matrix's rows are the lhs's
    ((256, 3), (3, 256, 128), (((0,), (1,)), ((1,), (0,))), True),   # x strided by 3 (incx) per batch
    ((3, 256), (256, 3, 128), (((1,), (0,)), ((0,), (1,))), True),   # matrix rows 384 apart (ld > cols)
]


def _graph(ls, rs, spec, dtype=dt.float32):
    return dot_graph(ls, rs, *spec, dtype=dtype, name="mv")


def _args(ls, rs, seed=0, strided=False, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if strided:  # every argument a non-contiguous view
        return [(rng.standard_normal(s + (2,)) * 3).astype(dtype)[..., 1] for s in (ls, rs)]
    return [(rng.standard_normal(s) * 3).astype(dtype) for s in (ls, rs)]


def _run(g, args, monkeypatch, *, blas_min=0, avx512=None):
    """Compile and run `g` (BLAS threshold `blas_min`; the host's AVX-512 flag forced when given):
    (executable, result, kernels emitted by `gemv_kernel`)."""
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", blas_min)
    if avx512 is not None:
        monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: avx512)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    emitted = []
    real = gemv_kernel.emit_gemv
    monkeypatch.setattr(gemv_kernel, "emit_gemv", lambda *a: (emitted.append(a[6]), real(*a)))
    try:
        exe, outs = run_fresh(g, args)
    finally:
        monkeypatch.undo()
    return exe, outs[0], len(emitted)


def test_the_rule_is_dtype_form_and_width_only():
    assert gemv_kernel.applies(u.F32, True, 256, 256, 1, host_fma=True)
    assert gemv_kernel.applies(u.F64, True, 4096, 8, 1, host_fma=True)
    assert not gemv_kernel.applies(u.F32, False, 256, 256, 1, host_fma=True)   # W @ v: cblas
    assert not gemv_kernel.applies(u.F32, True, 256, 256, 2, host_fma=True)    # a strided y
    assert not gemv_kernel.applies(u.F32, True, 256, 0, 1, host_fma=True)
    assert not gemv_kernel.applies(u.F32, True, 256, 256, 1, host_fma=False)   # llvm.fma would be a call
    assert not gemv_kernel.applies(u.I32, True, 256, 256, 1, host_fma=True)
    assert not gemv_kernel.applies(u.F32, True, 64, 48, 1, host_fma=True)      # below MIN_ELEMENTS
    assert gemv_kernel.applies(u.F32, True, 128, 256, 1, host_fma=True)
    assert gemv_kernel.lanes(u.F32, avx512=True) == 16 and gemv_kernel.lanes(u.F32, avx512=False) == 8


@needs_kernel
@pytest.mark.parametrize("avx512", [None, False, True], ids=["host", "ymm", "zmm"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", TAKEN, ids=lambda c: f"{c[0]}x{c[1]}")
def test_matches_interpreter_numpy_and_the_loop_nest(case, strided, avx512, monkeypatch):
    """Values vs the interpreter and float64 numpy; bit for bit vs the axpy loop nest (no BLAS
    plan) where that computes the same chain; the caller's arrays untouched. A 512-bit vector on
    an AVX2 host is split in two: slower, the same values."""
    ls, rs, spec, same_chain = case
    g = _graph(ls, rs, spec)
    args = _args(ls, rs, seed=3, strided=strided)
    exe, got, emitted = _run(g, args, monkeypatch, avx512=avx512)
    assert emitted == 1
    assert dot.find_blas().sgemv not in exe.llvm_ir
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    (lc, rc), (lb, rb) = spec
    oracle = np.einsum(_einsum(len(ls), len(rs), lc, rc, lb, rb), args[0].astype(np.float64),
                       args[1].astype(np.float64))
    np.testing.assert_allclose(got, oracle, rtol=1e-4, atol=1e-3)
    if same_chain:
        _, loops, emitted_loops = _run(g, args, monkeypatch, blas_min=float("inf"))
        assert emitted_loops == 0
        np.testing.assert_array_equal(got, loops)
    for a, fresh in zip(args, _args(ls, rs, seed=3, strided=strided)):
        np.testing.assert_array_equal(a, fresh)


def _einsum(nl, nr, lc, rc, lb, rb):
    letters = iter("abcdefghij")
    lhs, rhs = [None] * nl, [None] * nr
    for a, b in zip(lb, rb):
        lhs[a] = rhs[b] = next(letters)
    for a, b in zip(lc, rc):
        lhs[a] = rhs[b] = next(letters)
    for i in range(nl):
        lhs[i] = lhs[i] or next(letters)
    for i in range(nr):
        rhs[i] = rhs[i] or next(letters)
    out = [lhs[a] for a in lb] + [c for i, c in enumerate(lhs) if i not in lb and i not in lc] \
        + [c for i, c in enumerate(rhs) if i not in rb and i not in rc]
    return f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}"


@needs_kernel
def test_float64(monkeypatch):
    g = _graph((256,), (256, 128), VEC, dt.float64)
    args = _args((256,), (256, 128), seed=5, dtype=np.float64)
    exe, got, emitted = _run(g, args, monkeypatch)
    assert emitted == 1 and dot.find_blas().dgemv not in exe.llvm_ir
    np.testing.assert_allclose(got, args[0] @ args[1], rtol=1e-12, atol=1e-10)
    _, loops, _ = _run(g, args, monkeypatch, blas_min=float("inf"))
    np.testing.assert_array_equal(got, loops)


@needs_kernel
@pytest.mark.parametrize("case", [
    ((256, 256), (256,), MV, "sgemv"),       # W @ v: the dot form stays on cblas
    ((256,), (256, 260), VEC, "sgemv"),      # 260 columns: not whole vectors of 8 or 16 floats
    ((16, 64), (64, 48), MM, "sgemm"),       # m = 16: a gemm, not a gemv
    ((64,), (64, 48), VEC, "sgemv"),         # below MIN_ELEMENTS
], ids=["dot_form", "ragged_columns", "gemm", "small"])
def test_calls_that_stay_on_blas(case, monkeypatch):
    ls, rs, spec, symbol = case
    g = _graph(ls, rs, spec)
    args = _args(ls, rs, seed=7)
    exe, got, emitted = _run(g, args, monkeypatch)
    assert emitted == 0
    assert getattr(dot.find_blas(), symbol) in exe.llvm_ir
    np.testing.assert_allclose(got, ir.interpret(g, args)[0], rtol=1e-4, atol=1e-3)


@needs_kernel
def test_float16_stays_on_the_widened_blas_path(monkeypatch):
    g = _graph((256,), (256, 128), VEC, dt.float16)
    args = _args((256,), (256, 128), seed=2, dtype=np.float16)
    exe, got, emitted = _run(g, args, monkeypatch)
    assert emitted == 0 and dot.find_blas().sgemv in exe.llvm_ir
    np.testing.assert_allclose(got.astype(np.float64), args[0].astype(np.float64) @ args[1].astype(np.float64),
                               rtol=2e-2, atol=0.5)


def test_empty_rows(monkeypatch):
    """k = 0: zeros, whatever path (no BLAS plan for an empty contraction)."""
    g = _graph((0,), (0, 32), VEC)
    _, got, _ = _run(g, _args((0,), (0, 32)), monkeypatch)
    np.testing.assert_array_equal(got, np.zeros(32, np.float32))

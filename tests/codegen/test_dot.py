"""dot_general: the BLAS path and the generated loop nests, every operand layout, vs the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import dot
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

# (lhs shape, rhs shape, contract, batch)
CASES = [
    ((64, 48), (48, 40), ((1,), (0,)), ((), ())),          # A @ B
    ((48, 64), (48, 40), ((0,), (0,)), ((), ())),          # A^T @ B
    ((64, 48), (40, 48), ((1,), (1,)), ((), ())),          # A @ B^T
    ((48, 64), (40, 48), ((0,), (1,)), ((), ())),          # A^T @ B^T
    ((5, 33, 40), (5, 40, 36), ((2,), (1,)), ((0,), (0,))),  # batched
    ((33, 5, 40), (5, 40, 36), ((2,), (1,)), ((1,), (0,))),  # batch axis not leading: strided gemm
    ((40, 33), (5, 40, 36), ((0,), (1,)), ((), ())),        # rhs free axes split by the contraction
    ((64, 5, 40), (5, 40, 10), ((2,), (1,)), ((1,), (0,))),  # vmap of a layer: lda = 5*40
    ((5, 40, 33), (36, 5, 40), ((1,), (2,)), ((0,), (1,))),  # both transposed, batch inside rhs
    ((3, 40, 7), (40, 9), ((1,), (0,)), ((), ())),          # lhs free axes split: one peeled into a loop
    ((70, 80), (80,), ((1,), (0,)), ((), ())),             # matrix-vector
    ((80,), (80, 70), ((0,), (0,)), ((), ())),             # vector-matrix
    ((6, 7, 8), (8, 7, 9), ((1, 2), (1, 0)), ((), ())),    # two contracting axes
    ((3, 0), (0, 4), ((1,), (0,)), ((), ())),              # empty contraction: zeros
    ((0, 5), (5, 4), ((1,), (0,)), ((), ())),              # empty output
]


def _graph(ls, rs, contract, batch, dtype):
    b = ir.GraphBuilder("dot")
    x = b.add_input(TensorType(ls, dtype))
    y = b.add_input(TensorType(rs, dtype))
    return b.build([b.dot_general(x, y, contract=contract, batch=batch)])


@pytest.mark.parametrize("use_blas", [True, False], ids=["blas", "loops"])
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.int32, dt.int64], ids=lambda d: d.short)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_dot_matches_interpreter(case, dtype, use_blas, monkeypatch):
    if use_blas and (dot.find_blas() is None or not dtype.is_floating_point):
        pytest.skip("no BLAS for this dtype")
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 0 if use_blas else float("inf"))
    codegen.clear_cache()
    g = _graph(*case, dtype)
    rng = np.random.default_rng(0)
    args = [(rng.standard_normal(s) * 3).astype(dtype.np) for s in case[:2]]
    got = codegen.compile_graph(g)(*args)[0]
    want = ir.interpret(g, args)[0]
    if dtype.is_floating_point:
        tol = 1e-4 if dtype is dt.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    else:
        np.testing.assert_array_equal(got, want)
    codegen.clear_cache()


STRIDED = [c for c in CASES if 0 not in c[0] + c[1] and len(c[0]) > 1 and len(c[1]) > 1
           and c[2] != ((1, 2), (1, 0))]  # that one's contraction order differs between the operands


@pytest.mark.parametrize("case", STRIDED, ids=lambda c: f"{c[0]}x{c[1]}")
def test_strided_layouts_take_the_blas_path(case, monkeypatch):
    """Batch axes anywhere and free axes split by the contraction go to gemm (a loop of calls)."""
    if dot.find_blas() is None:
        pytest.skip("numpy has no bundled OpenBLAS here")
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 0)
    g = _graph(*case, dt.float32)
    assert dot.blas_plan(g.nodes[0]) is not None, case


def test_blas_is_chosen_for_large_float_matmuls():
    if dot.find_blas() is None:
        pytest.skip("numpy has no bundled OpenBLAS here")
    g = _graph((64, 128), (128, 128), ((1,), (0,)), ((), ()), dt.float32)  # (under the in-place gemm's range)
    plan = dot.blas_plan(g.nodes[0])
    assert (plan.trans_a, plan.trans_b, plan.m, plan.n, plan.k, plan.loops) == (False, False, 64, 128, 128, ())
    assert dot.find_blas().sgemm in codegen.compile_graph(g).llvm_ir
    small = _graph((4, 4), (4, 4), ((1,), (0,)), ((), ()), dt.float32)
    assert dot.blas_plan(small.nodes[0]) is None


# m or n of the gemm is 1: one cblas gemv per call (transposed or not, vector strides from the layout)
GEMV_CASES = [
    ((1, 48), (48, 40), ((1,), (0,)), ((), ())),            # row vector @ B: m = 1
    ((48, 1), (48, 40), ((0,), (0,)), ((), ())),            # A^T with m = 1: x strided by lda
    ((1, 48), (40, 48), ((1,), (1,)), ((), ())),            # B^T, m = 1
    ((48, 1), (40, 48), ((0,), (1,)), ((), ())),            # both transposed, m = 1
    ((64, 48), (48, 1), ((1,), (0,)), ((), ())),            # n = 1: x strided by ldb, y by ldc
    ((48, 64), (48, 1), ((0,), (0,)), ((), ())),            # A^T, n = 1
    ((64, 48), (1, 48), ((1,), (1,)), ((), ())),            # B^T, n = 1
    ((1, 48), (48, 1), ((1,), (0,)), ((), ())),             # m = n = 1
    ((300,), (300,), ((0,), (0,)), ((), ())),               # vector . vector: a 0-d result
    ((1, 1), (1, 40), ((1,), (0,)), ((), ())),              # k = 1
    ((40, 1), (1, 1), ((1,), (0,)), ((), ())),              # k = 1, n = 1
    ((70, 80), (80,), ((1,), (0,)), ((), ())),              # matrix-vector
    ((80,), (80, 70), ((0,), (0,)), ((), ())),              # vector-matrix
    ((80,), (70, 80), ((0,), (1,)), ((), ())),              # vector-matrix^T
    ((5, 40), (5, 40, 36), ((1,), (1,)), ((0,), (0,))),     # vmap of x @ W: a loop of gemv calls
    ((5, 33, 40), (5, 40), ((2,), (1,)), ((0,), (0,))),     # vmap of A @ v
    ((40, 5), (36, 5, 40), ((0,), (2,)), ((1,), (1,))),     # batch axes inside: x strided by lda
    ((5, 33, 40), (40, 5), ((2,), (0,)), ((0,), (1,))),     # n = 1 per batch: x strided by ldb
    ((1, 40), (1, 40, 36), ((1,), (1,)), ((0,), (0,))),     # size-1 batch
    ((40, 1), (5, 40, 36), ((0,), (1,)), ((), ())),         # rhs free axes split: m = 1 per loop point
    ((0, 40), (40, 1), ((1,), (0,)), ((), ())),             # empty output
    ((1, 0), (0, 7), ((1,), (0,)), ((), ())),               # empty contraction: zeros
]


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
@pytest.mark.parametrize("case", GEMV_CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_matrix_vector_products_call_gemv(case, dtype, monkeypatch):
    """A gemm plan with m or n = 1 runs as gemv; values vs the interpreter and a float64 einsum
    of the same contraction, including non-contiguous (strided view) arguments."""
    if dot.find_blas() is None or not dot.find_blas().sgemv:
        pytest.skip("numpy has no bundled OpenBLAS with gemv here")
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 0)
    codegen.clear_cache()
    g = _graph(*case, dtype)
    rng = np.random.default_rng(1)
    # every argument is a strided view (every other element of a larger array)
    args = [(rng.standard_normal(s + (2,)) * 3).astype(dtype.np)[..., 0] for s in case[:2]]
    assert not any(a.flags.c_contiguous for a in args if a.size > 1)
    exe = codegen.compile_graph(g)
    got = exe(*args)[0]
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    tol = 1e-4 if dtype is dt.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    assert got.shape == want.shape and got.dtype == want.dtype
    plan = dot.blas_plan(g.nodes[0])
    if plan is None:  # empty: no call at all
        assert 0 in case[0] + case[1]
        return
    blas = dot.find_blas()
    gemv, gemm = (blas.dgemv, blas.dgemm) if dtype is dt.float64 else (blas.sgemv, blas.sgemm)
    assert gemv in exe.llvm_ir and gemm not in exe.llvm_ir, case


def test_gemv_is_chosen_only_when_m_or_n_is_one():
    plan = dot.GemmPlan((), 8, 9, 10, False, 10, False, 9, 9)
    assert plan.gemv() is None
    row = dot.GemmPlan((), 1, 9, 10, True, 1, False, 9, 9)   # x = A[0, :] stored as a column
    assert row.gemv() == dot.GemvCall(1, True, 10, 9, 9, 0, 1, 1)
    col = dot.GemmPlan((), 8, 1, 10, False, 10, False, 3, 5)  # B's column has stride ldb
    assert col.gemv() == dot.GemvCall(0, False, 8, 10, 10, 1, 3, 5)


@pytest.mark.parametrize("case", [GEMV_CASES[0], GEMV_CASES[5], GEMV_CASES[15]], ids=lambda c: f"{c[0]}x{c[1]}")
def test_float16_matrix_vector_products_call_sgemv_on_float32_copies(case, monkeypatch):
    """float16 mat-vecs run sgemv on float32 copies (exact products), then round once: equal to the
    interpreter's float32 contraction rounded to float16, within one float16 ulp."""
    if dot.find_blas() is None or not dot.find_blas().sgemv:
        pytest.skip("numpy has no bundled OpenBLAS with gemv here")
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 0)
    codegen.clear_cache()
    g = _graph(*case, dt.float16)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(s).astype(np.float16) for s in case[:2]]
    exe = codegen.compile_graph(g)
    got = exe(*args)[0]
    assert got.dtype == np.float16 and dot.find_blas().sgemv in exe.llvm_ir
    want = ir.interpret(_graph(*case, dt.float32), [a.astype(np.float32) for a in args])[0]
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)
    codegen.clear_cache()

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
    g = _graph((128, 128), (128, 128), ((1,), (0,)), ((), ()), dt.float32)
    plan = dot.blas_plan(g.nodes[0])
    assert (plan.trans_a, plan.trans_b, plan.m, plan.n, plan.k, plan.loops) == (False, False, 128, 128, 128, ())
    assert dot.find_blas().sgemm in codegen.compile_graph(g).llvm_ir
    small = _graph((4, 4), (4, 4), ((1,), (0,)), ((), ()), dt.float32)
    assert dot.blas_plan(small.nodes[0]) is None

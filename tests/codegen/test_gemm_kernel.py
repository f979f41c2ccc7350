"""The generated register-blocked gemm (`codegen/gemm_kernel.py`): which plans take it, and its
values vs the interpreter, vs the axpy loop nest (the same fma chain: equal bits) and vs itself
at other tile positions (position independence)."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import dot, gemm_kernel
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

needs_kernel = pytest.mark.skipif(dot.find_blas() is None or not gemm_kernel.host_supported(),
                                  reason="no BLAS plans here, or the host has no AVX + FMA")

# (lhs shape, rhs shape, contract, batch): the lhs has no batch axis and is shared by every call
CASES = [
    ((64, 784), (10, 784, 128), ((1,), (1,)), ((), ())),   # the ensemble's first layer
    ((12, 9), (3, 9, 16), ((1,), (1,)), ((), ())),          # m = two full tiles, one column panel
    ((13, 7), (2, 7, 32), ((1,), (1,)), ((), ())),          # m remainder 1
    ((17, 2), (3, 2, 48), ((1,), (1,)), ((), ())),          # k = 2 (k = 1 folds the models into n), m remainder 5
    ((9, 20), (2, 9, 16), ((0,), (1,)), ((), ())),          # A^T (lhs k-major)
    ((14, 11), (2, 3, 11, 16), ((1,), (2,)), ((), ())),     # two loop axes
]


def _graph(ls, rs, contract, batch, dtype=dt.float32):
    b = ir.GraphBuilder("dot")
    x = b.add_input(TensorType(ls, dtype))
    y = b.add_input(TensorType(rs, dtype))
    return b.build([b.dot_general(x, y, contract=contract, batch=batch)])


def _args(case, seed=0, strided=False):
    rng = np.random.default_rng(seed)
    if strided:  # every argument a non-contiguous view (every other element of a larger array)
        return [(rng.standard_normal(s + (2,)) * 3).astype(np.float32)[..., 1] for s in case[:2]]
    return [(rng.standard_normal(s) * 3).astype(np.float32) for s in case[:2]]


def _run(g, args, min_flops, monkeypatch):
    """Compile and run `g` with this BLAS threshold; also return how many dot_generals were
    emitted as the generated kernel."""
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", min_flops)
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")  # emit every time (the spy below counts)
    emitted = []
    real = dot.emit_dot_generated
    monkeypatch.setattr(dot, "emit_dot_generated", lambda *a: (emitted.append(a[1]), real(*a)))
    codegen.clear_cache()
    exe = codegen.compile_graph(g)
    out = exe(*args)[0]
    codegen.clear_cache()
    monkeypatch.setattr(dot, "emit_dot_generated", real)
    return exe, out, len(emitted)


@needs_kernel
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_generated_kernel_matches_interpreter(case, strided, monkeypatch):
    g = _graph(*case)
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 0)
    plan = dot.blas_plan(g.nodes[0])
    assert plan is not None and plan.generated_kernel(dt.float32), plan
    args = _args(case, strided=strided)
    assert not strided or not any(a.flags.c_contiguous for a in args)
    exe, got, emitted = _run(g, args, 0, monkeypatch)
    blas = dot.find_blas()
    assert emitted == 1 and blas.sgemm not in exe.llvm_ir and blas.sgemv not in exe.llvm_ir
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    exact = np.einsum(_subscripts(case), *[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got, exact, rtol=1e-4, atol=1e-3)


def _subscripts(case):
    """einsum subscripts of a CASES entry: lhs free axis m, then the rhs's free axes."""
    ls, rs, ((lc,), (rc,)), _ = case
    lhs = "km" if lc == 0 else "mk"
    rhs = {3: "bkn", 4: "cdkn"}[len(rs)]
    return f"{lhs},{rhs}->m{rhs.replace('k', '')}"


@needs_kernel
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_generated_kernel_has_the_bits_of_the_axpy_loop_nest(case, monkeypatch):
    """Each element is one fma chain over k from 0, like the loop nest's axpy form."""
    g = _graph(*case)
    args = _args(case, seed=3)
    _, got, emitted = _run(g, args, 0, monkeypatch)
    _, loops, emitted_loops = _run(g, args, float("inf"), monkeypatch)  # no gemm plan: the loop nest
    assert (emitted, emitted_loops) == (1, 0)
    np.testing.assert_array_equal(got, loops)


@needs_kernel
@pytest.mark.parametrize("case", CASES[1:], ids=lambda c: f"{c[0]}x{c[1]}")
def test_generated_kernel_is_position_independent(case, monkeypatch):
    """Rows computed in another tile position (m cut to a different remainder of the 6-row tile)
    have the same bits: the kernel never changes the order of an element's sum."""
    ls, rs, contract, batch = case
    g = _graph(*case)
    x, w = _args(case, seed=5)
    _, full, emitted = _run(g, [x, w], 0, monkeypatch)
    row_axis = 1 - contract[0][0]  # the lhs's free axis
    cut = 13 if ls[row_axis] > 13 else 12
    rows = np.arange(ls[row_axis] - cut, ls[row_axis])  # the last `cut` rows: other tile offsets
    sub = np.take(x, rows, axis=row_axis)
    g_sub = _graph(sub.shape, rs, contract, batch)
    assert dot.blas_plan(g_sub.nodes[0]).generated_kernel(dt.float32)
    _, part, emitted_sub = _run(g_sub, [sub, w], 0, monkeypatch)
    assert (emitted, emitted_sub) == (1, 1)
    np.testing.assert_array_equal(part, np.take(full, rows, axis=0))


def test_the_rule_is_shapes_dtype_and_host_only():
    ens = dot.GemmPlan(((10, 0, 100352, 128),), 64, 128, 784, False, 784, False, 128, 1280)
    assert ens.generated_kernel(dt.float32, host_fma=True)
    assert not ens.generated_kernel(dt.float32, host_fma=False)  # no FMA: OpenBLAS
    assert not ens.generated_kernel(dt.float64, host_fma=True)
    assert not ens.generated_kernel(dt.float16, host_fma=True)
    single = dot.GemmPlan((), 64, 128, 784, False, 784, False, 128, 128)  # nothing to pack once
    assert not single.generated_kernel(dt.float32, host_fma=True)
    own_lhs = dot.GemmPlan(((10, 50176, 100352, 8192),), 64, 128, 784, False, 784, False, 128, 128)
    assert not own_lhs.generated_kernel(dt.float32, host_fma=True)  # every call its own A
    ragged = dot.GemmPlan(((10, 0, 7840, 10),), 64, 10, 784, False, 784, False, 10, 100)
    assert not ragged.generated_kernel(dt.float32, host_fma=True)  # n not a multiple of 16
    rhs_t = dot.GemmPlan(((10, 0, 100352, 128),), 64, 128, 784, False, 784, True, 784, 1280)
    assert not rhs_t.generated_kernel(dt.float32, host_fma=True)
    thin = dot.GemmPlan(((10, 0, 100352, 128),), 11, 128, 784, False, 784, False, 128, 1280)
    assert not thin.generated_kernel(dt.float32, host_fma=True)  # m < 12
    huge = dot.GemmPlan(((2, 0, 1 << 22, 4096),), 64, 4096, 1024, False, 1024, False, 4096, 8192)
    assert not huge.generated_kernel(dt.float32, host_fma=True)  # packed B over 1 MB


@needs_kernel
@pytest.mark.parametrize("case, dtype", [
    (((1, 784), (10, 784, 128), ((1,), (1,)), ((), ())), dt.float32),    # m = 1: gemv
    (((64, 784), (10, 784, 10), ((1,), (1,)), ((), ())), dt.float32),    # n = 10: OpenBLAS
    (((64, 784), (2, 32, 784), ((1,), (2,)), ((), ())), dt.float32),     # B^T: one gemm, n = 64
    (((0, 784), (10, 784, 128), ((1,), (1,)), ((), ())), dt.float32),    # empty output: no call
    (((64, 0), (10, 0, 128), ((1,), (1,)), ((), ())), dt.float32),       # empty contraction: zeros
    (((64, 784), (10, 784, 128), ((1,), (1,)), ((), ())), dt.float64),   # float64: OpenBLAS
    (((64, 784), (10, 784, 128), ((1,), (1,)), ((), ())), dt.float16),   # float16: sgemm on copies
], ids=["m1", "n10", "rhs_t", "m0", "k0", "f64", "f16"])
def test_plans_outside_the_rule_keep_their_path(case, dtype, monkeypatch):
    g = _graph(*case, dtype)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(s).astype(dtype.np) for s in case[:2]]
    _, got, emitted = _run(g, args, dot.BLAS_MIN_FLOPS, monkeypatch)
    assert emitted == 0
    want = ir.interpret(g, args)[0]
    tol = {dt.float32: 1e-4, dt.float64: 1e-12, dt.float16: 1e-2}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 10)


@needs_kernel
def test_vmapped_ensemble_through_tp_compile(monkeypatch):
    """vmap over stacked weights with a shared batch (in_dims=(0, None)) takes the kernel; the
    result matches numpy by hand, model by model."""
    import tensorplay as tp

    rng = np.random.default_rng(4)
    w1 = rng.standard_normal((3, 40, 32)).astype(np.float32) * 0.2
    b1 = rng.standard_normal((3, 32)).astype(np.float32)
    w2 = rng.standard_normal((3, 32, 5)).astype(np.float32) * 0.2
    x = rng.standard_normal((20, 40)).astype(np.float32)

    def mlp(ps, x):
        (w1, b1), (w2,) = ps
        return tp.relu(x @ w1 + b1) @ w2

    emitted = []
    real = dot.emit_dot_generated
    monkeypatch.setattr(dot, "emit_dot_generated", lambda *a: (emitted.append(a[1]), real(*a)))
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    codegen.clear_cache()
    f = tp.compile(tp.func.vmap(mlp, in_dims=(0, None)))
    got = np.asarray(f([(tp.from_numpy(w1), tp.from_numpy(b1)), (tp.from_numpy(w2),)], tp.from_numpy(x)))
    want = np.stack([np.maximum(x @ w1[i] + b1[i], 0) @ w2[i] for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert len(emitted) == 1  # the first layer (the second, 20x32x5 per model, is below BLAS_MIN_FLOPS)
    codegen.clear_cache()


def test_docstring_examples_run():
    import doctest

    for module, least in ((gemm_kernel, 3), (dot, 2)):
        result = doctest.testmod(module)
        assert result.attempted >= least and result.failed == 0, module.__name__


# Cases where both tiles apply (n a multiple of 32, m >= 16): m remainders 1 and 7 of the 8-row tile,
# A^T, two loop axes, k = 3.
TILE_CASES = [
    ((17, 5), (2, 5, 64), ((1,), (1,)), ((), ())),
    ((23, 9), (3, 9, 32), ((1,), (1,)), ((), ())),
    ((3, 16), (2, 3, 96), ((0,), (1,)), ((), ())),
    ((64, 40), (2, 2, 40, 128), ((1,), (2,)), ((), ())),
]


def _forced(monkeypatch, avx512):
    """Force the host feature query of the tile choice; record the tiles emitted."""
    monkeypatch.setattr(gemm_kernel, "host_avx512", lambda: avx512)
    chosen = []
    real = gemm_kernel.choose_tile
    monkeypatch.setattr(gemm_kernel, "choose_tile", lambda m, n: chosen.append(real(m, n)) or chosen[-1])
    return chosen


@needs_kernel
@pytest.mark.parametrize("avx512", [False, True], ids=["avx2_tile", "avx512_tile"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", TILE_CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_each_host_tile_matches_interpreter_and_loop_nest(case, strided, avx512, monkeypatch):
    """Each tile, forced whatever this host has (a 512-bit vector is split in two on an AVX2 host:
    slower, same values), against the interpreter and bit for bit against the axpy loop nest."""
    g = _graph(*case)
    args = _args(case, seed=7, strided=strided)
    chosen = _forced(monkeypatch, avx512)
    exe, got, emitted = _run(g, args, 0, monkeypatch)
    want_tile = gemm_kernel.AVX512_TILE if avx512 else gemm_kernel.AVX2_TILE
    assert emitted == 1 and chosen == [want_tile]
    assert ("llvm.fma.v16f32" in exe.llvm_ir) == avx512
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    _, loops, emitted_loops = _run(g, args, float("inf"), monkeypatch)
    assert emitted_loops == 0
    np.testing.assert_array_equal(got, loops)


@needs_kernel
def test_the_two_tiles_give_the_same_bits(monkeypatch):
    case = ((64, 784), (3, 784, 128), ((1,), (1,)), ((), ()))
    g = _graph(*case)
    args = _args(case, seed=8)
    outs = []
    for avx512 in (False, True):
        chosen = _forced(monkeypatch, avx512)
        outs.append(_run(g, args, 0, monkeypatch)[1])
        assert chosen == [gemm_kernel.AVX512_TILE if avx512 else gemm_kernel.AVX2_TILE]
    np.testing.assert_array_equal(outs[0], outs[1])


def test_tile_choice_is_host_and_shape_only():
    wide, narrow = gemm_kernel.AVX512_TILE, gemm_kernel.AVX2_TILE
    assert gemm_kernel.choose_tile(64, 128, avx512=True) == wide
    assert gemm_kernel.choose_tile(64, 128, avx512=False) == narrow
    assert gemm_kernel.choose_tile(64, 48, avx512=True) == narrow   # n not a multiple of 32
    assert gemm_kernel.choose_tile(15, 64, avx512=True) == narrow   # m < two 8-row panels
    assert gemm_kernel.choose_tile(16, 64, avx512=True) == wide
    # packed A fits the rule's bound for either tile (m = 25: 30 rows of the 6-row tile, 32 of the 8-row one)
    assert gemm_kernel.lhs_panel_elements(25, 10, wide) == 320
    assert gemm_kernel.lhs_panel_elements(25, 10, narrow) == 300

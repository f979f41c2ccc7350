"""Small products as register tiles (`dot.tile_plan`, `gemm_kernel.emit_small_gemm`): which
dot_generals take them, their values vs the interpreter and a float64 einsum, and their bits vs
the loop nest they replace (every element is the same in-order fma chain)."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import dot
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

# (lhs shape, rhs shape, contract, batch)
CASES = {
    "ensemble_layer2": ((32, 8, 64), (8, 64, 10), ((2,), (1,)), ((1,), (0,))),   # batch axis inside the lhs
    "ensemble_grad_w2": ((32, 8, 64), (8, 32, 10), ((0,), (1,)), ((1,), (0,))),  # A^T with batch inside
    "matmul_7x5x3": ((7, 5), (5, 3), ((1,), (0,)), ((), ())),
    "full_tiles_12x4x32": ((12, 4), (4, 32), ((1,), (0,)), ((), ())),
    "remainders_13x9x41": ((13, 9), (9, 41), ((1,), (0,)), ((), ())),
    "row_1x9x17": ((1, 9), (9, 17), ((1,), (0,)), ((), ())),
    "vector_lhs_9x17": ((9,), (9, 17), ((0,), (0,)), ((), ())),
    "matvec_k3": ((13, 3), (3,), ((1,), (0,)), ((), ())),                      # dot form, k unrolled away
    "dot_form_k4_packed_b": ((11, 4), (20, 4), ((1,), (1,)), ((), ())),         # B's columns strided: packed
    "outer_product": ((6,), (33,), ((), ()), ((), ())),                         # k = 1 (no contraction)
    "k1_axis": ((6, 1), (1, 33), ((1,), (0,)), ((), ())),
    "unit_axes": ((1, 8, 1, 5), (5, 1, 24), ((3,), (0,)), ((), ())),
    "free_axes_merge": ((2, 3, 4), (4, 5, 6), ((2,), (0,)), ((), ())),          # m = 6, n = 30
    "free_axes_split": ((4, 3, 5, 6), (3, 6, 7), ((3,), (1,)), ((1,), (0,))),   # lhs free (0, 2): looped
    "rhs_batch_inside": ((3, 4, 5), (5, 3, 17), ((2,), (0,)), ((0,), (1,))),
    "two_contracted_axes": ((5, 2, 3), (2, 3, 19), ((1, 2), (0, 1)), ((), ())),
    "long_k": ((6, 70), (70, 24), ((1,), (0,)), ((), ())),
    "batched_4x(5x3x2)": ((4, 5, 3), (4, 3, 2), ((2,), (1,)), ((0,), (0,))),
    # fewer rows than a tile: wider tiles (12 accumulators), column blocks of 96 / 48 / 32 floats
    "row_1x20x200": ((1, 20), (20, 200), ((1,), (0,)), ((), ())),
    "rows_2x7x100": ((2, 7), (7, 100), ((1,), (0,)), ((), ())),
    "rows_4x5x50": ((4, 5), (5, 50), ((1,), (0,)), ((), ())),
    "packed_rows_3x4x60": ((3, 4), (60, 4), ((1,), (1,)), ((), ())),
}
# the loop nest's dot form (rhs contracted on its innermost axis) with k loops of at most 4: the
# chain, as tiles with B transposed into a panel
DOT_FORM = {
    "ensemble_like_k4": ((8, 32, 4), (8, 64, 4), ((2,), (2,)), ((0,), (0,))),
    "linear_x_WT_k3": ((5, 3), (19, 3), ((1,), (1,)), ((), ())),
    "two_k_axes_2x3": ((2, 2, 3), (37, 2, 3), ((1, 2), (1, 2)), ((), ())),
    "wide_n_40": ((7, 2), (40, 2), ((1,), (1,)), ((), ())),
    "m1": ((1, 4), (17, 4), ((1,), (1,)), ((), ())),
}
EMPTY = {
    "m0": ((0, 5), (5, 3), ((1,), (0,)), ((), ())),
    "n0": ((4, 5), (5, 0), ((1,), (0,)), ((), ())),
    "k0": ((4, 0), (0, 3), ((1,), (0,)), ((), ())),
    "batch0": ((0, 4, 5), (0, 5, 3), ((2,), (1,)), ((0,), (0,))),
}
DTYPES = [dt.float32, dt.float64]


def _graph(case, dtype):
    ls, rs, contract, batch = case
    b = ir.GraphBuilder("dot")
    x = b.add_input(TensorType(ls, dtype))
    y = b.add_input(TensorType(rs, dtype))
    return b.build([b.dot_general(x, y, contract=contract, batch=batch)])


def _args(case, dtype, seed=0, strided=False):
    rng = np.random.default_rng(seed)
    if strided:  # non-contiguous views (every other element of a larger array)
        return [(rng.standard_normal(s + (2,)) * 3).astype(dtype.np)[..., 1] for s in case[:2]]
    return [(rng.standard_normal(s) * 3).astype(dtype.np) for s in case[:2]]


def _run(g, args, monkeypatch, tiles=True):
    """Compile and run `g` (with the register tiles, or with `tiles=False` the loop nest); also
    return how many dot_generals were emitted as tiles."""
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    emitted = []
    real_plan, real_emit = dot.tile_plan, dot.emit_dot_tiles
    if tiles:
        monkeypatch.setattr(dot, "emit_dot_tiles", lambda *a: (emitted.append(a[1]), real_emit(*a)))
    else:
        monkeypatch.setattr(dot, "tile_plan", lambda *a, **k: None)
    codegen.clear_cache()
    try:
        out = codegen.compile_graph(g)(*args)[0]
    finally:
        codegen.clear_cache()
        monkeypatch.setattr(dot, "tile_plan", real_plan)
        monkeypatch.setattr(dot, "emit_dot_tiles", real_emit)
    return out, len(emitted)


def _einsum(case, args):
    """The product in float64 by numpy's einsum, from the dot_general's axes."""
    ls, rs, (lc, rc), (lb, rb) = case
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lsub, rsub = [None] * len(ls), [None] * len(rs)
    for a, c in zip(lb + lc, rb + rc):
        lsub[a] = rsub[c] = next(letters)
    for sub in (lsub, rsub):
        for i, s in enumerate(sub):
            if s is None:
                sub[i] = next(letters)
    out = [lsub[a] for a in lb] + [s for i, s in enumerate(lsub) if i not in lb + lc] \
        + [s for i, s in enumerate(rsub) if i not in rb + rc]
    spec = f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}"
    return np.einsum(spec, *[np.asarray(a, np.float64) for a in args])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("name", list(CASES))
def test_tiles_match_interpreter_and_einsum(name, strided, dtype, monkeypatch):
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", float("inf"))  # the tiles even where BLAS would run
    case = CASES[name]
    g = _graph(case, dtype)
    assert dot.tile_plan(g.nodes[0]) is not None
    args = _args(case, dtype, strided=strided)
    got, emitted = _run(g, args, monkeypatch)
    assert emitted == 1
    want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = dict(rtol=1e-5, atol=1e-4) if dtype is dt.float32 else dict(rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(got, want, **tol)
    np.testing.assert_allclose(got, _einsum(case, args), **tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(CASES))
def test_tiles_have_the_bits_of_the_loop_nest(name, dtype, monkeypatch):
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", float("inf"))
    case = CASES[name]
    g = _graph(case, dtype)
    args = _args(case, dtype, seed=4)
    args[0].flat[::7] = 0.0  # exact zeros and -0.0 products in the chains
    args[1].flat[::5] *= -1e-30
    tiles, emitted = _run(g, args, monkeypatch)
    loops, none = _run(g, args, monkeypatch, tiles=False)
    assert (emitted, none) == (1, 0)
    np.testing.assert_array_equal(tiles.view(np.uint8), loops.view(np.uint8))


def _axpy_twin(case, args):
    """The same product with the rhs stored (batch, contracted, free) by numpy: the loop nest's
    axpy form, whose bits are the in-order chain."""
    ls, rs, (lc, rc), (lb, rb) = case
    rf = [a for a in range(len(rs)) if a not in rc + rb]
    order = list(rb) + list(rc) + rf
    w = np.ascontiguousarray(args[1].transpose(order))
    nb, nc = len(rb), len(rc)
    twin = (ls, w.shape, (lc, tuple(range(nb, nb + nc))), (lb, tuple(range(nb))))
    return twin, [args[0], w]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(DOT_FORM))
def test_dot_form_tiles_are_the_chain(name, dtype, monkeypatch):
    """The short dot form as tiles through the packed panel: the values of the interpreter, and the
    bits of the loop nest and of the same product in the axpy form (the chain); strided arguments."""
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", float("inf"))
    case = DOT_FORM[name]
    g = _graph(case, dtype)
    plan = dot.tile_plan(g.nodes[0])
    assert plan is not None and (plan.n == 1 or plan.b_cs != 1)  # B read through the packed panel
    for strided in (False, True):
        args = _args(case, dtype, seed=6, strided=strided)
        got, emitted = _run(g, args, monkeypatch)
        assert emitted == 1
        want = ir.interpret(g, [np.ascontiguousarray(a) for a in args])[0]
        tol = dict(rtol=1e-5, atol=1e-4) if dtype is dt.float32 else dict(rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(got, want, **tol)
        np.testing.assert_allclose(got, _einsum(case, args), **tol)
        twin, twin_args = _axpy_twin(case, args)
        chain, none = _run(_graph(twin, dtype), twin_args, monkeypatch, tiles=False)
        loops, _ = _run(g, args, monkeypatch, tiles=False)
        assert none == 0
        np.testing.assert_array_equal(got.view(np.uint8), chain.view(np.uint8))
        np.testing.assert_array_equal(got.view(np.uint8), loops.view(np.uint8))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_tiles_propagate_non_finite_values(dtype, monkeypatch):
    case = CASES["remainders_13x9x41"]
    g = _graph(case, dtype)
    x, w = _args(case, dtype, seed=2)
    x[0, 3], x[5, 0], w[2, 40], w[8, 7] = np.inf, np.nan, -np.inf, np.inf
    got, emitted = _run(g, [x, w], monkeypatch)
    with np.errstate(invalid="ignore"):
        want = ir.interpret(g, [x, w])[0]
    assert emitted == 1 and np.isnan(want).any() and np.isinf(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])


@pytest.mark.parametrize("name", list(EMPTY))
def test_empty_products_stay_on_the_loop_nest(name, monkeypatch):
    case = EMPTY[name]
    g = _graph(case, dt.float32)
    assert dot.tile_plan(g.nodes[0]) is None
    args = _args(case, dt.float32)
    got, emitted = _run(g, args, monkeypatch)
    assert emitted == 0
    np.testing.assert_array_equal(got, _einsum(case, args).astype(np.float32))


def _plan(ls, rs, contract, batch, dtype=dt.float32):
    return dot.tile_plan(_graph((ls, rs, contract, batch), dtype).nodes[0])


def test_which_products_take_the_tiles(monkeypatch):
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 2 * 32 ** 3)
    mm = ((1,), (0,)), ((), ())
    assert _plan((8, 8), (8, 8), *mm) is not None
    assert _plan((64, 64), (64, 64), *mm) is None or dot.find_blas() is None  # BLAS's range
    assert _plan((8, 8), (8, 8), *mm, dtype=dt.int32) is None                 # integers: loop nest
    assert _plan((8, 8), (8, 8), *mm, dtype=dt.float16) is None               # float32 accumulator
    # the loop nest's dot form with a k loop vectorised reassociated (other bits than the chain's)
    assert _plan((8, 5), (6, 5), ((1,), (1,)), ((), ())) is None
    assert _plan((8, 5), (5,), ((1,), (0,)), ((), ())) is None                # a mat-vec
    # k loops of at most 4 are unrolled away in the loop nest (the chain either way): the tiles
    # when the contracted axes group, else the loop nest
    assert _plan((2, 3, 3, 4), (3, 9, 4), ((1, 3), (0, 2)), ((), ())) is None  # k axes 12 and 1 apart
    assert _plan((2, 3, 3, 1), (3, 9, 1), ((1, 3), (0, 2)), ((), ())) is not None  # k = 3: the chain


def test_tile_plan_of_the_ensemble_layer():
    p = _plan(*CASES["ensemble_layer2"])
    assert (p.loops, p.m, p.n, p.k, p.a_rs, p.a_cs, p.b_rs, p.b_cs, p.ldc) == \
        (((8, 64, 640, 320),), 32, 10, 64, 512, 1, 10, 1, 10)
    p = _plan(*CASES["free_axes_split"])  # lhs free axes 0 and 2 are not one dimension: axis 0 looped
    assert p.loops == ((3, 30, 42, 140), (4, 90, 0, 35)) and (p.m, p.n, p.k) == (5, 7, 6)
    p = _plan(*CASES["dot_form_k4_packed_b"])
    assert (p.b_rs, p.b_cs) == (1, 4)


def test_vmap_chunks_equal_unchunked_through_the_tiles():
    """vmap(chunk_size=...) of a product that runs as tiles: bit-identical to the whole batch."""
    import tensorplay as tp
    from tensorplay.func import vmap

    rng = np.random.default_rng(0)
    w = tp.from_numpy(rng.standard_normal((9, 10)).astype(np.float32))
    xs = tp.from_numpy(rng.standard_normal((13, 7, 9)).astype(np.float32))
    f = tp.compile(vmap(lambda x: tp.relu(x @ w), chunk_size=None))
    g = tp.compile(vmap(lambda x: tp.relu(x @ w), chunk_size=3))
    np.testing.assert_array_equal(f(xs).numpy(), g(xs).numpy())

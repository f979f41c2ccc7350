"""Shared helpers of the codegen tests: single-node and product graphs, fresh compiles, result comparison."""
from __future__ import annotations

import numpy as np

from tensorplay import codegen, ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def single_node_graph(prim: str, args: list[np.ndarray], attrs: dict) -> ir.Graph:
    """A graph applying `prim` to fresh inputs typed like `args`."""
    from prim_samples import node_graph

    return node_graph(prim, args, attrs)


def dot_graph(ls: tuple, rs: tuple, contract=((1,), (0,)), batch=((), ()), dtype=dt.float32,
              name: str = "dot") -> ir.Graph:
    """A graph of one `dot_general` of inputs of shapes `ls` and `rs`."""
    b = ir.GraphBuilder(name)
    x = b.add_input(TensorType(ls, dtype))
    y = b.add_input(TensorType(rs, dtype))
    return b.build([b.dot_general(x, y, contract=contract, batch=batch)])


def run_fresh(graph: ir.Graph, args: list) -> tuple:
    """``(executable, all outputs)`` of `graph` compiled with an empty in-memory cache (so the code
    generator runs under the settings of the moment) and called on `args`; the cache is emptied
    again afterwards."""
    codegen.clear_cache()
    try:
        exe = codegen.compile_graph(graph)
        return exe, exe(*args)
    finally:
        codegen.clear_cache()


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between same-dtype float arrays (NaN vs NaN and -0 vs +0 count as 0)."""
    a = np.asarray(a)
    b = np.asarray(b)
    ibits = np.int32 if a.dtype == np.float32 else np.int64
    ia = a.view(ibits).astype(np.int64)
    ib = b.view(ibits).astype(np.int64)
    # map the sign-magnitude bit patterns to a monotonic integer line
    big = np.int64(np.iinfo(ibits).min)
    ia = np.where(ia < 0, big - ia, ia)
    ib = np.where(ib < 0, big - ib, ib)
    with np.errstate(over="ignore"):
        diff = ia - ib  # exact unless the signs differ and the values are huge (then it is huge anyway)
    same_sign = (ia >= 0) == (ib >= 0)
    far = np.abs(ia.astype(np.float64)) + np.abs(ib.astype(np.float64))
    d = np.where(same_sign, np.abs(diff).astype(np.float64), far)
    both_nan = np.isnan(a) & np.isnan(b)
    zeros = (a == 0) & (b == 0)
    return np.where(both_nan | zeros, 0.0, d)


def assert_close(got: np.ndarray, want: np.ndarray, ulp: float = 0, what: str = "") -> None:
    """Equal shape and dtype; exact for ints and bools; floats within `ulp` units in the last place."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind != "f":
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:5]
            raise AssertionError(f"{what}: mismatch at {bad.tolist()}: got {got[tuple(bad.T)]}, "
                                 f"want {want[tuple(bad.T)]}")
        return
    d = ulp_distance(got, want)
    if d.size and d.max() > ulp:
        i = np.unravel_index(np.argmax(d), d.shape)
        raise AssertionError(f"{what}: {d.max():.0f} ulp > {ulp} at {i}: got {got[i]!r}, want {want[i]!r}")


def assert_sum_close(got: np.ndarray, want: np.ndarray, scale: np.ndarray, n: int, what: str = "") -> None:
    """For sums/products of `n` terms: |got - want| <= n * eps * scale (scale ~ sum of |terms|)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    eps = np.finfo(got.dtype).eps
    tol = (n + 2) * eps * np.asarray(scale, np.float64) + np.finfo(got.dtype).tiny
    same_special = (np.isnan(got) & np.isnan(want)) | (got == want)
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    ok = same_special | (err <= tol)
    assert ok.all(), f"{what}: max err {np.max(np.where(ok, 0, err))}, tol {np.min(np.where(ok, np.inf, tol))}"

"""Products read through the transposes and 1-axis reshapes around them (`ir.passes.simplify.fold_layout`,
run by `codegen.schedule.normalize`): BLAS takes a transposed operand or result by its flags, so
`tp.compile` makes no copy of `W` in `x @ W.T`, and the Hessian of sum(tanh(W x)) is one gemm.

Oracles: the interpreter on the unfolded graph, and numpy by hand."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay.func import hessian
from tensorplay.ir import GraphBuilder, TensorType, float32, float64, interpret
from tensorplay.ir.passes.simplify import fold_layout, simplify
from tensorplay.ir.verify import verify


def names(graph):
    return [n.prim.name for n in graph.nodes]


def _reshaped_dot(lhs_src, lhs_shape, rhs_src, rhs_shape, contract, batch, dtype=float64):
    """dot_general(reshape(a, lhs_shape), reshape(b, rhs_shape)); a reshape to the own shape is none."""
    b = GraphBuilder()
    x = b.add_input(TensorType(lhs_src, dtype))
    y = b.add_input(TensorType(rhs_src, dtype))
    xs = b.reshape(x, shape=lhs_shape) if lhs_shape != lhs_src else x
    ys = b.reshape(y, shape=rhs_shape) if rhs_shape != rhs_src else y
    return b.build([b.dot_general(xs, ys, contract=contract, batch=batch)])


def _check_same_values(folded, graph, seed=0):
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(v.type.shape) for v in graph.inputs]
    want = interpret(graph, args)[0]
    got = interpret(folded, args)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lhs_src, lhs_shape, rhs_src, rhs_shape, contract, batch", [
    ((4, 5), (4, 1, 5), (5, 3), (5, 3), ((2,), (0,)), ((), ())),            # a row axis jacrev adds
    ((4, 5), (4, 5), (5, 3), (5, 1, 3), ((1,), (0,)), ((), ())),            # on the rhs
    ((1, 4, 5), (4, 5), (5, 3), (5, 3), ((1,), (0,)), ((), ())),            # a 1-axis removed
    ((2, 4, 5), (2, 4, 1, 5), (2, 5, 3), (2, 5, 3), ((3,), (1,)), ((0,), (0,))),  # with a batch axis
    ((4, 5), (1, 4, 5, 1), (5, 3), (5, 3), ((2,), (0,)), ((), ())),         # several 1-axes
])
def test_a_product_reads_through_a_reshape_of_unit_axes(lhs_src, lhs_shape, rhs_src, rhs_shape, contract, batch):
    g = _reshaped_dot(lhs_src, lhs_shape, rhs_src, rhs_shape, contract, batch)
    for folded in (simplify(g), fold_layout(g)):
        verify(folded)
        assert names(folded)[0] == "dot_general" and "reshape" not in names(folded)[:1]
        assert folded.nodes[0].inputs[0] is folded.inputs[0] and folded.nodes[0].inputs[1] is folded.inputs[1]
        assert folded.outputs[0].type == g.outputs[0].type
        _check_same_values(folded, g)


@pytest.mark.parametrize("lhs_src, lhs_shape, contract", [
    ((4, 5), (4, 5, 1), ((2,), (0,))),   # the contracted axis is the inserted 1-axis
    ((4, 6), (4, 2, 3), ((1, 2), (0, 1))),  # a split, not a 1-axis: kept
    ((6, 4), (4, 6), ((1,), (0,))),       # a regrouping reshape: kept
])
def test_a_reshape_that_is_not_only_unit_axes_or_is_contracted_stays(lhs_src, lhs_shape, contract):
    rhs = {((2,), (0,)): (1, 3), ((1, 2), (0, 1)): (2, 3, 3), ((1,), (0,)): (6, 3)}[contract]
    g = _reshaped_dot(lhs_src, lhs_shape, rhs, rhs, contract, ((), ()))
    folded = fold_layout(g)
    assert names(folded) == ["reshape", "dot_general"]
    _check_same_values(folded, g)


def test_fold_layout_returns_the_graph_itself_without_a_product_next_to_a_layout_op():
    b = GraphBuilder()
    x = b.add_input(TensorType((3, 4), float32))
    g = b.build([b.mul(b.transpose(x, permutation=(1, 0)), b.const(1.0, (4, 3)))])
    assert fold_layout(g) is g


def test_fold_layout_only_rewrites_layout_and_keeps_the_inputs_notes():
    b = GraphBuilder()
    a = b.add_input(TensorType((3, 2), float32), {"donated": True})
    w = b.add_input(TensorType((3, 4), float32))
    prod = b.dot_general(b.transpose(a, permutation=(1, 0)), w, contract=((1,), (0,)), batch=((), ()))
    g = b.build([b.mul(prod, b.const(1.0, (2, 4)))])  # x * 1 is `simplify`'s to remove, not fold_layout's
    folded = fold_layout(g)
    assert names(folded) == ["dot_general", "full", "mul"]
    assert folded.arg_attrs == {folded.inputs[0]: {"donated": True}}
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)]
    np.testing.assert_allclose(interpret(folded, args)[0], args[0].T @ args[1], rtol=1e-6)


def _kernels(fn, *args):
    return [k["nodes"] for k in tp.compile(fn).lower(*args).kernels]


@pytest.mark.parametrize("case", ["x @ w.T", "a.T @ w", "(a @ w).T", "linear"])
def test_compiled_products_of_transposes_run_as_one_kernel(case):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    w = {"x @ w.T": (32, 48), "a.T @ w": (64, 24), "(a @ w).T": (48, 24), "linear": (32, 48)}[case]
    w = rng.standard_normal(w).astype(np.float32)
    fn, oracle = {
        "x @ w.T": (lambda a, w: a @ w.T, lambda a, w: a @ w.T),
        "a.T @ w": (lambda a, w: a.T @ w, lambda a, w: a.T @ w),
        "(a @ w).T": (lambda a, w: (a @ w).T, lambda a, w: (a @ w).T),
        "linear": (lambda a, w: tp.nn.functional.linear(a, w), lambda a, w: a @ w.T),
    }[case]
    want = oracle(a.astype(np.float64), w.astype(np.float64))
    at, wt = tp.from_numpy(a), tp.from_numpy(w)
    assert _kernels(fn, at, wt) == [["dot_general"]]
    got = tp.compile(fn)(at, wt)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_compiled_transposed_products_with_size_1_empty_and_strided_operands():
    rng = np.random.default_rng(3)
    f = tp.compile(lambda a, w: a @ w.T)
    for m, n, k in [(1, 5, 7), (6, 1, 7), (6, 5, 1), (0, 5, 7), (6, 0, 7), (6, 5, 0)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        np.testing.assert_allclose(f(tp.from_numpy(a), tp.from_numpy(w)).numpy(), a @ w.T, rtol=1e-5, atol=1e-5)
    big = rng.standard_normal((12, 40)).astype(np.float32)
    w = tp.from_numpy(big)[:, ::2]  # a non-contiguous weight (12, 20)
    a = rng.standard_normal((9, 20)).astype(np.float32)
    np.testing.assert_allclose(f(tp.from_numpy(a), w).numpy(), a @ big[:, ::2].T, rtol=1e-5, atol=1e-5)


def test_the_hessian_of_sum_tanh_wx_is_one_product():
    rng = np.random.default_rng(4)
    d = 16
    w = (rng.standard_normal((d, d)) / 4).astype(np.float32)
    x = rng.standard_normal(d).astype(np.float32)
    h = hessian(lambda x, w: tp.tanh(w @ x).sum())
    kernels = _kernels(h, tp.from_numpy(x), tp.from_numpy(w))
    products = [k for k in kernels if "dot_general" in k]
    assert len(products) == 2  # W x, then W^T diag(tanh'') W
    assert not any(k == ["reshape", "transpose"] or k == ["transpose"] for k in kernels)
    t = np.tanh(w.astype(np.float64) @ x)
    want = (w.T * (-2 * t * (1 - t * t))) @ w
    np.testing.assert_allclose(tp.compile(h)(tp.from_numpy(x), tp.from_numpy(w)).numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h(tp.from_numpy(x), tp.from_numpy(w)).numpy(), want, rtol=1e-4, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 5), n=st.integers(0, 5), k=st.integers(0, 5), batch=st.integers(0, 3),
       t_lhs=st.booleans(), t_rhs=st.booleans(), t_out=st.booleans(), unit=st.integers(0, 3))
def test_random_layouts_around_a_compiled_product_match_the_interpreter(m, n, k, batch, t_lhs, t_rhs, t_out, unit):
    """A (batched) product with transposed operands, a transposed result and a 1-axis inserted into
    the lhs: compiled (folded) against the interpreter on the unfolded graph and numpy."""
    bdims = (batch,) if batch else ()
    nb = len(bdims)
    b = GraphBuilder()
    x = b.add_input(TensorType(bdims + ((k, m) if t_lhs else (m, k)), float32))
    y = b.add_input(TensorType(bdims + ((n, k) if t_rhs else (k, n)), float32))
    swap = tuple(range(nb)) + (nb + 1, nb)
    xs = b.transpose(x, permutation=swap) if t_lhs else x
    ys = b.transpose(y, permutation=swap) if t_rhs else y
    if unit == 1:  # a 1-axis among the lhs's free axes
        xs = b.reshape(xs, shape=bdims + (m, 1, k))
    contract = ((nb + (2 if unit == 1 else 1),), (nb,))
    bt = (tuple(range(nb)), tuple(range(nb)))
    out = b.dot_general(xs, ys, contract=contract, batch=bt)
    if unit == 1:
        out = b.reshape(out, shape=bdims + (m, n))
    if t_out:
        out = b.transpose(out, permutation=swap)
    g = b.build([out])
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    args = [rng.standard_normal(v.type.shape).astype(np.float32) for v in g.inputs]
    xa = np.swapaxes(args[0], -1, -2) if t_lhs else args[0]
    ya = np.swapaxes(args[1], -1, -2) if t_rhs else args[1]
    want = np.matmul(xa.astype(np.float64), ya.astype(np.float64))
    if t_out:
        want = np.swapaxes(want, -1, -2)
    from tensorplay.codegen import compile_graph
    got = compile_graph(g)(*args)[0]
    np.testing.assert_allclose(interpret(g, args)[0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_disk_cache_fingerprint_covers_the_ir_package(tmp_path, monkeypatch):
    """The IR's passes rewrite a graph before it is scheduled, so an edit there must not load code
    cached by the previous version."""
    from tensorplay import ir
    from tensorplay.codegen import disk_cache

    fake = tmp_path / "ir"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "passes.py").write_text("A = 1\n")
    monkeypatch.setattr(ir, "__file__", str(fake / "__init__.py"))
    first = disk_cache.source_fingerprint.__wrapped__()
    (fake / "passes.py").write_text("A = 22\n")
    os.utime(fake / "passes.py", ns=(1, 10 ** 18))
    assert disk_cache.source_fingerprint.__wrapped__() != first

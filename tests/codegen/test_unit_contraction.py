"""A floating-point product of inner size 1 (an outer product: the per-sample ``x^T g`` rows of
vmap(grad)) is simplified into a broadcast multiply (`ir.passes.simplify._dot_of_unit_contraction`),
which the code generator writes in one fused pass instead of one gemm of k = 1 per batch slice.

Oracles: the interpreter on the unsimplified graph (the same bits: one product per element), and
loop-and-stack for vmap."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.ir import GraphBuilder, TensorType, float32, float64, int32, interpret
from tensorplay.ir.passes.simplify import simplify
from tensorplay.ir.verify import verify


def names(graph):
    return [n.prim.name for n in graph.nodes]


def _check_same_values(folded, graph, seed=0):
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(v.type.shape) for v in graph.inputs]
    np.testing.assert_array_equal(interpret(folded, args)[0], interpret(graph, args)[0])


def test_a_product_contracting_only_an_inserted_1_axis_is_a_broadcast_multiply():
    b = GraphBuilder()
    x, y = b.add_input(TensorType((4, 5), float64)), b.add_input(TensorType((1, 3), float64))
    g = b.build([b.dot_general(b.reshape(x, shape=(4, 5, 1)), y, contract=((2,), (0,)), batch=((), ()))])
    folded = simplify(g)
    verify(folded)
    assert "dot_general" not in names(folded) and "mul" in names(folded)
    _check_same_values(folded, g)


def _unit_product(lhs, rhs, contract, batch, dtype=float64):
    b = GraphBuilder()
    x, y = b.add_input(TensorType(lhs, dtype)), b.add_input(TensorType(rhs, dtype))
    return b.build([b.dot_general(x, y, contract=contract, batch=batch)])


# (lhs shape, rhs shape, contract, batch): every contracted axis has size 1, or none is contracted
_UNIT_PRODUCTS = [
    ((4, 1), (1, 3), ((1,), (0,)), ((), ())),                    # a column times a row
    ((1, 4), (1, 3), ((0,), (0,)), ((), ())),                    # x^T g of one example
    ((4,), (3,), ((), ()), ((), ())),                            # no contracted axis: the outer product
    ((6, 1, 4), (6, 1, 3), ((1,), (1,)), ((0,), (0,))),          # per-sample x^T g rows, batched
    ((4, 6, 1), (1, 3, 6), ((2,), (0,)), ((1,), (2,))),          # batch axes out of front, transposed
    ((2, 1, 5, 1), (1, 2, 1, 3), ((1, 3), (0, 2)), ((0,), (1,))),  # two contracted 1-axes
    ((1, 1), (1, 1), ((1,), (0,)), ((), ())),                    # all size 1
    ((0, 1), (1, 3), ((1,), (0,)), ((), ())),                    # empty result
    ((5, 4), (), ((), ()), ((), ())),                            # times a scalar
]


@pytest.mark.parametrize("lhs, rhs, contract, batch", _UNIT_PRODUCTS)
def test_a_product_of_inner_size_1_is_a_broadcast_multiply(lhs, rhs, contract, batch):
    g = _unit_product(lhs, rhs, contract, batch)
    folded = simplify(g)
    verify(folded)
    assert "dot_general" not in names(folded) and names(folded)[-1] == "mul"
    assert folded.outputs[0].type == g.outputs[0].type
    _check_same_values(folded, g)


@pytest.mark.parametrize("lhs, rhs, contract, batch", _UNIT_PRODUCTS)
def test_compiled_simplified_products_of_inner_size_1_match_the_interpreter_and_use_no_gemm(lhs, rhs, contract,
                                                                                            batch):
    from tensorplay.codegen import compile_graph
    g = _unit_product(lhs, rhs, contract, batch, dtype=float32)
    rng = np.random.default_rng(len(lhs) + 10 * len(rhs))
    args = [rng.standard_normal(v.type.shape).astype(np.float32) for v in g.inputs]
    want = interpret(g, args)[0]
    ex = compile_graph(simplify(g))
    assert not any("dot_general" in k["nodes"] for k in ex.kernels)
    got = ex(*args)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # one product per element: the same bits


def test_a_product_of_inner_size_1_on_integers_or_of_larger_inner_size_stays_a_product():
    for g in (_unit_product((4, 1), (1, 3), ((1,), (0,)), ((), ()), dtype=int32),
              _unit_product((4, 2), (2, 3), ((1,), (0,)), ((), ()))):
        assert names(simplify(g)) == ["dot_general"]


def test_per_sample_outer_products_of_a_vmapped_grad_are_multiplies():
    """vmap(grad) of a linear layer on one example: the weight's per-sample gradients are outer
    products (inner size 1), written by one fused multiply, against loop-and-stack."""
    from tensorplay.func import grad, vmap
    rng = np.random.default_rng(7)
    w = tp.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    xs = rng.standard_normal((4, 5)).astype(np.float32)[:, ::-1]  # non-contiguous examples
    loss = lambda w, x: tp.tanh(x.unsqueeze(0) @ w).sum()  # noqa: E731
    per_sample = vmap(grad(loss), in_dims=(None, 0))
    kernels = [k["nodes"] for k in tp.compile(per_sample).lower(w, tp.from_numpy(xs.copy())).kernels]
    assert sum("dot_general" in k for k in kernels) == 1  # the forward x @ w only
    want = np.stack([grad(loss)(w, tp.from_numpy(x.copy())).numpy() for x in xs])
    for f in (per_sample, tp.compile(per_sample)):
        np.testing.assert_allclose(f(w, tp.from_numpy(xs)).numpy(), want, rtol=1e-6, atol=1e-6)

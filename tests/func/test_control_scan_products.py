"""Reverse mode through a scan: the cotangent of a const used in a product leaves the loop.

The transpose of a scan sums a const's cotangent over the steps. A summand ``dot_general(p, q)``
of two per-step values becomes one contraction of the stacked p and q after the loop (for an RNN:
dW_hh = sum_t dg_t^T h_t = dG^T H, one gemm instead of a gemm and an accumulation per step).
Oracle: float64 central finite differences of the interpreted forward graph.
"""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay.ir import GraphBuilder, Region, TensorType, float64, interpret
from tensorplay.ir.passes.reverse import grad_graph
from tensorplay.ir.verify import verify

EPS = 1e-6


def T(*shape):
    return TensorType(tuple(shape), float64)


def rnn_graph(batch, hidden, n_in, length, *, transposed=False, twice=False, reverse=False):
    """h' = tanh(h @ W + x @ U) (W used as ``h @ W^T`` when `transposed`; with `twice`, also
    ``+ (h @ W) * 0.5`` so W's cotangent has two product summands); loss = sum(h_T) + sum(ys**2)."""
    bb = GraphBuilder("cell")
    w, u = bb.add_input(T(hidden, hidden)), bb.add_input(T(n_in, hidden))
    h, x = bb.add_input(T(batch, hidden)), bb.add_input(T(batch, n_in))
    hw = bb.dot_general(h, w, contract=((1,), (1 if transposed else 0,)), batch=((), ()))
    pre = bb.add(hw, bb.dot_general(x, u, contract=((1,), (0,)), batch=((), ())))
    if twice:
        pre = bb.add(pre, bb.mul(bb.dot_general(h, w, contract=((1,), (0,)), batch=((), ())),
                                 bb.const(0.5, (batch, hidden), float64)))
    nh = bb.tanh(pre)
    body = Region(bb.build([nh, bb.mul(nh, nh)]))
    b = GraphBuilder("f")
    W, U = b.add_input(T(hidden, hidden)), b.add_input(T(n_in, hidden))
    h0, xs = b.add_input(T(batch, hidden)), b.add_input(T(length, batch, n_in))
    t = b.scan(W, U, h0, xs, body=body, num_consts=2, num_carry=1, length=length, reverse=reverse)
    loss = b.add(b.reduce_sum(b.tuple_get(t, index=0), axes=(0, 1)),
                 b.reduce_sum(b.tuple_get(t, index=1), axes=(0, 1, 2)))
    return b.build([loss])


def args_for(batch, hidden, n_in, length, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(hidden, hidden)) * 0.4, rng.normal(size=(n_in, hidden)) * 0.4,
            rng.normal(size=(batch, hidden)), rng.normal(size=(length, batch, n_in))]


def fd_grad(graph, args, i):
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        hi, lo = [a.copy() for a in args], [a.copy() for a in args]
        hi[i][idx] += EPS
        lo[i][idx] -= EPS
        out[idx] = (float(interpret(graph, hi)[0]) - float(interpret(graph, lo)[0])) / (2 * EPS)
    return out


def reverse_scans(g):
    return [n for n in g.nodes if n.prim.name == "scan" and n.attrs["reverse"]]


def check(graph, args, wrt):
    g = grad_graph(graph, wrt, [1.0], simplified=True)
    verify(g)
    got = interpret(g, args)[1:]
    k = 0
    for i, w in enumerate(wrt):
        if w:
            np.testing.assert_allclose(got[k], fd_grad(graph, args, i), rtol=1e-6, atol=1e-6)
            k += 1
    return g


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_weight_cotangents_are_one_product_after_the_loop(transposed, reverse):
    graph = rnn_graph(2, 3, 4, 5, transposed=transposed, reverse=reverse)
    g = check(graph, args_for(2, 3, 4, 5), [True, True, True, True])
    (back,) = [n for n in g.nodes if n.prim.name == "scan" and n.attrs["reverse"] != reverse]
    # the only carry left is the hidden state's cotangent: neither W nor U is accumulated per step
    assert back.attrs["num_carry"] == 1
    body = back.attrs["body"].graph
    assert [n.prim.name for n in body.nodes].count("dot_general") == 2  # dh = dg @ W^T and dx = dg @ U^T only
    # dW and dU: contractions over (step, batch) of stacked operands, outside the loop
    outer = [n for n in g.nodes if n.prim.name == "dot_general"]
    assert sum(len(n.attrs["contract"][0]) == 2 and n.attrs["contract"][0][0] == 0 for n in outer) >= 2


def test_two_product_summands_and_an_operand_stacked_for_it():
    """W enters twice; xs are not differentiated, so the gate cotangent is not a y of the backward
    scan already: the body returns it as a new y to stack (it is smaller than W's accumulator)."""
    graph = rnn_graph(2, 3, 4, 6, twice=True)
    g = check(graph, args_for(2, 3, 4, 6, seed=1), [True, False, True, False])
    (back,) = reverse_scans(g)
    assert back.attrs["num_carry"] == 1


def test_product_kept_in_the_loop_when_stacking_would_cost_more_than_the_accumulator():
    """batch 8 x hidden 2: stacking the (8, 2) gate cotangent per step writes more than the (2, 2)
    accumulator of W's cotangent, so that summand stays a carry."""
    graph = rnn_graph(8, 2, 3, 4)
    g = check(graph, args_for(8, 2, 3, 4, seed=2), [True, False, False, False])
    (back,) = reverse_scans(g)
    assert back.attrs["num_carry"] == 2
    assert back.out.type.elements[0] == T(2, 2)


def test_zero_length_scan_has_zero_weight_cotangents():
    graph = rnn_graph(2, 3, 4, 0)
    g = grad_graph(graph, [True, True, False, False], [1.0], simplified=True)
    verify(g)
    dW, dU = interpret(g, args_for(2, 3, 4, 0))[1:]
    np.testing.assert_array_equal(dW, np.zeros((3, 3)))
    np.testing.assert_array_equal(dU, np.zeros((4, 3)))


def test_cheap_residuals_are_recomputed_in_the_backward_loop_not_stacked():
    """c' = sigmoid(w * c + x) * tanh(x): the derivative factors s * (1 - s) and 1 - t * t are a
    few multiplications away from the stacked s and t, so the forward scan stacks s and t (and the
    carry c) but not the factors."""
    from tensorplay.ir.passes.reverse import split

    bb = GraphBuilder("cell")
    w, c, x = bb.add_input(T(3)), bb.add_input(T(3)), bb.add_input(T(3))
    nc = bb.mul(bb.logistic(bb.add(bb.mul(w, c), x)), bb.tanh(x))
    body = Region(bb.build([nc]))
    b = GraphBuilder("f")
    W, c0, xs = b.add_input(T(3)), b.add_input(T(3)), b.add_input(T(7, 3))
    t = b.scan(W, c0, xs, body=body, num_consts=1, num_carry=1, length=7, reverse=False)
    graph = b.build([b.reduce_sum(b.tuple_get(t, index=0), axes=(0,))])
    s = split(graph, [True, True, True])
    (fwd,) = [n for n in s.forward.nodes if n.prim.name == "scan"]
    stacked = [e for e in fwd.out.type.elements if e.shape == (7, 3)]
    assert len(stacked) == 3, [str(e) for e in stacked]  # c, sigmoid(.), tanh(x)
    fbody = fwd.attrs["body"].graph
    assert {n.prim.name for n in fbody.nodes} >= {"logistic", "tanh"}
    assert all(v.node is None or v.node.prim.name in ("logistic", "tanh", "mul")
               for v in fbody.outputs), [v.node.prim.name for v in fbody.outputs if v.node]
    rng = np.random.default_rng(3)
    check(graph, [rng.normal(size=3), rng.normal(size=3), rng.normal(size=(7, 3))], [True, True, True])

"""Compiled scans: the layout of their weights and the buffers of their carries.

`codegen.schedule.normalize` gives a scan whose body multiplies by a const as a transposed right
operand (``h @ W^T``, the recurrent product of nn.RNN / LSTM / GRU) a transposed copy of that
const made once before the loop. A carry whose new value is also a y (``return h, h``) lives in
the ys slices: no carry buffers, no per-step copy. Oracle: the reference interpreter on the
original graph.
"""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay.codegen.module import build_module, plan_buffers
from tensorplay.codegen.schedule import normalize, schedule
from tensorplay.ir import GraphBuilder, Region, TensorType, float32, interpret
from tensorplay.ir.verify import verify


def T(*shape):
    return TensorType(tuple(shape), float32)


def rnn(length, *, pre_transposed=False, batch=3, hidden=5, reverse=False, outputs=(0, 1)):
    """h' = tanh(h @ W^T + x), ys = h'; W enters as (hidden, hidden) contracted on its axis 1, or,
    with `pre_transposed`, as ``transpose(V)`` computed outside the loop."""
    bb = GraphBuilder("cell")
    w, h, x = bb.add_input(T(hidden, hidden)), bb.add_input(T(batch, hidden)), bb.add_input(T(batch, hidden))
    nh = bb.tanh(bb.add(bb.dot_general(h, w, contract=((1,), (1,)), batch=((), ())), x))
    body = Region(bb.build([nh, nh]))
    b = GraphBuilder("f")
    W, h0, xs = b.add_input(T(hidden, hidden)), b.add_input(T(batch, hidden)), b.add_input(T(length, batch, hidden))
    if pre_transposed:
        W = b.transpose(W, permutation=(1, 0))
    t = b.scan(W, h0, xs, body=body, num_consts=1, num_carry=1, length=length, reverse=reverse)
    return b.build([b.tuple_get(t, index=i) for i in outputs])


def args(length, batch=3, hidden=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.5).astype(np.float32)
            for s in [(hidden, hidden), (batch, hidden), (length, batch, hidden)]]


def scan_of(g):
    (n,) = [n for n in g.nodes if n.prim.name == "scan"]
    return n


@pytest.mark.parametrize("pre_transposed", [False, True])
def test_the_recurrent_weight_is_transposed_once_before_the_loop(pre_transposed):
    g = rnn(6, pre_transposed=pre_transposed)
    ng = normalize(g)
    verify(ng)
    scan = scan_of(ng)
    assert scan.attrs["num_consts"] == 2
    (dot,) = [n for n in scan.attrs["body"].graph.nodes if n.prim.name == "dot_general"]
    assert tuple(dot.attrs["contract"][1]) == (0,)
    transposes = [n for n in ng.nodes if n.prim.name == "transpose"]
    if pre_transposed:  # transpose(transpose(V)) is V itself: no copy at all
        assert scan.inputs[1] is g.inputs[0]
    else:
        assert len(transposes) == 1 and scan.inputs[1] is transposes[0].out
    a = args(6)
    for got, want in zip(codegen.compile_graph(g)(*a), interpret(g, a)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_one_step_scan_keeps_its_weight():
    g = rnn(1)
    assert normalize(g) is g
    a = args(1)
    for got, want in zip(codegen.compile_graph(g)(*a), interpret(g, a)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _entry_text(g) -> str:
    g = normalize(g)
    kernels = schedule(g)
    text = build_module(g, kernels, plan_buffers(g, kernels), "t", "x86_64-unknown-linux-gnu", "")[0]
    start = text.index('define i64 @"t_entry"')
    return text[start:text.index("\n}", start)]


@pytest.mark.parametrize("length", [1, 2, 3, 6])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("outputs", [(0, 1), (1,), (1, 0), (1, 1, 0)])
def test_a_carry_that_is_also_a_y_lives_in_the_ys(length, reverse, outputs):
    g = rnn(length, reverse=reverse, outputs=outputs)
    a = args(length, seed=length)
    for got, want in zip(codegen.compile_graph(g)(*a), interpret(g, a)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_return_h_h_makes_no_copy_in_the_loop():
    entry = _entry_text(rnn(50))
    loop = entry[entry.index("scan.body"):entry.index("scan.exit:")]
    assert "llvm.memcpy" not in loop
    # the final carry: one copy of the last slice after the loop
    assert entry[entry.index("scan.exit:"):].count("llvm.memcpy") == 1
    # only the ys wanted: no copy at all
    assert "llvm.memcpy" not in _entry_text(rnn(50, outputs=(1,)))


# --- pad / concatenate kernels iterate box by box -------------------------------------------------
def _gate_cotangent(n=3, h=4, k=4):
    """The backward LSTM cell's shape: k products of (n, h) pieces padded into (n, k*h) and summed."""
    b = GraphBuilder("gates")
    ins = [b.add_input(T(n, h)) for _ in range(2 * k)]
    pads = [b.pad(b.mul(ins[2 * j], ins[2 * j + 1]), low=(0, j * h), high=(0, (k - 1 - j) * h), interior=(0, 0),
                  value=0.0) for j in range(k)]
    total = pads[0]
    for p in pads[1:]:
        total = b.add(total, p)
    return b.build([b.tanh(total)])


def _concat():
    b = GraphBuilder("cat")
    x, y, z = b.add_input(T(2, 3)), b.add_input(T(2, 0)), b.add_input(T(2, 5))
    return b.build([b.concatenate(b.sin(x), b.exp(y), z, axis=1)])


def _odd_pads():
    """An interior pad on axis 0 (not split there), low and high pads on axis 1 (3 boxes)."""
    b = GraphBuilder("odd")
    x = b.add_input(T(4, 6))
    p = b.pad(b.neg(x), low=(1, 2), high=(0, 3), interior=(1, 0), value=2.5)
    return b.build([b.add(p, p)])


@pytest.mark.parametrize("make, n_boxes", [(_gate_cotangent, 4), (_concat, 2), (_odd_pads, 3)])
def test_pad_and_concatenate_kernels_run_box_by_box(make, n_boxes):
    g = make()
    (k,) = schedule(normalize(g))
    assert len(k.boxes) == n_boxes
    covered = sum(int(np.prod(np.subtract(stop, start))) for start, stop in k.boxes)
    assert covered == int(np.prod(k.domain))
    rng = np.random.default_rng(5)
    a = [rng.standard_normal(t.shape).astype(np.float32) for t in g.in_types]
    for got, want in zip(codegen.compile_graph(g)(*a), interpret(g, a)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# --- a region several control steps carry is scheduled and emitted once ----------------------------
def test_a_region_shared_by_two_scans_is_scheduled_and_emitted_once():
    bb = GraphBuilder("cell")
    w, h, x = bb.add_input(T(5, 5)), bb.add_input(T(3, 5)), bb.add_input(T(3, 5))
    nh = bb.tanh(bb.add(bb.dot_general(h, w, contract=((1,), (0,)), batch=((), ())), bb.sin(x)))
    body = Region(bb.build([nh, bb.mul(nh, x)]))
    b = GraphBuilder("f")
    W, h0, xs = b.add_input(T(5, 5)), b.add_input(T(3, 5)), b.add_input(T(4, 3, 5))
    first = b.scan(W, h0, xs, body=body, num_consts=1, num_carry=1, length=4, reverse=False)
    again = b.scan(W, b.tuple_get(first, index=0), b.tuple_get(first, index=1), body=body, num_consts=1,
                   num_carry=1, length=4, reverse=True)
    g = b.build([b.tuple_get(again, index=0), b.tuple_get(again, index=1)])
    steps = schedule(normalize(g))
    scans = [k for k in steps if k.kind == "scan"]
    assert len(scans) == 2 and scans[0].regions["body"] is scans[1].regions["body"]
    text = build_module(g, steps, plan_buffers(g, steps), "t", "x86_64-unknown-linux-gnu", "")[0]
    n_body = len(scans[0].regions["body"].steps)
    assert text.count("define internal void") == len(steps) - 2 + n_body
    a = args(4, batch=3, hidden=5, seed=9)
    for got, want in zip(codegen.compile_graph(g)(*a), interpret(g, a)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

"""Deep graphs: a chain of 10,000 nodes compiles and runs right through `tp.compile`, plain
`grad` and `vmap`, and every pass over the graph (printer, parser, verifier, structural key,
interpreter, simplify, partial evaluation, scheduler) handles it without recursing per node.

Oracle: the same chain of float32 operations written in numpy (multiply then add, no fused
multiply-add, so the compiled result is the numpy result bit for bit up to tanh's ULP bound), and
for the gradient the closed form prod(0.999 * tanh'(...)) accumulated in float64."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen, ir
from tensorplay.codegen.schedule import MAX_FUSED_DEPTH, schedule
from tensorplay.func import grad, vmap
from tensorplay.ir.passes.partial_eval import partial_eval
from tensorplay.ir.passes.simplify import simplify
from tensorplay.ir.text import parse_graph, print_graph
from tensorplay.ir.verify import verify

STEPS = 5000  # two nodes per step: a 10,000-node chain
TANH_EVERY = 100


def chain(x):
    for i in range(STEPS):
        x = x * 0.999 + 0.001
        if i % TANH_EVERY == 0:
            x = tp.tanh(x)
    return x


def chain_numpy(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    for i in range(STEPS):
        x = x * np.float32(0.999) + np.float32(0.001)
        if i % TANH_EVERY == 0:
            x = np.tanh(x)
    return x


def chain_grad_numpy(x: np.ndarray) -> np.ndarray:
    """d chain(x)_i / d x_i, by the chain rule in float64."""
    x = x.astype(np.float64)
    d = np.ones_like(x)
    for i in range(STEPS):
        x = x * 0.999 + 0.001
        d *= 0.999
        if i % TANH_EVERY == 0:
            x = np.tanh(x)
            d *= 1 - x * x
    return d


X = np.linspace(-2, 2, 8, dtype=np.float32)


def test_compile_of_a_10000_node_chain():
    before = codegen.compile_count()
    got = tp.compile(chain)(tp.tensor(X)).numpy()
    assert codegen.compile_count() > before  # native code ran
    np.testing.assert_allclose(got, chain_numpy(X), rtol=2e-5, atol=1e-6)


def test_grad_of_a_10000_node_chain():
    got = grad(lambda x: chain(x).sum())(tp.tensor(X)).numpy()
    np.testing.assert_allclose(got, chain_grad_numpy(X), rtol=1e-3, atol=1e-6)


def test_vmap_of_a_10000_node_chain():
    xs = np.stack([X, X[::-1] * 0.5, -X]).astype(np.float32)
    got = vmap(chain)(tp.tensor(xs)).numpy()
    want = np.stack([chain_numpy(row) for row in xs])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def _deep_graph(n: int) -> ir.Graph:
    b = ir.GraphBuilder("deep")
    x = b.add_input(ir.TensorType((4,), ir.float32))
    y = x
    for _ in range(n):
        y = b.neg(y)
    return b.build([y])


def test_graph_tools_handle_10000_nodes():
    g = _deep_graph(10_000)
    verify(g)
    text = print_graph(g)
    again = parse_graph(text)
    assert again.structural_key() == g.structural_key()
    x = np.array([1, -2, 3, -4], np.float32)
    np.testing.assert_array_equal(ir.interpret(g, [x])[0], x)  # an even number of negations
    assert len(simplify(g).nodes) <= len(g.nodes)


def test_schedule_bounds_the_fused_depth():
    kernels = schedule(_deep_graph(1000))
    assert all(len(k.nodes) <= MAX_FUSED_DEPTH + 1 for k in kernels)  # the root and its chain
    assert sum(len(k.nodes) for k in kernels) == 1000


def test_partial_eval_of_a_deep_constant_chain():
    """Constants are re-emitted on the unknown side by walking their producers (10,000 deep)."""
    b = ir.GraphBuilder("consts")
    t = b.add_input(ir.TensorType((3,), ir.float32))
    c = b.emit("full", shape=(3,), dtype=ir.float32, value=1.0)
    for _ in range(5000):
        c = b.add(c, c)
        c = b.mul(c, b.const(0.5, (3,)))
    g = b.build([b.mul(t, c)])
    pe = partial_eval(g, [True], [True])
    assert pe.num_residuals == 0
    x = np.array([1.0, 2.0, -3.0], np.float32)
    np.testing.assert_array_equal(ir.interpret(pe.unknown, [x])[0], x)


@pytest.mark.parametrize("n", [MAX_FUSED_DEPTH - 1, MAX_FUSED_DEPTH, MAX_FUSED_DEPTH + 1, 3 * MAX_FUSED_DEPTH])
def test_chains_around_the_depth_bound_match_the_interpreter(n):
    b = ir.GraphBuilder("around")
    x = b.add_input(ir.TensorType((5,), ir.float32))
    y = x
    for i in range(n):
        y = b.sin(y) if i % 2 else b.add(y, b.const(0.25, (5,)))
    g = b.build([y])
    a = np.linspace(-1, 1, 5, dtype=np.float32)
    np.testing.assert_allclose(codegen.compile_graph(g)(a)[0], ir.interpret(g, [a])[0], rtol=1e-5, atol=1e-6)

"""The op memos' hit paths of round 13 (helper optrace):

- single-op hits (`x + y`, `x @ w`, `tanh(x)`) around misses and concrete reads;
- a binary op that traced to one composite block (the broadcast `x + b`) replays the block's
  program from the op memo (`_PROGRAM` entries), learnt on the call after the composite learnt;
- `memo_composite(...).hit`, the packing-free hit of relu / add / cross_entropy.

Checked against the op layer (the same function traced with every memo cleared, and the
composites' own functions): equal graphs and structural keys for misses and hits, values against
float64 numpy / finite differences, concrete values read between hits, and the cases
that must take the op layer: a repeated operand, numpy operands, Python scalars, views, outside
tensors, gradients off, swapped operands, an op whose first trace raised, nested transforms.
"""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay import _deferred, _trace, _traced_memo as TM
from tensorplay.func import debug_unwrap, grad, jacrev, vmap
from tests.finite_diff import fd_grad

RNG = np.random.default_rng(13)
X = RNG.standard_normal((5, 4)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)
Y = RNG.standard_normal((5, 4)).astype(np.float32)
W = RNG.standard_normal((4, 4)).astype(np.float32)
TARGET = np.array([0, 3, 1, 2, 3])


def _clear():
    TM.clear()
    _trace.clear_memos()


def _fd(f, x):
    return fd_grad(f, x.astype(np.float64))


def _traces(f, args, n=4):
    """`n` traces of `f` as a plain grad traces it, from cold memos: the first learns."""
    _clear()
    return [_trace.trace_function(f, args, transform="grad") for _ in range(n)]


def _entries(kind=None):
    out = [e for m in _trace._OP_MEMOS for e in m.values() if e is not _trace._SKIP]
    return out if kind is None else [e for e in out if len(e) > 4 and e[4] == kind]


# --- single-op hits ------------------------------------------------------------------------------
def test_single_op_hits_build_the_op_layers_graph():
    x, y, w = tp.from_numpy(X), tp.from_numpy(Y), tp.from_numpy(W)

    def f(a, b, c):
        h = tp.tanh((a + b) @ c)
        h = tp.tanh(h @ c - a) * b
        return (h / b).sum()

    closed = _traces(f, (x, y, w))
    first_graph = str(closed[0].graph)
    assert len({c.structural_key() for c in closed}) == 1
    assert all(str(c.graph) == first_graph for c in closed[1:])
    assert all(n.out.node is n and n.__class__ is not _deferred.Deferred for n in closed[2].graph.nodes)


def test_grads_through_hits_match_finite_differences():
    x, y, w = tp.from_numpy(X), tp.from_numpy(Y), tp.from_numpy(W)
    g = grad(lambda a, b, c: tp.tanh(tp.tanh(a @ c + b) @ c * b).sum())
    want = _fd(lambda a: np.tanh(np.tanh(a @ W + Y) @ W * Y).sum(), X)
    _clear()
    for _ in range(4):
        np.testing.assert_allclose(g(x, y, w).numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("read", ["float", "debug_unwrap", "print", "bool"])
def test_a_concrete_value_between_hits(read, capsys):
    x, y = tp.from_numpy(X), tp.from_numpy(Y)
    got = []

    def f(a, b):
        h = tp.tanh(a + b)
        h = h * b
        if read == "float":
            got.append(float(h.sum()))
        elif read == "debug_unwrap":
            got.append(debug_unwrap(h).numpy().sum())
        elif read == "print":
            print(h)
        else:
            got.append(bool((h.sum() > 0)))
        return (h - a).sum()  # (more hits after the read)

    _clear()
    for _ in range(3):
        gx = grad(f)(x, y).numpy()
        np.testing.assert_allclose(gx, (1 - np.tanh(X.astype(np.float64) + Y) ** 2) * Y - 1, rtol=1e-5, atol=1e-6)
    want = (np.tanh(X.astype(np.float64) + Y) * Y).sum()
    if read == "print":
        assert capsys.readouterr().out.count("tensor(") == 3
    elif read == "bool":
        assert got == [bool(want > 0)] * 3
    else:
        np.testing.assert_allclose(got, [want] * 3, rtol=1e-5)


def test_a_miss_between_hits_learns_its_own_node():
    x, y = tp.from_numpy(X), tp.from_numpy(Y)

    def f(a, b):
        h = a + b               # a hit (after the first call)
        h = h * 3.0             # a scalar op: learnt on the first plain call
        h = tp.exp(h) - b       # more hits
        return h.sum()

    closed = _traces(f, (x, y))
    assert len({c.structural_key() for c in closed}) == 1
    assert all(str(c.graph) == str(closed[0].graph) for c in closed)
    g = grad(f)
    for _ in range(3):
        np.testing.assert_allclose(g(x, y).numpy(), 3 * np.exp(3 * (X + Y)), rtol=1e-5)


def test_nested_transforms_over_hits():
    w = tp.from_numpy(W)
    xs = tp.from_numpy(X)

    def f(v):
        return tp.tanh(tp.tanh(v @ w) @ w)

    def ref(v):
        h = np.tanh(v @ W)
        return (1 - np.tanh(h @ W) ** 2)[:, None] * W.T @ ((1 - h ** 2)[:, None] * W.T)

    _clear()
    for _ in range(3):
        jac = vmap(jacrev(f))(xs).numpy()
        for i in range(X.shape[0]):
            np.testing.assert_allclose(jac[i], ref(X[i].astype(np.float64)), rtol=1e-4, atol=1e-5)


def test_grad_disabled_inside_the_transform_takes_the_op_layer():
    x, y = tp.from_numpy(X), tp.from_numpy(Y)

    def f(a, b):
        c = a * b
        with tp.no_grad():
            d = a * b           # not differentiated: the op layer's stop_gradient
        return (c + d).sum()

    _clear()
    for _ in range(3):
        np.testing.assert_allclose(grad(f)(x, y).numpy(), Y, rtol=1e-6)


# --- the broadcast add: the composite's block replayed by the op memo ------------------------------
def test_broadcast_add_is_a_program_entry_and_keys_stay_equal():
    x, b = tp.from_numpy(X), tp.from_numpy(B)
    f = lambda a, c: tp.tanh(a + c).sum()  # noqa: E731
    closed = _traces(f, (x, b))
    assert _entries(_trace._PROGRAM)            # learnt on the call after the composite learnt
    assert len({c.structural_key() for c in closed}) == 1
    assert all(str(c.graph) == str(closed[0].graph) for c in closed)
    # the key of the composite reached directly (`tp.add`), as the op layer gives it
    direct = _trace.trace_function(lambda a, c: tp.tanh(tp.add(a, c)).sum(), (x, b), transform="grad")
    assert direct.structural_key() == closed[-1].structural_key()
    g = grad(f, argnums=(0, 1))
    for _ in range(3):
        ga, gb = g(x, b)
        d = 1 - np.tanh(X.astype(np.float64) + B) ** 2
        np.testing.assert_allclose(ga.numpy(), d, rtol=1e-5)
        np.testing.assert_allclose(gb.numpy(), d.sum(0), rtol=1e-5)


def test_program_entry_falls_back_for_a_repeated_operand_and_swapped_operands():
    x, b = tp.from_numpy(X), tp.from_numpy(B)
    for _ in range(3):
        grad(lambda a, c: (a + c).sum())(x, b)            # the program entry for (5x4, 4)
    assert _entries(_trace._PROGRAM)
    bb = tp.from_numpy(np.stack([B, B]))
    # b + x (swapped types: its own entry) and v + v of the same types as nothing learnt
    for _ in range(3):
        gb = grad(lambda c, a: (c + a).sum())(b, x)
        np.testing.assert_allclose(gb.numpy(), np.full(4, 5.0), rtol=1e-6)
        gv = grad(lambda v: (v + v).sum())(bb)
        np.testing.assert_allclose(gv.numpy(), np.full((2, 4), 2.0), rtol=1e-6)


def test_program_entry_with_an_outside_operand_a_view_numpy_and_scalars():
    x, b = tp.from_numpy(X), tp.from_numpy(B)
    xb = X.astype(np.float64) + B
    _clear()
    for _ in range(3):
        np.testing.assert_allclose(grad(lambda a: tp.tanh(a + b).sum())(x).numpy(),  # b captured
                                   1 - np.tanh(xb) ** 2, rtol=1e-5)
        np.testing.assert_allclose(grad(lambda a, c: tp.tanh(a[1:] + c).sum())(x, b).numpy(),  # a view
                                   np.vstack([np.zeros((1, 4)), 1 - np.tanh(xb[1:]) ** 2]), rtol=1e-5, atol=1e-7)
        out = grad(lambda a: tp.tanh(a + B).sum())(x)  # a numpy operand
        np.testing.assert_allclose(out.numpy(), 1 - np.tanh(X + B.astype(np.float32)) ** 2, rtol=1e-5)
        out = grad(lambda a: tp.tanh(a + 0.5).sum())(x)  # a Python scalar
        np.testing.assert_allclose(out.numpy(), 1 - np.tanh(X.astype(np.float64) + 0.5) ** 2, rtol=1e-5)
        out = grad(lambda a: tp.tanh(B + a).sum())(x)  # reflected: ndarray + tensor
        np.testing.assert_allclose(out.numpy(), 1 - np.tanh(X + B.astype(np.float32)) ** 2, rtol=1e-5)


def test_an_op_whose_first_trace_raised_raises_every_time():
    x, bad = tp.from_numpy(X), tp.from_numpy(np.ones(3, np.float32))
    _clear()
    for _ in range(3):
        with pytest.raises((ValueError, TypeError), match="add|broadcast|shape"):
            grad(lambda a, c: (a + c).sum())(x, bad)
        with pytest.raises((ValueError, TypeError), match="matmul|shape"):
            grad(lambda a, c: (a @ c).sum())(x, bad)
    # and the caller's tensors are untouched
    np.testing.assert_array_equal(x.numpy(), X)


def test_composite_overflow_forgets_op_memo_programs():
    x, b = tp.from_numpy(X), tp.from_numpy(B)
    _clear()
    for _ in range(3):
        grad(lambda a, c: (a + c).sum())(x, b)
    assert _entries(_trace._PROGRAM)
    TM._clear_op_programs()
    assert not _entries(_trace._PROGRAM)
    np.testing.assert_allclose(grad(lambda a, c: (a + c).sum())(x, b).numpy(), np.ones((5, 4)))


# --- memo_composite(...).hit: relu, add, cross_entropy ---------------------------------------------
def test_relu_and_cross_entropy_hits_match_the_op_layer():
    x, t = tp.from_numpy(X), tp.from_numpy(TARGET)
    f = lambda a, c: F.cross_entropy(tp.relu(a), c)  # noqa: E731
    closed = _traces(f, (x, t))
    assert len({c.structural_key() for c in closed}) == 1
    assert all(str(c.graph) == str(closed[0].graph) for c in closed)
    op_layer = _trace.trace_function(
        lambda a, c: F._cross_entropy(tp.ops.elementwise._relu(a), c, None, None, -100, None, "mean", 0.0),
        (x, t), transform="grad")
    assert str(op_layer.graph) == str(closed[-1].graph)

    def ref(z):
        r = np.maximum(z, 0)
        m = r.max(1, keepdims=True)
        return float(np.mean(np.log(np.exp(r - m).sum(1)) + m[:, 0] - r[np.arange(5), TARGET]))

    want = _fd(ref, X)
    g = grad(f)
    for _ in range(3):
        np.testing.assert_allclose(g(x, t).numpy(), want, rtol=2e-4, atol=1e-6)


def test_composite_hit_falls_back_for_views_outside_tensors_and_repeats():
    x, t = tp.from_numpy(X), tp.from_numpy(TARGET)
    _clear()
    for _ in range(3):
        # a view operand, an outside (captured) target, a repeated operand of add
        g1 = grad(lambda a: F.cross_entropy(tp.relu(a[:, :4]), t))(x).numpy()
        g2 = grad(lambda a: F.cross_entropy(tp.relu(a), t))(x).numpy()
        np.testing.assert_allclose(g1, g2, rtol=1e-6)
        g3 = grad(lambda a: tp.add(a, a).sum())(x).numpy()
        np.testing.assert_allclose(g3, np.full((5, 4), 2.0))


def test_eager_and_autograd_outside_transforms_are_unchanged():
    x = tp.from_numpy(X.copy())
    x.requires_grad_(True)
    y = tp.relu(x + tp.from_numpy(B))
    loss = F.cross_entropy(y, tp.from_numpy(TARGET))
    loss.backward()

    def ref(z):
        r = np.maximum(z + B, 0)
        m = r.max(1, keepdims=True)
        return float(np.mean(np.log(np.exp(r - m).sum(1)) + m[:, 0] - r[np.arange(5), TARGET]))
    np.testing.assert_allclose(x.grad.numpy(), _fd(ref, X), rtol=2e-4, atol=1e-6)

"""The simplify passes: each rewrite row, folding, CSE/DCE, purity, and the effect on derivative graphs."""
import numpy as np
import pytest

from tensorplay.ir import GraphBuilder, TensorType, dtypes as dt, interpret
from tensorplay.ir.passes.simplify import RULES, cse, dce, simplify
from tensorplay.ir.passes.reverse import grad_graph, vjp
from tensorplay.ir.verify import verify
from tests.ad.ad_util import DIFF_SAMPLES, diff_case

F = dt.float64


def names(g):
    return [n.prim.name for n in g.nodes]


def check_same_values(g, s, args):
    verify(s)
    assert s.in_types == g.in_types and s.out_types == g.out_types
    for a, b in zip(interpret(g, args), interpret(s, args)):
        np.testing.assert_array_equal(a, b)


def one_input(shape=(2, 3), dtype=F):
    b = GraphBuilder()
    return b, b.add_input(TensorType(shape, dtype))


ARG = np.arange(6.0).reshape(2, 3) - 2.5

# (description, graph-building function of (b, x) -> output, node names expected after simplify)
REWRITES = [
    ("x*1 -> x", lambda b, x: b.mul(x, b.const_like(x, 1.0)), []),
    ("1*x -> x", lambda b, x: b.mul(b.const_like(x, 1.0), x), []),
    ("x*-1 -> -x", lambda b, x: b.mul(x, b.const_like(x, -1.0)), ["neg"]),
    ("x+0 -> x", lambda b, x: b.add(x, b.zeros_like(x)), []),
    ("0+x -> x", lambda b, x: b.add(b.zeros_like(x), x), []),
    ("x-0 -> x", lambda b, x: b.sub(x, b.zeros_like(x)), []),
    ("0-x -> -x", lambda b, x: b.sub(b.zeros_like(x), x), ["neg"]),
    ("x+-y -> x-y", lambda b, x: b.add(b.sin(x), b.neg(x)), ["sin", "sub"]),
    ("x--y -> x+y", lambda b, x: b.sub(b.sin(x), b.neg(x)), ["sin", "add"]),
    ("x/1 -> x", lambda b, x: b.div(x, b.const_like(x, 1.0)), []),
    ("x**1 -> x", lambda b, x: b.pow(x, b.const_like(x, 1.0)), []),
    ("x**2 -> x*x", lambda b, x: b.pow(x, b.const_like(x, 2.0)), ["mul"]),
    ("neg(neg(x)) -> x", lambda b, x: b.neg(b.neg(x)), []),
    ("select(p, x, x) -> x", lambda b, x: b.select(b.gt(x, x), x, x), []),
    ("convert to own dtype -> x", lambda b, x: b.convert_element_type(x, dtype=F), []),
    ("reshape∘reshape", lambda b, x: b.reshape(b.reshape(x, shape=(6,)), shape=(3, 2)), ["reshape"]),
    ("reshape to own shape", lambda b, x: b.reshape(x, shape=(2, 3)), []),
    ("transpose∘transpose", lambda b, x: b.transpose(b.transpose(x, permutation=(1, 0)), permutation=(1, 0)), []),
    ("broadcast∘broadcast", lambda b, x: b.broadcast_in_dim(b.broadcast_in_dim(x, shape=(4, 2, 3),
                                                                                broadcast_dimensions=(1, 2)),
                                                             shape=(5, 4, 2, 3), broadcast_dimensions=(1, 2, 3)),
     ["broadcast_in_dim"]),
    ("broadcast adding 1-axes -> reshape", lambda b, x: b.reshape(b.broadcast_in_dim(
        x, shape=(2, 1, 3), broadcast_dimensions=(0, 2)), shape=(2, 3)), []),
    ("broadcast then reduce_sum -> x*n", lambda b, x: b.reduce_sum(
        b.broadcast_in_dim(x, shape=(2, 4, 3), broadcast_dimensions=(0, 2)), axes=(1,)), ["full", "mul"]),
    ("sum∘sum", lambda b, x: b.reduce_sum(b.reduce_sum(x, axes=(0,)), axes=(0,)), ["reduce_sum"]),
    ("full-range slice", lambda b, x: b.slice(x, start_indices=(0, 0), limit_indices=(2, 3), strides=(1, 1)), []),
    ("rev∘rev", lambda b, x: b.rev(b.rev(x, axes=(1,)), axes=(1,)), []),
    ("dot of a transpose", lambda b, x: b.dot_general(x, b.transpose(x, permutation=(1, 0)),
                                                      contract=((1,), (0,)), batch=((), ())), ["dot_general"]),
    ("constant folding", lambda b, x: b.add(x, b.exp(b.mul(b.const_like(x, 2.0), b.const_like(x, 0.5)))),
     ["full", "add"]),
    ("CSE", lambda b, x: b.add(b.sin(x), b.sin(x)), ["sin", "add"]),
]


@pytest.mark.parametrize("build, expected", [(r[1], r[2]) for r in REWRITES], ids=[r[0] for r in REWRITES])
def test_rewrite(build, expected):
    b, x = one_input()
    g = b.build([build(b, x)])
    s = simplify(g)
    assert names(s) == expected
    check_same_values(g, s, [ARG])


def test_the_rule_table_covers_the_documented_identities():
    for prim in ("add", "sub", "mul", "div", "neg", "reshape", "transpose", "broadcast_in_dim", "reduce_sum"):
        assert RULES[prim], prim
    assert sum(len(v) for v in RULES.values()) >= 30


def test_multiplication_by_zero_is_kept_for_floats_but_folded_for_integers():
    b, x = one_input()
    g = b.build([b.mul(x, b.zeros_like(x))])
    assert names(simplify(g)) == ["full", "mul"]  # inf * 0 is nan: not an identity
    inf = np.full((2, 3), np.inf)
    assert np.isnan(interpret(simplify(g), [inf])[0]).all()
    b, x = one_input(dtype=dt.int64)
    g = b.build([b.mul(x, b.zeros_like(x))])
    assert names(simplify(g)) == ["full"]


def test_folding_keeps_dtypes_and_special_values():
    b = GraphBuilder()
    c = b.convert_element_type(b.const(2.7, (2,), dt.float32), dtype=dt.int32)
    nan = b.div(b.const(0.0, (2,), F), b.const(0.0, (2,), F))
    s = simplify(b.build([c, nan, b.reduce_sum(b.const(1.5, (4, 3), F), axes=(0,))]))
    assert names(s) == ["full", "full", "full"]
    out = interpret(s, [])
    assert out[0].dtype == np.int32 and out[0].tolist() == [2, 2]
    assert np.isnan(out[1]).all()
    np.testing.assert_array_equal(out[2], [6.0, 6.0, 6.0])


def test_dce_and_cse_alone():
    b, x = one_input()
    b.cos(x)  # dead
    y = b.add(b.sin(x), b.sin(x))
    g = b.build([y])
    assert names(dce(g)) == ["sin", "sin", "add"]
    assert names(cse(g)) == ["sin", "add"]
    assert len(dce(g).inputs) == 1  # inputs are kept even when unused


def test_stop_gradient_and_random_draws_are_not_removed():
    b = GraphBuilder()
    key = b.add_input(TensorType((2,), dt.int64))
    x = b.add_input(TensorType((3,), F))
    r = b.random_normal(key, shape=(3,), dtype=F)
    g = b.build([b.add(b.stop_gradient(x), r)])
    assert sorted(names(simplify(g))) == ["add", "random_normal", "stop_gradient"]


def test_passes_are_pure():
    b, x = one_input()
    y = b.mul(b.transpose(b.transpose(x, permutation=(1, 0)), permutation=(1, 0)), b.const_like(x, 1.0))
    g = b.build([b.add(y, b.sin(x))])
    before = (str(g), list(g.nodes), list(g.inputs), list(g.outputs))
    simplify(g), dce(g), cse(g), vjp(g, [True]), grad_graph(b.build([b.reduce_sum(y, axes=(0, 1))]), [True], [1.0])
    assert (str(g), list(g.nodes), list(g.inputs), list(g.outputs)) == before


@pytest.mark.parametrize("s", [s for s in DIFF_SAMPLES[::4] if s.prim != "while_loop"], ids=lambda s: s.prim)
def test_simplify_preserves_backward_graphs(s):
    """(Reverse mode through while_loop is an error by design: tests/ir/test_control_ad.py.)"""
    g, args, wrt = diff_case(s)
    parts = vjp(g, wrt)
    res = interpret(parts.forward, args)[1:]
    u = np.random.default_rng(3).standard_normal(g.outputs[0].shape)
    simple = simplify(parts.backward)
    verify(simple)
    assert len(simple.nodes) <= len(parts.backward.nodes)
    for a, c in zip(interpret(parts.backward, res + [u]), interpret(simple, res + [u])):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


# --- the effect on derivative graphs ------------------------------------------------------------------
def mlp_grad_graph():
    """grad of a 3-layer MLP's mean squared error with respect to its six parameters."""
    import tensorplay as tp
    from tensorplay._trace import trace_function

    rng = np.random.default_rng(0)
    sizes = [8, 16, 16, 4]
    params = [(tp.tensor(rng.standard_normal((o, i)), dtype=tp.float32), tp.tensor(rng.standard_normal(o),
                                                                                   dtype=tp.float32))
              for i, o in zip(sizes[:-1], sizes[1:])]
    x = tp.tensor(rng.standard_normal((32, 8)), dtype=tp.float32)
    y = tp.tensor(rng.standard_normal((32, 4)), dtype=tp.float32)

    def loss(params, x, y):
        h = x
        for k, (w, bias) in enumerate(params):
            h = h @ w.T + bias
            if k < len(params) - 1:
                h = tp.relu(h)
        return ((h - y) ** 2).mean()

    closed = trace_function(loss, (params, x, y), {})
    arrays = [t.numpy() for t in [p for pair in params for p in pair] + [x, y]] + \
        [t.numpy() for t in closed.capture_tensors()]
    wrt = [True] * 6 + [False] * (len(closed.graph.inputs) - 6)
    return closed.graph, grad_graph(closed.graph, wrt, [1.0]), arrays


def test_simplify_shrinks_the_gradient_of_an_mlp():
    forward, g, arrays = mlp_grad_graph()
    s = simplify(g)
    verify(s)
    print(f"\n3-layer MLP loss: forward {len(forward.nodes)} nodes, grad {len(g.nodes)} nodes before simplify, "
          f"{len(s.nodes)} after")
    assert len(s.nodes) <= len(g.nodes) * 0.75
    assert "transpose" not in names(s)  # folded into dot_general
    for a, c in zip(interpret(g, arrays), interpret(s, arrays)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


# --- products with the one-hot basis of jacrev / jacfwd ------------------------------------------
def _identity(b, n, dtype=F, dims=(0, 1)):
    rows = b.iota(shape=(n, n), dtype=dt.int64, dimension=dims[0])
    cols = b.iota(shape=(n, n), dtype=dt.int64, dimension=dims[1])
    return b.convert_element_type(b.eq(rows, cols), dtype=dtype)


def _special(a):
    """`a` with an inf, a -inf and a nan in different places (when it has room for them)."""
    a = a.copy()
    flat = a.reshape(-1)
    for i, v in zip((1, 4, 7), (np.inf, -np.inf, np.nan)):
        if i < flat.size:
            flat[i] = v
    return a


# (A shape, which operand the identity is, contract) -> the product of A with the n x n identity
IDENTITY_DOTS = [
    ((4, 3), "lhs", ((1,), (0,))),   # I @ A
    ((4, 3), "lhs", ((0,), (0,))),   # I^T @ A
    ((3, 4), "rhs", ((1,), (0,))),   # A @ I
    ((3, 4), "rhs", ((1,), (1,))),   # A @ I^T
    ((2, 4, 3), "rhs", ((1,), (0,))),  # a middle axis of A contracted: the result is a transpose
    ((1, 5), "rhs", ((1,), (1,))),   # size-1 free axis
    ((1, 1), "lhs", ((1,), (0,))),   # the 1 x 1 identity
    ((0, 3), "lhs", ((1,), (0,))),   # the empty identity
]


@pytest.mark.parametrize("special", [False, True], ids=["finite", "inf-nan"])
@pytest.mark.parametrize("a_shape, side, contract", IDENTITY_DOTS, ids=lambda c: str(c))
def test_products_with_the_identity_read_the_other_operand(a_shape, side, contract, special):
    """No dot_general is left, and the values equal the product's bit for bit, nan included
    (0 * inf off the diagonal): checked by the interpreter on the unsimplified graph."""
    b, a = one_input(a_shape)
    ca = contract[0 if side == "rhs" else 1][0]
    e = _identity(b, a_shape[ca])
    x, y = (e, a) if side == "lhs" else (a, e)
    g = b.build([b.dot_general(x, y, contract=contract, batch=((), ()))])
    s = simplify(g)
    # (the 1 x 1 basis folds to the constant 1 first (`_iota_of_one`), and a product of inner
    # size 1 is a multiply: `_dot_of_unit_contraction`)
    assert "dot_general" not in names(s), names(s)
    arg = np.random.default_rng(3).standard_normal(a_shape)
    if special:
        arg = _special(arg)
    check_same_values(g, s, [arg])
    if special and min(a_shape) > 1:
        assert np.isnan(interpret(s, [arg])[0]).any()


@pytest.mark.parametrize("axes", [(0,), (1,), (1, 0), ()], ids=["rows", "cols", "both", "scalar"])
@pytest.mark.parametrize("special", [False, True], ids=["finite", "inf-nan"])
def test_products_with_a_scaled_identity_read_the_other_operand(axes, special):
    """diag(d) built as identity * broadcast(d) (the jacrev pattern), d broadcast along either
    axis, twice, or a scalar: d * A, with the product's nan where d or A is not finite."""
    n = 5
    b = GraphBuilder()
    a = b.add_input(TensorType((n, 3), F))
    ds = [b.add_input(TensorType((n,) if axis is not None else (), F)) for axis in (axes or (None,))]
    e = _identity(b, n)
    for d, axis in zip(ds, axes or (None,)):
        bd = b.broadcast_in_dim(d, shape=(n, n), broadcast_dimensions=(axis,) if axis is not None else ())
        e = b.mul(e, bd)
    g = b.build([b.dot_general(e, a, contract=((1,), (0,)), batch=((), ()))])
    s = simplify(g)
    assert "dot_general" not in names(s), names(s)
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((n, 3))] + [rng.standard_normal(d.shape) for d in ds]
    check_same_values(g, s, args)
    if special:
        for k in range(len(args)):  # a non-finite entry in each operand in turn
            bad = [x.copy() for x in args]
            bad[k] = _special(bad[k]) if bad[k].ndim else np.asarray(np.inf)
            check_same_values(g, s, bad)


def test_products_with_other_one_hots_are_kept():
    b, a = one_input((4, 3))
    not_identity = _identity(b, 4, dims=(0, 0))  # all ones
    g = b.build([b.dot_general(not_identity, a, contract=((1,), (0,)), batch=((), ()))])
    assert "dot_general" in names(simplify(g))
    b, a = one_input((4, 3), dtype=dt.float32)
    other_dtype = _identity(b, 4, dtype=F)  # a float64 basis with a float32 operand: not this rule's
    g = b.build([b.dot_general(other_dtype, b.convert_element_type(a, dtype=F), contract=((1,), (0,)),
                               batch=((), ()))])
    assert "dot_general" not in names(simplify(g))  # converted first: same dtype, rewritten


def test_an_iota_along_a_unit_axis_is_zeros():
    b = GraphBuilder()
    g = b.build([b.iota(shape=(3, 1), dtype=dt.int64, dimension=1), b.iota(shape=(3, 1), dtype=dt.int64, dimension=0)])
    s = simplify(g)
    assert names(s) == ["full", "iota"]
    check_same_values(g, s, [])

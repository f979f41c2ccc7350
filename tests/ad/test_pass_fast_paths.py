"""The fast paths of the passes: copying nodes without re-running type rules, simplify in one walk,
transpose(dot_general) folded into a swapped dot_general, and the tp.compile cache key."""
import pickle
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.ir import GraphBuilder, TensorType, dtypes as dt, interpret
from tensorplay.ir.core import freeze_attr, inline
from tensorplay.ir.passes.simplify import simplify
from tensorplay.ir.passes.reverse import grad_graph
from tensorplay.ir.verify import verify
from tensorplay import _pytree
from tests.ad.ad_util import DIFF_SAMPLES, diff_case

F = dt.float64
NT = namedtuple("NT", "a b")


def names(g):
    return [n.prim.name for n in g.nodes]


# --- core fast paths -------------------------------------------------------------------------------
def test_freeze_attr_returns_frozen_attributes_unchanged():
    t = ((1, 2), (3,), ())
    assert freeze_attr(t) is t
    assert freeze_attr([[1], (2, [3])]) == ((1,), (2, (3,)))
    assert freeze_attr(((1,), [2])) == ((1,), (2,))
    assert freeze_attr(dt.float32) is dt.float32


def test_emit_copy_checks_operand_types_and_keeps_attributes():
    b = GraphBuilder()
    x = b.add_input(TensorType((2, 3), F))
    g = b.build([b.transpose(x, permutation=(1, 0))])
    b2 = GraphBuilder()
    y = b2.add_input(TensorType((2, 3), F))
    out = b2.emit_copy(g.nodes[0], (y,))
    assert out.type == g.outputs[0].type and out.node.attrs == {"permutation": (1, 0)}
    assert out.node.attrs is not g.nodes[0].attrs  # the new graph owns its attributes
    z = b2.add_input(TensorType((3, 2), F))
    with pytest.raises(TypeError, match="transpose"):
        b2.emit_copy(g.nodes[0], (z,))


def test_inline_copies_without_changing_types():
    b = GraphBuilder()
    x = b.add_input(TensorType((3,), F))
    g = b.build([b.reduce_sum(b.sin(x), axes=(0,))])
    outer = GraphBuilder()
    y = outer.add_input(TensorType((3,), F))
    (r,) = inline(outer, g, [y])
    h = outer.build([r])
    verify(h)
    assert names(h) == ["sin", "reduce_sum"] and h.out_types == g.out_types


# --- simplify --------------------------------------------------------------------------------------
@pytest.mark.parametrize("s", [s for s in DIFF_SAMPLES if s.prim != "while_loop"][::3], ids=lambda s: s.prim)
def test_simplify_reaches_a_fixed_point_in_one_walk(s):  # (grad of while_loop is an error by design)
    g, args, wrt = diff_case(s)
    full = grad_graph(g, wrt, [1.0] * len(g.outputs)) if all(o.type.size == 1 for o in g.outputs) else g
    once = simplify(full)
    verify(once)
    twice = simplify(once)
    assert names(twice) == names(once)
    assert str(twice) == str(once)


def _dot_then_transpose(b, lhs_shape, rhs_shape, contract, batch, permutation, extra_use=False):
    x = b.add_input(TensorType(lhs_shape, F))
    y = b.add_input(TensorType(rhs_shape, F))
    d = b.dot_general(x, y, contract=contract, batch=batch)
    t = b.transpose(d, permutation=permutation)
    return b.build([t, d] if extra_use else [t])


@pytest.mark.parametrize("lhs, rhs, contract, batch, perm", [
    ((4, 3), (4, 5), ((0,), (0,)), ((), ()), (1, 0)),                 # dW of x @ W: (x^T g)^T -> g^T x
    ((3, 4), (5, 4), ((1,), (1,)), ((), ()), (1, 0)),
    ((2, 3, 4), (2, 4, 5), ((2,), (1,)), ((0,), (0,)), (0, 2, 1)),     # batched: batch axis stays in front
    ((3, 6, 4), (4, 5), ((2,), (0,)), ((), ()), (2, 0, 1)),           # two lhs free axes, moved as a group
])
def test_transpose_of_dot_general_is_the_swapped_product(lhs, rhs, contract, batch, perm):
    g = _dot_then_transpose(GraphBuilder(), lhs, rhs, contract, batch, perm)
    s = simplify(g)
    verify(s)
    assert names(s) == ["dot_general"]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(lhs), rng.standard_normal(rhs)]
    np.testing.assert_allclose(interpret(s, args)[0], interpret(g, args)[0], rtol=1e-12, atol=1e-12)


def test_transpose_of_dot_general_is_kept_when_it_does_not_swap_the_groups_or_the_product_is_reused():
    g = _dot_then_transpose(GraphBuilder(), (3, 6, 4), (4, 5), ((2,), (0,)), ((), ()), (1, 0, 2))
    assert names(simplify(g)) == ["dot_general", "transpose"]
    g = _dot_then_transpose(GraphBuilder(), (4, 3), (4, 5), ((0,), (0,)), ((), ()), (1, 0), extra_use=True)
    assert names(simplify(g)) == ["dot_general", "transpose"]  # one product, not two


def test_the_weight_gradient_of_x_at_w_is_not_transposed():
    w = tp.randn(6, 4)
    x = tp.randn(5, 6)
    g = tp.func.grad(lambda w: (x @ w).tanh().sum())
    graph = tp.compile(g).get_graph(w).graph
    expected = (x.numpy().T @ (1 - np.tanh(x.numpy() @ w.numpy()) ** 2))
    np.testing.assert_allclose(g(w).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert "transpose" not in names(graph)


# --- pytrees and the tp.compile cache key ----------------------------------------------------------
def test_treedef_is_hashable_comparable_and_picklable():
    tree = ({"b": [1, None], "a": NT(2, (3,))}, [4])
    leaves, td = _pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4] and td.num_leaves == 4  # dicts flatten in insertion order, as torch
    _, td2 = _pytree.tree_flatten(tree)
    assert td2 is td  # interned: flattening the same structure again gives the same TreeDef
    fresh = _pytree.TreeDef(td.kind, td.meta, td.children, td.container)  # equal by structure, not identity
    assert fresh == td and hash(fresh) == hash(td) and fresh is not td
    assert td != _pytree.tree_flatten(([1, None], [4]))[1]
    assert pickle.loads(pickle.dumps(td)) == td
    assert _pytree.tree_unflatten(td, leaves) == tree
    with pytest.raises(AttributeError):
        td.kind = "list"


def test_compile_cache_key_distinguishes_structure_shapes_dtypes_layouts_and_statics():
    f = tp.compile(lambda t, n=1: sum(v.sum() for v in (t.values() if isinstance(t, dict) else t)) * n)
    a, b = tp.ones(3), tp.ones(2)
    calls = [((a, b),), ([a, b],), ({"x": a, "y": b},), ((b, a),), ((a, b), 2), ((a, b.double()),),
             ((tp.ones(3, 2).T[0], b),), ((a, b), 1.5), ((a, b), True)]
    for args in calls:
        assert f(*args).item() == 5 * (args[1] if len(args) > 1 else 1)
    assert f.trace_count == len(calls)
    for args in calls:  # every signature is cached
        f(*args)
    f((tp.zeros(3), tp.zeros(2)))  # new tensors, same signature
    assert f.trace_count == len(calls)
    f({"y": b, "x": a})  # another key order is another tree (insertion order, as torch): its own entry
    f(OrderedDict(x=a, y=b))  # an OrderedDict comes back as one, so it is its own entry too
    assert f.trace_count == len(calls) + 2


def test_compiled_outputs_are_fresh_and_aliases_and_writes_still_work():
    x = tp.ones(3)
    y = tp.compile(lambda v: v * 2)(x)
    x.add_(1)
    assert y.tolist() == [2, 2, 2]
    ident = tp.compile(lambda v: v)
    assert ident(x) is x
    inc = tp.compile(lambda v: v.add_(1).sum())
    assert inc(x).item() == 9 and x.tolist() == [3, 3, 3]

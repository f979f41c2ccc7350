"""A reduction recomputes a cheap expression of graph inputs that other nodes read too
(`codegen.schedule.split_reduced_cones`) instead of a loop storing it for both. Oracles: the
interpreter, numpy by hand."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay.codegen import compile_graph
from tensorplay.codegen.schedule import normalize, schedule, split_reduced_cones
from tensorplay.func import jacfwd, jacrev
from tensorplay.ir import GraphBuilder, TensorType, float32, int32, interpret


def _nan_mask_graph(rows=5, cols=7):
    """The mask `_dot_of_identity` builds: per row, is any *other* entry non-finite?"""
    b = GraphBuilder()
    w = b.add_input(TensorType((rows, cols), float32))
    d = b.sub(w, w)
    flag = b.convert_element_type(b.ne(d, d), dtype=int32)
    count = b.broadcast_in_dim(b.reduce_sum(flag, axes=(1,)), shape=(rows, cols), broadcast_dimensions=(0,))
    others = b.gt(b.sub(count, flag), b.full(shape=(rows, cols), dtype=int32, value=0))
    nan = b.full(shape=(rows, cols), dtype=float32, value=float("nan"))
    return b.build([b.select(others, nan, w)])


def _weights_with_specials(rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)).astype(np.float32)
    if rows > 1 and cols > 1:
        w[1, 2 % cols] = np.inf
        w[rows - 1, 0] = np.nan
    return w


def test_the_nan_mask_is_not_stored_by_a_loop_of_its_own():
    g = _nan_mask_graph()
    roots = [k.root.prim.name for k in schedule(normalize(g))]
    assert "convert_element_type" not in roots and roots == ["reduce_sum", "select"]
    w = _weights_with_specials(5, 7)
    got = compile_graph(g)(w)[0]
    np.testing.assert_array_equal(got, interpret(g, [w])[0])
    # a row with one non-finite entry: nan everywhere else, the entry itself kept
    assert np.isnan(got[1]).sum() == 6 and np.isinf(got[1, 2]) and np.isnan(got[4]).all()
    np.testing.assert_array_equal(got[[0, 2, 3]], w[[0, 2, 3]])


def test_a_reduction_and_its_copy_feed_later_nodes_and_outputs():
    b = GraphBuilder()
    x = b.add_input(TensorType((4, 3), float32))
    a = b.abs(x)
    m = b.reduce_max(a, axes=(1,))
    out = b.add(b.broadcast_in_dim(m, shape=(4, 3), broadcast_dimensions=(0,)), a)
    g = b.build([out, m])
    s = split_reduced_cones(g)
    assert [n.prim.name for n in s.nodes] == ["abs", "abs", "reduce_max", "broadcast_in_dim", "add"]
    x0 = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    for got, want in zip(compile_graph(g)(x0), interpret(g, [x0])):
        np.testing.assert_array_equal(got, want)


def test_deep_cones_and_cones_of_computed_values_are_not_copied():
    b = GraphBuilder()
    x = b.add_input(TensorType((4, 3), float32))
    deep = x
    for _ in range(5):  # more than MAX_CONE cheap nodes
        deep = b.add(deep, x)
    g = b.build([b.reduce_sum(deep, axes=(1,)), b.mul(deep, x)])
    assert split_reduced_cones(g) is g
    t = b.abs(b.tanh(x))  # a transcendental leaf: its value would be computed twice
    g = b.build([b.reduce_sum(t, axes=(1,)), b.mul(t, x)])
    assert split_reduced_cones(g) is g
    g = b.build([b.reduce_sum(b.abs(x), axes=(1,))])  # one reader: nothing to do
    assert split_reduced_cones(g) is g


@pytest.mark.parametrize("transform", [jacrev, jacfwd])
def test_jacobians_keep_nan_where_a_weight_is_not_finite(transform):
    rng = np.random.default_rng(2)
    w1 = rng.standard_normal((6, 5)).astype(np.float32)
    w1[2, 3] = np.inf
    w2 = rng.standard_normal((5, 6)).astype(np.float32)
    x = rng.standard_normal(6).astype(np.float32)
    f = lambda x, w1, w2: tp.tanh(x @ w1) @ w2  # noqa: E731
    args = (tp.from_numpy(x), tp.from_numpy(w1), tp.from_numpy(w2))
    plain = transform(f)(*args).numpy()
    compiled = tp.compile(transform(f))(*args).numpy()
    np.testing.assert_array_equal(np.isnan(compiled), np.isnan(plain))
    np.testing.assert_allclose(compiled, plain, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 6), cols=st.integers(0, 6), seed=st.integers(0, 50))
def test_random_masks_match_the_interpreter(rows, cols, seed):
    g = _nan_mask_graph(rows, cols)
    w = _weights_with_specials(rows, cols, seed)
    np.testing.assert_array_equal(compile_graph(g)(w)[0], interpret(g, [w])[0])

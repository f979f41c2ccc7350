"""Compiled cond / while_loop / scan against the reference interpreter on the same inputs: shapes
(0-d, size-1, empty), length-0 and length-1 scans, reverse scans, while loops that never run,
carries that swap, stay put or go unused, nested regions, and index errors inside loop bodies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorplay import codegen
from tensorplay.ir import dtypes as dt
from control_graphs import F32, T, assert_compiled_matches, graph, random_args, region, scan_graph

I32, BOOL = dt.int32, dt.bool_
SHAPES = [(), (1,), (3,), (2, 3), (0,), (2, 0)]


def _affine_body(b, a, c, x):
    """c' = a * c + x, y = c' * x (elementwise; all of one shape)."""
    c2 = b.add(b.mul(a, c), x)
    return [c2, b.mul(c2, x)]


# --- scan ----------------------------------------------------------------------------------------
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(SHAPES), length=st.sampled_from([0, 1, 2, 5]), reverse=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_scan_matches_interpreter(shape, length, reverse, seed):
    g = scan_graph(_affine_body, [T(shape, F32)], [T(shape, F32)], [T((length, *shape), F32)], length, reverse)
    assert_compiled_matches(g, random_args(g, seed, scale=0.5))


def test_reverse_scan_visits_the_last_slice_first():
    # carry = 10 * carry + x: the digits of the result show the visiting order
    g = scan_graph(lambda b, c, x: [b.add(b.mul(c, b.const(10.0)), x), c], [], [T((), F32)], [T((4,), F32)],
                   4, reverse=True)
    final, ys = codegen.compile_graph(g)(np.array(0, np.float32), np.array([1, 2, 3, 4], np.float32))
    assert final == 4321
    np.testing.assert_array_equal(ys, [432, 43, 4, 0])  # y at slice i is the carry before visiting it
    assert_compiled_matches(g, [np.array(0, np.float32), np.array([1, 2, 3, 4], np.float32)])


def test_scan_of_a_matrix_cell_with_several_carries_and_ys():
    def cell(b, w, h, s, x):
        h2 = b.tanh(b.add(b.dot_general(h, w, contract=((1,), (0,)), batch=((), ())), x))
        s2 = b.add(s, b.reduce_sum(h2, axes=(0, 1)))
        return [h2, s2, h2, b.reduce_max(h2, axes=(1,))]
    g = scan_graph(cell, [T((5, 5), F32)], [T((2, 5), F32), T((), F32)], [T((7, 2, 5), F32)], 7)
    assert_compiled_matches(g, random_args(g, 3, scale=0.5), rtol=2e-5)


@pytest.mark.parametrize("length", [0, 1, 2, 3])
def test_scan_carries_that_swap_stay_put_or_are_consts(length):
    def body(b, k, c0, c1, c2, x):
        # c0 and c1 swap, c2 is returned unchanged, the y is a const and an x slice
        return [c1, c0, c2, k, x]
    g = scan_graph(body, [T((2,), F32)], [T((2,), F32), T((2,), F32), T((), I32)], [T((length, 3), F32)], length)
    assert_compiled_matches(g, random_args(g, 1))


@pytest.mark.parametrize("keep", [[0], [1], [2], [], [0, 2]])
def test_scan_with_unused_results(keep):
    body = region("body", [T((3,), F32), T((3,), F32), T((3,), F32)], lambda b, c, d, x: [b.add(c, x), b.mul(d, x), b.sin(c)])
    g = graph("partial", [T((3,), F32), T((3,), F32), T((4, 3), F32)],
              lambda b, c, d, xs: [b.tuple_get(b.scan(c, d, xs, body=body, num_consts=0, num_carry=2, length=4,
                                                       reverse=False), index=i) for i in keep] or [b.neg(c)])
    assert_compiled_matches(g, random_args(g, 2))


def test_scan_carry_of_bools_and_ints():
    def body(b, flag, n, x):
        wide = b.broadcast_in_dim(flag, shape=(2,), broadcast_dimensions=())
        return [b.logical_not(flag), b.add(n, x), b.select(wide, x, n)]
    g = scan_graph(body, [], [T((), BOOL), T((2,), I32)], [T((6, 2), I32)], 6)
    assert_compiled_matches(g, random_args(g, 4))


def test_one_output_returned_as_carry_and_as_y():
    g = scan_graph(lambda b, c, x: [b.exp(b.mul(c, x))] * 2, [], [T((4,), F32)], [T((3, 4), F32)], 3)
    assert_compiled_matches(g, random_args(g, 5, scale=0.3), rtol=1e-5)


# --- while_loop ----------------------------------------------------------------------------------
def _counting_loop(shape):
    cond = region("cond", [T((), I32), T((), I32), T(shape, F32)], lambda b, n, i, x: [b.lt(i, n)])
    body = region("body", [T(shape, F32), T((), I32), T(shape, F32)],
                  lambda b, k, i, x: [b.add(i, b.const(1, (), I32)), b.add(b.mul(x, k), b.const(1.0, shape))])
    return graph("count", [T((), I32), T(shape, F32), T((), I32), T(shape, F32)],
                 lambda b, n, k, i, x: b.while_loop(n, k, i, x, cond=cond, body=body, num_cond_consts=1,
                                                    num_body_consts=1))


@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 0)])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_while_loop_matches_interpreter(shape, n):
    g = _counting_loop(shape)
    args = random_args(g, n, scale=0.5)
    args[0], args[2] = np.array(n, np.int32), np.array(0, np.int32)
    i, _ = assert_compiled_matches(g, args)
    assert i == n


def test_while_loop_with_zero_iterations_returns_init():
    g = _counting_loop((3,))
    x = np.array([1.5, -2.0, 0.25], np.float32)
    i, out = codegen.compile_graph(g)(np.array(0, np.int32), x, np.array(5, np.int32), x)
    assert i == 5
    np.testing.assert_array_equal(out, x)


def test_while_loop_with_unused_and_unchanged_carries():
    cond = region("cond", [T((), I32), T((2,), F32), T((2,), F32)], lambda b, i, x, y: [b.lt(i, b.const(3, (), I32))])
    body = region("body", [T((), I32), T((2,), F32), T((2,), F32)],
                  lambda b, i, x, y: [b.add(i, b.const(1, (), I32)), b.add(x, y), y])
    for keep in ([1], [2], [0, 2]):
        g = graph("w", [T((), I32), T((2,), F32), T((2,), F32)],
                  lambda b, i, x, y: [b.tuple_get(b.while_loop(i, x, y, cond=cond, body=body, num_cond_consts=0,
                                                               num_body_consts=0), index=j) for j in keep])
        assert_compiled_matches(g, [np.array(0, np.int32), *random_args(g, 6)[1:]])


# --- cond ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (1,), (4,), (2, 0)])
@pytest.mark.parametrize("pred", [True, False])
def test_cond_matches_interpreter(shape, pred):
    t = region("true", [T(shape, F32), T((), F32)], lambda b, x, s: [b.sin(x), b.mul(s, s)])
    f = region("false", [T(shape, F32), T((), F32)], lambda b, x, s: [x, b.neg(s)])
    g = graph("c", [T((), BOOL), T(shape, F32), T((), F32)], lambda b, p, x, s: b.cond(p, x, s, true=t, false=f))
    args = random_args(g, 7)
    args[0] = np.array(pred)
    assert_compiled_matches(g, args)


def test_cond_with_an_unused_result():
    t = region("true", [T((3,), F32)], lambda b, x: [b.exp(x), b.sin(x)])
    f = region("false", [T((3,), F32)], lambda b, x: [x, b.cos(x)])
    g = graph("c", [T((), BOOL), T((3,), F32)],
              lambda b, p, x: [b.tuple_get(b.cond(p, x, true=t, false=f), index=1)])
    for p in (True, False):
        assert_compiled_matches(g, [np.array(p), random_args(g, 8)[1]])


# --- nesting -------------------------------------------------------------------------------------
def _nested_graph():
    """scan (length 5) over a cond whose true branch runs a reverse scan (length 3)."""
    inner = region("body", [T((2,), F32), T((2,), F32)], lambda b, c, x: [b.add(c, x), b.mul(c, x)])

    def true_branch(b, c, xs):
        r = b.scan(c, xs, body=inner, num_consts=0, num_carry=1, length=3, reverse=True)
        return [b.tuple_get(r, index=0)]
    t = region("true", [T((2,), F32), T((3, 2), F32)], true_branch)
    f = region("false", [T((2,), F32), T((3, 2), F32)], lambda b, c, xs: [b.neg(c)])

    def outer(b, xs, c, p):
        v = b.tuple_get(b.cond(p, c, xs, true=t, false=f), index=0)
        return [v, b.exp(v)]
    return scan_graph(outer, [T((3, 2), F32)], [T((2,), F32)], [T((5,), BOOL)], 5)


def test_scan_in_cond_in_scan():
    g = _nested_graph()
    for seed in range(3):
        args = random_args(g, seed, scale=0.3)
        assert_compiled_matches(g, args, rtol=1e-5)


def test_while_in_scan_body():
    cond = region("cond", [T((), F32)], lambda b, c: [b.lt(c, b.const(10.0))])
    body = region("body", [T((), F32)], lambda b, c: [b.add(b.mul(b.abs(c), b.const(2.0)), b.const(1.0))])

    def step(b, c, x):
        w = b.tuple_get(b.while_loop(b.add(c, x), cond=cond, body=body, num_cond_consts=0, num_body_consts=0), index=0)
        return [b.sub(w, b.const(10.0)), w]
    g = scan_graph(step, [], [T((), F32)], [T((6,), F32)], 6)
    assert_compiled_matches(g, [np.array(-3.0, np.float32), np.array([0.5, -20, 3, 1, 0, 40], np.float32)])


# --- index errors inside loop bodies -------------------------------------------------------------
def _indexing_scan():
    return scan_graph(lambda b, x, c, i: [b.add(c, b.take(x, i, axis=0)), c], [T((4,), F32)], [T((), F32)],
                      [T((3,), I32)], 3)


def test_index_error_inside_a_scan_raises():
    g = _indexing_scan()
    x = np.arange(4, dtype=np.float32)
    assert_compiled_matches(g, [x, np.array(0, np.float32), np.array([0, 3, 1], np.int32)])
    exe = codegen.compile_graph(g)
    for bad in ([0, 4, 1], [0, 1, -5]):
        with pytest.raises(IndexError, match=r"take: index out of range.*inside the scan body region"):
            exe(x, np.array(0, np.float32), np.array(bad, np.int32))


def test_index_error_stops_a_while_loop_that_would_not_end():
    # the bad index is clamped to 0, where x is 0: without leaving on the error the loop never ends
    cond = region("cond", [T((), F32)], lambda b, c: [b.lt(c, b.const(10.0))])
    body = region("body", [T((4,), F32), T((), I32), T((), F32)], lambda b, x, i, c: [b.add(c, b.take(x, i, axis=0))])
    g = graph("w", [T((4,), F32), T((), I32), T((), F32)],
              lambda b, x, i, c: b.while_loop(x, i, c, cond=cond, body=body, num_cond_consts=0, num_body_consts=2))
    x = np.array([0, 1, 2, 3], np.float32)
    exe = codegen.compile_graph(g)
    assert exe(x, np.array(2, np.int32), np.array(0, np.float32))[0] == 10
    with pytest.raises(IndexError, match="while_loop body"):
        exe(x, np.array(9, np.int32), np.array(0, np.float32))


def test_index_error_in_a_nested_loop_leaves_both_loops():
    inner = _indexing_scan().nodes[0].attrs["body"]

    def outer(b, x, c, idx):
        r = b.scan(x, c, idx, body=inner, num_consts=1, num_carry=1, length=3, reverse=False)
        return [b.tuple_get(r, index=0), c]
    g = scan_graph(outer, [T((4,), F32)], [T((), F32)], [T((2, 3), I32)], 2)
    exe = codegen.compile_graph(g)
    x = np.arange(4, dtype=np.float32)
    assert_compiled_matches(g, [x, np.array(1, np.float32), np.array([[0, 1, 2], [3, 3, 0]], np.int32)])
    with pytest.raises(IndexError, match="scan body > scan body"):
        exe(x, np.array(1, np.float32), np.array([[0, 1, 2], [3, 7, 0]], np.int32))

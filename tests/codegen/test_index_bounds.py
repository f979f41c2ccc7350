"""Out-of-range indices raise IndexError at the call, whichever way the op runs: eager, compiled
(`tp.compile`, the error flag the lowered code sets in the status word), the interpreter, under
vmap and in a gradient. In-range indices, negative ones included, give numpy's answer."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen, ir
from tensorplay.func import grad, vmap
from codegen_testutil import single_node_graph

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def _index(x, i):
    return x[i]


def _index_select(x, i):
    return tp.index_select(x, 1, i)


def _take(x, i):
    return tp.take(x, i)


def _gather(x, i):
    return tp.gather(x, 1, i)


def _index_add(x, i):
    return tp.index_add(x, 0, i, tp.ones(i.shape[0], 4))


def _scatter_add(x, i):
    return tp.scatter_add(x, 1, i, tp.ones(3, 1))


def _two_axes(x, i):
    return x[i, i]


# (op, in-range index, numpy oracle for it, out-of-range indices of the same shape)
CASES = [
    (_index, [0, 2, -1], lambda x, i: x[i], [[0, 3, 1], [-4, 0, 0], [0, 0, 7]]),
    (_index_select, [3, 0, -4], lambda x, i: x[:, i], [[4, 0, 0], [0, -5, 0]]),
    (_take, [11, 0, -12], lambda x, i: x.ravel()[i], [[12, 0, 0], [0, 0, -13]]),
    (_gather, [[3], [0], [-1]], lambda x, i: np.take_along_axis(x, np.where(i < 0, i + 4, i), 1),
     [[[4], [0], [0]], [[0], [0], [-5]], [[0], [4], [0]]]),
    (_index_add, [0, 2, 2], lambda x, i: _np_index_add(x, i), [[3, 0, 0], [0, -4, 0]]),
    (_scatter_add, [[3], [0], [1]], lambda x, i: _np_scatter_add(x, i), [[[4], [0], [0]], [[0], [0], [-5]]]),
    (_two_axes, [0, 2], lambda x, i: x[i, i], [[3, 0], [0, -4]]),
]


def _np_index_add(x, i):
    out = x.copy()
    np.add.at(out, np.asarray(i), 1.0)
    return out


def _np_scatter_add(x, i):
    out = x.copy()
    for r, (c,) in enumerate(i):
        out[r, c] += 1.0
    return out


IDS = [c[0].__name__.strip("_") for c in CASES]


@pytest.mark.parametrize("fn,good,oracle,bads", CASES, ids=IDS)
def test_compiled_in_range_matches_numpy(fn, good, oracle, bads):
    got = tp.compile(fn)(tp.tensor(X), tp.tensor(good)).numpy()
    np.testing.assert_array_equal(got, oracle(X, np.array(good)))


@pytest.mark.parametrize("fn,good,oracle,bads", CASES, ids=IDS)
def test_compiled_out_of_range_raises(fn, good, oracle, bads):
    f = tp.compile(fn)
    f(tp.tensor(X), tp.tensor(good))
    for bad in bads:
        with pytest.raises(IndexError):
            f(tp.tensor(X), tp.tensor(bad))  # same shapes as a good call: the same executable
        with pytest.raises(IndexError):
            fn(tp.tensor(X), tp.tensor(bad))  # eager agrees
    np.testing.assert_array_equal(f(tp.tensor(X), tp.tensor(good)).numpy(), oracle(X, np.array(good)))


@pytest.mark.parametrize("fn,good,oracle,bads", CASES, ids=IDS)
def test_vmap_out_of_range_raises(fn, good, oracle, bads):
    xs = tp.tensor(np.stack([X, X + 100]))
    for bad in bads:
        idx = tp.tensor(np.stack([np.array(good), np.array(bad)]))
        with pytest.raises(IndexError):
            vmap(fn)(xs, idx)
    # in range: the same as a loop over the samples
    idx = np.stack([np.array(good)] * 2)
    got = vmap(fn)(xs, tp.tensor(idx)).numpy()
    want = np.stack([oracle(x, i) for x, i in zip(xs.numpy(), idx)])
    np.testing.assert_array_equal(got, want)


def test_gradient_with_an_out_of_range_index_raises():
    f = grad(lambda x, i: (x[i] * x[i]).sum())
    np.testing.assert_array_equal(f(tp.tensor(X), tp.tensor([0, 0])).numpy(),
                                  np.stack([4 * X[0], 0 * X[1], 0 * X[2]]))
    with pytest.raises(IndexError):
        f(tp.tensor(X), tp.tensor([0, 3]))


@pytest.mark.parametrize("prim", ["take", "index_add"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_primitive_compiled_and_interpreter_both_raise(prim, dtype):
    x = np.arange(20, dtype=np.float64).reshape(4, 5)
    good = np.array([[0, 4], [2, 2]], dtype)
    args = [x, good] + ([np.ones((4, 2, 2))] if prim == "index_add" else [])
    g = single_node_graph(prim, args, {"axis": 1})
    exe = codegen.compile_graph(g)
    np.testing.assert_array_equal(exe(*args)[0], ir.interpret(g, args)[0])
    for bad in ([[0, 5], [2, 2]], [[0, 0], [-1, 2]], [[0, 0], [2, np.iinfo(dtype).min]]):
        bad_args = [x, np.array(bad, dtype)] + args[2:]
        with pytest.raises(IndexError, match=prim):
            exe(*bad_args)
        with pytest.raises(IndexError, match=prim):
            ir.interpret(g, bad_args)
    np.testing.assert_array_equal(exe(*args)[0], ir.interpret(g, args)[0])  # the flag is per call


def test_large_fused_take_reports_once_per_call():
    """A take fused into a long loop, with one bad index at the end of the range."""
    n = 100_003
    table = np.linspace(0, 1, 7).astype(np.float32)
    idx = np.arange(n, dtype=np.int64) % 7
    f = tp.compile(lambda t, i: tp.take(t, i) * 2 + 1)
    np.testing.assert_allclose(f(tp.tensor(table), tp.tensor(idx)).numpy(), table[idx] * 2 + 1, rtol=1e-6)
    idx[-1] = 7
    with pytest.raises(IndexError):
        f(tp.tensor(table), tp.tensor(idx))

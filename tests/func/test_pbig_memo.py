"""`relu` and a tensor-tensor `add` under a trace replay their memoised nodes (`tensorplay._traced_memo`).

The replayed graph must be the op layer's (structural key and printed graph), for alternating
operand types a too-coarse key would confuse: shapes that broadcast differently (0-d, size 1,
empty), dtypes that promote, traced views, concrete captured operands. Values against numpy.
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _traced_memo as TM
from tensorplay._trace import trace_function
from tensorplay.func import grad, vmap

RNG = np.random.default_rng(5)

PAIRS = [((3, 4), (4,), np.float32, np.float32), ((3, 4), (3, 4), np.float32, np.float32),
         ((3, 4), (), np.float32, np.float32), ((1, 4), (3, 1), np.float32, np.float64),
         ((0, 4), (4,), np.float32, np.float32), ((2, 3), (3,), np.int64, np.float32),
         ((1,), (5,), np.float64, np.float64)]


def _arr(shape, dt):
    return np.asarray((RNG.standard_normal(shape) * 3).astype(dt))


def test_add_relu_replayed_graph_equals_op_layer():
    f = lambda a, b: tp.relu(a + b)  # noqa: E731
    for sa, sb, da, db in PAIRS * 2:  # (alternating: each pair after the others were memoised)
        a, b = tp.from_numpy(_arr(sa, da)), tp.from_numpy(_arr(sb, db))
        TM.clear()
        first = trace_function(f, (a, b), transform="grad")
        second = trace_function(f, (a, b), transform="grad")
        assert first.structural_key() == second.structural_key()
        assert str(first.graph) == str(second.graph)


def _reduce_to(g, shape):
    """The gradient `g` of a broadcast operand summed back to its `shape` (numpy oracle)."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.sum(axis=tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True).reshape(shape)


@pytest.mark.parametrize("sa, sb, da, db", PAIRS)
def test_values_under_grad(sa, sb, da, db):
    a, b = _arr(sa, da), _arr(sb, db)
    if not np.issubdtype(np.result_type(da, db), np.floating) or not np.issubdtype(da, np.floating):
        pytest.skip("grad needs float operands")
    mask = np.broadcast_to((a + b > 0).astype(np.float64), np.broadcast_shapes(sa, sb))
    for _ in range(3):
        g = grad(lambda x, y: tp.relu(x + y).sum(), argnums=(0, 1))(tp.from_numpy(a), tp.from_numpy(b))
        np.testing.assert_allclose(g[0].numpy(), _reduce_to(mask, sa), rtol=1e-6)
        np.testing.assert_allclose(g[1].numpy(), _reduce_to(mask, sb), rtol=1e-6)


def test_relu_values_per_sample_and_views():
    x = _arr((4, 6), np.float32)
    b = _arr((3,), np.float32)
    for _ in range(3):
        out = vmap(lambda r: tp.relu(r[::2] + tp.from_numpy(b)))(tp.from_numpy(x))  # a traced view + a capture
        np.testing.assert_array_equal(out.numpy(), np.maximum(x[:, ::2] + b, 0))
        y = tp.from_numpy(x).T  # a non-contiguous concrete operand
        g = grad(lambda w: (tp.relu(w + y)).sum())(tp.from_numpy(x.T.copy()))
        np.testing.assert_array_equal(g.numpy(), (x.T + x.T > 0).astype(np.float32))


def test_eager_add_relu_and_alpha_unchanged():
    a, b = _arr((2, 3), np.float32), _arr((3,), np.float32)
    np.testing.assert_array_equal(tp.relu(tp.from_numpy(a) + tp.from_numpy(b)).numpy(), np.maximum(a + b, 0))
    got = grad(lambda x: tp.add(x, tp.from_numpy(b), alpha=2).sum())(tp.from_numpy(a))
    np.testing.assert_array_equal(got.numpy(), np.ones((2, 3), np.float32))
    v = tp.compile(lambda x, y: tp.add(x, y, alpha=3))(tp.from_numpy(a), tp.from_numpy(b))
    np.testing.assert_allclose(v.numpy(), a + 3 * b, rtol=1e-6)
    for _ in range(2):
        with pytest.raises((TypeError, ValueError)):
            grad(lambda x: (x + tp.ones(4)).sum())(tp.ones(3))


def test_an_operand_passed_twice_is_part_of_the_memo_key():
    # add(x, x) records one operand read twice; a later add(a, b) of the same types must not
    # replay it (it would read one operand for both), and the reverse order must not either
    import numpy as np
    import tensorplay as tp
    from tensorplay import _traced_memo
    _traced_memo.clear()
    a_np, b_np = np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 4.0, -1.0], np.float32)
    a, b = tp.from_numpy(a_np.copy()), tp.from_numpy(b_np.copy())
    assert np.array_equal(tp.compile(lambda x: tp.add(x, x))(a).numpy(), a_np + a_np)
    assert np.array_equal(tp.compile(lambda x, y: tp.add(x, y))(a, b).numpy(), a_np + b_np)
    assert np.array_equal(tp.compile(lambda x, y: tp.add(tp.add(y, x), x))(a, b).numpy(), b_np + a_np + a_np)
    _traced_memo.clear()
    assert np.array_equal(tp.compile(lambda x, y: tp.add(x, y))(a, b).numpy(), a_np + b_np)
    assert np.array_equal(tp.compile(lambda x: tp.add(x, x))(a).numpy(), a_np + a_np)

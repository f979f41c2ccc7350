"""The binary op memo with a captured concrete operand (`_trace._outside_op`) and the plain finish
of a trace whose captures were read but not written: values against numpy oracles, the cases that
must fall back to the op layer, and the cache keys they must not share."""
import numpy as np
import tensorplay as tp
from tensorplay import _trace, codegen
from tensorplay.func import grad, jacrev, linearize

RNG = np.random.default_rng(11)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _tanh_grad(x, w, b):  # d/dx sum(tanh(x @ w + b)), float64
    x, w, b = (a.astype(np.float64) for a in (x, w, b))
    return w @ (1 - np.tanh(x @ w + b) ** 2)


def test_captured_weight_grad_matches_numpy_and_is_replayed():
    x, w, b = _f32(5), _f32(5, 3), _f32(3)
    W, B = tp.from_numpy(w), tp.from_numpy(b)
    f = lambda x: tp.tanh(x @ W + B).sum()  # noqa: E731
    for _ in range(3):  # the first call learns the memo, the next ones replay it
        np.testing.assert_allclose(grad(f)(tp.from_numpy(x)).numpy(), _tanh_grad(x, w, b), rtol=1e-5, atol=1e-6)
    closed = _trace.trace_function(lambda x: x @ W + B, (tp.from_numpy(x),), transform="grad")
    assert [n.prim.name for n in closed.graph.nodes] == ["dot_general", "add"]
    assert closed.captures == [W, B] and closed.mutated == [] and closed.key is not None  # taped, plain finish


def test_in_place_update_of_a_captured_weight_is_seen_and_compiles_once():
    x, w = _f32(4), _f32(4, 4)
    W = tp.from_numpy(w.copy())
    f = lambda x: (x @ W).sum()  # noqa: E731
    grad(f)(tp.from_numpy(x))
    c0 = codegen.compile_count()
    for k in range(5):
        W.mul_(2.0)
        got = grad(f)(tp.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, (w * 2.0 ** (k + 1)).sum(axis=1), rtol=1e-5)
    assert codegen.compile_count() == c0


def test_operand_order_with_the_capture_on_the_left():
    x, w = _f32(4), _f32(4, 4)
    W = tp.from_numpy(w)
    xt = tp.from_numpy(x)
    left = jacrev(lambda x: W @ x)(xt).numpy()
    right = jacrev(lambda x: x @ W)(xt).numpy()
    np.testing.assert_allclose(left, w, rtol=1e-6)
    np.testing.assert_allclose(right, w.T, rtol=1e-6)
    sub_l = jacrev(lambda x: W[0] - x)(xt).numpy()  # a view operand: the op layer, not the memo
    sub_r = jacrev(lambda x: x - tp.from_numpy(w[0].copy()))(xt).numpy()
    np.testing.assert_allclose(sub_l, -np.eye(4), rtol=1e-6)
    np.testing.assert_allclose(sub_r, np.eye(4), rtol=1e-6)


def test_two_captures_of_one_type_are_not_confused():
    x, w1, w2 = _f32(3), _f32(3, 3), _f32(3, 3)
    W1, W2 = tp.from_numpy(w1), tp.from_numpy(w2)
    xt = tp.from_numpy(x)
    for _ in range(2):
        np.testing.assert_allclose(jacrev(lambda x: x @ W1)(xt).numpy(), w1.T, rtol=1e-6)
        np.testing.assert_allclose(jacrev(lambda x: x @ W2)(xt).numpy(), w2.T, rtol=1e-6)
        both = jacrev(lambda x: x @ W1 + x @ W2)(xt).numpy()
        np.testing.assert_allclose(both, (w1 + w2).T, rtol=1e-5)
        same = jacrev(lambda x: x @ W1 + x @ W1)(xt).numpy()  # one capture read twice
        np.testing.assert_allclose(same, 2 * w1.T, rtol=1e-5)


def test_capture_dtype_is_a_key_component():
    x = _f32(3)
    w = _f32(3)
    f32, f64 = tp.from_numpy(w), tp.from_numpy(w.astype(np.float64))
    xt = tp.from_numpy(x)
    for _ in range(2):
        a = grad(lambda x: (x * f32).sum())(xt)
        b = grad(lambda x: (x * f64).sum())(xt)
        assert a.dtype == tp.float32 and b.dtype == tp.float32
        np.testing.assert_allclose(a.numpy(), w, rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), w, rtol=1e-6)


def test_trace_local_and_outer_trace_operands_fall_back():
    x = _f32(3)
    xt = tp.from_numpy(x)
    # a trace-local 0-d tensor: a scalar input, as the op layer makes it
    for _ in range(2):
        np.testing.assert_allclose(grad(lambda x: (x * tp.tensor(3.0)).sum())(xt).numpy(), np.full(3, 3.0))
    # an operand of an enclosing trace: the op layer (the inner trace captures it)
    y0 = tp.from_numpy(_f32(3))
    outer = grad(lambda y: grad(lambda x: (tp.tanh(x * y)).sum())(xt).sum())(y0).numpy()
    y = y0.numpy().astype(np.float64)
    t = np.tanh(x * y)
    # d/dy sum_i y_i (1 - tanh(x_i y_i)^2) = 1 - t^2 - 2 y x t (1 - t^2)
    np.testing.assert_allclose(outer, (1 - t ** 2) - 2 * y * x * t * (1 - t ** 2), rtol=1e-4, atol=1e-6)


def test_linearize_with_captured_weights_matches_finite_differences():
    d = 6
    ws = [tp.from_numpy(_f32(d, d) / 3) for _ in range(2)]
    x, t = _f32(d), _f32(d)

    def f(x):
        for w in ws:
            x = tp.tanh(x @ w)
        return x

    def f64(x):
        for w in ws:
            x = np.tanh(x @ w.numpy().astype(np.float64))
        return x

    for _ in range(2):
        out, jvp_fn = linearize(f, tp.from_numpy(x))
        eps = 1e-6
        x64, t64 = x.astype(np.float64), t.astype(np.float64)
        fd = (f64(x64 + eps * t64) - f64(x64 - eps * t64)) / (2 * eps)
        np.testing.assert_allclose(out.numpy(), f64(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jvp_fn(tp.from_numpy(t)).numpy(), fd, rtol=1e-4, atol=1e-5)


def _call_path_key(fn, *args):
    from tensorplay import _pytree
    leaves, tree = _pytree.tree_flatten((args, {}))
    return _trace.trace_function(fn, args, transform="grad", flat=(leaves, tree, [t._type() for t in leaves]))


def test_memoised_argument_part_of_the_tape_key():
    f = lambda x, y: x * y  # noqa: E731
    a, b = tp.ones(3), tp.ones(3)
    k1 = _call_path_key(f, a, b).structural_key()
    k2 = _call_path_key(f, tp.zeros(3), tp.zeros(3)).structural_key()
    assert k1 == k2  # the same program on the same types
    # the memoised pairs are the ones the loop writes: the key of the walked arguments is equal
    assert _trace.trace_function(f, (a, b), transform="grad").structural_key() == k1
    assert _call_path_key(f, tp.ones(3, dtype=tp.float64), b).structural_key() != k1  # an argument dtype
    assert _call_path_key(f, tp.ones(1), b).structural_key() != k1                    # an argument shape
    assert _call_path_key(lambda x, y: y * x, a, b).structural_key() != k1            # operand order
    assert _call_path_key(lambda x, y: x * x, a, b).structural_key() != k1            # a repeated operand
    closed = _call_path_key(f, a, b)
    np.testing.assert_allclose(_trace.call_graph(closed.graph, [a, b])[0].numpy(), np.ones(3))

"""`backward` / `autograd.grad` against float64 central finite differences and numpy by hand."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tensorplay as tp
from tensorplay.autograd import _engine


def fd_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of scalar f at x (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def _leaf(arr):
    return tp.tensor(np.asarray(arr, np.float64), requires_grad=True)


def mlp_loss(w1, b1, w2, x, y):
    h = tp.tanh(x @ w1 + b1)
    return ((h @ w2 - y) ** 2).mean()


def test_mlp_loss_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    w1, b1, w2 = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 2))
    x, y = tp.tensor(rng.normal(size=(5, 3))), tp.tensor(rng.normal(size=(5, 2)))
    leaves = [_leaf(a) for a in (w1, b1, w2)]
    mlp_loss(*leaves, x, y).backward()
    for k, a in enumerate((w1, b1, w2)):
        def f(v, k=k):
            args = [tp.tensor(v) if j == k else tp.tensor(b) for j, b in enumerate((w1, b1, w2))]
            return mlp_loss(*args, x, y).item()
        np.testing.assert_allclose(leaves[k].grad.numpy(), fd_grad(f, a), rtol=1e-6, atol=1e-8)
        assert leaves[k].is_leaf and leaves[k].grad.grad_fn is None


def test_broadcasting_sums_gradient_over_broadcast_dims():
    a, b = _leaf(np.ones((3, 1))), _leaf(np.arange(4.0))
    ((a * b) ** 2).sum().backward()
    ab = np.ones((3, 1)) * np.arange(4.0)
    np.testing.assert_allclose(a.grad.numpy(), (2 * ab * np.arange(4.0)).sum(1, keepdims=True))
    np.testing.assert_allclose(b.grad.numpy(), (2 * ab * 1.0).sum(0))


def test_views_and_indexing():
    x = _leaf(np.arange(12.0).reshape(3, 4))
    y = x[1:, ::2].reshape(-1) * x.t()[0, 1]
    y.sum().backward()
    g = np.zeros((3, 4))
    g[1:, ::2] = x.numpy()[1, 0]
    g[1, 0] += x.numpy()[1:, ::2].sum()
    np.testing.assert_allclose(x.grad.numpy(), g)


def test_inplace_on_non_leaf_is_followed():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * 2
    y.add_(1)
    y.mul_(y)          # y = (2x + 1)^2
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * (2 * np.array([1.0, 2, 3]) + 1))


def test_gradients_accumulate_over_two_backwards():
    x = _leaf([1.0, -2.0])
    (x ** 2).sum().backward()
    (3 * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, -2.0]) + 3)


def test_retain_graph_allows_a_second_backward_and_freed_graph_errors():
    x = _leaf([1.0, 2.0])
    loss = (x.exp()).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_gradient_argument_for_non_scalar_outputs():
    x = _leaf([1.0, 2.0, 3.0])
    y = x ** 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(tp.tensor([1.0, 0.5, 0.0], dtype=tp.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 0.0])


def test_create_graph_double_backward():
    x = _leaf([0.5, -1.0])
    (g,) = tp.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    (g ** 2).sum().backward()   # gradient penalty: d/dx sum(9 x^4) = 36 x^3
    np.testing.assert_allclose(x.grad.numpy(), 36 * x.numpy() ** 3)


def test_autograd_grad_allow_unused_and_non_leaf_inputs():
    x, z = _leaf([1.0, 2.0]), _leaf([5.0])
    h = x * 3
    out = (h ** 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tp.autograd.grad(out, [x, z], retain_graph=True)
    gx, gz = tp.autograd.grad(out, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None
    np.testing.assert_allclose(gx.numpy(), 18 * x.numpy())
    (gh,) = tp.autograd.grad(out, h)
    np.testing.assert_allclose(gh.numpy(), 2 * h.numpy())
    assert x.grad is None


def test_retain_grad_fills_non_leaf_grad():
    x = _leaf([1.0, 2.0])
    h = x * x
    h.retain_grad()
    (h * 3).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.numpy())


def test_errors_follow_torch():
    with pytest.raises(RuntimeError, match="floating point"):
        tp.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tp.ones(2).sum().backward()
    x = _leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    w = tp.ones(1, dtype=tp.float64)
    loss = (x * w).sum()
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    y = x * 2
    with pytest.warns(UserWarning, match="not a leaf"):
        assert y.grad is None
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False


def test_attributes_and_detach():
    x = tp.zeros(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    assert tp.linspace(0, 1, 3, requires_grad=True).requires_grad
    assert tp.randn(2, requires_grad=True).requires_grad
    assert not tp.ones(2).requires_grad and not (tp.ones(2) * 2).requires_grad


def test_grad_modes_nest():
    x = tp.ones(1, requires_grad=True)
    with tp.no_grad():
        assert not (x * 2).requires_grad and not tp.is_grad_enabled()
        with tp.enable_grad():
            assert (x * 2).requires_grad
        with tp.inference_mode():
            assert not (x * 2).requires_grad
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()
    with tp.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tp.is_grad_enabled()

    @tp.no_grad()
    def f(t):
        return t * 2

    @tp.enable_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad
    with tp.no_grad():
        assert g(x).requires_grad
    assert tp.is_grad_enabled()


def test_training_loop_compiles_backward_once():
    rng = np.random.default_rng(1)
    w = tp.tensor(rng.normal(size=(3, 2)).astype(np.float32), requires_grad=True)
    before = dict(_engine.STATS)
    for step in range(20):
        x = tp.tensor(rng.normal(size=(8, 3)).astype(np.float32))
        loss = ((x @ w).relu() ** 2).mean()
        loss.backward()
        with tp.no_grad():
            w.sub_(0.1 * w.grad)
        w.grad = None
    assert _engine.STATS["builds"] - before["builds"] <= 1
    assert _engine.STATS["hits"] - before["hits"] >= 19


def test_no_grad_block_inside_grad_is_not_differentiated():
    from tensorplay.func import grad, jvp, vjp

    def f(x):
        with tp.no_grad():
            c = x ** 2
        return (x ** 2 - c).sum()

    x = tp.tensor([1.0, 3.0])
    np.testing.assert_allclose(grad(f)(x).numpy(), 2 * x.numpy())
    _, t = jvp(f, (x,), (tp.ones(2),))
    assert abs(t.item() - 8.0) < 1e-5
    _, pull = vjp(f, x)
    np.testing.assert_allclose(pull(tp.tensor(1.0))[0].numpy(), 2 * x.numpy())
    with tp.no_grad():  # an outer no_grad is ignored by the transform, as in torch.func
        np.testing.assert_allclose(grad(lambda v: (v ** 2).sum())(x).numpy(), 2 * x.numpy())


def test_decorators_of_every_mode():
    x = tp.ones(1, requires_grad=True)

    @tp.inference_mode()
    def inf(t):
        return t * 2

    @tp.set_grad_enabled(False)
    def off(t):
        return t * 2

    assert tp.is_grad_enabled()  # set_grad_enabled used as a decorator does not change the mode now
    assert not inf(x).requires_grad and not off(x).requires_grad
    assert tp.is_grad_enabled() and (x * 2).requires_grad


def test_zero_grad_set_to_none_or_zeros():
    m = tp.nn.Linear(2, 1)
    m(tp.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.zeros((1, 2), np.float32))
    m.zero_grad()
    assert m.weight.grad is None


def _reduce_to(g: np.ndarray, shape: tuple) -> np.ndarray:
    """`g` summed over the dimensions broadcasting added or stretched to reach it from `shape`."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    return g.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1), keepdims=True)


@settings(max_examples=25, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3),
       st.integers(0, 2 ** 16))
def test_broadcast_product_gradients_by_hand(shapes, seed):
    rng = np.random.default_rng(seed)
    (sa, sb), out = shapes.input_shapes, shapes.result_shape
    a_np, b_np = rng.normal(size=sa), rng.normal(size=sb)
    a, b = _leaf(a_np), _leaf(b_np)
    (a * b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), _reduce_to(np.broadcast_to(b_np, out), sa).reshape(sa), atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), _reduce_to(np.broadcast_to(a_np, out), sb).reshape(sb), atol=1e-12)


def test_inplace_write_into_a_view_of_a_non_leaf():
    x, v = _leaf([1.0, 2.0, 3.0, 4.0]), _leaf([10.0, 20.0])
    y = x * 2
    y[1:3] = v * v                  # y = [2x0, v0^2, v1^2, 2x3]
    y[::3].mul_(x[:2])              # y[0] *= x0, y[3] *= x1
    (y * tp.tensor([1.0, 2.0, 3.0, 4.0], dtype=tp.float64)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 100.0, 400.0, 16.0])
    np.testing.assert_allclose(x.grad.numpy(), [4 * 1.0, 4 * 8.0, 0.0, 4 * 2 * 2.0])
    np.testing.assert_allclose(v.grad.numpy(), [2 * 2 * 10.0, 3 * 2 * 20.0])
    w = tp.zeros(3, dtype=tp.float64)   # a constant written through a view with a value that requires grad
    w[1:] = x[:2] * 3
    w.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0 + 3, 32.0 + 3, 0.0, 16.0])


def test_no_grad_inside_transforms_composes():
    from tensorplay.func import grad, vmap

    def f(x):
        with tp.no_grad():
            c = x ** 3
        return (x ** 3 - c + c * x).sum()   # derivative 3x^2 + x^3, second derivative 6x

    x = tp.tensor(2.0)
    assert abs(grad(f)(x).item() - 20.0) < 1e-5
    assert abs(grad(grad(f))(x).item() - 12.0) < 1e-5
    np.testing.assert_allclose(vmap(grad(f))(tp.tensor([1.0, 2.0])).numpy(), [4.0, 20.0])

    def g(x):
        with tp.no_grad():  # the inner grad still differentiates; its result is a constant to the outer one
            y = grad(lambda t: (t ** 2).sum())(x)
        return (y * x).sum()

    np.testing.assert_allclose(grad(g)(tp.tensor([3.0])).numpy(), [6.0])

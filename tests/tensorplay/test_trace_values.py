"""Concrete values on demand: under a plain transform called on concrete tensors, a traced
tensor's value can be read (bool, float, int, .item(), .tolist(), .numpy(), print,
debug_unwrap); the graph follows the branch Python took. Under vmap a batched value and under
tp.compile every value stay errors naming the transform."""
import importlib.util

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import debug_unwrap, grad, jacrev, jvp, vjp, vmap

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def f64(values):
    return tp.tensor(np.asarray(values, dtype=np.float64))


def branchy(x):
    if x.sum() > 0:
        return (x * x).sum()
    return tp.sin(x).sum()


def fd_grad(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    """Central finite differences of the scalar function f (numpy float64 in, float out)."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("values", [[1.0, 2.0, -0.5], [-1.0, -2.0, 0.5]])
def test_grad_through_both_branches(values):
    x = np.array(values)
    got = grad(branchy)(f64(x)).numpy()
    want = 2 * x if x.sum() > 0 else np.cos(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")
@pytest.mark.parametrize("values", [[1.0, 2.0, -0.5], [-1.0, -2.0, 0.5]])
def test_grad_through_both_branches_vs_torch_func(values):
    import torch
    from torch.func import grad as tgrad

    def tbranchy(x):
        if x.sum() > 0:
            return (x * x).sum()
        return torch.sin(x).sum()

    want = tgrad(tbranchy)(torch.tensor(values, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(grad(branchy)(f64(values)).numpy(), want, rtol=1e-12)


def newton_sqrt_sum(a, sqrt_of=None):
    """sum(sqrt(a)) by Newton's method with a data-dependent stopping test."""
    x = a * 0 + 1
    for _ in range(100):
        step = (x * x - a) / (2 * x)
        x = x - step
        if float(abs(step).max()) < 1e-13:
            break
    return x.sum()


def test_newton_loop_inside_grad_vs_finite_differences():
    a = np.array([4.0, 9.0, 2.0])
    got = grad(newton_sqrt_sum)(f64(a)).numpy()
    want = fd_grad(lambda v: float(np.sqrt(v).sum()), a)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, 0.5 / np.sqrt(a), rtol=1e-10)


def test_item_is_a_constant_for_differentiation():
    x = np.array([1.0, 2.0, 3.0])
    got = grad(lambda t: (t * t.sum().item()).sum())(f64(x)).numpy()
    np.testing.assert_allclose(got, np.full(3, x.sum()))          # d/dx of x * c, c held constant
    got = grad(lambda t: (t * float(t.max())).sum())(f64(x)).numpy()
    np.testing.assert_allclose(got, np.full(3, 3.0))


def test_conversions_inside_grad():
    seen = {}

    def f(t):
        s = t.sum()
        seen["float"], seen["int"], seen["bool"] = float(s), int(s), bool(s > 5)
        seen["tolist"], seen["numpy"] = (t * 2).tolist(), (t + 1).numpy()
        seen["format"] = f"{s:.2f}"
        return (t * t).sum()

    grad(f)(f64([1.0, 2.0, 3.5]))
    assert seen["float"] == 6.5 and seen["int"] == 6 and seen["bool"] is True
    assert seen["tolist"] == [2.0, 4.0, 7.0] and seen["format"] == "6.50"
    np.testing.assert_array_equal(seen["numpy"], [2.0, 3.0, 4.5])


def test_numpy_of_a_traced_tensor_is_a_private_copy():
    x = f64([1.0, 2.0])

    def f(t):
        arr = t.numpy()
        arr[:] = 100.0
        return (t * t).sum()

    np.testing.assert_allclose(grad(f)(x).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_debug_unwrap_values_inside_grad():
    seen = []

    def f(t):
        u = debug_unwrap(t * 3)
        seen.append(u)
        return (t * t).sum()

    grad(f)(f64([1.0, -2.0]))
    (u,) = seen
    assert not u.is_traced
    np.testing.assert_array_equal(u.numpy(), [3.0, -6.0])


def test_print_inside_grad(capsys):
    def f(t):
        print(t * 2)
        print(t.sum())
        return (t * t).sum()

    grad(f)(tp.tensor([1.0, 2.0]))
    assert capsys.readouterr().out == "tensor([2., 4.])\ntensor(3.)\n"


def test_nested_grad_with_a_branch():
    def f(x):
        if x > 0:
            return x ** 3
        return -(x ** 2)

    assert float(grad(grad(f))(f64(2.0))) == pytest.approx(12.0)
    assert float(grad(grad(f))(f64(-2.0))) == pytest.approx(-2.0)
    assert float(grad(grad(grad(f)))(f64(2.0))) == pytest.approx(6.0)


def test_other_transforms_have_values():
    x = f64([1.0, -3.0])
    out, t = jvp(branchy, (x,), (f64([1.0, 0.0]),))
    np.testing.assert_allclose(t.numpy(), np.cos(1.0))
    out, vjp_fn = vjp(branchy, x)
    np.testing.assert_allclose(vjp_fn(f64(1.0))[0].numpy(), np.cos(x.numpy()))
    np.testing.assert_allclose(jacrev(lambda v: v * 2 if v.sum() > 0 else v * 3)(x).numpy(), 3 * np.eye(2))


def test_value_of_a_tensor_written_in_place_under_grad():
    w = f64([1.0, 2.0])
    seen = []

    def f(t):
        w.add_(t)                      # w's numpy storage is stale until the write-back
        seen.append(w.tolist())
        return (w * t).sum()

    grad(f)(f64([10.0, 20.0]))
    assert seen == [[11.0, 22.0]]
    assert w.tolist() == [11.0, 22.0]


def test_random_value_read_is_the_value_used():
    tp.manual_seed(0)
    seen = []

    def f(t):
        r = tp.randn(3, dtype=tp.float64)
        seen.append(r.numpy())
        return (t * r).sum()

    g = grad(f)(f64([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(g.numpy(), seen[0])
    tp.manual_seed(0)
    np.testing.assert_array_equal(tp.randn(3, dtype=tp.float64).numpy(), seen[0])  # the eager draw order


def test_bool_of_a_batched_value_under_vmap_names_vmap():
    with pytest.raises(tp.TracingError, match=r"bool\(tensor\).*vmap\(in_dims=0\).*per sample.*tp\.where"):
        vmap(lambda x: x if x.sum() > 0 else -x)(tp.ones(2, 3))
    with pytest.raises(tp.TracingError, match=r"vmap\(in_dims=0\)"):
        vmap(grad(branchy))(tp.ones(2, 3))
    w = tp.ones(3)  # unbatched values have one value, as in torch.func
    out = vmap(lambda x: x * 2 if w.sum() > 0 else x)(tp.ones(2, 3))
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2.0))


def test_debug_unwrap_under_vmap_is_the_per_sample_tensor():
    shapes = []
    vmap(lambda x: (shapes.append(tuple(debug_unwrap(x).shape)), x * 2)[1])(tp.ones(2, 3))
    assert shapes == [(3,)]


def test_values_under_compile_stay_an_error_naming_compile():
    with pytest.raises(tp.TracingError, match=r"bool\(tensor\).*traced under compile"):
        tp.compile(branchy)(tp.ones(3))
    with pytest.raises(tp.TracingError, match=r"\.item\(\).*compile > grad"):
        tp.compile(grad(lambda x: x.sum() * x.sum().item()))(tp.ones(3))
    shapes = []
    tp.compile(lambda x: (shapes.append(debug_unwrap(x).shape), x + 1)[1])(tp.ones(2))
    assert shapes == [(2,)]


def test_repr_without_a_value_shows_the_transform(capsys):
    tp.compile(lambda x: (print(x), x + 1)[1])(tp.ones(2))
    assert "traced under compile" in capsys.readouterr().out


def test_fresh_semantics_a_changed_global_scale_is_seen():
    x = f64([1.0, 2.0])
    state = {"scale": 2.0}

    def f(t):
        return (t * t).sum() * state["scale"]

    np.testing.assert_allclose(grad(f)(x).numpy(), [4.0, 8.0])
    state["scale"] = 5.0
    np.testing.assert_allclose(grad(f)(x).numpy(), [10.0, 20.0])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hessian_through_a_branch(sign):
    from tensorplay.func import hessian, jacfwd

    def f(x):
        return (x ** 3).sum() if x.sum() > 0 else (x ** 2).sum()

    x = np.array([1.0, 2.0]) * sign
    want = np.diag(6 * x) if sign > 0 else 2 * np.eye(2)
    np.testing.assert_allclose(hessian(f)(f64(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(jacrev(f))(f64(x)).numpy(), want, rtol=1e-12)


def test_unbatched_inner_transform_under_vmap_has_values(capsys):
    def g(w):
        print(w.sum())
        return (w * w).sum()

    out = vmap(lambda x: grad(g)(tp.ones(2)) * x)(tp.ones(3, 2))
    np.testing.assert_array_equal(out.numpy(), np.full((3, 2), 2.0))
    assert capsys.readouterr().out == "tensor(2.)\n"

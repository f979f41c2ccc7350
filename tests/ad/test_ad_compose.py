"""Transforms composed with each other, with compile, and with closures."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp


def close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a.numpy() if isinstance(a, tp.Tensor) else a, np.float64),
                               np.asarray(b.numpy() if isinstance(b, tp.Tensor) else b, np.float64),
                               rtol=tol, atol=tol)


def f64(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


rng = np.random.default_rng(0)
W1, b1 = f64(rng.standard_normal((4, 3))), f64(rng.standard_normal(4))
W2, b2 = f64(rng.standard_normal((2, 4))), f64(rng.standard_normal(2))
X = f64(rng.standard_normal(3))


def mlp_loss(x):
    """A small MLP-like scalar function of its input (smooth: tanh and logistic)."""
    h = (W1 @ x + b1).tanh()
    out = (W2 @ h + b2).sigmoid()
    return (out * out).sum() + (x.sin() * x).sum()


def numeric_hessian(f, x, eps=1e-5):
    x = x.numpy()
    n = x.size
    H = np.zeros((n, n))
    g = lambda v: grad(f)(f64(v)).numpy()  # noqa: E731
    for i in range(n):
        e = np.zeros(n)
        e[i] = eps
        H[:, i] = (g(x + e) - g(x - e)) / (2 * eps)
    return H


# --- higher order ------------------------------------------------------------------------------------
def test_grad_of_grad():
    x = f64(0.3)
    close(grad(grad(tp.sin))(x), -np.sin(0.3))
    close(grad(grad(grad(tp.sin)))(x), -np.cos(0.3))
    close(grad(grad(lambda x: x ** 4))(x), 12 * 0.3 ** 2)


def test_hessian_equals_all_compositions_on_an_mlp():
    H = hessian(mlp_loss)(X)
    assert H.shape == (3, 3)
    close(H, H.numpy().T, 1e-12)
    for other in (jacfwd(jacrev(mlp_loss)), jacrev(jacrev(mlp_loss)), jacfwd(jacfwd(mlp_loss)),
                  jacrev(jacfwd(mlp_loss)), jacfwd(grad(mlp_loss)), jacrev(grad(mlp_loss))):
        close(other(X), H, 1e-10)
    close(H, numeric_hessian(mlp_loss, X), 1e-6)


def test_hessian_over_parameters_of_an_mlp():
    def loss(params, x):
        h = (params["W1"] @ x + params["b1"]).tanh()
        return ((params["W2"] @ h + params["b2"]) ** 2).sum()

    params = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}
    H = hessian(loss)(params, X)
    assert H["W1"]["W1"].shape == (4, 3, 4, 3) and H["b1"]["W2"].shape == (4, 2, 4)
    H2 = jacrev(jacrev(loss))(params, X)
    for k in params:
        for m in params:
            close(H[k][m], H2[k][m], 1e-10)


def test_jvp_of_grad_is_a_hessian_vector_product():
    v = f64([1.0, -2.0, 0.5])
    _, hvp = jvp(grad(mlp_loss), (X,), (v,))
    close(hvp, hessian(mlp_loss)(X).numpy() @ v.numpy(), 1e-10)


def test_vjp_of_grad_and_linearize_of_grad():
    v = f64([1.0, -2.0, 0.5])
    H = hessian(mlp_loss)(X).numpy()
    _, vjp_fn = vjp(grad(mlp_loss), X)
    close(vjp_fn(v)[0], H.T @ v.numpy(), 1e-10)
    _, jvp_fn = linearize(grad(mlp_loss), X)
    close(jvp_fn(v), H @ v.numpy(), 1e-10)


def test_grad_inside_vjp_inside_grad():
    def inner(x):
        out, vjp_fn = vjp(lambda y: (y.sin() * x).sum(), x)
        return vjp_fn(f64(1.0).reshape(()))[0].sum()   # sum(cos(x) * x)

    x = f64([0.2, 0.4])
    close(grad(inner)(x), -x.sin() * x + x.cos())


def test_no_perturbation_confusion():
    """d/dx [x * (d/dy (x + y))(1)] at 1 is 1 -- the inner derivative must not see the outer x."""
    one = f64(1.0).reshape(())
    close(grad(lambda x: x * grad(lambda y: x + y)(one))(one), 1.0)
    close(jacfwd(lambda x: x * jacfwd(lambda y: x + y)(one))(one), 1.0)


def test_nested_closure_over_an_outer_traced_value():
    x0 = f64(3.0).reshape(())
    # g(x) = d/dy (x * y^2) at y = x = 2 x^2, so g'(x) = 4x = 12
    close(grad(lambda x: grad(lambda y: x * y * y)(x))(x0), 12.0)
    # the inner function closes over the outer x: d/dx [d/dy sin(x y)]_{y=1} = d/dx x cos(x)
    one = f64(1.0).reshape(())
    close(grad(lambda x: grad(lambda y: (x * y).sin())(one))(x0), np.cos(3.0) - 3.0 * np.sin(3.0))


# --- with vmap ---------------------------------------------------------------------------------------
def test_vmap_of_grad_gives_per_sample_gradients():
    from tensorplay.func import vmap
    xs = f64(rng.standard_normal((5, 3)))
    per_sample = vmap(grad(mlp_loss))(xs)
    for i in range(5):
        close(per_sample[i], grad(mlp_loss)(xs[i]), 1e-12)


def test_grad_of_vmap():
    from tensorplay.func import vmap
    xs = f64(rng.standard_normal((5, 3)))
    g = grad(lambda xs: vmap(mlp_loss)(xs).sum())(xs)
    for i in range(5):
        close(g[i], grad(mlp_loss)(xs[i]), 1e-12)


# --- with compile and closures ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["interpreter", pytest.param("compiled", marks=pytest.mark.compiled)])
def test_transforms_inside_compiled_functions(backend):
    @tp.compile
    def step(x):
        g, v = grad_and_value(mlp_loss)(x)
        H = hessian(mlp_loss)(x)
        return x - 0.1 * g, v, H

    for _ in range(2):
        new_x, v, H = step(X)
    assert step.trace_count == 1
    close(v, mlp_loss(X), 1e-10)
    close(new_x, X - 0.1 * grad(mlp_loss)(X), 1e-10)
    close(H, hessian(mlp_loss)(X), 1e-10)


@pytest.mark.compiled
def test_compiled_backend_agrees_with_the_interpreter(monkeypatch):
    g = grad(mlp_loss)(X)
    H = jacrev(jacrev(mlp_loss))(X)
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    close(g, grad(mlp_loss)(X), 1e-10)
    close(H, jacrev(jacrev(mlp_loss))(X), 1e-10)


def test_compiled_function_inside_grad():
    f = tp.compile(mlp_loss)
    close(grad(f)(X), grad(mlp_loss)(X), 1e-12)
    close(hessian(f)(X), hessian(mlp_loss)(X), 1e-10)


def test_closed_over_tensors_are_constants_to_every_transform():
    c = f64([1.0, 2.0, 3.0])

    def f(x):
        return (x * c).sin().sum()

    close(grad(f)(X), (X * c).cos() * c)
    close(jacrev(f)(X), (X * c).cos() * c)
    _, t = jvp(f, (X,), (f64([1.0, 0.0, 0.0]),))
    close(t, ((X * c).cos() * c)[0])
    close(hessian(f)(X), np.diag((-(X * c).sin() * c * c).numpy()))


def test_closed_over_module_parameters():
    import tensorplay.nn as nn
    tp.manual_seed(0)
    model = nn.Linear(3, 2)
    x = tp.randn(3)
    J = jacrev(lambda x: model(x))(x)
    close(J, model.weight, 1e-6)
    g = grad(lambda x: model(x).tanh().sum())(x)
    close(g, (1 - model(x).tanh() ** 2) @ model.weight, 1e-6)


# --- in-place writes -----------------------------------------------------------------------------------
GRADIENT, DIRECTIONAL = "gradient", "directional"


@pytest.mark.parametrize("transform, kind", [
    (lambda f: grad(f), GRADIENT),
    (lambda f: (lambda x: grad_and_value(f)(x)[0]), GRADIENT),
    (lambda f: jacrev(f), GRADIENT),
    (lambda f: jacfwd(f), GRADIENT),
    (lambda f: (lambda x: vjp(f, x)[1](f64(1.0).reshape(()))[0]), GRADIENT),
    (lambda f: (lambda x: jvp(f, (x,), (x,))[1]), DIRECTIONAL),
    (lambda f: (lambda x: linearize(f, x)[1](x)), DIRECTIONAL),
], ids=["grad", "grad_and_value", "jacrev", "jacfwd", "vjp", "jvp", "linearize"])
def test_in_place_writes_to_captures_happen_once(transform, kind):
    """A running statistic updated inside the function is updated once per call, as in eager mode."""
    count = f64(0.0).reshape(())
    total = tp.zeros(3, dtype=tp.float64)

    def f(x):
        count.add_(1)
        total.add_(x.detach())
        return (x.sin() * x).sum()

    out = transform(f)(X)
    assert count.item() == 1.0
    close(total, X)
    g = X.cos() * X + X.sin()
    close(out, g if kind == GRADIENT else (g * X).sum())

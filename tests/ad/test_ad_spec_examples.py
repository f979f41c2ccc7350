"""Every example of grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd and hessian in
shared/spec/, as written there (plus checks of the values they produce)."""
import numpy as np
import pytest

import tensorplay


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.numpy(), np.float64), np.asarray(b.numpy(), np.float64),
                               rtol=tol, atol=tol)


# --- func-api-reference.txt ------------------------------------------------------------------------
def test_grad_example():
    from tensorplay.func import grad

    x = tensorplay.randn([])
    g = grad(tensorplay.sin)(x)
    close(g, tensorplay.cos(x))


def test_hessian_example():
    from tensorplay.func import hessian

    def f(x):
        return x.sin().sum()
    x = tensorplay.randn(5)
    hess = hessian(f)(x)
    assert hess.shape == (5, 5)
    assert repr(hess.shape) == "tensorplay.Size(5, 5)"
    close(hess, tensorplay.tensor(np.diag(-np.sin(x.numpy()))))


def test_jacfwd_example():
    from tensorplay.func import jacfwd

    x = tensorplay.randn(5)
    jacobian = jacfwd(tensorplay.sin)(x)
    close(jacobian, tensorplay.tensor(np.diag(np.cos(x.numpy()))))


def test_jacrev_example():
    from tensorplay.func import jacrev

    x = tensorplay.randn(5)
    jacobian = jacrev(tensorplay.sin)(x)
    assert jacobian.shape == (5, 5)
    assert repr(jacobian.shape) == "tensorplay.Size(5, 5)"
    close(jacobian, tensorplay.tensor(np.diag(np.cos(x.numpy()))))


def test_jvp_example():
    from tensorplay.func import jvp

    x = tensorplay.randn(5)
    out, tangent_out = jvp(tensorplay.sin, (x,), (tensorplay.ones(5),))
    close(out, tensorplay.sin(x))
    close(tangent_out, tensorplay.cos(x))


def test_linearize_example():
    from tensorplay.func import linearize

    x = tensorplay.randn(5)
    out, jvp_fn = linearize(tensorplay.sin, x)
    tangent_out = jvp_fn(tensorplay.ones(5))
    close(out, tensorplay.sin(x))
    close(tangent_out, tensorplay.cos(x))


def test_vjp_example():
    from tensorplay.func import vjp

    x = tensorplay.randn(5)
    out, vjp_fn = vjp(tensorplay.sin, x)
    (grad,) = vjp_fn(tensorplay.ones_like(out))
    close(grad, tensorplay.cos(x))


def test_grad_and_value_contract():
    """The spec has no example; it documents (gradient, value) and (gradient, (value, aux))."""
    from tensorplay.func import grad_and_value

    x = tensorplay.randn(4)
    g, v = grad_and_value(lambda x: (x * x).sum())(x)
    close(g, 2 * x)
    close(v, (x * x).sum())
    g, (v, aux) = grad_and_value(lambda x: ((x * x).sum(), x.max()), has_aux=True)(x)
    close(aux, x.max())


# --- func-api-overview.md (module examples) --------------------------------------------------------
def test_overview_jacrev_of_a_module():
    import tensorplay.nn  # noqa: F401
    import tensorplay as tp
    from tensorplay.func import jacrev

    model = tp.nn.Linear(3, 3)

    def f(x):
        return model(x)

    x = tp.randn(3)
    jacobian = jacrev(f)(x)
    assert jacobian.shape == (3, 3)
    close(jacobian, model.weight)


def test_overview_jacrev_over_parameters_with_functional_call():
    from tensorplay.func import functional_call
    import tensorplay as tp
    from tensorplay.func import jacrev

    model = tp.nn.Linear(3, 3)

    def f(params, x):
        return functional_call(model, params, (x,))

    x = tp.randn(3)
    jacobian = jacrev(f)(dict(model.named_parameters()), x)
    assert jacobian["weight"].shape == (3, 3, 3)
    assert jacobian["bias"].shape == (3, 3)
    expected = np.einsum("ij,k->ijk", np.eye(3), x.numpy())  # d out_i / d W_jk = [i == j] x_k
    np.testing.assert_allclose(jacobian["weight"].numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jacobian["bias"].numpy(), np.eye(3), rtol=0, atol=0)

"""The public differentiation API: argument handling, pytrees, has_aux, errors, evaluation counts."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp


def T(*values, dtype=tp.float64):
    return tp.tensor(np.array(values, dtype=np.float64), dtype=dtype)


def close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a.numpy() if isinstance(a, tp.Tensor) else a, np.float64),
                               np.asarray(b.numpy() if isinstance(b, tp.Tensor) else b, np.float64),
                               rtol=tol, atol=tol)


class Counter:
    """Wraps a function and counts how often Python runs it (= how often it is traced)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


x3 = T(0.5, -1.0, 2.0)
y3 = T(1.5, 0.25, -0.5)


# --- grad ------------------------------------------------------------------------------------------
def test_grad_of_a_scalar_function():
    close(grad(lambda x: (x ** 3).sum())(x3), 3 * x3 ** 2)


def test_grad_argnums_tuple_and_negative():
    f = lambda a, b: (a * b * b).sum()  # noqa: E731
    ga, gb = grad(f, argnums=(0, 1))(x3, y3)
    close(ga, y3 * y3)
    close(gb, 2 * x3 * y3)
    close(grad(f, argnums=-1)(x3, y3), 2 * x3 * y3)
    assert isinstance(grad(f, argnums=(1,))(x3, y3), tuple)


def test_grad_of_pytree_arguments():
    params = {"w": x3, "layers": [y3, (T(2.0),)]}

    def f(p):
        return (p["w"] * p["layers"][0]).sum() + (p["layers"][1][0] ** 2).sum()

    g = grad(f)(params)
    assert set(g) == {"w", "layers"} and isinstance(g["layers"], list) and isinstance(g["layers"][1], tuple)
    close(g["w"], y3)
    close(g["layers"][0], x3)
    close(g["layers"][1][0], T(4.0))


def test_grad_passes_keyword_and_non_tensor_arguments_through():
    def f(x, scale, *, shift):
        return ((x * scale + shift) ** 2).sum()

    close(grad(f)(x3, 2.0, shift=y3), 2 * (x3 * 2.0 + y3) * 2.0)


def test_grad_with_aux():
    g, aux = grad(lambda x: ((x * x).sum(), {"max": x.max(), "n": 3}), has_aux=True)(x3)
    close(g, 2 * x3)
    assert aux["n"] == 3
    close(aux["max"], x3.max())


def test_grad_of_a_constant_function_is_zero():
    close(grad(lambda x: tp.tensor(1.0, dtype=tp.float64))(x3), tp.zeros(3, dtype=tp.float64))
    close(grad(lambda x: x.sum() * 0 + 1, argnums=0)(x3), tp.ones(3, dtype=tp.float64) * 0)


def test_grad_of_the_identity_on_a_scalar():
    close(grad(lambda x: x)(T(3.0).reshape(())), 1.0)


def test_grad_accepts_single_element_outputs():
    close(grad(lambda x: x.sum().reshape(1, 1))(x3), tp.ones(3, dtype=tp.float64))


def test_grad_does_not_differentiate_closed_over_tensors():
    c = T(1.0, 2.0, 3.0)
    close(grad(lambda x: (x * c).sum())(x3), c)
    c.mul_(2)  # captures are read at every call
    close(grad(lambda x: (x * c).sum())(x3), T(2.0, 4.0, 6.0))


def test_grad_through_stop_gradient_and_integer_paths():
    close(grad(lambda x: (x.detach() * x).sum())(x3), x3)
    close(grad(lambda x: (x.floor() + x.round() * x).sum())(x3), x3.round())
    close(grad(lambda x: (x.to(tp.int64).to(tp.float64) + x).sum())(x3), tp.ones(3, dtype=tp.float64))


def test_grad_and_value_evaluates_func_once():
    f = Counter(lambda x: (x.sin() * x).sum())
    g, v = grad_and_value(f)(x3)
    assert f.calls == 1
    close(v, (x3.sin() * x3).sum())
    close(g, x3.cos() * x3 + x3.sin())


def test_grad_keeps_float32():
    x = tp.tensor([1.0, 2.0])
    g = grad(lambda x: (x * x).sum())(x)
    assert g.dtype is tp.float32
    close(g, [2.0, 4.0], 1e-6)


@pytest.mark.parametrize("bad, exc, match", [
    (lambda x: x * 2, RuntimeError, r"grad\(argnums=0\).*single-element.*\(3,\)"),
    (lambda x: (x.sum(), x.sum()), TypeError, r"grad\(argnums=0\).*single tensor"),
    (lambda x: 1.0, TypeError, r"grad\(argnums=0\)"),
    (lambda x: x.sum().to(tp.int64), TypeError, r"grad\(argnums=0\).*int64"),
])
def test_grad_output_errors(bad, exc, match):
    with pytest.raises(exc, match=match):
        grad(bad)(x3)


def test_grad_rejects_integer_and_bool_inputs_naming_the_argnum():
    with pytest.raises(TypeError, match=r"grad\(argnums=1\).*argument 1.*int64"):
        grad(lambda a, b: (a * b).sum(), argnums=1)(x3, tp.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match=r"jacrev\(argnums=0\).*argument 0.*bool"):
        jacrev(lambda a: a)(tp.tensor([True, False]))
    with pytest.raises(TypeError, match=r"argument 0 contains a float"):
        grad(lambda a: a)(1.0)


def test_grad_argnums_errors():
    with pytest.raises(ValueError, match="out of range"):
        grad(lambda a: a.sum(), argnums=1)(x3)
    with pytest.raises(ValueError, match="repeated"):
        grad(lambda a, b: a.sum(), argnums=(0, 0))(x3, x3)
    with pytest.raises(TypeError, match="argnums"):
        grad(lambda a: a.sum(), argnums="0")(x3)


@pytest.mark.parametrize("out", [lambda x: x.sum(), lambda x: (x.sum(), 1, 2), lambda x: [x.sum()]])
def test_has_aux_structure_errors(out):
    with pytest.raises(TypeError, match=r"grad\(argnums=0\).*has_aux=True.*pair"):
        grad(out, has_aux=True)(x3)


def test_errors_name_the_transform_stack_for_traced_control_flow():
    def f(x):
        if x.sum() > 0:
            return x.sum()
        return -x.sum()
    close(grad(f)(x3), grad(lambda x: x.sum() if float(x.sum()) > 0 else -x.sum())(x3))  # values on demand
    with pytest.raises(tp.TracingError, match=r"compile > grad\(argnums=0\)"):  # no values under compile
        tp.compile(grad(f))(x3)


# --- vjp -------------------------------------------------------------------------------------------
def test_vjp_with_several_outputs_and_primals():
    f = Counter(lambda a, b: (a * b, {"s": (a ** 2).sum()}))
    out, vjp_fn = vjp(f, x3, y3)
    close(out[0], x3 * y3)
    ga, gb = vjp_fn((tp.ones(3, dtype=tp.float64), {"s": T(2.0).reshape(())}))
    close(ga, y3 + 4 * x3)
    close(gb, x3)
    ga2, _ = vjp_fn((x3, {"s": T(0.0).reshape(())}))  # reuse: the forward pass is not traced again
    close(ga2, x3 * y3)
    assert f.calls == 1


def test_vjp_with_aux():
    out, vjp_fn, aux = vjp(lambda x: (x.sin(), x.max()), x3, has_aux=True)
    close(aux, x3.max())
    (g,) = vjp_fn(tp.ones(3, dtype=tp.float64))
    close(g, x3.cos())


def test_vjp_of_pytree_primals():
    out, vjp_fn = vjp(lambda p: p["a"] * p["b"], {"a": x3, "b": y3})
    (g,) = vjp_fn(tp.ones(3, dtype=tp.float64))
    close(g["a"], y3)
    close(g["b"], x3)


def test_vjp_cotangent_errors():
    out, vjp_fn = vjp(lambda a: (a, a.sum()), x3)
    with pytest.raises(ValueError, match="vjp: cotangents must have the same structure"):
        vjp_fn(tp.ones(3, dtype=tp.float64))
    with pytest.raises(ValueError, match=r"vjp: cotangents leaf 0 has shape \(2,\)"):
        vjp_fn((tp.ones(2, dtype=tp.float64), T(1.0).reshape(())))
    with pytest.raises(TypeError, match="vjp: cotangents leaf 1 has dtype float32"):
        vjp_fn((tp.ones(3, dtype=tp.float64), tp.tensor(1.0)))


# --- jvp -------------------------------------------------------------------------------------------
def test_jvp_of_several_primals_and_outputs():
    out, t = jvp(lambda a, b: (a * b, (a + b).sum()), (x3, y3), (tp.ones(3, dtype=tp.float64), x3))
    close(out[0], x3 * y3)
    close(t[0], y3 + x3 * x3)
    close(t[1], (1 + x3).sum())


def test_jvp_with_aux_and_pytrees():
    out, t, aux = jvp(lambda p: (p["a"].exp(), p["a"].sum()), ({"a": x3},), ({"a": y3},), has_aux=True)
    close(t, x3.exp() * y3)
    close(aux, x3.sum())


def test_jvp_strict():
    out, t = jvp(lambda a: (a * 0).floor(), (x3,), (x3,))
    close(t, tp.zeros(3, dtype=tp.float64))
    with pytest.raises(RuntimeError, match=r"jvp\(strict=True\).*does not depend"):
        jvp(lambda a: a.floor(), (x3,), (x3,), strict=True)
    jvp(lambda a: a * 2, (x3,), (x3,), strict=True)


def test_jvp_argument_errors():
    with pytest.raises(TypeError, match="jvp: primals must be a tuple"):
        jvp(tp.sin, x3, (x3,))
    with pytest.raises(ValueError, match="jvp: got 1 primals but 2 tangents"):
        jvp(tp.sin, (x3,), (x3, x3))
    with pytest.raises(ValueError, match=r"jvp: tangents leaf 0 has shape \(2,\)"):
        jvp(tp.sin, (x3,), (tp.ones(2, dtype=tp.float64),))
    with pytest.raises(TypeError, match="jvp: tangents leaf 0 has dtype float32"):
        jvp(tp.sin, (x3,), (tp.ones(3),))
    with pytest.raises(ValueError, match="jvp: tangents must have the same structure"):
        jvp(lambda p: p["a"], ({"a": x3},), ({"b": x3},))
    with pytest.raises(TypeError, match=r"jvp: cannot differentiate with respect to argument 0.*int64"):
        jvp(lambda a: a, (tp.tensor([1, 2]),), (tp.tensor([1, 2]),))


# --- linearize -------------------------------------------------------------------------------------
def test_linearize_evaluates_the_primal_once_and_is_linear():
    f = Counter(lambda x: (x.sin() * x, x.exp().sum()))
    out, jvp_fn = linearize(f, x3)
    assert f.calls == 1
    a = jvp_fn(y3)
    b = jvp_fn(x3)
    ab = jvp_fn(y3 * 2 + x3)
    assert f.calls == 1
    close(ab[0], a[0] * 2 + b[0])
    close(ab[1], a[1] * 2 + b[1])
    close(a[0], (x3.cos() * x3 + x3.sin()) * y3)
    close(out[1], x3.exp().sum())


def test_linearize_jvp_fn_runs_only_the_linear_graph(monkeypatch):
    """The residuals are concrete tensors; jvp_fn executes a graph without the primal's sin."""
    import tensorplay._trace as trace_mod

    out, jvp_fn = linearize(lambda x: x.sin().sin(), x3)
    seen = []
    real = trace_mod.call_graph

    def spy(graph, inputs):
        seen.append(graph)
        assert all(not t.is_traced for t in inputs)
        return real(graph, inputs)

    monkeypatch.setattr("tensorplay.func._ad.call_graph", spy)
    close(jvp_fn(y3), x3.sin().cos() * x3.cos() * y3)
    (graph,) = seen
    assert {n.prim.name for n in graph.nodes} <= {"mul"}


def test_linearize_tangent_errors():
    _, jvp_fn = linearize(lambda a, b: a * b, x3, y3)
    with pytest.raises(ValueError, match="linearize: tangents must have the same structure"):
        jvp_fn(x3)


# --- Jacobians -------------------------------------------------------------------------------------
def f_multi(a, b):
    return {"prod": a[:, None] * b[None, :], "sum": (a.sin() * b).sum()}


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobian_layout_out_then_in(jac):
    J = jac(f_multi, argnums=(0, 1))(x3, y3)
    assert J["prod"][0].shape == (3, 3, 3) and J["prod"][1].shape == (3, 3, 3)
    assert J["sum"][0].shape == (3,) and J["sum"][1].shape == (3,)
    eye = np.eye(3)
    np.testing.assert_allclose(J["prod"][0].numpy(), np.einsum("ik,j->ijk", eye, y3.numpy()), atol=1e-12)
    np.testing.assert_allclose(J["prod"][1].numpy(), np.einsum("i,jk->ijk", x3.numpy(), eye), atol=1e-12)
    close(J["sum"][0], x3.cos() * y3)
    close(J["sum"][1], x3.sin())


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobian_of_scalars_and_matrices(jac):
    s = T(0.7).reshape(())
    close(jac(lambda x: x.sin())(s), s.cos())
    m = tp.tensor(np.arange(6.0).reshape(2, 3))
    J = jac(lambda m: m.sum(0))(m)
    assert J.shape == (3, 2, 3)
    np.testing.assert_allclose(J.numpy(), np.einsum("ik,j->ijk", np.eye(3), np.ones(2)))
    J = jac(lambda x: x.sum())(m)
    assert J.shape == (2, 3)


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobian_with_aux_and_argnums_int(jac):
    J, aux = jac(lambda a, b: (a * b, a.sum()), argnums=1, has_aux=True)(x3, y3)
    close(J, tp.tensor(np.diag(x3.numpy())))
    close(aux, x3.sum())


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobian_of_empty_tensors(jac):
    J = jac(lambda x: x * 2)(tp.zeros(0, dtype=tp.float64))
    assert J.shape == (0, 0)
    J = jac(lambda x: x.sum() * tp.ones(2, dtype=tp.float64))(tp.zeros(0, dtype=tp.float64))
    assert J.shape == (2, 0)


def test_jacrev_chunk_size_gives_the_same_jacobian():
    f = lambda x: (x[:, None] * x[None, :]).sin().reshape(-1)  # noqa: E731
    x = T(0.1, 0.2, 0.3, 0.4)
    full = jacrev(f)(x)
    for chunk in (1, 3, 7, 100):
        close(jacrev(f, chunk_size=chunk)(x), full)
    with pytest.raises(ValueError, match="chunk_size"):
        jacrev(f, chunk_size=0)


def test_jacrev_is_one_graph_with_one_forward():
    f = Counter(lambda x: x.sin() * x.sum())
    jacrev(f)(x3)
    assert f.calls == 1
    jacfwd(f)(x3)
    assert f.calls == 2


def test_jacfwd_randomness():
    def noisy(x):
        return x * tp.randn(3, dtype=tp.float64)

    with pytest.raises(RuntimeError, match=r"jacfwd\(argnums=0\).*random.*randomness='same'"):
        jacfwd(noisy)(x3)
    J = jacfwd(noisy, randomness="same")(x3)
    assert np.count_nonzero(J.numpy() - np.diag(np.diag(J.numpy()))) == 0
    assert jacfwd(noisy, randomness="different")(x3).shape == (3, 3)
    with pytest.raises(ValueError, match="randomness"):
        jacfwd(noisy, randomness="sometimes")


def test_hessian_of_a_quadratic_form():
    A = tp.tensor(np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]))
    H = hessian(lambda x: (x * (A @ x)).sum() / 2)(x3)
    close(H, A)
    Ha, Hb = hessian(lambda a, b: (a * a * b).sum(), argnums=(0, 1))(x3, y3)
    close(Ha[0], tp.tensor(np.diag(2 * y3.numpy())))
    close(Ha[1], tp.tensor(np.diag(2 * x3.numpy())))
    close(Hb[1], tp.zeros(3, 3, dtype=tp.float64))


def test_wrappers_keep_the_function_name():
    def loss(x):
        return x.sum()
    assert grad(loss).__name__ == "grad_loss"
    assert jacrev(loss).__wrapped__ is loss


@pytest.mark.parametrize("transform", [grad, jacrev, jacfwd])
def test_argnums_in_any_order(transform):
    f = lambda a, b, c: (a * b.sum() * c.exp()).sum()  # noqa: E731
    a, b, c = x3, T(1.0, 2.0), y3
    got = transform(f, argnums=(2, 0))(a, b, c)
    want = transform(f, argnums=(0, 2))(a, b, c)
    close(got[0], want[1])
    close(got[1], want[0])
    close(got[1], b.sum() * c.exp())

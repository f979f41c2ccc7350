"""Autograd meets the transforms: tensors that require grad passed through grad/vmap/jacrev are recorded;
clone is recorded; meta tensors; torch.autograd.functional (vs torch, or float64 finite differences)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import functional as AF
from tensorplay.func import grad, jacrev, vmap
from tests.finite_diff import fd_grad


def test_backward_through_vmap_of_grad_matches_finite_differences():
    x0 = np.array([[0.3, -1.2, 0.5], [1.1, 0.2, -0.4]])
    w = tp.tensor(np.array([0.7, -0.3, 1.5]), requires_grad=True)

    def f(w, x):
        return (tp.sin(w * x) * x).sum()

    out = vmap(grad(f), in_dims=(None, 0))(w, tp.tensor(x0))  # d f / d w per row
    assert out.grad_fn is not None
    (out ** 2).sum().backward()

    def ref(wn):
        g = np.cos(wn * x0) * x0 * x0
        return (g ** 2).sum()

    np.testing.assert_allclose(w.grad.numpy(), fd_grad(ref, w.detach().numpy()), rtol=1e-6, atol=1e-8)


def test_jacrev_of_a_requires_grad_input_is_recorded_and_plain_inputs_are_not():
    x = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)
    j = jacrev(lambda x: x ** 3)(x)  # diag(3 x^2)
    j.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])
    plain = jacrev(lambda x: x ** 3)(tp.tensor([1.0, 2.0]))
    assert plain.grad_fn is None and not plain.requires_grad
    with tp.no_grad():
        assert jacrev(lambda x: x ** 3)(x).grad_fn is None


def test_transform_returning_its_input_gives_a_recorded_copy():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = vmap(lambda v: v)(x)
    assert y is not x and y.grad_fn is not None
    (y * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_clone_is_recorded():
    x = tp.tensor([1.0, -2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn is not None and not c.is_leaf
    (c * c).sum().backward()
    assert x.grad.tolist() == [2.0, -4.0]
    assert tp.clone(tp.ones(2)).grad_fn is None


def test_meta_tensors_have_shape_and_no_data():
    m = tp.nn.Linear(4, 3).to("meta")
    assert all(p.is_meta and p.device == tp.device("meta") for p in m.parameters())
    assert tuple(m.weight.shape) == (3, 4) and m.weight.dtype is tp.float32
    for read in (lambda t: t.numpy(), lambda t: t.tolist(), lambda t: np.asarray(t)):
        with pytest.raises(RuntimeError, match="meta"):
            read(m.weight)
    with pytest.raises(RuntimeError, match="meta"):
        tp.ones(1).to("meta").item()
    t = tp.zeros(2, 0).to(device="meta")
    assert t.is_meta and t.shape == (2, 0) and repr(t) == "tensor(..., device='meta', size=(2, 0))"
    assert not tp.ones(2).is_meta and tp.ones(2).device == "cpu"
    with pytest.raises(RuntimeError, match="not available"):
        tp.ones(2).to("cuda")


def _torch():
    return pytest.importorskip("torch")


def f_two(x, y):
    return (x.sin() * y, (x * y).sum())


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_functional_jacobian_matches_torch_structure_and_values(strategy):
    torch = _torch()
    xs = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    ours = AF.jacobian(f_two, tuple(tp.tensor(a) for a in xs), strategy=strategy)
    theirs = torch.autograd.functional.jacobian(f_two, tuple(torch.tensor(a) for a in xs), strategy=strategy,
                                                vectorize=strategy == "forward-mode")
    assert len(ours) == len(theirs) == 2 and all(len(o) == 2 for o in ours)
    for o, t in zip(ours, theirs):
        for a, b in zip(o, t):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_functional_hessian_vjp_jvp_hvp_vhp_match_torch():
    torch = _torch()
    x0, v0 = np.array([[0.5, -1.0], [2.0, 0.1]]), np.array([[1.0, 0.5], [-0.3, 2.0]])

    def f(x):
        return (x.exp() * x.sin()).sum()

    def g(x):
        return x.tanh() * 2

    X, V, tX, tV = tp.tensor(x0), tp.tensor(v0), torch.tensor(x0), torch.tensor(v0)
    TA = torch.autograd.functional
    np.testing.assert_allclose(AF.hessian(f, X).numpy(), TA.hessian(f, tX).numpy(), rtol=1e-12)
    for ours, theirs in ((AF.vjp(g, X, V), TA.vjp(g, tX, tV)), (AF.jvp(g, X, V), TA.jvp(g, tX, tV)),
                         (AF.hvp(f, X, V), TA.hvp(f, tX, tV)), (AF.vhp(f, X, V), TA.vhp(f, tX, tV)),
                         (AF.vjp(f, X), TA.vjp(f, tX))):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def test_functional_errors():
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda x: x * 2, tp.ones(3))
    with pytest.raises(RuntimeError, match="single element"):
        AF.hvp(lambda x: x * 2, tp.ones(3), tp.ones(3))
    with pytest.raises(TypeError, match=r"inputs\[1\]"):
        AF.jacobian(lambda x, y: x, (tp.ones(2), 3.0))
    with pytest.raises(RuntimeError, match="v has shapes"):
        AF.jvp(lambda x: x, tp.ones(3), tp.ones(2))


def test_functional_results_are_detached_unless_create_graph():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    j = AF.jacobian(lambda x: x ** 2, x)
    assert j.grad_fn is None
    j2 = AF.jacobian(lambda x: x ** 2, x, create_graph=True)
    j2.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]

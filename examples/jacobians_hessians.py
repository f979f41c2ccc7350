"""Jacobians and Hessians of an MLP with jacrev, jacfwd and hessian.

`jacrev` builds a Jacobian by reverse mode (one backward pass per output),
`jacfwd` by forward mode (one tangent per input); both give the same matrix.
`hessian` is the Jacobian of the gradient. With `functional_call` the same
transforms differentiate with respect to the model's parameters.

Run: python examples/jacobians_hessians.py
"""
import numpy as np

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay.func import functional_call, hessian, jacfwd, jacrev, vmap


def main():
    tp.manual_seed(0)
    tp.set_default_dtype(tp.float64)     # tight comparisons against finite differences
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))
    x = tp.randn(4)

    # d model(x) / d x: a (3, 4) matrix, by either mode
    j_rev = jacrev(model)(x)
    j_fwd = jacfwd(model)(x)
    assert j_rev.shape == (3, 4)
    np.testing.assert_allclose(j_rev.numpy(), j_fwd.numpy(), rtol=1e-10, atol=1e-12)

    # against central finite differences
    eps = 1e-6
    cols = []
    for i in range(4):
        e = tp.zeros(4)
        e[i] = eps
        cols.append((model(x + e) - model(x - e)) / (2 * eps))
    np.testing.assert_allclose(j_rev.numpy(), tp.stack(cols, dim=1).numpy(), rtol=1e-6, atol=1e-8)
    print("jacobian of the MLP w.r.t. its input:", tuple(j_rev.shape), "(jacrev == jacfwd == finite differences)")

    # Jacobians for a batch of inputs: vmap over jacrev
    xs = tp.randn(8, 4)
    batched = vmap(jacrev(model))(xs)
    assert batched.shape == (8, 3, 4)
    np.testing.assert_allclose(batched[5].numpy(), jacrev(model)(xs[5]).numpy(), rtol=1e-10)
    print("batched jacobians:", tuple(batched.shape))

    # Hessian of a scalar function of the input
    def energy(x):
        return (model(x) ** 2).sum()

    h = hessian(energy)(x)
    assert h.shape == (4, 4)
    np.testing.assert_allclose(h.numpy(), h.numpy().T, rtol=1e-8, atol=1e-10)   # symmetric
    np.testing.assert_allclose(h.numpy(), jacfwd(jacrev(energy))(x).numpy(), rtol=1e-8, atol=1e-10)
    print("hessian of |model(x)|^2 w.r.t. x:", tuple(h.shape), "(symmetric, == jacfwd(jacrev))")

    # Jacobian w.r.t. the parameters: one entry per parameter tensor
    params = {k: v.detach() for k, v in model.named_parameters()}

    def f(params, x):
        return functional_call(model, params, (x,))

    jp = jacrev(f)(params, x)
    for name, p in params.items():
        assert jp[name].shape == (3,) + tuple(p.shape), (name, jp[name].shape)
    # the output is linear in the last bias, with identity jacobian
    np.testing.assert_allclose(jp["4.bias"].numpy(), np.eye(3), atol=1e-12)
    jf = jacfwd(f)(params, x)
    for name in params:
        np.testing.assert_allclose(jp[name].numpy(), jf[name].numpy(), rtol=1e-9, atol=1e-12)
    print("jacobian w.r.t. parameters:", {k: tuple(v.shape) for k, v in jp.items()})

    # Hessian of the loss w.r.t. one layer's weight, with the rest of the model fixed
    target = tp.randn(3)

    def loss_of_last_weight(w):
        return ((functional_call(model, {"4.weight": w}, (x,)) - target) ** 2).sum()

    hw = hessian(loss_of_last_weight)(params["4.weight"])
    assert hw.shape == (3, 16, 3, 16)
    # the loss is quadratic in that weight: H = 2 * I_3 (x) outer(a, a) with a the layer's input
    a = model[:4](x).numpy()
    expected = 2 * np.einsum("ij,kl->ikjl", np.eye(3), np.outer(a, a))
    np.testing.assert_allclose(hw.numpy(), expected, rtol=1e-8, atol=1e-10)
    print("hessian w.r.t. the last weight:", tuple(hw.shape), "(matches the closed form)")
    tp.set_default_dtype(tp.float32)


if __name__ == "__main__":
    main()

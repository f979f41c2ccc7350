"""Gradients and Hessians against JAX, when it is installed (skipped otherwise)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

import tensorplay as tp  # noqa: E402
from tensorplay.func import grad, hessian, jacfwd, jacrev  # noqa: E402

# (name, tensorplay function, the same in jax.numpy)
FUNCTIONS = [
    ("sin_sum", lambda x: (x.sin() * x).sum(), lambda x: (jnp.sin(x) * x).sum()),
    ("log_softmax", lambda x: tp.log_softmax(x, 0)[0], lambda x: jax.nn.log_softmax(x)[0]),
    ("norm", lambda x: (x * x).sum().sqrt(), lambda x: jnp.sqrt((x * x).sum())),
    ("prod", lambda x: x.prod(), lambda x: jnp.prod(x)),
    ("tanh_mlp", lambda x: (x[:, None] * x[None, :]).tanh().sum(), lambda x: jnp.tanh(x[:, None] * x[None, :]).sum()),
    ("max", lambda x: x.max() * x.sum(), lambda x: jnp.max(x) * x.sum()),
    ("pow", lambda x: (x.abs() ** 1.5).sum(), lambda x: (jnp.abs(x) ** 1.5).sum()),
]


@pytest.mark.parametrize("name, f, jf", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_grad_and_hessian_match_jax(name, f, jf):
    x = np.array([0.3, -1.2, 0.7, 2.0])
    t = tp.tensor(x)
    np.testing.assert_allclose(grad(f)(t).numpy(), np.asarray(jax.grad(jf)(x)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hessian(f)(t).numpy(), np.asarray(jax.hessian(jf)(x)), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(jacrev(grad(f))(t).numpy(), np.asarray(jax.jacfwd(jax.grad(jf))(x)),
                               rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(jacfwd(grad(f))(t).numpy(), np.asarray(jax.jacrev(jax.grad(jf))(x)),
                               rtol=1e-9, atol=1e-10)

"""tensorplay.func.custom_jvp / custom_vjp / checkpoint through every transform.

The custom rules are deliberately *different* from the true derivative where that makes the test
stronger (a rule that scales the gradient is seen, not the function's own derivative); the
oracles are the rule written out with numpy, jax's custom_jvp / custom_vjp / checkpoint on the same
numbers (when installed), finite differences and the dot-product identity.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay.func import checkpoint, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jvp, vjp, vmap
from tensorplay.ir.passes.reverse import split
from tensorplay.ir.prims.custom import CustomRuleError
from tensorplay._trace import trace_function

from test_control_grad import fd_grad, jax, npy, on_the_interpreter, t64  # noqa: F401  (fixtures)

RNG = np.random.default_rng(3)
X, W = RNG.normal(size=3), RNG.normal(size=3)


# --- custom_jvp ----------------------------------------------------------------------------------
@custom_jvp
def softplus(x):
    return tp.log(1 + tp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * tp.sigmoid(x) * 2.0  # twice the true derivative: the rule must be the one used


def softplus_rule(x):
    return 2.0 / (1 + np.exp(-x))


def test_custom_jvp_value_and_first_derivatives_use_the_rule():
    x = t64(X)
    np.testing.assert_allclose(npy(softplus(x)), np.log1p(np.exp(X)), rtol=1e-12)
    np.testing.assert_allclose(npy(grad(lambda x: softplus(x).sum())(x)), softplus_rule(X), rtol=1e-12)
    _, t = jvp(softplus, (x,), (t64(np.ones(3)),))
    np.testing.assert_allclose(npy(t), softplus_rule(X), rtol=1e-12)
    np.testing.assert_allclose(npy(jacrev(softplus)(x)), np.diag(softplus_rule(X)), rtol=1e-12)
    np.testing.assert_allclose(npy(jacfwd(softplus)(x)), np.diag(softplus_rule(X)), rtol=1e-12)
    (g,) = vjp(softplus, x)[1](t64(np.ones(3)))
    np.testing.assert_allclose(npy(g), softplus_rule(X), rtol=1e-12)


def test_custom_jvp_second_derivative_differentiates_the_rule():
    h = npy(hessian(lambda x: softplus(x).sum())(t64(X)))
    s = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(h, np.diag(2 * s * (1 - s)), rtol=1e-10)


def test_custom_jvp_under_vmap_and_vmap_of_grad():
    xs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(npy(vmap(softplus)(t64(xs))), np.log1p(np.exp(xs)), rtol=1e-12)
    np.testing.assert_allclose(npy(vmap(grad(lambda x: softplus(x).sum()))(t64(xs))), softplus_rule(xs), rtol=1e-12)
    # grad of vmap: the batched custom_jvp_call node is differentiated by its batched rule
    np.testing.assert_allclose(npy(grad(lambda xs: vmap(softplus)(xs).sum())(t64(xs))), softplus_rule(xs), rtol=1e-12)


def test_custom_jvp_matches_jax(jax):
    jnp = jax.numpy

    @jax.custom_jvp
    def sp(x):
        return jnp.log1p(jnp.exp(x))

    @sp.defjvp
    def _(p, t):
        (x,), (tx,) = p, t
        return sp(x), tx * jax.nn.sigmoid(x) * 2.0

    np.testing.assert_allclose(npy(grad(lambda x: softplus(x).sum())(t64(X))),
                               np.asarray(jax.grad(lambda x: jnp.sum(sp(x)))(X)), rtol=1e-12)
    np.testing.assert_allclose(npy(hessian(lambda x: softplus(x).sum())(t64(X))),
                               np.asarray(jax.hessian(lambda x: jnp.sum(sp(x)))(X)), rtol=1e-10)


def test_custom_jvp_with_a_pytree_argument_and_a_nondiff_argument():
    @custom_jvp
    def scaled(p, k):
        return p["a"] * p["b"] * k

    def rule(primals, tangents):
        (p, k), (tp_, _) = primals, tangents
        return scaled(p, k), (tp_["a"] * p["b"] + p["a"] * tp_["b"]) * k

    scaled.defjvp(rule)
    a, b = t64(X), t64(W)
    g = grad(lambda p: scaled(p, 3.0).sum())({"a": a, "b": b})
    np.testing.assert_allclose(npy(g["a"]), 3 * W, rtol=1e-12)
    np.testing.assert_allclose(npy(g["b"]), 3 * X, rtol=1e-12)


# --- custom_vjp ----------------------------------------------------------------------------------
@custom_vjp
def scaled_sin(x, w):
    return tp.sin(x) * w


def _fwd(x, w):
    return scaled_sin(x, w), (tp.cos(x), tp.sin(x), w)


def _bwd(res, ct):
    c, s, w = res
    return 3.0 * ct * c * w, ct * s  # the x cotangent is 3x the true one


scaled_sin.defvjp(_fwd, _bwd)


def test_custom_vjp_reverse_mode_uses_bwd():
    x, w = t64(X), t64(W)
    np.testing.assert_allclose(npy(scaled_sin(x, w)), np.sin(X) * W, rtol=1e-12)
    gx, gw = grad(lambda x, w: scaled_sin(x, w).sum(), argnums=(0, 1))(x, w)
    np.testing.assert_allclose(npy(gx), 3 * np.cos(X) * W, rtol=1e-12)
    np.testing.assert_allclose(npy(gw), np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(npy(jacrev(scaled_sin)(x, w)), np.diag(3 * np.cos(X) * W), rtol=1e-12)


def test_custom_vjp_forward_mode_is_bwd_transposed():
    x, w = t64(X), t64(W)
    tx, tw = t64(RNG.normal(size=3)), t64(RNG.normal(size=3))
    _, t = jvp(scaled_sin, (x, w), (tx, tw))
    np.testing.assert_allclose(npy(t), 3 * np.cos(X) * W * npy(tx) + np.sin(X) * npy(tw), rtol=1e-12)
    np.testing.assert_allclose(npy(jacfwd(scaled_sin)(x, w)), np.diag(3 * np.cos(X) * W), rtol=1e-12)
    # the dot-product identity ties forward and reverse mode of the rule together
    ct = t64(RNG.normal(size=3))
    gx, gw = vjp(scaled_sin, x, w)[1](ct)
    assert float((ct * t).sum()) == pytest.approx(float((gx * tx).sum() + (gw * tw).sum()), rel=1e-10)


def test_custom_vjp_hessian_vmap_and_eager_backward():
    x, w = t64(X), t64(W)
    h = npy(hessian(lambda x: scaled_sin(x, w).sum())(x))
    np.testing.assert_allclose(h, np.diag(-3 * np.sin(X) * W), rtol=1e-10)
    xs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(npy(vmap(grad(lambda x: scaled_sin(x, w).sum()))(t64(xs))), 3 * np.cos(xs) * W,
                               rtol=1e-12)
    np.testing.assert_allclose(npy(vmap(scaled_sin, in_dims=(0, None))(t64(xs), w)), np.sin(xs) * W, rtol=1e-12)
    # grad of vmap: the batched custom_vjp_call; w is unbatched, its cotangent is summed over the batch
    gx, gw = grad(lambda xs, w: vmap(scaled_sin, in_dims=(0, None))(xs, w).sum(), argnums=(0, 1))(t64(xs), w)
    np.testing.assert_allclose(npy(gx), 3 * np.cos(xs) * W, rtol=1e-12)
    np.testing.assert_allclose(npy(gw), np.sin(xs).sum(0), rtol=1e-12)
    xr = t64(X).requires_grad_()
    scaled_sin(xr, w).sum().backward()
    np.testing.assert_allclose(npy(xr.grad), 3 * np.cos(X) * W, rtol=1e-12)


def test_custom_vjp_matches_jax(jax):
    jnp = jax.numpy

    @jax.custom_vjp
    def ss(x, w):
        return jnp.sin(x) * w

    ss.defvjp(lambda x, w: (ss(x, w), (jnp.cos(x), jnp.sin(x), w)),
              lambda res, ct: (3.0 * ct * res[0] * res[2], ct * res[1]))
    f = lambda x, w: scaled_sin(x, w).sum()  # noqa: E731
    for a, b in zip(grad(f, argnums=(0, 1))(t64(X), t64(W)),
                    jax.grad(lambda x, w: jnp.sum(ss(x, w)), argnums=(0, 1))(X, W)):
        np.testing.assert_allclose(npy(a), np.asarray(b), rtol=1e-12)


def test_custom_vjp_inside_scan():
    """The rule travels into a loop body: grad of a scan over scaled_sin uses bwd at every step."""
    def f(w, h0):
        h, _ = tp.scan(lambda h, _: (scaled_sin(h, w), None), h0, None, length=3)
        return h.sum()

    def rule_grad(w, h0):  # the chain rule with the custom (3x) derivative in h
        hs = [h0]
        for _ in range(3):
            hs.append(np.sin(hs[-1]) * w)
        gh, gw = np.ones(3), np.zeros(3)
        for h in reversed(hs[:-1]):
            gw += gh * np.sin(h)
            gh = gh * 3 * np.cos(h) * w
        return gw, gh

    gw, gh = grad(f, argnums=(0, 1))(t64(W), t64(X))
    ew, eh = rule_grad(W, X)
    np.testing.assert_allclose(npy(gw), ew, rtol=1e-10)
    np.testing.assert_allclose(npy(gh), eh, rtol=1e-10)


def test_custom_vjp_bwd_may_return_none_for_a_zero_cotangent():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), y), lambda y, ct: (ct * y, None))
    gx, gy = grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(t64(X), t64(W))
    np.testing.assert_allclose(npy(gx), W, rtol=1e-12)
    np.testing.assert_allclose(npy(gy), np.zeros(3))


# --- bad rules -----------------------------------------------------------------------------------
def test_custom_bwd_returning_a_wrong_shape_names_the_op_and_both_types():
    @custom_vjp
    def f(x):
        return tp.sin(x)

    f.defvjp(lambda x: (f(x), x), lambda x, ct: (ct.sum(),))
    with pytest.raises(CustomRuleError, match=r"custom_vjp\(f\).*tensor<f64>.*tensor<3xf64>"):
        grad(lambda x: f(x).sum())(t64(X))


def test_custom_bwd_returning_a_wrong_structure_is_an_error():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda res, ct: ct * res[1])
    with pytest.raises(CustomRuleError, match=r"custom_vjp\(f\): bwd must return a tuple"):
        f(t64(X), t64(W))
    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda res, ct: (ct * res[1],))
    with pytest.raises(CustomRuleError, match=r"custom_vjp\(f\): bwd returned 1 cotangents, expected one per argument \(2\)"):
        f(t64(X), t64(W))


def test_custom_jvp_rule_returning_a_wrong_type_is_an_error():
    @custom_jvp
    def f(x):
        return tp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0].sum()))
    with pytest.raises(CustomRuleError, match=r"custom_jvp\(f\).*tangent output.*tensor<f64>.*tensor<3xf64>"):
        f(t64(X))


def test_custom_fwd_returning_a_wrong_output_is_an_error():
    @custom_vjp
    def f(x):
        return tp.sin(x)

    f.defvjp(lambda x: (x.sum(), x), lambda x, ct: (ct,))
    with pytest.raises(CustomRuleError, match=r"custom_vjp\(f\): fwd's output"):
        f(t64(X))


def test_differentiating_a_closed_over_tensor_of_a_custom_rule_is_an_error():
    def loss(w):
        @custom_vjp
        def g(x):
            return x * w

        g.defvjp(lambda x: (g(x), None), lambda _, ct: (ct * w,))
        return g(t64(X)).sum()

    with pytest.raises(ValueError, match="closes over a tensor that is being differentiated"):
        grad(loss)(t64(W))


def test_missing_rules_are_errors():
    f = custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="no JVP rule"):
        f(t64(X))
    g = custom_vjp(lambda x: x)
    with pytest.raises(AttributeError, match="no VJP rule"):
        g(t64(X))


# --- checkpoint ----------------------------------------------------------------------------------
def deep(x, w):
    for _ in range(3):
        x = tp.sin(x * w)
    return x


def test_checkpoint_gives_the_same_values_and_derivatives():
    x, w = t64(X), t64(W)
    f = checkpoint(deep)
    np.testing.assert_allclose(npy(f(x, w)), npy(deep(x, w)), rtol=1e-12)
    for transform in (lambda g: grad(lambda x, w: g(x, w).sum(), argnums=(0, 1)),
                      lambda g: jacrev(g, argnums=(0, 1)), lambda g: jacfwd(g, argnums=(0, 1))):
        for a, b in zip(transform(f)(x, w), transform(deep)(x, w)):
            np.testing.assert_allclose(npy(a), npy(b), rtol=1e-12)
    np.testing.assert_allclose(npy(hessian(lambda x: f(x, w).sum())(x)), npy(hessian(lambda x: deep(x, w).sum())(x)),
                               rtol=1e-10)
    xs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(npy(vmap(grad(lambda x: f(x, w).sum()))(t64(xs))),
                               npy(vmap(grad(lambda x: deep(x, w).sum()))(t64(xs))), rtol=1e-12)
    np.testing.assert_allclose(npy(grad(lambda xs: vmap(f, in_dims=(0, None))(xs, w).sum())(t64(xs))),
                               npy(vmap(grad(lambda x: deep(x, w).sum()))(t64(xs))), rtol=1e-12)
    xr = t64(X).requires_grad_()
    f(xr, w).sum().backward()
    np.testing.assert_allclose(npy(xr.grad), npy(grad(lambda x: deep(x, w).sum())(x)), rtol=1e-12)


def test_checkpoint_saves_only_its_inputs():
    """The residuals of reverse mode are the checkpoint's operands, not its intermediate values."""
    x, w = t64(X), t64(W)
    plain = trace_function(lambda x, w: deep(x, w).sum(), (x, w)).graph
    remat = trace_function(lambda x, w: checkpoint(deep)(x, w).sum(), (x, w)).graph
    s_plain = split(plain, [True, True])
    s_remat = split(remat, [True, True])
    res = s_remat.forward.outputs[len(remat.outputs):]
    assert len(res) == 2 and set(res) <= set(s_remat.forward.inputs), [str(v.type) for v in res]
    assert s_plain.num_residuals > 2
    # the backward pass recomputes the body inside a checkpoint region of its own
    assert any(n.prim.name == "checkpoint" for n in s_remat.second.nodes)


def test_checkpoint_matches_jax(jax):
    jnp = jax.numpy

    def deep_jax(x, w):
        for _ in range(3):
            x = jnp.sin(x * w)
        return x

    got = grad(lambda x, w: checkpoint(deep)(x, w).sum(), argnums=(0, 1))(t64(X), t64(W))
    want = jax.grad(lambda x, w: jnp.sum(jax.checkpoint(deep_jax)(x, w)), argnums=(0, 1))(X, W)
    for a, b in zip(got, want):
        np.testing.assert_allclose(npy(a), np.asarray(b), rtol=1e-12)


# --- checkpoint policies -------------------------------------------------------------------------
def mlp(x, w1, w2):
    return tp.sin(tp.tanh(x @ w1) @ w2)


def mlp_jax(jnp, x, w1, w2):
    return jnp.sin(jnp.tanh(x @ w1) @ w2)


MLP_ARGS = (RNG.normal(size=(4, 3)), RNG.normal(size=(3, 5)), RNG.normal(size=(5, 2)))
POLICIES = ["nothing_saveable", "everything_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"]


def mlp_loss(policy):
    f = checkpoint(mlp, policy=policy)
    return lambda x, w1, w2: (f(x, w1, w2) * f(x, w1, w2)).sum()


@pytest.mark.parametrize("policy", POLICIES)
def test_checkpoint_policies_give_the_same_derivatives(policy):
    args = [t64(a) for a in MLP_ARGS]
    plain = grad(lambda x, w1, w2: (mlp(x, w1, w2) ** 2).sum(), argnums=(0, 1, 2))(*args)
    got = grad(mlp_loss(getattr(tp.func.checkpoint_policies, policy)), argnums=(0, 1, 2))(*args)
    for a, b in zip(got, plain):
        np.testing.assert_allclose(npy(a), npy(b), rtol=1e-12)
    # by finite differences, and through vmap(grad) and compile
    fd = fd_grad(lambda w1: mlp_loss(policy)(args[0], w1, args[2]), MLP_ARGS[1])
    np.testing.assert_allclose(npy(got[1]), fd, rtol=1e-6, atol=1e-8)
    xs = t64(RNG.normal(size=(2, 4, 3)))
    per = vmap(grad(mlp_loss(policy), argnums=1), in_dims=(0, None, None))(xs, args[1], args[2])
    for i in range(2):
        np.testing.assert_allclose(npy(per[i]), npy(grad(mlp_loss(policy), argnums=1)(xs[i], args[1], args[2])),
                                   rtol=1e-12)


def test_checkpoint_policies_match_jax(jax):
    jnp = jax.numpy
    args = [t64(a) for a in MLP_ARGS]
    for policy in POLICIES:
        got = grad(mlp_loss(policy), argnums=(0, 1, 2))(*args)
        f = jax.checkpoint(lambda *a: mlp_jax(jnp, *a), policy=getattr(jax.checkpoint_policies, policy))
        want = jax.grad(lambda *a: jnp.sum(f(*a) * f(*a)), argnums=(0, 1, 2))(*MLP_ARGS)
        for a, b in zip(got, want):
            np.testing.assert_allclose(npy(a), np.asarray(b), rtol=1e-12)


def _residual_types(policy):
    args = [t64(a) for a in MLP_ARGS]
    fn = (lambda x, w1, w2: mlp(x, w1, w2).sum()) if policy is None else \
        (lambda x, w1, w2: checkpoint(mlp, policy=policy)(x, w1, w2).sum())
    g = trace_function(fn, tuple(args)).graph
    s = split(g, [True, True, True])
    return sorted(str(v.type) for v in s.forward.outputs[len(g.outputs):]), s


def test_what_each_policy_saves():
    inputs = sorted(["tensor<4x3xf64>", "tensor<3x5xf64>", "tensor<5x2xf64>"])
    nothing, _ = _residual_types("nothing_saveable")
    assert nothing == inputs
    dots, s = _residual_types("dots_saveable")
    # the inputs and the two products x @ w1 (4x5) and tanh(.) @ w2 (4x2); tanh is recomputed
    assert dots == sorted(inputs + ["tensor<4x5xf64>", "tensor<4x2xf64>"])
    bodies = [n.attrs["body"].graph for n in s.second.nodes if n.prim.name == "checkpoint"]
    recomputed = [m.prim.name for g in bodies for m in g.nodes]
    assert "tanh" in recomputed
    assert _residual_types("dots_with_no_batch_dims_saveable")[0] == dots
    # everything_saveable: the residuals of no checkpoint at all
    assert _residual_types("everything_saveable")[0] == _residual_types(None)[0]


def test_checkpoint_policy_bad_input():
    with pytest.raises(ValueError, match="unknown policy.*dots_saveable"):
        checkpoint(deep, policy="save_the_whales")
    with pytest.raises(ValueError, match="unknown policy"):
        checkpoint(deep, policy=lambda *a: True)


@settings(max_examples=10, deadline=None)
@given(shape=st.sampled_from([(), (1,), (2, 3), (0,)]))
def test_custom_rules_and_checkpoint_on_shapes(shape):
    rng = np.random.default_rng(len(shape))
    x = rng.normal(size=shape)
    g = npy(grad(lambda x: softplus(x).sum())(t64(x)))
    np.testing.assert_allclose(g, softplus_rule(x), rtol=1e-12)
    g = npy(grad(lambda x: scaled_sin(x, tp.ones_like(x)).sum())(t64(x)))
    np.testing.assert_allclose(g, 3 * np.cos(x), rtol=1e-12)
    f = lambda x: checkpoint(tp.sin)(x * x).sum()  # noqa: E731
    np.testing.assert_allclose(npy(grad(f)(t64(x))), fd_grad(f, x), atol=1e-6)


@pytest.mark.parametrize("name", ["tensorplay.func._custom", "tensorplay.ir.prims.custom", "tensorplay._region_writes",
                                  "tensorplay.ir.prims.control_ad"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_custom_rules_and_checkpoint_inside_a_batched_loop():
    """vmap of a scan whose body calls a custom_vjp function and a checkpoint: the batching rules of
    the custom primitives run inside the batched body; grad of it uses the rule at every step."""
    w = t64(W)
    step = checkpoint(lambda h: tp.tanh(h) * 0.9)

    def f(h0):
        h, _ = tp.scan(lambda h, _: (step(scaled_sin(h, w)), None), h0, None, length=3)
        return h.sum()

    hs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(npy(vmap(f)(t64(hs))), [float(f(t64(h))) for h in hs], rtol=1e-12)
    got = npy(grad(lambda hs: vmap(f)(hs).sum())(t64(hs)))
    np.testing.assert_allclose(got, np.stack([npy(grad(f)(t64(h))) for h in hs]), rtol=1e-10)
    np.testing.assert_allclose(npy(vmap(grad(f))(t64(hs))), got, rtol=1e-10)


def test_forward_mode_through_a_nonlinear_bwd_is_a_clear_error():
    @custom_vjp
    def f(x):
        return tp.sin(x)

    f.defvjp(lambda x: (tp.sin(x), tp.cos(x)), lambda c, g: (tp.clamp(g, -1.0, 1.0) * c,))
    x = tp.ones(3, dtype=tp.float64)
    np.testing.assert_allclose(grad(lambda x: f(x).sum())(x).numpy(), np.cos(1.0) * np.ones(3))
    with pytest.raises(CustomRuleError, match="linear in the cotangents"):
        jvp(f, (x,), (x,))

"""Modules under the function transforms: the spec's module examples, per-sample gradients, ensembles,
batch norm under grad and vmap, dropout randomness, debug_unwrap."""
import copy

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay.func import (debug_unwrap, functional_call, grad, jacfwd, jacrev, replace_all_batch_norm_modules_,
                             stack_module_state, vmap)


# --- the spec's examples, as written ---------------------------------------------------------------
def test_spec_jacrev_of_module_call():
    model = tp.nn.Linear(3, 3)

    def f(x):
        return model(x)

    x = tp.randn(3)
    jacobian = jacrev(f)(x)
    assert jacobian.shape == (3, 3)
    np.testing.assert_allclose(jacobian.numpy(), model.weight.numpy(), rtol=1e-6)


def test_spec_jacrev_wrt_parameters():
    model = tp.nn.Linear(3, 3)

    def f(params, x):
        return functional_call(model, params, (x,))

    x = tp.randn(3)
    jacobian = jacrev(f)(dict(model.named_parameters()), x)
    assert jacobian["weight"].shape == (3, 3, 3)
    assert jacobian["bias"].shape == (3, 3)
    expected = np.einsum("ij,k->ijk", np.eye(3), x.numpy())
    np.testing.assert_allclose(jacobian["weight"].numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(jacobian["bias"].numpy(), np.eye(3), rtol=1e-6)


def test_spec_ensemble():
    models = [nn.Linear(3, 3) for _ in range(4)]
    stacked_params, stacked_buffers = stack_module_state(models)
    x = tp.randn(5, 3)

    def call_one(params, buffers, x):
        return functional_call(models[0], (params, buffers), (x,))

    ensemble_out = vmap(call_one, in_dims=(0, 0, None))(stacked_params, stacked_buffers, x)
    assert ensemble_out.shape == (4, 5, 3)
    for i, m in enumerate(models):
        np.testing.assert_allclose(ensemble_out[i].numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_spec_reference_functional_call_and_stack_examples():
    model = nn.Linear(3, 2)
    x = tp.randn(4, 3)
    params = dict(model.named_parameters())
    np.testing.assert_array_equal(functional_call(model, params, (x,)).numpy(), model(x).numpy())
    models = [nn.Linear(3, 2) for _ in range(3)]
    base_model = models[0]
    params, buffers = stack_module_state(models)

    def call(p, b, x):
        return functional_call(base_model, (p, b), (x,))

    batched_x = tp.randn(3, 4, 3)
    out = vmap(call)(params, buffers, batched_x)
    assert out.shape == (3, 4, 2)
    np.testing.assert_allclose(out[2].numpy(), models[2](batched_x[2]).numpy(), rtol=1e-5, atol=1e-6)


def test_spec_debug_unwrap(capsys):
    def f(x):
        print(debug_unwrap(x).shape)
        return x * 2

    out = vmap(f)(tp.randn(2, 3))
    assert out.shape == (2, 3)
    assert capsys.readouterr().out.strip() == "tensorplay.Size(3)"


# --- per-sample gradients --------------------------------------------------------------------------
def _loss_one(model):
    def loss(params, x, y):
        return F.cross_entropy(functional_call(model, params, (x.unsqueeze(0),)), y.unsqueeze(0))
    return loss


@pytest.mark.compiled_backend
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_per_sample_grads_match_loop(kind):
    tp.manual_seed(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
        xs = tp.randn(5, 6)
    else:
        model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, stride=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3 * 2 * 2, 3))
        xs = tp.randn(5, 2, 8, 8)
    ys = tp.tensor([0, 2, 1, 1, 0])
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = _loss_one(model)
    batched = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(5):
        single = grad(loss)(params, xs[i], ys[i])
        for k in params:
            assert batched[k].shape == (5,) + tuple(params[k].shape)
            np.testing.assert_allclose(batched[k][i].numpy(), single[k].numpy(), rtol=1e-4, atol=1e-6, err_msg=k)


def test_grad_of_module_matches_finite_differences():
    tp.set_default_dtype(tp.float64)
    try:
        model = nn.Sequential(nn.Conv1d(2, 3, 3, padding=1, dilation=1), nn.Tanh(), nn.Flatten(), nn.Linear(15, 1))
        x = tp.randn(4, 2, 5)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p):
            return functional_call(model, p, (x,)).pow(2).mean()

        g = grad(loss)(params)
        w = params["0.weight"].numpy()
        eps = 1e-6
        for idx in [(0, 0, 0), (2, 1, 2), (1, 0, 1)]:
            plus, minus = w.copy(), w.copy()
            plus[idx] += eps
            minus[idx] -= eps
            fd = (loss({**params, "0.weight": tp.tensor(plus)}) - loss({**params, "0.weight": tp.tensor(minus)}))
            assert float(g["0.weight"][idx]) == pytest.approx(float(fd) / (2 * eps), rel=1e-5, abs=1e-8)
    finally:
        tp.set_default_dtype(tp.float32)


def test_jacfwd_matches_jacrev_for_conv_and_norm_layers():
    tp.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding="same"), nn.ReLU(), nn.Flatten(0), nn.Linear(2 * 16, 4),
                          nn.LayerNorm(4))
    x = tp.randn(1, 4, 4)
    np.testing.assert_allclose(jacrev(model)(x).numpy(), jacfwd(model)(x).numpy(), rtol=1e-4, atol=1e-6)


# --- ensembles --------------------------------------------------------------------------------------
def test_ensemble_with_batchnorm_patched():
    models = [replace_all_batch_norm_modules_(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU()))
              for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert buffers == {}
    base = copy.deepcopy(models[0])
    xs = tp.randn(3, 6, 3)
    out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, xs)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].numpy(), m(xs[i]).numpy(), rtol=1e-4, atol=1e-5)


def test_ensemble_in_eval_mode_uses_stacked_buffers():
    models = [nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)) for _ in range(2)]
    for i, m in enumerate(models):
        m[1].running_mean.fill_(float(i))
        m.eval()
    params, buffers = stack_module_state(models)
    x = tp.randn(5, 3)
    out = vmap(lambda p, b: functional_call(models[0], (p, b), (x,)))(params, buffers)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
    assert models[0][1].running_mean.tolist() == [0.0] * 4


# --- batch norm under transforms --------------------------------------------------------------------
def test_batchnorm_under_vmap_raises_clear_error():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(RuntimeError, match="replace_all_batch_norm_modules_"):
        vmap(bn)(tp.randn(4, 5, 3))
    assert int(bn.num_batches_tracked) == 0 and bn.running_mean.tolist() == [0.0] * 3
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    params, buffers = stack_module_state([model, copy.deepcopy(model)])
    with pytest.raises(RuntimeError, match="replace_all_batch_norm_modules_"):
        vmap(lambda p, b, x: functional_call(model, (p, b), (x,)), in_dims=(0, 0, None))(params, buffers,
                                                                                          tp.randn(4, 3))
    # eval mode and patched modules are fine
    assert vmap(bn.eval())(tp.randn(4, 5, 3)).shape == (4, 5, 3)
    patched = replace_all_batch_norm_modules_(nn.BatchNorm1d(3))
    assert vmap(patched)(tp.randn(4, 5, 3)).shape == (4, 5, 3)


def test_batchnorm_under_grad_updates_running_stats_like_eager():
    tp.manual_seed(2)
    x = tp.randn(6, 3)
    eager = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    traced = copy.deepcopy(eager)
    eager(x)
    params = {k: v.detach() for k, v in traced.named_parameters()}
    g = grad(lambda p: functional_call(traced, p, (x,)).pow(2).sum())(params)
    assert g["0.weight"].shape == (3, 3)
    np.testing.assert_allclose(traced[1].running_mean.numpy(), eager[1].running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(traced[1].running_var.numpy(), eager[1].running_var.numpy(), rtol=1e-6)
    assert int(traced[1].num_batches_tracked) == 1


def test_batchnorm_gradient_matches_patched_eval_free_version():
    """Training-mode batch norm differentiates through the batch statistics."""
    tp.set_default_dtype(tp.float64)
    try:
        bn = replace_all_batch_norm_modules_(nn.BatchNorm1d(2))
        x = tp.randn(5, 2)

        def f(x):
            return (bn(x) * tp.arange(10.0).reshape(5, 2)).sum()

        g = grad(f)(x).numpy()
        eps = 1e-6
        fd = np.zeros((5, 2))
        for i in range(5):
            for j in range(2):
                e = np.zeros((5, 2))
                e[i, j] = eps
                fd[i, j] = (float(f(x + tp.tensor(e))) - float(f(x - tp.tensor(e)))) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)
    finally:
        tp.set_default_dtype(tp.float32)


# --- dropout and embedding under transforms ----------------------------------------------------------
def test_dropout_follows_vmap_randomness():
    drop = nn.Dropout(0.5)
    x = tp.ones(4, 100)
    with pytest.raises(Exception, match="random"):
        vmap(drop)(x)
    different = vmap(drop, randomness="different")(x).numpy()
    same = vmap(drop, randomness="same")(x).numpy()
    assert not (different == different[0]).all()
    assert (same == same[0]).all()
    assert set(np.unique(different)) <= {0.0, 2.0}
    assert vmap(drop.eval())(x).shape == (4, 100)


def test_embedding_gradient_and_padding_idx():
    emb = nn.Embedding(5, 2, padding_idx=0)
    idx = tp.tensor([0, 3, 3, 1])

    def f(w):
        return functional_call(emb, {"weight": w}, (idx,)).sum()

    g = grad(f)(emb.weight.detach()).numpy()
    np.testing.assert_array_equal(g, [[0, 0], [1, 1], [0, 0], [2, 2], [0, 0]])


def test_functional_call_inside_grad_restores_module():
    model = nn.Linear(2, 2)
    own = model.weight
    params = {k: v.detach() for k, v in model.named_parameters()}
    grad(lambda p: functional_call(model, p, (tp.ones(2),)).sum())(params)
    assert model.weight is own and not model.weight.is_traced


# --- a whole training step under tp.compile -------------------------------------------------------------
@pytest.mark.compiled_backend
def test_compiled_functional_training_step():
    from tensorplay.optim import functional as optf

    tp.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    X, y = tp.randn(16, 3), tp.randint(0, 2, (16,))

    def loss(p):
        return F.cross_entropy(functional_call(model, p, (X,)), y)

    @tp.compile
    def step(params, state):
        return optf.adam(params, grad(loss)(params), state, lr=0.05)

    params = {k: v.detach() for k, v in model.named_parameters()}
    _, state = optf.adam(params, {k: tp.zeros_like(v) for k, v in params.items()}, None, lr=0.0)
    state["step"] = state["step"] * 0
    before = float(loss(params))
    eager_params, eager_state = params, state
    for _ in range(10):
        params, state = step(params, state)
        eager_params, eager_state = optf.adam(eager_params, grad(loss)(eager_params), eager_state, lr=0.05)
    assert step.trace_count == 1
    assert float(loss(params)) < before
    for k in params:
        np.testing.assert_allclose(params[k].numpy(), eager_params[k].numpy(), rtol=1e-4, atol=1e-5)

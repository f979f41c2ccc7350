"""Model ensembling with stack_module_state + vmap.

Several models of the same architecture (different initialisations) are
usually evaluated in a Python loop. `stack_module_state` stacks their
parameters and buffers along a new leading dim, and `vmap` over
`functional_call` evaluates the whole ensemble in one batched call: either
every model on the same minibatch, or each model on its own minibatch.
Batch norm is patched with `replace_all_batch_norm_modules_`, because running
statistics cannot be updated in place under vmap.

Run: python examples/ensembling.py
"""
import copy

import numpy as np

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay.func import functional_call, grad, replace_all_batch_norm_modules_, stack_module_state, vmap


def make_mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 4))


def main():
    tp.manual_seed(0)
    num_models, batch = 5, 24
    models = [replace_all_batch_norm_modules_(make_mlp()) for _ in range(num_models)]
    params, buffers = stack_module_state(models)
    print("stacked:", {k: tuple(v.shape) for k, v in params.items()})

    # a "meta" copy of the architecture whose own parameters are never used
    base = copy.deepcopy(models[0])

    def call_one(p, b, x):
        return functional_call(base, (p, b), (x,))

    # 1. every model sees the same minibatch
    x = tp.randn(batch, 16)
    same = vmap(call_one, in_dims=(0, 0, None))(params, buffers, x)
    loop = tp.stack([m(x) for m in models])
    assert same.shape == (num_models, batch, 4)
    np.testing.assert_allclose(same.numpy(), loop.numpy(), rtol=1e-4, atol=1e-5)
    print("same minibatch:", tuple(same.shape), "matches the loop over models")

    # 2. each model sees its own minibatch
    xs = tp.randn(num_models, batch, 16)
    different = vmap(call_one)(params, buffers, xs)
    loop = tp.stack([m(xs[i]) for i, m in enumerate(models)])
    np.testing.assert_allclose(different.numpy(), loop.numpy(), rtol=1e-4, atol=1e-5)
    print("different minibatches:", tuple(different.shape), "matches the loop over models")

    # 3. train the whole ensemble at once: vmap over grad gives one gradient per model
    ys = tp.randint(0, 4, (num_models, batch))

    def loss(p, b, x, y):
        return F.cross_entropy(call_one(p, b, x), y)

    batched_loss = vmap(loss)
    batched_grad = vmap(grad(loss))
    before = batched_loss(params, buffers, xs, ys)
    for _ in range(30):
        g = batched_grad(params, buffers, xs, ys)
        params = {k: v - 0.1 * g[k] for k, v in params.items()}
    after = batched_loss(params, buffers, xs, ys)
    print("ensemble losses before:", np.round(before.numpy(), 3))
    print("ensemble losses after: ", np.round(after.numpy(), 3))
    assert (after.numpy() < before.numpy()).all()

    # 4. ensemble prediction: average the members' probabilities
    probs = F.softmax(vmap(call_one, in_dims=(0, 0, None))(params, buffers, x), dim=-1).mean(0)
    assert probs.shape == (batch, 4)
    np.testing.assert_allclose(probs.sum(-1).numpy(), np.ones(batch), rtol=1e-5)
    print("ensemble prediction:", tuple(probs.shape))


if __name__ == "__main__":
    main()

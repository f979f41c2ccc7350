"""The models the benchmarks share, written once per framework with identical math.

An MLP `x -> act(x @ W1 + b1) -> ... -> x @ Wn + bn` (row-vector convention, W of shape
(fan_in, fan_out)), its mean cross-entropy loss over a batch, and the same loss for a
single example (the per-sample-gradient form). Parameters are created once in numpy
(`init_mlp`, deterministic) and converted for each framework, so every implementation
computes on the same numbers.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np


def init_mlp(sizes: list[int], seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        bias = (0.1 * rng.standard_normal(b)).astype(np.float32)
        params.append((w, bias))
    return params


def batch(n: int, d_in: int, classes: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d_in)).astype(np.float32), rng.integers(0, classes, n).astype(np.int64)


def numpy_mlp(params, x, act: str = "relu"):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = np.maximum(x, 0) if act == "relu" else np.tanh(x)
    return x


def tensorplay_fns(act: str = "relu") -> SimpleNamespace:
    import tensorplay as tp
    import tensorplay.nn.functional as F
    fact = tp.relu if act == "relu" else tp.tanh

    def params(p):
        return [(tp.from_numpy(w), tp.from_numpy(b)) for w, b in p]

    def mlp(ps, x):
        for i, (w, b) in enumerate(ps):
            x = x @ w + b
            if i < len(ps) - 1:
                x = fact(x)
        return x

    def loss(ps, x, y):
        return F.cross_entropy(mlp(ps, x), y)

    def loss1(ps, x, y):  # one example: x (d,), y ()
        return F.cross_entropy(mlp(ps, x.unsqueeze(0)), y.unsqueeze(0))

    return SimpleNamespace(tp=tp, params=params, array=tp.from_numpy, mlp=mlp, loss=loss, loss1=loss1)


def jax_fns(jax, act: str = "relu") -> SimpleNamespace:
    import jax.numpy as jnp
    fact = jax.nn.relu if act == "relu" else jnp.tanh

    def params(p):
        return [(jnp.asarray(w), jnp.asarray(b)) for w, b in p]

    def mlp(ps, x):
        for i, (w, b) in enumerate(ps):
            x = x @ w + b
            if i < len(ps) - 1:
                x = fact(x)
        return x

    def loss(ps, x, y):
        logp = jax.nn.log_softmax(mlp(ps, x), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def loss1(ps, x, y):
        return -jax.nn.log_softmax(mlp(ps, x), axis=-1)[y]

    return SimpleNamespace(params=params, array=jnp.asarray, mlp=mlp, loss=loss, loss1=loss1)


def torch_fns(torch, act: str = "relu") -> SimpleNamespace:
    import torch.nn.functional as F
    fact = torch.relu if act == "relu" else torch.tanh

    def params(p, requires_grad: bool = False):
        return [(torch.from_numpy(w.copy()).requires_grad_(requires_grad),
                 torch.from_numpy(b.copy()).requires_grad_(requires_grad)) for w, b in p]

    def mlp(ps, x):
        for i, (w, b) in enumerate(ps):
            x = x @ w + b
            if i < len(ps) - 1:
                x = fact(x)
        return x

    def loss(ps, x, y):
        return F.cross_entropy(mlp(ps, x), y)

    def loss1(ps, x, y):
        return F.cross_entropy(mlp(ps, x.unsqueeze(0)), y.unsqueeze(0))

    return SimpleNamespace(params=params, array=torch.from_numpy, mlp=mlp, loss=loss, loss1=loss1)

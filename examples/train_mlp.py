"""Training an MLP classifier with a functional loop.

The model is a plain `nn.Module`; the training step is a pure function of
its parameters: `grad_and_value` over `functional_call` gives the loss and
the gradient dict in one pass, and `optim.Adam` (built from
`named_parameters()`) applies that dict to the module in place. The data is a
synthetic three-arm spiral; the script asserts the accuracy it reaches.

Run: python examples/train_mlp.py
"""
import math
import time

import numpy as np

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay import optim
from tensorplay.func import functional_call, grad_and_value

TARGET_ACCURACY = 0.95


def spirals(n_per_class: int, classes: int = 3, noise: float = 0.15, seed: int = 0):
    """Points on `classes` interleaved spiral arms, with Gaussian noise."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.1, 1.0, n_per_class)
        theta = np.linspace(0, 1.5 * math.pi, n_per_class) + 2 * math.pi * c / classes
        theta = theta + rng.normal(0, noise, n_per_class)
        xs.append(np.stack([r * np.cos(theta), r * np.sin(theta)], 1))
        ys.append(np.full(n_per_class, c))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys).astype(np.int64)
    perm = rng.permutation(len(y))
    return tp.tensor(x[perm]), tp.tensor(y[perm])


def accuracy(model, x, y) -> float:
    model.eval()
    pred = model(x).argmax(dim=1)
    model.train()
    return float((pred == y).float().mean())


def main():
    tp.manual_seed(0)
    x_train, y_train = spirals(300, seed=0)
    x_test, y_test = spirals(100, seed=1)

    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.05),
                          nn.Linear(64, 3))
    opt = optim.Adam(model.named_parameters(), lr=0.01)

    def loss_fn(params, x, y):
        logits = functional_call(model, params, (x,))
        return F.cross_entropy(logits, y, label_smoothing=0.05)

    step = grad_and_value(loss_fn)
    params = dict(model.named_parameters())    # the module's own tensors: opt.step updates them in place
    batch = 128
    n = x_train.shape[0]
    start = time.perf_counter()
    for epoch in range(40):
        perm = tp.randperm(n)
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            grads, loss = step(params, x_train[idx], y_train[idx])
            opt.step(grads)
        if epoch % 10 == 9:
            print(f"epoch {epoch + 1:3d}  loss {loss.item():.4f}  train acc {accuracy(model, x_train, y_train):.3f}")
    acc = accuracy(model, x_test, y_test)
    print(f"test accuracy {acc:.3f} after {time.perf_counter() - start:.1f}s")
    assert acc >= TARGET_ACCURACY, f"expected test accuracy >= {TARGET_ACCURACY}, got {acc:.3f}"


if __name__ == "__main__":
    main()

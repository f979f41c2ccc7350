"""A classic PyTorch training loop: ``loss.backward(); opt.step()``.

The parameters of an `nn.Module` require grad; the forward pass records the tape, and
`backward` differentiates it as one IR graph, compiled once and reused on every step (the
steps are structurally equal). `optim.Adam` reads each parameter's ``.grad``. The initial
weights come from a seeded numpy generator (`initial_weights`), so the same loop in PyTorch
reaches the same loss (tests/autograd/test_torch_oracle.py checks that when torch is installed).

Run: python examples/train_backward.py
"""
import numpy as np

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay import optim

STEPS = 60
TARGET_LOSS = 0.35


def data(n: int = 256, seed: int = 0):
    """Two-dimensional points labelled by the quadrant they lie in (4 classes)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) * 2 + (x[:, 1] > 0).astype(np.int64)
    return x, y


def initial_weights(seed: int = 0) -> dict:
    """Initial weights by name, as numpy arrays (shared with the PyTorch reference)."""
    rng = np.random.default_rng(seed)
    shapes = {"0.weight": (32, 2), "0.bias": (32,), "2.weight": (4, 32), "2.bias": (4,)}
    return {k: (rng.normal(size=s) * 0.5).astype(np.float32) for k, s in shapes.items()}


def train(steps: int = STEPS, lr: float = 0.05) -> list:
    """Train the MLP with Adam from `initial_weights`; return the loss of every step."""
    x, y = data()
    x, y = tp.tensor(x), tp.tensor(y)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 4))
    model.load_state_dict({k: tp.tensor(v) for k, v in initial_weights().items()})
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    losses = train()
    print(f"loss: {losses[0]:.4f} -> {losses[-1]:.4f} in {len(losses)} steps")
    assert losses[-1] < TARGET_LOSS, f"final loss {losses[-1]:.4f} is above {TARGET_LOSS}"


if __name__ == "__main__":
    main()

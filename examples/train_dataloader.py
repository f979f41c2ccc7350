"""A torch-style training loop: DataLoader, AdamW, gradient clipping, OneCycleLR, checkpointing.

The data is a noisy linear regression split with `random_split` and batched by a
shuffling `DataLoader` with a seeded generator. Gradients come from
`tensorplay.func.grad` and are put on each parameter's ``.grad``, so the rest reads as a
PyTorch loop: `clip_grad_norm_`, ``opt.step()``, ``scheduler.step()``. The trained
weights are saved with `tp.save`, reloaded into a fresh model, and checked.

Run: python examples/train_dataloader.py
"""
import os
import tempfile

import numpy as np

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay import optim
from tensorplay.func import functional_call, grad_and_value
from tensorplay.utils.data import DataLoader, TensorDataset, random_split

EPOCHS = 30
TARGET_MSE = 0.02


def make_data(n: int = 512, seed: int = 0) -> TensorDataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    w = np.array([[1.5], [-2.0], [0.5], [3.0]], dtype=np.float32)
    y = x @ w + 0.1 * rng.standard_normal((n, 1)).astype(np.float32)
    return TensorDataset(tp.tensor(x), tp.tensor(y))


def evaluate(model, loader) -> float:
    model.eval()
    total, count = 0.0, 0
    for x, y in loader:
        total += F.mse_loss(model(x), y, reduction="sum").item()
        count += y.numel()
    model.train()
    return total / count


def main():
    tp.manual_seed(0)
    train_set, val_set = random_split(make_data(), [0.8, 0.2], generator=tp.Generator().manual_seed(1))
    train = DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True, generator=tp.Generator().manual_seed(2))
    val = DataLoader(val_set, batch_size=64)

    model = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 1))
    opt = optim.AdamW(model.parameters(), lr=0.01, weight_decay=1e-4)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, epochs=EPOCHS, steps_per_epoch=len(train))
    params = dict(model.named_parameters())

    def loss_fn(p, x, y):
        return F.mse_loss(functional_call(model, p, (x,)), y)

    step = grad_and_value(loss_fn)
    first = evaluate(model, val)
    for _ in range(EPOCHS):
        for x, y in train:
            grads, _ = step(params, x, y)
            for name, p in params.items():
                p.grad = grads[name]
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            opt.step()
            sched.step()
    final = evaluate(model, val)
    print(f"validation MSE: {first:.3f} -> {final:.4f} (lr now {sched.get_last_lr()[0]:.2e})")
    assert final < TARGET_MSE < first, (first, final)

    path = os.path.join(tempfile.mkdtemp(), "regressor.tp")
    tp.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, path)
    checkpoint = tp.load(path)
    fresh = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 1))
    fresh.load_state_dict(checkpoint["model"])
    assert abs(evaluate(fresh, val) - final) < 1e-9
    print("checkpoint reloaded:", list(checkpoint["model"]))


if __name__ == "__main__":
    main()

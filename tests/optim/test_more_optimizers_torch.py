"""Adadelta, Adamax, NAdam, RAdam and the extra lr schedulers against torch: parameters after several
steps from the same start and gradients (float64), and the learning-rate sequences value for value."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim

torch = pytest.importorskip("torch")


# torch keeps step scalars (NAdam's mu_product) in its default dtype: float64 for a float64 comparison
from torch_oracle_util import torch_float64  # noqa: E402,F401  (autouse fixture)

CONFIGS = [
    ("Adadelta", {}), ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", {}), ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.01)),
    ("NAdam", {}), ("NAdam", dict(lr=0.01, weight_decay=0.1)), ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", {}), ("RAdam", dict(lr=0.01, weight_decay=0.1)), ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
]


@pytest.mark.parametrize("name, kw", CONFIGS)
def test_optimizer_matches_torch_over_steps(name, kw):
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(4)
    grads = [(rng.standard_normal((3, 4)), rng.standard_normal(4)) for _ in range(12)]  # 12 > RAdam's 5 warm-up
    ours = [tp.tensor(w0), tp.tensor(b0)]
    theirs = [torch.tensor(w0), torch.tensor(b0)]
    o, t = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    for gw, gb in grads:
        o.step([tp.tensor(gw), tp.tensor(gb)])
        for p, g in zip(theirs, (gw, gb)):
            p.grad = torch.tensor(g)
        t.step()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_optimizer_reads_grad_from_backward_and_rejects_bad_hyperparameters():
    w = tp.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.RAdam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w.tolist() == pytest.approx([0.8, -1.6])  # warm-up: w - lr * grad
    for name, kw in (("Adadelta", dict(rho=1.5)), ("Adamax", dict(betas=(1.0, 0.9))), ("NAdam", dict(lr=-1.0)),
                     ("RAdam", dict(eps=-1.0))):
        with pytest.raises(ValueError, match="Invalid"):
            getattr(optim, name)([tp.zeros(1)], **kw)


def _lrs(lib, make, epochs=12):
    opt = lib.optim.SGD([lib.zeros(1)], lr=0.8)
    sched = make(lib, opt)
    out = []
    for _ in range(epochs):
        out.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return out


SCHEDULES = {
    "ConstantLR": lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=3),
    "LinearLR": lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=4),
    "MultiplicativeLR": lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.8),
    "WarmRestarts": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.01),
    "WarmRestartsMult": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
    "SequentialLR": lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
        o, [lib.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
            lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.7),
            lib.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)], milestones=[3, 7]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_scheduler_sequences_match_torch(name):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(_lrs(tp, SCHEDULES[name]), _lrs(torch, SCHEDULES[name]), rtol=1e-12)


def test_warm_restarts_with_fractional_epochs_and_scheduler_errors():
    def run(lib):
        opt = lib.optim.SGD([lib.zeros(1)], lr=1.0)
        s = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
        out = []
        for e in (0.5, 1.0, 2.5, 5.0, 7.25):
            s.step(e)
            out.append(s.get_last_lr()[0])
        return out
    np.testing.assert_allclose(run(tp), run(torch), rtol=1e-12)
    opt = optim.SGD([tp.zeros(1)], lr=1.0)
    with pytest.raises(ValueError, match="T_0"):
        optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="milestone"):
        optim.lr_scheduler.SequentialLR(opt, [optim.lr_scheduler.ConstantLR(opt)], milestones=[1])
    with pytest.raises(ValueError, match="factor"):
        optim.lr_scheduler.LinearLR(opt, start_factor=0.0)

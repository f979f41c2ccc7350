"""Optimizers and lr schedulers against torch.optim, step by step (skipped when torch is absent)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim

torch = pytest.importorskip("torch")


def _run(ours_cls, theirs_cls, kwargs, steps=6, seed=0):
    """Both optimizers on the same float64 parameters and gradient sequence; the parameters after each step."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 2), (4,), ()]
    init = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(steps)]
    ours = [tp.tensor(a) for a in init]
    theirs = [torch.tensor(a, requires_grad=True) for a in init]
    opt_a, opt_b = ours_cls(ours, **kwargs), theirs_cls(theirs, **kwargs)
    for step, gs in enumerate(grads):
        opt_a.step([tp.tensor(g) for g in gs])
        for p, g in zip(theirs, gs):
            p.grad = torch.tensor(g)
        opt_b.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12,
                                       err_msg=f"{ours_cls.__name__}({kwargs}) step {step}")


@pytest.mark.parametrize("kwargs", [
    {}, {"lr": 0.05, "alpha": 0.9}, {"lr": 0.01, "weight_decay": 0.1}, {"momentum": 0.9},
    {"centered": True}, {"centered": True, "momentum": 0.5, "weight_decay": 0.01}, {"maximize": True, "eps": 1e-3},
])
def test_rmsprop(kwargs):
    _run(optim.RMSprop, torch.optim.RMSprop, kwargs)


@pytest.mark.parametrize("kwargs", [
    {}, {"lr": 0.1, "lr_decay": 0.05}, {"weight_decay": 0.2}, {"initial_accumulator_value": 0.5},
    {"eps": 1e-3, "maximize": True},
])
def test_adagrad(kwargs):
    _run(optim.Adagrad, torch.optim.Adagrad, kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.01, "weight_decay": 0.1}, {"amsgrad": True, "betas": (0.8, 0.9)},
                                    {"maximize": True}])
def test_adamw(kwargs):
    _run(optim.AdamW, torch.optim.AdamW, kwargs)


def test_defaults_match_torch():
    import inspect

    for name in ("RMSprop", "Adagrad", "AdamW", "Adam", "SGD"):
        ours = inspect.signature(getattr(optim, name)).parameters
        theirs = inspect.signature(getattr(torch.optim, name)).parameters
        for p, spec in ours.items():
            if p in theirs and p != "params":
                assert spec.default == theirs[p].default, (name, p)
    for name in ("RMSprop", "Adagrad"):
        assert list(inspect.signature(getattr(optim, name)).parameters) == \
            list(inspect.signature(getattr(torch.optim, name)).parameters), name


def _groups():
    return [{"params": [tp.zeros(1)], "lr": 0.1}, {"params": [tp.zeros(1)], "lr": 0.02}]


def _torch_groups():
    return [{"params": [torch.zeros(1, requires_grad=True)], "lr": 0.1},
            {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.02}]


SCHEDULES = [
    ("StepLR", dict(step_size=3, gamma=0.5), "SGD", {}),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3), "SGD", {}),
    ("ExponentialLR", dict(gamma=0.9), "SGD", {}),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.001), "SGD", {}),
    ("CosineAnnealingLR", dict(T_max=3), "SGD", {}),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e + 0.01 * e), "SGD", {}),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], total_steps=20), "SGD", {"momentum": 0.9}),
    ("OneCycleLR", dict(max_lr=0.3, epochs=4, steps_per_epoch=5, anneal_strategy="linear", three_phase=True,
                        pct_start=0.25), "Adam", {}),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=20, cycle_momentum=False, div_factor=5.0), "SGD", {}),
]


@pytest.mark.parametrize("name, kwargs, opt_name, opt_kwargs", SCHEDULES,
                         ids=[f"{s[0]}-{i}" for i, s in enumerate(SCHEDULES)])
def test_scheduler_sequences_match_torch(name, kwargs, opt_name, opt_kwargs):
    opt_a = getattr(optim, opt_name)(_groups(), **opt_kwargs)
    opt_b = getattr(torch.optim, opt_name)(_torch_groups(), **opt_kwargs)
    a = getattr(optim.lr_scheduler, name)(opt_a, **kwargs)
    b = getattr(torch.optim.lr_scheduler, name)(opt_b, **kwargs)
    for epoch in range(19):
        np.testing.assert_allclose(a.get_last_lr(), b.get_last_lr(), rtol=1e-13, err_msg=f"epoch {epoch}")
        for ga, gb in zip(opt_a.param_groups, opt_b.param_groups):
            assert ga["lr"] == pytest.approx(gb["lr"], rel=1e-13)
            for k in ("momentum", "betas"):
                if k in gb:
                    assert np.allclose(ga[k], gb[k], rtol=1e-13), (epoch, k)
        opt_b.step()
        a.step()
        b.step()


def test_scheduler_state_dict_resumes_the_sequence():
    opt = optim.SGD(_groups())
    s = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7)
    for _ in range(3):
        s.step()
    state = s.state_dict()
    assert "optimizer" not in state
    opt2 = optim.SGD(_groups())
    opt2.load_state_dict(opt.state_dict())
    s2 = optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=7)
    s2.load_state_dict(state)
    for ga, gb in zip(opt.param_groups, opt2.param_groups):
        gb["lr"] = ga["lr"]
    for _ in range(4):
        s.step()
        s2.step()
        assert s.get_last_lr() == s2.get_last_lr()


@pytest.mark.parametrize("mode, threshold_mode, cooldown", [("min", "rel", 0), ("max", "abs", 2), ("min", "abs", 1)])
def test_reduce_on_plateau_matches_torch(mode, threshold_mode, cooldown):
    metrics = [5.0, 4.0, 4.0, 4.1, 3.99995, 4.0, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0]
    if mode == "max":
        metrics = [-m for m in metrics]
    opt_a, opt_b = optim.SGD(_groups()), torch.optim.SGD(_torch_groups())
    kw = dict(mode=mode, factor=0.5, patience=1, threshold=1e-3, threshold_mode=threshold_mode, cooldown=cooldown,
              min_lr=[0.0, 0.01])
    a = optim.lr_scheduler.ReduceLROnPlateau(opt_a, **kw)
    b = torch.optim.lr_scheduler.ReduceLROnPlateau(opt_b, **kw)
    for m in metrics:
        a.step(tp.tensor(m))
        b.step(m)
        assert a.get_last_lr() == pytest.approx(b.get_last_lr(), rel=1e-15)
    assert a.num_bad_epochs == b.num_bad_epochs and a.best == b.best


def test_invalid_arguments_are_errors():
    p = [tp.zeros(1)]
    with pytest.raises(ValueError, match="Invalid alpha"):
        optim.RMSprop(p, alpha=-1)
    with pytest.raises(ValueError, match="Invalid lr_decay"):
        optim.Adagrad(p, lr_decay=-1)
    opt = optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="total_steps OR"):
        optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="momentum or beta1"):
        optim.lr_scheduler.OneCycleLR(optim.Adagrad(p), max_lr=1.0, total_steps=3)
    s = optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    s.step()
    s.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        s.step()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(KeyError, match="initial_lr"):
        optim.lr_scheduler.StepLR(optim.SGD([tp.zeros(1)]), step_size=1, last_epoch=3)


@pytest.mark.parametrize("make", [
    lambda o: optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="linear"),
    lambda o: optim.lr_scheduler.MultiStepLR(o, milestones=[2, 2, 4]),
    lambda o: optim.lr_scheduler.ReduceLROnPlateau(o),
    lambda o: optim.lr_scheduler.LambdaLR(o, lambda e: 0.5 ** e),
])
def test_scheduler_state_dicts_are_plain_data_that_tp_save_round_trips(make):
    import io

    opt = optim.SGD([tp.zeros(1)], lr=0.1, momentum=0.9)
    s = make(opt)
    for _ in range(3):
        s.step(1.0) if isinstance(s, optim.lr_scheduler.ReduceLROnPlateau) else s.step()
    buf = io.BytesIO()
    tp.save(s.state_dict(), buf)
    buf.seek(0)
    restored = make(optim.SGD([tp.zeros(1)], lr=0.1, momentum=0.9))
    restored.load_state_dict(tp.load(buf))
    assert restored.last_epoch == s.last_epoch and restored.get_last_lr() == s.get_last_lr()

"""The multi-tensor Adam step (`optim._fused`): the same numbers as the per-tensor rule, in place,
one compile per configuration whatever the learning rate does."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim
from tensorplay.optim import _fused


def _params(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in [(5, 3), (3,), (), (0, 2)]]


def _grads(step, dtype=np.float32):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s).astype(dtype) for s in [(5, 3), (3,), (), (0, 2)]]


@pytest.mark.parametrize("cls, kwargs", [
    (optim.Adam, {}), (optim.Adam, {"lr": 0.05, "weight_decay": 0.1}), (optim.Adam, {"amsgrad": True}),
    (optim.Adam, {"maximize": True, "betas": (0.8, 0.95), "eps": 1e-4}), (optim.AdamW, {}),
    (optim.AdamW, {"amsgrad": True, "weight_decay": 0.3}),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_numbers_as_the_per_tensor_rule(cls, kwargs, dtype):
    fused = [tp.tensor(a) for a in _params(dtype=dtype)]
    single = [tp.tensor(a) for a in _params(dtype=dtype)]
    ids = [id(p) for p in fused]
    opt_f, opt_s = cls(fused, **kwargs), cls(single, foreach=False, **kwargs)
    for step in range(4):
        gs = _grads(step, dtype)
        opt_f.step([tp.tensor(g) for g in gs])
        opt_s.step([tp.tensor(g) for g in gs])
        for a, b in zip(fused, single):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-6 if dtype == np.float32 else 1e-13, atol=0)
    assert [id(p) for p in fused] == ids  # updated in place
    for a, b in zip(fused, single):
        for key in opt_s.state[b]:
            got, want = opt_f.state[a][key], opt_s.state[b][key]
            np.testing.assert_allclose(np.asarray(got.numpy() if hasattr(got, "numpy") else got),
                                       np.asarray(want.numpy() if hasattr(want, "numpy") else want), rtol=2e-6)


def test_a_changing_learning_rate_does_not_recompile():
    params = [tp.tensor(a) for a in _params()]
    opt = optim.Adam(params, lr=0.1)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step([tp.tensor(g) for g in _grads(0)])
    traces = _fused._adam_compiled.trace_count
    for step in range(1, 5):
        sched.step()
        opt.step([tp.tensor(g) for g in _grads(step)])
    assert _fused._adam_compiled.trace_count == traces


def test_cycled_momentum_does_not_recompile():
    params = [tp.tensor(a) for a in _params()]
    opt = optim.Adam(params, lr=0.01)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)  # cycles lr and beta1
    opt.step([tp.tensor(g) for g in _grads(0)])
    sched.step()
    traces = _fused._adam_compiled.trace_count
    betas = set()
    for step in range(1, 6):
        opt.step([tp.tensor(g) for g in _grads(step)])
        betas.add(opt.param_groups[0]["betas"][0])
        sched.step()
    assert len(betas) > 1 and _fused._adam_compiled.trace_count == traces


def test_parameters_without_a_gradient_are_left_alone():
    params = [tp.tensor(a) for a in _params()]
    before = [p.numpy().copy() for p in params]
    opt = optim.Adam(params, lr=0.1)
    gs = [tp.tensor(g) for g in _grads(0)]
    opt.step([gs[0], None, gs[2], None])
    np.testing.assert_array_equal(params[1].numpy(), before[1])
    assert params[1] not in opt.state or not opt.state[params[1]]
    assert not np.array_equal(params[0].numpy(), before[0])


def test_the_write_is_an_in_place_write_for_autograd():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    opt = optim.Adam([w], lr=0.1)
    opt.step([tp.tensor([1.0, 1.0])])
    with pytest.raises(RuntimeError, match="inplace|in-place|modified"):
        loss.backward()


def test_views_of_a_parameter_see_the_step():
    base = tp.tensor(np.arange(6, dtype=np.float32))
    view = base[2:5]
    opt = optim.Adam([view], lr=0.5)
    opt.step([tp.tensor([1.0, 1.0, 1.0])])
    np.testing.assert_allclose(base.numpy()[2:5], np.arange(2, 5) - 0.5, rtol=1e-6)
    np.testing.assert_array_equal(base.numpy()[[0, 1, 5]], [0, 1, 5])


@pytest.mark.parametrize("foreach", [None, False])
def test_traced_parameters_take_the_per_tensor_path(foreach):
    calls = []

    @tp.compile
    def train_step(w, g):
        opt = optim.Adam([w], lr=0.1, foreach=foreach)
        calls.append(_fused.fusable([w], [g]))
        opt.step([g])
        return w * 1

    w = tp.tensor([1.0, 2.0])
    out = train_step(w, tp.tensor([0.5, -0.5]))
    assert calls == [False]
    np.testing.assert_allclose(out.numpy(), [0.9, 2.1], rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), [0.9, 2.1], rtol=1e-6)  # the compiled step wrote w back


def test_contradicting_options_are_an_error():
    with pytest.raises(ValueError, match="fused=True and foreach=False"):
        optim.Adam([tp.zeros(2)], foreach=False, fused=True)

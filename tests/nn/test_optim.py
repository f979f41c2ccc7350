"""optim: SGD/Adam/AdamW against numpy references; dict, sequence and .grad gradients; functional forms."""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay import optim
from tensorplay.optim import functional as optf


def sgd_ref(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    buf = None
    for g in grads:
        d = g + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


def adam_ref(p, grads, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vhat = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(vhat) + eps)
    return p


P0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.3]])
GRADS = [np.random.default_rng(i).standard_normal((2, 3)) for i in range(4)]


@pytest.mark.parametrize("kw", [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
                                dict(momentum=0.5, dampening=0.3, weight_decay=0.1)])
def test_sgd_matches_reference(kw):
    p = tp.tensor(P0)
    opt = optim.SGD([p], lr=0.1, **kw)
    for g in GRADS:
        opt.step([tp.tensor(g)])
    np.testing.assert_allclose(p.numpy(), sgd_ref(P0, GRADS, 0.1, **kw), rtol=1e-12)
    params, state = {"p": tp.tensor(P0)}, None
    for g in GRADS:
        params, state = optf.sgd(params, {"p": tp.tensor(g)}, state, lr=0.1, **kw)
    np.testing.assert_allclose(params["p"].numpy(), sgd_ref(P0, GRADS, 0.1, **kw), rtol=1e-12)


@pytest.mark.parametrize("cls,kw,ref_kw", [
    (optim.Adam, dict(), dict()),
    (optim.Adam, dict(betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True), dict(b1=0.8, b2=0.99, weight_decay=0.1,
                                                                                amsgrad=True)),
    (optim.AdamW, dict(weight_decay=0.1), dict(weight_decay=0.1, decoupled=True)),
])
def test_adam_matches_reference(cls, kw, ref_kw):
    p = tp.tensor(P0)
    opt = cls({"p": p}, lr=0.05, **kw)
    for g in GRADS:
        opt.step({"p": tp.tensor(g)})
    ref = adam_ref(P0, GRADS, 0.05, **ref_kw)
    np.testing.assert_allclose(p.numpy(), ref, rtol=1e-10)
    fn = optf.adamw if cls is optim.AdamW else optf.adam
    params, state = {"p": tp.tensor(P0)}, None
    for g in GRADS:
        params, state = fn(params, {"p": tp.tensor(g)}, state, lr=0.05, **kw)
    np.testing.assert_allclose(params["p"].numpy(), ref, rtol=1e-6)
    assert int(state["step"]) == len(GRADS)


def test_step_gradient_sources():
    model = nn.Linear(2, 1).double()
    w0, b0 = model.weight.numpy().copy(), model.bias.numpy().copy()
    opt = optim.SGD(model.named_parameters(), lr=1.0)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    opt.step({"weight": tp.ones(1, 2, dtype=tp.float64)})          # bias has no gradient: unchanged
    np.testing.assert_allclose(model.weight.numpy(), w0 - 1)
    np.testing.assert_allclose(model.bias.numpy(), b0)
    with pytest.raises(KeyError, match="no parameter named"):
        opt.step({"nope": tp.ones(1)})
    with pytest.raises(ValueError, match="shape"):
        opt.step({"bias": tp.ones(3, dtype=tp.float64)})
    model.bias.grad = tp.ones(1, dtype=tp.float64)
    opt.step()
    np.testing.assert_allclose(model.bias.numpy(), b0 - 1)
    opt.zero_grad()
    assert model.bias.grad is None
    plain = optim.SGD(model.parameters(), lr=1.0)
    with pytest.raises(ValueError, match="named parameters"):
        plain.step({"bias": tp.ones(1)})
    plain.step([None, tp.ones(1, dtype=tp.float64)])
    np.testing.assert_allclose(model.bias.numpy(), b0 - 2)
    with pytest.raises(ValueError, match="2 parameters"):
        plain.step([tp.ones(1)])


def test_param_groups_and_state_dict():
    a, b = tp.zeros(2), tp.zeros(3)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1, momentum=0.9)
    opt.step([tp.ones(2), tp.ones(3)])
    np.testing.assert_allclose(a.numpy(), -0.1 * np.ones(2), rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), -1.0 * np.ones(3), rtol=1e-6)
    sd = opt.state_dict()
    assert sd["param_groups"][1]["lr"] == 1.0 and sd["param_groups"][1]["params"] == [1]
    a2, b2 = tp.zeros(2), tp.zeros(3)
    opt2 = optim.SGD([{"params": [a2]}, {"params": [b2], "lr": 0.5}], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 1.0
    np.testing.assert_allclose(opt2.state[b2]["momentum_buffer"].numpy(), np.ones(3))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="learning rate"):
        optim.Adam([a], lr=-1)
    assert "Parameter Group 0" in repr(opt)


def test_functional_leaves_inputs_untouched_and_skips_missing():
    params = {"a": tp.ones(2), "b": tp.ones(2)}
    new, state = optf.sgd(params, {"a": tp.ones(2)}, None, lr=0.5, momentum=0.9)
    assert params["a"].tolist() == [1.0, 1.0]
    assert new["a"].tolist() == [0.5, 0.5] and new["b"] is params["b"]
    assert state["momentum_buffer"]["b"] is None
    new2, state2 = optf.sgd(new, {"a": tp.ones(2)}, state, lr=0.5, momentum=0.9)
    np.testing.assert_allclose(new2["a"].numpy(), [0.5 - 0.5 * 1.9] * 2, rtol=1e-6)
    with pytest.raises(KeyError):
        optf.adam(params, {"c": tp.ones(2)})

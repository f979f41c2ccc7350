"""Autograd against PyTorch (skipped when torch is not installed)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay import optim

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def _both(arr):
    return tp.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)


def test_mlp_gradients_match_torch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    (w, tw), (b, tb) = _both(rng.normal(size=(3, 5)).astype(np.float32)), _both(np.zeros(5, np.float32))
    (v, tv) = _both(rng.normal(size=(5,)).astype(np.float32))
    (tp.sigmoid(tp.tensor(x) @ w + b) @ v).logsumexp(0).backward()
    (torch.sigmoid(torch.tensor(x) @ tw + tb) @ tv).logsumexp(0).backward()
    for ours, theirs in ((w, tw), (b, tb), (v, tv)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gradient_penalty_matches_torch():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4,)).astype(np.float32)
    (x, tx), (w, tw) = _both(a), _both(rng.normal(size=(4,)).astype(np.float32))
    for lib, xx, ww in ((tp, x, w), (torch, tx, tw)):
        out = lib.tanh(xx * ww).sum()
        (g,) = (tp if lib is tp else torch).autograd.grad(out, xx, create_graph=True)
        ((g ** 2).sum() + out).backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05))])
def test_optimizers_step_from_grad_like_torch(name, kwargs):
    rng = np.random.default_rng(2)
    w0 = rng.normal(size=(3, 2)).astype(np.float32)
    xs = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(5)]
    p, tpar = nn.Parameter(tp.tensor(w0.copy())), torch.nn.Parameter(torch.tensor(w0.copy()))
    opt, topt = getattr(optim, name)([p], **kwargs), getattr(torch.optim, name)([tpar], **kwargs)
    for x in xs:
        opt.zero_grad()
        topt.zero_grad()
        ((tp.tensor(x) @ p) ** 2).mean().backward()
        ((torch.tensor(x) @ tpar) ** 2).mean().backward()
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tpar.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_train_backward_example_reaches_torchs_loss():
    spec = importlib.util.spec_from_file_location("train_backward", ROOT / "examples" / "train_backward.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    ours = ex.train(steps=30)
    x, y = ex.data()
    model = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    model.load_state_dict({k: torch.tensor(v) for k, v in ex.initial_weights().items()})
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    theirs = []
    for _ in range(30):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4)


def test_views_inplace_and_retain_grad_match_torch():
    rng = np.random.default_rng(3)
    (x, tx), (v, tv) = _both(rng.normal(size=(4, 3))), _both(rng.normal(size=(2, 3)))
    results = []
    for lib, xx, vv in ((tp, x, v), (torch, tx, tv)):
        y = xx.exp() * 2
        y.retain_grad()
        z = y * 1.0
        z[1:3] = vv.sin()
        z[:, 0].mul_(xx[:, 1])
        z.t().add_(1.0)
        (z ** 2).sum().backward()
        results.append((z.detach().numpy(), y.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-10)

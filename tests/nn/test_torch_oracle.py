"""tensorplay.nn against PyTorch with copied weights (skipped when torch is not installed)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorplay as tp  # noqa: E402
import tensorplay.nn as nn  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402
from tensorplay import optim  # noqa: E402

from torch_oracle_util import check, copy_from_torch, torch_float64  # noqa: E402,F401  (autouse fixture)

RNG = np.random.default_rng(0)


def both(shape, integer=None):
    arr = RNG.integers(0, integer, shape) if integer else RNG.standard_normal(shape)
    return tp.tensor(arr), torch.tensor(arr)


@pytest.mark.parametrize("make", [
    lambda m: m.Linear(5, 3),
    lambda m: m.Linear(5, 3, bias=False),
    lambda m: m.Conv2d(4, 6, 3),
    lambda m: m.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
    lambda m: m.Conv2d(4, 4, 3, padding="same", groups=4, bias=False),
    lambda m: m.Conv1d(4, 2, 5, stride=2, padding=2),
    lambda m: m.LayerNorm((3, 5)),
    lambda m: m.GELU(),
    lambda m: m.GELU(approximate="tanh"),
    lambda m: m.Softmax(dim=1),
    lambda m: m.LogSoftmax(dim=-1),
    lambda m: m.MaxPool2d(3, stride=2, padding=1),
    lambda m: m.AvgPool2d(2, padding=1, count_include_pad=False),
    lambda m: m.AvgPool2d((3, 2), stride=1),
    lambda m: m.Flatten(),
    lambda m: m.ELU(),
    lambda m: m.Softplus(beta=2.0),
])
def test_forward_matches_torch(make):
    tm = make(torch.nn)
    m = copy_from_torch(make(nn).double(), tm)
    assert repr(m) == repr(tm)
    shape = {"Linear": (7, 5), "Conv1d": (2, 4, 9), "LayerNorm": (2, 3, 5)}.get(type(tm).__name__, (2, 4, 6, 7))
    x, tx = both(shape)
    check(m(x), tm(tx))


def test_model_structure_matches_torch():
    def build(m):
        net = m.Sequential(m.Conv2d(1, 3, 3), m.BatchNorm2d(3), m.ReLU(), m.Flatten(), m.Linear(3 * 4 * 4, 5))
        net.add_module("extra", m.ModuleDict({"a": m.LayerNorm(5), "b": m.ModuleList([m.Linear(5, 5)] * 2)}))
        return net

    tnet, net = build(torch.nn), build(nn)
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in tnet.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in net.named_buffers()] == [n for n, _ in tnet.named_buffers()]
    assert [n for n, _ in net.named_modules()] == [n for n, _ in tnet.named_modules()]
    assert list(net.state_dict()) == list(tnet.state_dict())
    assert repr(net) == repr(tnet)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("dims", [(6, 3), (4, 3, 5), (3, 3, 4, 2)])
def test_batchnorm_matches_torch(momentum, dims):
    cls = "BatchNorm2d" if len(dims) == 4 else "BatchNorm1d"
    tm = getattr(torch.nn, cls)(3, momentum=momentum)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(RNG.standard_normal(3)))
        tm.bias.copy_(torch.tensor(RNG.standard_normal(3)))
    m = copy_from_torch(getattr(nn, cls)(3, momentum=momentum).double(), tm)
    for _ in range(3):
        x, tx = both(dims)
        check(m(x), tm(tx))
    for name in ("running_mean", "running_var"):
        check(getattr(m, name), getattr(tm, name))
    assert int(m.num_batches_tracked) == int(tm.num_batches_tracked)
    m.eval(), tm.eval()
    x, tx = both(dims)
    check(m(x), tm(tx))


def test_embedding_matches_torch():
    tm = torch.nn.Embedding(7, 3, padding_idx=1)
    m = copy_from_torch(nn.Embedding(7, 3, padding_idx=1).double(), tm)
    idx, tidx = both((4, 5), integer=7)
    check(m(idx), tm(tidx))
    assert repr(m) == repr(tm)


@pytest.mark.parametrize("kw", [dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2),
                                dict(label_smoothing=0.3), dict(weight=True, ignore_index=0, label_smoothing=0.1),
                                dict(weight=True, reduction="none", label_smoothing=0.2)])
def test_cross_entropy_matches_torch(kw):
    kw = dict(kw)
    w = RNG.uniform(0.5, 2.0, 4)
    tkw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"], tkw["weight"] = tp.tensor(w), torch.tensor(w)
    for shape, tshape in [((6, 4), (6,)), ((2, 4, 3, 2), (2, 3, 2))]:
        x, tx = both(shape)
        y, ty = both(tshape, integer=4)
        check(nn.CrossEntropyLoss(**kw)(x, y), torch.nn.CrossEntropyLoss(**tkw)(tx, ty))
        check(F.nll_loss(F.log_softmax(x, 1), y, kw.get("weight"), ignore_index=kw.get("ignore_index", -100)),
              torch.nn.functional.nll_loss(torch.log_softmax(tx, 1), ty, tkw.get("weight"),
                                           ignore_index=tkw.get("ignore_index", -100)))
    # probability targets
    p = RNG.dirichlet(np.ones(4), 6)
    x, tx = both((6, 4))
    smooth = kw.get("label_smoothing", 0.0)
    check(F.cross_entropy(x, tp.tensor(p), kw.get("weight"), label_smoothing=smooth),
          torch.nn.functional.cross_entropy(tx, torch.tensor(p), tkw.get("weight"), label_smoothing=smooth))
    # unbatched
    v, tv = both((4,))
    check(F.cross_entropy(v, tp.tensor(3), label_smoothing=smooth),
          torch.nn.functional.cross_entropy(tv, torch.tensor(3), label_smoothing=smooth))


def test_other_losses_match_torch():
    a, ta = both((5, 3))
    b, tb = both((5, 3))
    for name in ("MSELoss", "L1Loss"):
        for red in ("mean", "sum", "none"):
            check(getattr(nn, name)(reduction=red)(a, b), getattr(torch.nn, name)(reduction=red)(ta, tb))
    t = RNG.uniform(0, 1, (5, 3))
    check(nn.BCEWithLogitsLoss()(a, tp.tensor(t)), torch.nn.BCEWithLogitsLoss()(ta, torch.tensor(t)))
    check(nn.BCELoss()(tp.sigmoid(a), tp.tensor(t)), torch.nn.BCELoss()(torch.sigmoid(ta), torch.tensor(t)))


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)), ("SGD", dict(lr=0.1, momentum=0.8, dampening=0.2)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
])
def test_optimizers_match_torch(name, kw):
    p0 = RNG.standard_normal((3, 4))
    tparam = torch.nn.Parameter(torch.tensor(p0))
    topt = getattr(torch.optim, name)([tparam], **kw)
    param = tp.tensor(p0)
    opt = getattr(optim, name)([param], **kw)
    for step in range(5):
        g = RNG.standard_normal((3, 4))
        tparam.grad = torch.tensor(g)
        topt.step()
        opt.step([tp.tensor(g)])
    check(param, tparam, 1e-10)


def test_default_init_bounds_match_torch_formulae():
    torch.manual_seed(0)
    for make in (lambda m: m.Linear(13, 7), lambda m: m.Conv2d(6, 3, (3, 2), groups=3)):
        tm, m = make(torch.nn), make(nn)
        for name, tparam in tm.named_parameters():
            param = m.get_parameter(name)
            assert tuple(param.shape) == tuple(tparam.shape)
            fan_in = torch.nn.init._calculate_fan_in_and_fan_out(tm.weight)[0]
            assert nn.init._calculate_fan_in_and_fan_out(m.weight)[0] == fan_in
            assert np.abs(param.numpy()).max() <= 1 / np.sqrt(fan_in) + 1e-7
    for nl, arg in [("relu", None), ("leaky_relu", 0.2), ("tanh", None), ("selu", None), ("conv2d", None)]:
        assert nn.init.calculate_gain(nl, arg) == pytest.approx(torch.nn.init.calculate_gain(nl, arg))


# --- gradients against torch autograd (needs tensorplay.func.grad) ----------------------------------------
def test_gradients_match_torch_autograd():
    from tensorplay.func import functional_call, grad

    def build(m):
        return m.Sequential(m.Conv2d(2, 3, 3, stride=2, padding=1), m.BatchNorm2d(3), m.GELU(), m.MaxPool2d(2),
                            m.Flatten(), m.Linear(3 * 2 * 2, 8), m.LayerNorm(8), m.Tanh(), m.Linear(8, 4))

    tnet = build(torch.nn)
    net = copy_from_torch(build(nn).double(), tnet)
    x, tx = both((5, 2, 8, 8))
    y, ty = both((5,), integer=4)
    torch.nn.functional.cross_entropy(tnet(tx), ty, label_smoothing=0.1).backward()
    params = {k: v.detach() for k, v in net.named_parameters()}
    g = grad(lambda p: F.cross_entropy(functional_call(net, p, (x,)), y, label_smoothing=0.1))(params)
    for name, tparam in tnet.named_parameters():
        np.testing.assert_allclose(g[name].numpy(), tparam.grad.numpy(), rtol=1e-7, atol=1e-10, err_msg=name)
    # the batch-norm running statistics were updated once, as in torch
    check(net[1].running_mean, tnet[1].running_mean)
    check(net[1].running_var, tnet[1].running_var)

"""Module API: registration, traversal order, state dicts, modes, containers, printing."""
import copy
import pickle

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay.nn import Parameter


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("scale", tp.ones(4))
        self.register_buffer("cache", tp.zeros(4), persistent=False)
        self.gain = Parameter(tp.ones(()))

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale * self.gain


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.head(self.act(self.block(x)))


# --- Parameter ---------------------------------------------------------------------------------
def test_parameter_shares_storage_and_is_a_tensor():
    t = tp.zeros(3)
    p = Parameter(t)
    assert isinstance(p, tp.Tensor) and p.requires_grad
    with tp.no_grad():  # a leaf that requires grad is written in place under no_grad, as in torch
        p.add_(1.0)
    assert t.tolist() == [1.0, 1.0, 1.0]
    out = p * 2 + tp.sin(p)
    assert type(out) is tp.Tensor
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert Parameter(t, requires_grad=False).requires_grad is False


def test_parameter_deepcopy_and_pickle():
    p = Parameter(tp.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, Parameter) and q.tolist() == [1.0, 2.0]
    with tp.no_grad():
        q.add_(1)
    assert p.tolist() == [1.0, 2.0]
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, Parameter) and r.tolist() == [1.0, 2.0]


# --- registration ------------------------------------------------------------------------------
def test_registration_by_assignment():
    m = Block()
    assert list(m._parameters) == ["gain"]
    assert list(m._buffers) == ["scale", "cache"]
    assert list(m._modules) == ["fc", "bn"]
    assert m.fc.weight is m.get_parameter("fc.weight")
    assert m.get_buffer("bn.running_mean") is m.bn.running_mean
    assert m.get_submodule("bn") is m.bn
    m.other = 3
    assert m.other == 3 and "other" not in m._parameters


def test_assignment_errors_and_reassignment():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign"):
        m.weight = tp.zeros(2, 2)
    m.weight = None
    assert m.weight is None and "weight" in m._parameters
    m.weight = Parameter(tp.zeros(2, 2))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("weight", tp.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError):
        m.register_buffer("buf", 3)
    with pytest.raises(TypeError):
        m.register_parameter("p", tp.zeros(1))
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(TypeError, match="child module"):
        setattr(seq, "0", 3)


def test_module_attribute_moves_between_kinds():
    m = nn.Module()
    m.register_buffer("x", tp.zeros(1))
    m.x = tp.ones(1)                  # still a buffer
    assert m._buffers["x"].tolist() == [1.0]
    m.x = Parameter(tp.ones(1))       # becomes a parameter
    assert "x" in m._parameters and "x" not in m._buffers
    del m.x
    assert not hasattr(m, "x")


def test_init_not_called():
    class Bad(nn.Module):
        def __init__(self):
            self.w = Parameter(tp.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


# --- traversal -------------------------------------------------------------------------------------
def test_named_orderings_match_pytorch():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "block.gain", "block.fc.weight", "block.fc.bias", "block.bn.weight", "block.bn.bias", "head.weight",
        "head.bias"]
    assert [n for n, _ in net.named_buffers()] == [
        "block.scale", "block.cache", "block.bn.running_mean", "block.bn.running_var",
        "block.bn.num_batches_tracked"]
    assert [n for n, _ in net.named_modules()] == ["", "block", "block.fc", "block.bn", "head", "act"]
    assert [n for n, _ in net.named_children()] == ["block", "head", "act"]
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.block.gain"
    assert [n for n, _ in net.named_parameters(recurse=False)] == []
    assert [n for n, _ in net.block.named_parameters(recurse=False)] == ["gain"]
    assert len(list(net.parameters())) == 7 and len(list(net.buffers())) == 5
    assert len(list(net.children())) == 3 and len(list(net.modules())) == 6
    assert list(net.state_dict()) == [
        "block.gain", "block.scale", "block.fc.weight", "block.fc.bias", "block.bn.weight", "block.bn.bias",
        "block.bn.running_mean", "block.bn.running_var", "block.bn.num_batches_tracked", "head.weight",
        "head.bias"]


def test_shared_modules_and_parameters_remove_duplicate():
    shared = nn.Linear(2, 2)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in net.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in net.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == [
        "0.weight", "0.bias", "2.weight", "2.bias"]
    tied = nn.Module()
    tied.a = nn.Linear(2, 2)
    tied.b = nn.Linear(2, 2)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert list(tied.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


# --- state dict ------------------------------------------------------------------------------------
def test_state_dict_round_trip():
    tp.manual_seed(0)
    a, b = Net(), Net()
    a.block.bn(tp.randn(8, 4))  # move running stats
    sd = a.state_dict()
    assert "block.cache" not in sd
    assert type(sd["head.weight"]) is tp.Tensor
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (na, ta), (nb, tb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb
        np.testing.assert_array_equal(ta.numpy(), tb.numpy())
    assert b.head.weight is dict(b.named_parameters())["head.weight"]  # copied in place
    x = tp.randn(5, 3)
    a.eval(), b.eval()
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())


def test_state_dict_shares_storage():
    m = nn.Linear(2, 2)
    m.state_dict()["bias"].zero_()
    assert m.bias.tolist() == [0.0, 0.0]
    assert m.state_dict(keep_vars=True)["bias"] is m.bias


def test_load_state_dict_strict_errors():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    bad = dict(sd)
    del bad["bias"]
    bad["extra"] = tp.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias".*\n.*Unexpected key\\(s\\) '
                                           'in state_dict: "extra"'):
        m.load_state_dict(bad)
    res = m.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        m.load_state_dict({"weight": tp.zeros(3, 2), "bias": tp.zeros(2)})
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict({"weight": tp.zeros(3, 2), "bias": tp.zeros(2)}, strict=False)


def test_load_state_dict_assign():
    m = nn.Linear(2, 2)
    w = tp.ones(2, 2)
    m.load_state_dict({"weight": w, "bias": tp.zeros(2)}, assign=True)
    assert isinstance(m.weight, Parameter) and m.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]


# --- modes, apply, conversion -----------------------------------------------------------------------
def test_train_eval_apply():
    net = Net()
    assert net.training and net.block.bn.training
    assert net.eval() is net
    assert not net.training and not net.block.bn.training and not net.block.fc.training
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError):
        net.train("yes")
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "BatchNorm1d", "Block", "Linear", "ReLU", "Net"]


def test_to_double_keeps_parameter_objects():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    w = m[0].weight
    m.double()
    assert m[0].weight is w and w.dtype == tp.float64
    assert m[1].running_mean.dtype == tp.float64
    assert m[1].num_batches_tracked.dtype == tp.int64
    assert m(tp.randn(4, 2, dtype=tp.float64)).dtype == tp.float64


def test_deepcopy_module():
    m = Net()
    c = copy.deepcopy(m)
    for (n1, p1), (n2, p2) in zip(m.named_parameters(), c.named_parameters()):
        assert n1 == n2 and p1 is not p2 and isinstance(p2, Parameter)
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    with tp.no_grad():
        c.head.bias.add_(1)
    assert not np.allclose(c.head.bias.numpy(), m.head.bias.numpy())


def test_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre"))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 0)
    out = m(tp.ones(1, 2))
    assert calls == ["pre"] and out.tolist() == [[0.0, 0.0]]
    h1.remove(), h2.remove()
    assert m(tp.ones(1, 2)).tolist() != [[0.0, 0.0]]


def test_forward_missing():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


# --- printing ----------------------------------------------------------------------------------------
def test_repr_like_torch():
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.GELU(approximate="tanh"),
                        nn.Flatten(), nn.Dropout(0.25), nn.Linear(16, 2), nn.Softmax(dim=1))
    assert repr(net) == """Sequential(
  (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
  (1): BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
  (2): GELU(approximate='tanh')
  (3): Flatten(start_dim=1, end_dim=-1)
  (4): Dropout(p=0.25, inplace=False)
  (5): Linear(in_features=16, out_features=2, bias=True)
  (6): Softmax(dim=1)
)"""
    assert repr(Net()) == """Net(
  (block): Block(
    (fc): Linear(in_features=3, out_features=4, bias=True)
    (bn): BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
  )
  (head): Linear(in_features=4, out_features=2, bias=True)
  (act): ReLU()
)"""
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"
    assert repr(nn.LayerNorm((2, 3))) == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.MSELoss()) == "MSELoss()"
    assert repr(nn.Conv1d(2, 4, 3, stride=2, dilation=2, groups=2)) == \
        "Conv1d(2, 4, kernel_size=(3,), stride=(2,), dilation=(2,), groups=2)"


# --- containers --------------------------------------------------------------------------------------
def test_sequential():
    from collections import OrderedDict

    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.Tanh())]))
    assert [n for n, _ in seq.named_children()] == ["fc", "act"]
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Tanh)
    seq2 = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq2) == 3 and [type(m).__name__ for m in seq2] == ["Linear", "ReLU", "Linear"]
    head = seq2[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq2[0]
    seq2.append(nn.Sigmoid())
    assert len(seq2) == 4
    del seq2[1]
    assert [k for k in seq2._modules] == ["0", "1", "2"] and isinstance(seq2[1], nn.Linear)
    seq2[2] = nn.Tanh()
    assert isinstance(seq2[2], nn.Tanh)
    with pytest.raises(IndexError):
        seq2[5]
    x = tp.randn(4, 2)
    np.testing.assert_allclose(seq2(x).numpy(), tp.tanh(seq2[1](seq2[0](x))).numpy(), rtol=1e-6)


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and [n for n, _ in layers.named_parameters()][:2] == ["0.weight", "0.bias"]
    layers.append(nn.ReLU())
    layers.extend([nn.Tanh()])
    layers.insert(0, nn.Sigmoid())
    assert [type(m).__name__ for m in layers] == ["Sigmoid", "Linear", "Linear", "Linear", "ReLU", "Tanh"]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    del layers[0]
    assert type(layers[0]).__name__ == "Linear" and list(layers._modules) == ["0", "1", "2", "3", "4"]
    d = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    d["c"] = nn.Tanh()
    assert list(d) == ["a", "b", "c"] and "b" in d and len(d) == 3
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias"]
    d.pop("a")
    assert list(d.keys()) == ["b", "c"]
    pl = nn.ParameterList([tp.zeros(2), Parameter(tp.ones(1))])
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"] and isinstance(pl[0], Parameter)
    pd = nn.ParameterDict({"w": tp.zeros(2)})
    assert [n for n, _ in pd.named_parameters()] == ["w"]

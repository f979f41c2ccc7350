"""functional_call, stack_module_state and the batch-norm patching utilities (eager behaviour)."""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay.func import (batch_norm_without_running_stats, functional_call, replace_all_batch_norm_modules_,
                             stack_module_state)


def zeros_like_params(model):
    return {k: tp.zeros_like(v) for k, v in model.named_parameters()}


def test_functional_call_substitutes_and_restores():
    model = nn.Linear(3, 2)
    own = dict(model.named_parameters())
    x = tp.randn(4, 3)
    out = functional_call(model, zeros_like_params(model), (x,))
    assert out.tolist() == [[0.0, 0.0]] * 4
    assert dict(model.named_parameters())["weight"] is own["weight"]
    # a non-tuple argument is the single positional argument
    np.testing.assert_array_equal(functional_call(model, {}, x).numpy(), model(x).numpy())
    # partial dicts keep the rest of the module's own state
    out = functional_call(model, {"bias": tp.ones(2)}, (x,))
    np.testing.assert_allclose(out.numpy(), (x @ model.weight.T + 1).numpy(), rtol=1e-6)


def test_functional_call_kwargs_and_sequence_of_dicts():
    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tp.ones(2))
            self.register_buffer("shift", tp.zeros(2))

        def forward(self, x, *, scale=1.0):
            return x * self.w * scale + self.shift

    m = Affine()
    out = functional_call(m, ({"w": tp.full((2,), 2.0)}, {"shift": tp.ones(2)}), (tp.ones(2),), {"scale": 3.0})
    assert out.tolist() == [7.0, 7.0]
    with pytest.raises(ValueError, match="more than one"):
        functional_call(m, ({"w": tp.ones(2)}, {"w": tp.ones(2)}), (tp.ones(2),))
    with pytest.raises(TypeError, match="dict"):
        functional_call(m, 3, (tp.ones(2),))


def test_functional_call_restores_after_exception():
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            raise RuntimeError("boom")

    m = Boom()
    w = m.fc.weight
    with pytest.raises(RuntimeError, match="boom"):
        functional_call(m, {"fc.weight": tp.zeros(2, 2)}, (tp.ones(2),))
    assert m.fc.weight is w and isinstance(m.fc.weight, nn.Parameter)


def test_functional_call_buffers_and_batchnorm_eval():
    bn = nn.BatchNorm1d(2).eval()
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = functional_call(bn, {"running_mean": tp.tensor([1.0, 2.0]), "running_var": tp.tensor([4.0, 4.0])}, x)
    np.testing.assert_allclose(out.numpy(), ((x.numpy() - [1, 2]) / np.sqrt(4 + 1e-5)), rtol=1e-6)
    assert bn.running_mean.tolist() == [0.0, 0.0]


def test_functional_call_strict_and_unknown_names():
    m = nn.Linear(2, 2)
    params = zeros_like_params(m)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        functional_call(m, {**params, "foo": tp.zeros(1)}, (tp.ones(2),), strict=True)
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(m, {"weight": tp.zeros(2, 2)}, (tp.ones(2),), strict=True)
    assert functional_call(m, params, (tp.ones(2),), strict=True).tolist() == [0.0, 0.0]
    # non-strict: an unknown leaf name is set as a temporary attribute and removed afterwards
    functional_call(m, {**params, "foo": tp.zeros(1)}, (tp.ones(2),))
    assert not hasattr(m, "foo")
    with pytest.raises(AttributeError, match="submodule"):
        functional_call(m, {"nope.weight": tp.zeros(1)}, (tp.ones(2),))


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["a.weight"]
    w = tp.eye(2) * 2
    out = functional_call(m, {"a.weight": w}, (tp.ones(2),))
    assert out.tolist() == [4.0, 4.0]                 # both uses replaced
    out = functional_call(m, {"a.weight": w}, (tp.ones(2),), tie_weights=False)  # only the a.weight use
    np.testing.assert_allclose(out.numpy(), m.a.weight.numpy() @ np.full(2, 2.0), rtol=1e-6)
    assert functional_call(m, {"a.weight": w, "b.weight": w}, (tp.ones(2),)).tolist() == [4.0, 4.0]
    with pytest.raises(ValueError, match="tied"):
        functional_call(m, {"a.weight": w, "b.weight": tp.eye(2)}, (tp.ones(2),))


def test_stack_module_state():
    models = [nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert list(params) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert list(buffers) == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    assert params["0.weight"].shape == (3, 4, 3) and buffers["1.num_batches_tracked"].shape == (3,)
    for i, m in enumerate(models):
        np.testing.assert_array_equal(params["0.weight"][i].numpy(), m[0].weight.numpy())
    params["0.weight"].zero_()                      # not aliased
    assert not (models[0][0].weight.numpy() == 0).all()


def test_stack_module_state_errors():
    with pytest.raises(ValueError, match="same class"):
        stack_module_state([nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2))])
    with pytest.raises(ValueError, match="training mode"):
        stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2).eval()])
    with pytest.raises(ValueError, match="shapes"):
        stack_module_state([nn.Linear(2, 2), nn.Linear(2, 3)])
    with pytest.raises(ValueError, match="at least one"):
        stack_module_state([])


def test_replace_all_batch_norm_modules():
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Sequential(nn.Flatten(), nn.BatchNorm1d(2 * 4 * 4)))
    assert replace_all_batch_norm_modules_(net) is net
    for bn in (net[1], net[2][1]):
        assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
        assert not bn.track_running_stats
    assert list(net.named_buffers()) == [] and "1.running_mean" not in net.state_dict()
    x = tp.randn(4, 1, 6, 6)
    y = net(x)
    net.eval()
    np.testing.assert_allclose(net(x).numpy(), y.numpy(), rtol=1e-6)   # batch stats in eval mode too
    lin = nn.Linear(2, 2)
    assert batch_norm_without_running_stats(lin) is lin

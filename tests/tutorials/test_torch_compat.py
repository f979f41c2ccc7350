"""torch's legacy constructors, Variable, and the cuda/accelerator/backends namespaces of a CPU build."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import Variable


@pytest.mark.parametrize("name, dtype", [("FloatTensor", tp.float32), ("DoubleTensor", tp.float64),
                                         ("LongTensor", tp.int64), ("IntTensor", tp.int32),
                                         ("BoolTensor", tp.bool)])
def test_typed_constructors(name, dtype):
    cls = getattr(tp, name)
    t = cls(2, 3)
    assert t.dtype is dtype and tuple(t.shape) == (2, 3)
    d = cls([1, 0, 1])
    assert d.dtype is dtype and d.tolist() == np.array([1, 0, 1]).astype(dtype.np).tolist()
    assert isinstance(d, cls) and not isinstance(tp.zeros(1, dtype=tp.int8 if hasattr(tp, "int8") else
                                                      (tp.float64 if dtype is tp.float32 else tp.float32)), cls)
    assert tuple(cls(0).shape) == (0,)
    with pytest.raises(TypeError, match="dtype"):
        cls([1], dtype=tp.float64)


def test_typed_constructors_agree_with_torch():
    torch = pytest.importorskip("torch")
    for name in ("FloatTensor", "LongTensor", "DoubleTensor"):
        ours, theirs = getattr(tp, name)([[1.5, 2.0]]), getattr(torch, name)([[1.5, 2.0]])
        assert ours.tolist() == theirs.tolist() and ours.dtype.name == str(theirs.dtype).split(".")[1]


def test_variable_is_a_detached_alias():
    x = tp.ones(3, requires_grad=True)
    v = Variable(x)
    assert v is not x and not v.requires_grad and v.is_leaf and isinstance(v, Variable)
    w = Variable(tp.tensor([1.0, 2.0]), requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]
    assert Variable([1.0]).tolist() == [1.0]
    assert tp.autograd.Variable is Variable and isinstance(tp.zeros(()), Variable)


def test_cpu_build_namespaces():
    assert tp.cuda.is_available() is False and tp.cuda.device_count() == 0
    assert tp.cuda.manual_seed(3) is None and tp.cuda.manual_seed_all(3) is None
    assert tp.accelerator.is_available() is False and tp.accelerator.device_count() == 0
    assert not tp.backends.mps.is_available() and not tp.backends.cuda.is_built()
    device = "cuda" if tp.cuda.is_available() else "cpu"  # the idiom of every tutorial
    assert tp.ones(2, device=device).device == tp.device("cpu")


def test_new_factories_take_torchs_keywords():
    x = tp.ones(2, dtype=tp.float64)
    z = x.new_zeros(2, 3, requires_grad=True, device="cpu")
    assert z.requires_grad and z.dtype is tp.float64 and tuple(z.shape) == (2, 3)
    assert x.new_ones((4,)).tolist() == [1.0] * 4 and tuple(x.new_empty(0, 2).shape) == (0, 2)
    f = x.new_full((2,), fill_value=3, dtype=tp.int64)
    assert f.dtype is tp.int64 and f.tolist() == [3, 3]
    assert x.new_tensor([1, 2]).dtype is tp.float64
    with pytest.raises(RuntimeError, match="not available"):
        x.new_ones(2, device="cuda")
    torch = pytest.importorskip("torch")
    t = torch.ones(2, dtype=torch.float64)
    assert t.new_full((2,), fill_value=3, dtype=torch.int64).tolist() == f.tolist()
    assert str(t.new_tensor([1, 2]).dtype) == "torch.float64"

"""numpy interop: arrays as operator operands with torch's promotion, ufuncs, DLPack zero-copy (issue 16 item 10)."""
import operator

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, vmap

try:
    import torch
except ImportError:
    torch = None

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.lt, operator.eq, operator.ge]
OPERANDS = [np.ones(3), np.arange(3, dtype=np.int64), np.arange(3, dtype=np.int32) + 1, np.array(2.0),
            np.array(3, dtype=np.int64), np.float64(2.5), np.int32(4), np.ones((2, 1), dtype=np.float32),
            np.array([True, False, True])]
TENSORS = [lambda: tp.ones(3), lambda: tp.arange(1, 4, dtype=tp.int32), lambda: tp.tensor(2.0, dtype=tp.float64),
           lambda: tp.arange(3) + 1]


def _expected(op, t, a, swap):
    """The same operation on plain tensors: an array as a tensor, a numpy scalar as a Python number."""
    other = tp.tensor(a) if isinstance(a, np.ndarray) else a.item()
    return op(other, t) if swap else op(t, other)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("a", OPERANDS, ids=range(len(OPERANDS)))
@pytest.mark.parametrize("make", TENSORS, ids=range(len(TENSORS)))
def test_operators_with_numpy_operands_give_tensors(op, a, make):
    t = make()
    for swap in (False, True):
        try:
            want = _expected(op, t, a, swap)
        except (TypeError, ValueError) as e:  # e.g. bool subtraction, broadcasting: the same error
            with pytest.raises(type(e)):
                op(a, t) if swap else op(t, a)
            continue
        got = op(a, t) if swap else op(t, a)
        assert isinstance(got, tp.Tensor), (swap, type(got))
        assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("a", OPERANDS, ids=range(len(OPERANDS)))
@pytest.mark.parametrize("make", TENSORS, ids=range(len(TENSORS)))
def test_promotion_is_torchs(a, make):
    t = make()
    other = torch.as_tensor(a) if isinstance(a, np.ndarray) else a.item()
    want = torch.result_type(torch.as_tensor(t.numpy()), other)
    assert (t + a).dtype.name == str(want).removeprefix("torch.")


def test_numpy_arrays_share_memory_and_work_under_transforms():
    a = np.array([1.0, 2.0, 3.0])
    f = lambda x: (x * a).sum()  # noqa: E731
    assert grad(f)(tp.ones(3, dtype=tp.float64)).tolist() == [1.0, 2.0, 3.0]
    assert vmap(lambda x: x + a)(tp.zeros(2, 3, dtype=tp.float64)).tolist() == [[1.0, 2.0, 3.0]] * 2
    assert tp.compile(lambda x: a * x)(tp.ones(3, dtype=tp.float64)).tolist() == [1.0, 2.0, 3.0]


def test_other_ufuncs_run_on_the_values():
    t = tp.tensor([0.0, 1.0])
    out = np.sin(t)
    assert isinstance(out, np.ndarray) and np.allclose(out, np.sin([0.0, 1.0]))
    assert np.add.reduce(t) == 1.0
    with pytest.raises(TypeError):
        np.add(np.ones(2), np.ones(2), out=tp.zeros(2))


def test_dlpack_is_zero_copy_both_ways():
    a = np.arange(4.0)
    t = tp.from_dlpack(a)
    a[1] = 9.0
    assert t.tolist() == [0.0, 9.0, 2.0, 3.0]
    b = np.from_dlpack(t)
    b[0] = 5.0
    assert t[0].item() == 5.0 and np.shares_memory(b, t.numpy())
    assert t.__dlpack_device__() == (1, 0)
    assert tp.from_dlpack(t) is t
    view = tp.arange(6.0).reshape(2, 3).T
    np.testing.assert_array_equal(np.from_dlpack(view), view.numpy())
    with pytest.raises(TypeError, match="__dlpack__"):
        tp.from_dlpack([1.0])
    with pytest.raises(TypeError, match="uint8"):
        tp.from_dlpack(np.zeros(2, dtype=np.uint8))


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_dlpack_with_torch():
    tt = torch.arange(3.0)
    t = tp.from_dlpack(tt)
    tt[0] = 4.0
    assert t.tolist() == [4.0, 1.0, 2.0]
    back = torch.from_dlpack(t)
    back[2] = -1.0
    assert t[2].item() == -1.0

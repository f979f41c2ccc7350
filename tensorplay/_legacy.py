"""PyTorch's legacy typed constructors: ``FloatTensor``, ``LongTensor``, ... and ``autograd.Variable``.

``tp.FloatTensor(2, 3)`` and ``tp.LongTensor([1, 2])`` build tensors as ``tp.Tensor`` does, in a
fixed dtype; ``isinstance(t, tp.FloatTensor)`` checks that dtype, as torch's type objects do.
``Variable(t)`` is torch's old wrapper: today a tensor sharing `t`'s data, not recorded, that
requires grad when asked.

>>> import tensorplay as tp
>>> tp.LongTensor([1, 2]).dtype, tuple(tp.FloatTensor(2, 3).shape)
(tensorplay.int64, (2, 3))
>>> isinstance(tp.ones(1), tp.FloatTensor), isinstance(tp.ones(1), tp.LongTensor)
(True, False)
>>> from tensorplay.autograd import Variable
>>> v = Variable(tp.ones(2), requires_grad=True)
>>> v.requires_grad, isinstance(v, Variable)
(True, True)
"""
from __future__ import annotations

from tensorplay.ir import dtypes

from ._tensor import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor", "Variable"]


class _TypedTensorMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, **kwargs):
        if "dtype" in kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument 'dtype'")
        return Tensor(*args, dtype=cls.dtype, **kwargs)


def _typed(name: str, dtype) -> type:
    doc = (f"``{name}(*sizes)`` / ``{name}(data)``: a tensor of dtype {dtype.name}, as torch.{name}; "
           f"``isinstance(t, {name})`` checks the dtype.")
    return _TypedTensorMeta(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "tensorplay"})


FloatTensor = _typed("FloatTensor", dtypes.float32)
DoubleTensor = _typed("DoubleTensor", dtypes.float64)
LongTensor = _typed("LongTensor", dtypes.int64)
IntTensor = _typed("IntTensor", dtypes.int32)
BoolTensor = _typed("BoolTensor", dtypes.bool_)


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data, requires_grad: bool = False, volatile: bool = False):
        from .ops.creation import as_tensor

        t = (data if isinstance(data, Tensor) else as_tensor(data)).detach()
        return t.requires_grad_(True) if requires_grad else t


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: torch's pre-0.4 wrapper, now a detached alias of `data`
    (requiring grad when asked); every tensor is an instance.

    >>> import tensorplay as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> v = Variable(x)
    >>> v is x, v.requires_grad, v.is_leaf
    (False, False, True)
    """

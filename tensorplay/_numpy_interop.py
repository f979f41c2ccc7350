"""numpy interoperability: arrays as operands of tensor operators, numpy ufuncs on tensors, DLPack.

``t + ndarray`` and ``ndarray + t`` give a tensor: an array operand is read as a tensor
(sharing memory), a numpy scalar as the Python number it holds, and the result follows
torch's promotion (a 0-d or scalar operand does not raise a dimensioned tensor's dtype
within a category). Other numpy ufuncs (``np.sin(t)``) run on the tensor's values and
return numpy arrays. `from_dlpack` and ``Tensor.__dlpack__`` exchange memory without copies.

>>> import numpy as np
>>> import tensorplay as tp
>>> tp.ones(2) + np.array([1.0, 2.0]), np.array([1, 2]) * tp.ones(2)
(tensor([2., 3.], dtype=tensorplay.float64), tensor([1., 2.]))
"""
from __future__ import annotations

import numpy as np

from ._tensor import Tensor

_NUMPY = (np.ndarray, np.generic)


def numpy_operand(x):
    """An operator operand as tensorplay reads it: arrays become tensors, numpy scalars Python numbers."""
    if isinstance(x, np.ndarray):
        from .ops.creation import as_tensor

        return as_tensor(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def accept_numpy_operands(fn):
    """Wrap a binary Tensor method so that a numpy array or scalar `other` is converted first."""
    def method(self, other):
        if other.__class__ is not Tensor and isinstance(other, _NUMPY):
            other = numpy_operand(other)
        return fn(self, other)

    method.__name__ = getattr(fn, "__name__", "method")
    method.__doc__ = fn.__doc__
    return method


BINARY_DUNDERS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                  "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
                  "__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
                  "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")


def _ufunc_ops() -> dict:
    from .ops import elementwise as ew, linalg

    return {
        np.add: ew.add, np.subtract: ew.sub, np.multiply: ew.mul, np.true_divide: ew.div,
        np.floor_divide: ew.floor_divide, np.remainder: ew.remainder, np.power: ew.pow, np.matmul: linalg.matmul,
        np.equal: ew.eq, np.not_equal: ew.ne, np.less: ew.lt, np.less_equal: ew.le, np.greater: ew.gt,
        np.greater_equal: ew.ge, np.bitwise_and: ew.bitwise_and, np.bitwise_or: ew.bitwise_or,
        np.bitwise_xor: ew.bitwise_xor, np.maximum: ew.maximum, np.minimum: ew.minimum,
    }


_UFUNC_OPS: dict = {}


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's ufunc protocol: binary arithmetic with a tensor operand gives a tensor (so ``ndarray + t`` works);
    any other ufunc runs on the values and returns what numpy returns."""
    if not _UFUNC_OPS:
        _UFUNC_OPS.update(_ufunc_ops())
    op = _UFUNC_OPS.get(ufunc)
    if op is not None and method == "__call__" and not kwargs and len(inputs) == 2:
        return op(*(numpy_operand(x) for x in inputs))
    if any(isinstance(o, Tensor) for o in kwargs.get("out", ())):
        return NotImplemented  # numpy cannot write into a tensor's storage through `out=`; TypeError follows
    arrays = [x._concrete(f"np.{ufunc.__name__}(tensor)") if isinstance(x, Tensor) else x for x in inputs]
    return getattr(ufunc, method)(*arrays, **kwargs)


# --- DLPack --------------------------------------------------------------------------------------
def dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Export this tensor's memory as a DLPack capsule (CPU; no copy unless `copy` asks for one)."""
    arr = self._concrete("__dlpack__")
    kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy))
              if v is not None}
    if stream is not None:
        raise BufferError("__dlpack__: stream must be None for CPU tensors")
    return arr.__dlpack__(**kwargs)


def dlpack_device(self) -> tuple[int, int]:
    """DLPack's (device type, id): (1, 0), the CPU."""
    return (1, 0)


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing memory with `ext_tensor` (any object with ``__dlpack__``: numpy arrays, torch tensors, ...).

    >>> import numpy as np
    >>> import tensorplay as tp
    >>> a = np.arange(3.0)
    >>> t = tp.from_dlpack(a)
    >>> a[0] = 7.0
    >>> t
    tensor([7., 1., 2.], dtype=tensorplay.float64)
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (an array or tensor), got "
                        f"{type(ext_tensor).__name__}")
    from .ops.creation import from_numpy

    return from_numpy(np.from_dlpack(ext_tensor))


METHODS = {"__array_ufunc__": array_ufunc, "__dlpack__": dlpack, "__dlpack_device__": dlpack_device}

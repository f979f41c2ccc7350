"""Tensor methods and operators, attached to `Tensor` from the op functions.

In-place methods (`add_`, `__iadd__`, `__setitem__`, `copy_`, ...) compute out of
place and write the result into the tensor's storage with `write_into`: through
numpy views in eager mode, so the base and every other view see it; under a
transform the write is functionalized (`tensorplay._views`): it is scattered into
the storage's root value and the views are re-derived, and writes into arguments
or captured tensors reach the caller when the traced function returns.

>>> import tensorplay as tp
>>> x = tp.zeros(2, 3)
>>> row = x[1]
>>> row += 1
>>> x[:, 0].fill_(7)
tensor([7., 7.])
>>> x
tensor([[7., 0., 0.],
        [7., 1., 1.]])
>>> row._base is x, x.T._is_view(), (x * 1)._is_view()
(True, True, False)
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes

from . import _methods_extra, _numpy_interop as _interop, _views
from ._tensor import Tensor
from ._trace import bind, memo_traced_op
from .autograd._engine import note_inplace
from .autograd._tensor_api import attach as _attach_autograd
from .ops import activation, creation, elementwise as ew, indexing, linalg, reduction, shape as sh, statistics
from .ops import cumulative, handles, matrix, scattering, selection, sorting  # noqa: F401  (op table rows)
from .ops import linalg_extra, pointwise_extra, reduction_extra, shape_extra  # noqa: F401  (op table rows: asin, median, ...)
# (the op modules above add the op table's rows; `attach` puts them on Tensor)
from .ops import _table as op_table
from .ops._common import as_tensor_operand, convert
from ._device import as_dtype as _as_dtype, check_device as _check_device, to_arguments as _to_arguments


def _swap(fn):
    return lambda self, other: fn(other, self)


def _can_cast(src, dst) -> bool:
    return dtypes.category(src) <= dtypes.category(dst)


def write_into(self: Tensor, result, op: str, *, cast: bool = False) -> Tensor:
    """Store `result` into `self`'s storage in place, with PyTorch's rules; returns self.

    `result` broadcasts to self's shape. Its dtype must be castable to self's without
    changing category (float into int is an error, as for ``add_``) unless `cast` is set,
    as for ``copy_``, ``fill_`` and ``__setitem__``. The write reaches self's base and
    every other view of that storage, eagerly and under transforms. Writing into an
    expanded tensor (elements sharing memory) raises RuntimeError, as in torch.

    >>> import tensorplay as tp
    >>> x = tp.zeros(3)
    >>> write_into(x[1:], tp.ones(2), "copy_") is not None
    True
    >>> x
    tensor([0., 1., 1.])
    """
    result = as_tensor_operand(result)
    if not cast and not _can_cast(result.dtype, self.dtype):
        raise TypeError(f"{op}: result type {result.dtype.name} can't be cast to the desired output type "
                        f"{self.dtype.name}")
    if tuple(result.shape) != tuple(self.shape):
        from .ops._common import broadcast_shapes

        if broadcast_shapes(tuple(self.shape), tuple(result.shape), op=op) != tuple(self.shape):
            raise ValueError(f"{op}: output with shape {tuple(self.shape)} doesn't match the broadcast shape "
                             f"{broadcast_shapes(tuple(self.shape), tuple(result.shape), op=op)}")
        result = sh.expand(result, tuple(self.shape))
    result = convert(result, self.dtype)
    if self._trace is None and result._trace is None:
        note_inplace(self, result)
    return _views.store(self, result, op)


def _inplace(fn, name):
    def method(self, *args, **kwargs):
        return write_into(self, fn(self, *args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = f"In-place version of `{name[:-1]}`: writes into this tensor's storage and returns it."
    return method


def _value_operand(value, like: Tensor) -> Tensor:
    """A value to store into `like`: numbers take like's dtype (as torch's fill/setitem do)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return as_tensor_operand(value, like.dtype)
    return as_tensor_operand(value)


def _setitem(self, key, value):
    """``self[key] = value`` for every index form, writing through to the storage (and its views)."""
    from .ops.scatter import mask_key, masked_setitem, setitem_functional

    value = _value_operand(value, self)
    mask = mask_key(self, key)
    if mask is not None:
        write_into(self, masked_setitem(self, mask, value), "__setitem__", cast=True)
        return
    target = indexing.getitem(self, key)
    if _views.is_view_of(target, self):  # basic indexing: store through the view
        while value.ndim > target.ndim and value.shape[0] == 1:  # torch drops leading unit dims of the value
            value = sh.reshape(value, tuple(value.shape[1:]))
        write_into(target, value, "__setitem__", cast=True)
        return
    write_into(self, setitem_functional(self, key, value), "__setitem__", cast=True)


def _to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device, dtype)``, ``to(other)``, as torch; ``to("meta")`` gives a meta tensor
    (`tensorplay._meta`); another device than the CPU is an error."""
    from ._device import wants_meta

    if wants_meta(args, kwargs):
        from ._meta import to_meta

        return to_meta(self)
    dtype, copy = _to_arguments(args, kwargs)
    if dtype is None or dtype is self.dtype:
        return handles.clone(self) if copy else self
    return convert(self, dtype)


def _bfloat16(self):
    """`self` as bfloat16 (needs the optional ml_dtypes package)."""
    if dtypes.bfloat16 is None:
        raise TypeError(f"Tensor.bfloat16(): {dtypes.BFLOAT16_MISSING}")
    return convert(self, dtypes.bfloat16)


def _contiguous(self, memory_format=None):
    """self when its elements are laid out in C order, else a contiguous copy (as torch)."""
    return self if _views.is_contiguous(self) else handles.clone(self)


def _is_contiguous(self, memory_format=None) -> bool:
    return _views.is_contiguous(self)


def _reshaped_in_place(self, new: Tensor, op: str) -> Tensor:
    """Give `self` the shape of `new`, a reshape of it that only adds or drops size-1 dims (squeeze_, unsqueeze_).

    The storage and its other views are untouched; `self`, if a view, stays one with a reshape step more.
    Under a transform the graph's values have fixed shapes, so this is an error there.
    """
    if self._trace is not None or _views.owner(self) is not None:
        raise NotImplementedError(f"{op}: changing a tensor's shape in place is not supported under a transform "
                                  f"(shape {tuple(self.shape)}); use the out-of-place {op[:-1]}() instead")
    if tuple(new.shape) == tuple(self.shape):
        return self
    self._data = self._data.reshape(tuple(new.shape))
    if self._base is not None:
        self._steps = self._steps + (("reshape", {"shape": tuple(new.shape)}),)
    return self


def _squeeze_(self, dim=None):
    """In-place `squeeze`: drop size-1 dims (all, or `dim`) from this tensor's shape; returns self."""
    return _reshaped_in_place(self, sh.squeeze(self, dim), "squeeze_")


def _unsqueeze_(self, dim: int):
    """In-place `unsqueeze`: insert a size-1 dim at `dim` into this tensor's shape; returns self."""
    return _reshaped_in_place(self, sh.unsqueeze(self, dim), "unsqueeze_")


def _is_view(self) -> bool:
    """True when this tensor is a view of another one (its `_base`), as torch's ``_is_view()``.

    Like torch, ``detach()`` and ``.data`` share storage without counting as views (they
    still keep `_base`, so writes through them reach the base under transforms too).
    """
    return self._base is not None and self._steps[-1][0] != "stop_gradient"


def _copy_(self, src, non_blocking=False):
    return write_into(self, as_tensor_operand(src), "copy_", cast=True)


def _fill_(self, value):
    if isinstance(value, Tensor) and value.ndim:
        raise ValueError(f"fill_ only supports 0-dimension value tensors, got shape {tuple(value.shape)}")
    return write_into(self, _value_operand(value, self), "fill_", cast=True)


def _zero_(self):
    return _fill_(self, 0)


def _masked_fill_(self, mask, value):
    from .ops.scatter import masked_setitem

    return write_into(self, masked_fill(self, mask, value), "masked_fill_", cast=True)


def _index_fill_(self, dim, index, value):
    from .ops.scatter import setitem_functional

    key = (slice(None),) * (dim % max(self.ndim, 1)) + (index,)
    return write_into(self, setitem_functional(self, key, _value_operand(value, self)), "index_fill_", cast=True)


def _index_put_(self, indices, values, accumulate=False):
    from .ops.scatter import index_put_accumulate, setitem_functional

    key = tuple(indices)
    if accumulate:
        return write_into(self, index_put_accumulate(self, key, _value_operand(values, self)),
                          "index_put_", cast=True)
    return write_into(self, setitem_functional(self, key, _value_operand(values, self)), "index_put_", cast=True)


METHODS = {
    # arithmetic operators
    "__add__": ew.add, "__radd__": _swap(ew.add), "__sub__": ew.sub, "__rsub__": _swap(ew.sub),
    "__mul__": ew.mul, "__rmul__": _swap(ew.mul), "__truediv__": ew.div, "__rtruediv__": _swap(ew.div),
    "__floordiv__": ew.floor_divide, "__rfloordiv__": _swap(ew.floor_divide),
    "__mod__": ew.remainder, "__rmod__": _swap(ew.remainder),
    "__pow__": ew.pow, "__rpow__": _swap(ew.pow),
    "__matmul__": linalg.matmul, "__rmatmul__": _swap(linalg.matmul),
    "__neg__": ew.neg, "__pos__": lambda self: self, "__abs__": ew.abs, "__invert__": ew.bitwise_not,
    "__and__": ew.bitwise_and, "__rand__": _swap(ew.bitwise_and), "__or__": ew.bitwise_or,
    "__ror__": _swap(ew.bitwise_or), "__xor__": ew.bitwise_xor, "__rxor__": _swap(ew.bitwise_xor),
    "__eq__": lambda self, other: False if other is None else ew.eq(self, other),
    "__ne__": lambda self, other: True if other is None else ew.ne(self, other), "__lt__": ew.lt, "__le__": ew.le, "__gt__": ew.gt, "__ge__": ew.ge,
    "__getitem__": indexing.getitem, "__setitem__": _setitem,
    # math, reductions, linear algebra, shape, indexing, softmax/log_softmax, cov, diagflat, the in-place
    # random fills: rows of the op table (added below)
    # conversion
    "to": _to, "type": lambda self, dtype=None, non_blocking=False: (
        self.dtype.name if dtype is None else convert(self, _as_dtype(dtype, "type"))),
    "cuda": lambda self, device=None, non_blocking=False: _check_device("cuda" if device is None else device, "cuda"),
    "float": lambda self: convert(self, dtypes.float32), "double": lambda self: convert(self, dtypes.float64),
    "int": lambda self: convert(self, dtypes.int32), "long": lambda self: convert(self, dtypes.int64),
    "bool": lambda self: convert(self, dtypes.bool_), "cpu": lambda self: self,
    "half": lambda self: convert(self, dtypes.float16), "bfloat16": _bfloat16,
    "contiguous": _contiguous, "is_contiguous": _is_contiguous, "_is_view": _is_view,
    "new_zeros": lambda self, *size, dtype=None: creation.zeros(*size, dtype=dtype or self.dtype),
    "new_ones": lambda self, *size, dtype=None: creation.ones(*size, dtype=dtype or self.dtype),
    "new_full": lambda self, size, value, dtype=None: creation.full(size, value, dtype=dtype or self.dtype),
    "new_empty": lambda self, *size, dtype=None: creation.zeros(*size, dtype=dtype or self.dtype),
    "new_tensor": lambda self, data, dtype=None: creation.tensor(data, dtype=dtype or self.dtype),
    # in place
    "copy_": _copy_, "fill_": _fill_, "zero_": _zero_, "masked_fill_": _masked_fill_,
    "squeeze_": _squeeze_, "unsqueeze_": _unsqueeze_, "index_fill_": _index_fill_, "index_put_": _index_put_,
}

_INPLACE = {
    "__iadd__": ew.add, "__isub__": ew.sub, "__imul__": ew.mul, "__itruediv__": ew.div,
    "__ifloordiv__": ew.floor_divide, "__imod__": ew.remainder, "__ipow__": ew.pow,
    "__iand__": ew.bitwise_and, "__ior__": ew.bitwise_or, "__ixor__": ew.bitwise_xor,
}


# numpy arrays and scalars as operator operands, numpy ufuncs and DLPack (see tensorplay._numpy_interop)
for _name in _interop.BINARY_DUNDERS:
    METHODS[_name] = _interop.accept_numpy_operands(METHODS[_name])
for _name in ("__add__", "__sub__", "__mul__", "__truediv__", "__matmul__"):  # the hot traced operators
    METHODS[_name] = memo_traced_op(METHODS[_name], 2)
METHODS.update(_interop.METHODS)


def masked_fill(self, mask, value):
    """`value` where `mask` holds, else self (a new tensor of self's dtype)."""
    from .ops.scatter import masked_setitem

    mask = as_tensor_operand(mask)
    if mask.dtype is not dtypes.bool_:
        raise TypeError(f"masked_fill only supports boolean masks, but got mask with dtype {mask.dtype.name}")
    return masked_setitem(self, mask, _value_operand(value, self), leading=False)


METHODS["masked_fill"] = masked_fill


METHODS.update(op_table.methods())  # the op table's rows: x.sin(), x.atan2(y), ... (tensorplay/ops/_table.py)
_INPLACE.update(op_table.inplace_methods())


def attach() -> None:
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in _INPLACE.items():
        setattr(Tensor, name, _inplace(fn, name))
    Tensor._legacy_array = staticmethod(creation.legacy_constructor_array)  # Tensor(...), see _tensor
    Tensor.T = property(lambda self: sh.permute(self, tuple(reversed(range(self.ndim)))))
    Tensor.mT = property(lambda self: sh.transpose(self, -2, -1))
    Tensor.data = property(lambda self: bind("stop_gradient", self))
    _attach_autograd(Tensor)


attach()
_methods_extra.attach()  # type_as, detach_, stride, is_cuda, ... (tensorplay/_methods_extra.py)

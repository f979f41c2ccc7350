"""Tensor methods and operators, attached to `Tensor` from the op functions.

In-place methods (`add_`, `__iadd__`, `__setitem__`, ...) compute out of place
and write the result into the tensor: through numpy views in eager mode, so
every view of the same storage sees it, and by rebinding the traced value
under a transform.
"""
from __future__ import annotations

import numpy as np

from ir import dtypes

from ._tensor import Tensor
from ._trace import TracingError, bind
from .ops import activation, creation, elementwise as ew, indexing, linalg, reduction, shape as sh
from .ops._common import as_tensor_operand, convert


def _swap(fn):
    return lambda self, other: fn(other, self)


def _can_cast(src, dst) -> bool:
    return dtypes.category(src) <= dtypes.category(dst)


def write_into(self: Tensor, result: Tensor, op: str) -> Tensor:
    """Store `result` into `self` in place (PyTorch's rules on dtype and shape); returns self."""
    result = as_tensor_operand(result)
    if not _can_cast(result.dtype, self.dtype):
        raise TypeError(f"{op}: result type {result.dtype.name} can't be cast to the desired output type "
                        f"{self.dtype.name}")
    if tuple(result.shape) != tuple(self.shape):
        from .ops._common import broadcast_shapes

        if broadcast_shapes(tuple(self.shape), tuple(result.shape), op=op) != tuple(self.shape):
            raise ValueError(f"{op}: output with shape {tuple(self.shape)} doesn't match the broadcast shape "
                             f"{broadcast_shapes(tuple(self.shape), tuple(result.shape), op=op)}")
        result = sh.expand(result, tuple(self.shape))
    result = convert(result, self.dtype)
    hook = _INPLACE_HOOK[0]
    if hook is not None:
        return hook(self, result, op)
    if self._trace is None and result._trace is None:
        np.copyto(self._data, result._data)
        return self
    if self._trace is not None and (result._trace is None or result._trace.level <= self._trace.level):
        self._value = self._trace.lift(result)
        return self
    raise TracingError(f"{op}: in-place write of a value traced under {result._trace.transform} into a tensor "
                       f"from outside that transform is not supported")


# functionalization replaces this hook to record in-place writes on views (see tensorplay.func)
_INPLACE_HOOK: list = [None]


def _inplace(fn, name):
    def method(self, *args, **kwargs):
        return write_into(self, fn(self, *args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = f"In-place version of `{name[:-1]}`."
    return method


def _setitem(self, key, value):
    target = indexing.getitem(self, key)
    if self._trace is None and target._trace is None and not (isinstance(value, Tensor) and value._trace is not None) \
            and _INPLACE_HOOK[0] is None and np.shares_memory(target._data, self._data):
        write_into(target, value if isinstance(value, Tensor) else
                   as_tensor_operand(value, self.dtype if isinstance(value, (int, float, bool)) else None),
                   "__setitem__")
        return
    from .ops.scatter import setitem_functional

    write_into(self, setitem_functional(self, key, value), "__setitem__")


def _to(self, *args, dtype=None, **kwargs):
    for a in args:
        if isinstance(a, dtypes.DType):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
    return self if dtype is None or dtype is self.dtype else convert(self, dtype)


def _clone(self, *, memory_format=None):
    """A copy that does not share storage (traced values are immutable, so a new handle suffices)."""
    if self._trace is not None:
        return Tensor._symbolic(self._trace, self._value)
    return Tensor._wrap(np.array(self._data, copy=True))


def _copy_(self, src, non_blocking=False):
    return write_into(self, as_tensor_operand(src), "copy_")


def _fill_(self, value):
    return write_into(self, as_tensor_operand(value, self.dtype) if not isinstance(value, Tensor) else value, "fill_")


def _zero_(self):
    return _fill_(self, 0)


def _max_method(self, dim=None, keepdim=False):
    return reduction.max(self, dim, keepdim)


def _min_method(self, dim=None, keepdim=False):
    return reduction.min(self, dim, keepdim)


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
    "__eq__": ew.eq, "__ne__": ew.ne, "__lt__": ew.lt, "__le__": ew.le, "__gt__": ew.gt, "__ge__": ew.ge,
    "__getitem__": indexing.getitem, "__setitem__": _setitem,
    # math
    "add": ew.add, "sub": ew.sub, "subtract": ew.sub, "mul": ew.mul, "multiply": ew.mul, "div": ew.div,
    "divide": ew.div, "true_divide": ew.div, "floor_divide": ew.floor_divide, "remainder": ew.remainder,
    "fmod": ew.fmod, "pow": ew.pow, "maximum": ew.maximum, "minimum": ew.minimum, "atan2": ew.atan2,
    "neg": ew.neg, "negative": ew.neg, "abs": ew.abs, "sign": ew.sign, "sin": ew.sin, "cos": ew.cos,
    "tan": ew.tan, "exp": ew.exp, "log": ew.log, "log1p": ew.log1p, "expm1": ew.expm1, "sqrt": ew.sqrt,
    "rsqrt": ew.rsqrt, "tanh": ew.tanh, "sigmoid": ew.sigmoid, "relu": ew.relu, "erf": ew.erf,
    "floor": ew.floor, "ceil": ew.ceil, "round": ew.round, "clamp": ew.clamp, "clip": ew.clamp,
    "square": ew.square, "reciprocal": ew.reciprocal, "isnan": ew.isnan, "isfinite": ew.isfinite,
    "lerp": ew.lerp, "addcmul": ew.addcmul, "addcdiv": ew.addcdiv, "isclose": ew.isclose,
    "allclose": ew.allclose, "equal": ew.equal,
    "eq": ew.eq, "ne": ew.ne, "lt": ew.lt, "le": ew.le, "gt": ew.gt, "ge": ew.ge,
    "logical_not": ew.logical_not, "logical_and": ew.logical_and, "logical_or": ew.logical_or,
    "bitwise_not": ew.bitwise_not, "bitwise_and": ew.bitwise_and, "bitwise_or": ew.bitwise_or,
    "where": lambda self, condition, other: ew.where(condition, self, other),
    # reductions
    "sum": reduction.sum, "mean": reduction.mean, "prod": reduction.prod, "max": _max_method,
    "min": _min_method, "amax": reduction.amax, "amin": reduction.amin, "argmax": reduction.argmax,
    "argmin": reduction.argmin, "logsumexp": reduction.logsumexp, "var": reduction.var, "std": reduction.std,
    "all": reduction.all, "any": reduction.any, "norm": reduction.norm, "cumsum": reduction.cumsum,
    "softmax": activation.softmax, "log_softmax": activation.log_softmax,
    # linear algebra
    "matmul": linalg.matmul, "mm": linalg.mm, "bmm": linalg.bmm, "mv": linalg.mv, "dot": linalg.dot,
    "outer": linalg.outer,
    # shape
    "reshape": sh.reshape, "view": sh.view, "flatten": sh.flatten, "unflatten": sh.unflatten,
    "permute": sh.permute, "transpose": sh.transpose, "swapaxes": sh.transpose, "t": sh.t,
    "movedim": sh.movedim, "squeeze": sh.squeeze, "unsqueeze": sh.unsqueeze, "expand": sh.expand,
    "expand_as": sh.expand_as, "broadcast_to": sh.broadcast_to, "split": sh.split, "chunk": sh.chunk,
    "tensor_split": sh.tensor_split, "unbind": sh.unbind, "flip": sh.flip, "roll": sh.roll,
    "narrow": sh.narrow, "select": sh.select, "repeat": sh.repeat, "tile": sh.tile,
    "repeat_interleave": sh.repeat_interleave, "diagonal": sh.diagonal,
    "view_as": lambda self, other: sh.reshape(self, tuple(other.shape)),
    "reshape_as": lambda self, other: sh.reshape(self, tuple(other.shape)),
    # indexing
    "index_select": indexing.index_select, "gather": indexing.gather, "take": indexing.take,
    "scatter_add": indexing.scatter_add, "index_add": indexing.index_add,
    # conversion
    "to": _to, "type": lambda self, dtype=None: self.dtype.name if dtype is None else convert(self, dtype),
    "float": lambda self: convert(self, dtypes.float32), "double": lambda self: convert(self, dtypes.float64),
    "int": lambda self: convert(self, dtypes.int32), "long": lambda self: convert(self, dtypes.int64),
    "bool": lambda self: convert(self, dtypes.bool_), "cpu": lambda self: self,
    "contiguous": lambda self, memory_format=None: self, "clone": _clone,
    "detach": lambda self: bind("stop_gradient", self),
    "requires_grad_": lambda self, requires_grad=True: self,
    "new_zeros": lambda self, *size, dtype=None: creation.zeros(*size, dtype=dtype or self.dtype),
    "new_ones": lambda self, *size, dtype=None: creation.ones(*size, dtype=dtype or self.dtype),
    "new_full": lambda self, size, value, dtype=None: creation.full(size, value, dtype=dtype or self.dtype),
    "new_empty": lambda self, *size, dtype=None: creation.zeros(*size, dtype=dtype or self.dtype),
    "new_tensor": lambda self, data, dtype=None: creation.tensor(data, dtype=dtype or self.dtype),
    # in place
    "copy_": _copy_, "fill_": _fill_, "zero_": _zero_,
}

_INPLACE = {
    "add_": ew.add, "sub_": ew.sub, "mul_": ew.mul, "div_": ew.div, "pow_": ew.pow, "clamp_": ew.clamp,
    "clip_": ew.clamp, "neg_": ew.neg, "abs_": ew.abs, "exp_": ew.exp, "log_": ew.log, "sqrt_": ew.sqrt,
    "sin_": ew.sin, "cos_": ew.cos, "tanh_": ew.tanh, "sigmoid_": ew.sigmoid, "relu_": ew.relu,
    "floor_": ew.floor, "ceil_": ew.ceil, "round_": ew.round, "fmod_": ew.fmod, "remainder_": ew.remainder,
    "maximum_": ew.maximum, "minimum_": ew.minimum, "square_": ew.square, "reciprocal_": ew.reciprocal,
    "lerp_": ew.lerp, "addcmul_": ew.addcmul, "addcdiv_": ew.addcdiv, "masked_fill_": None,
    "__iadd__": ew.add, "__isub__": ew.sub, "__imul__": ew.mul, "__itruediv__": ew.div,
    "__ifloordiv__": ew.floor_divide, "__imod__": ew.remainder, "__ipow__": ew.pow,
    "__iand__": ew.bitwise_and, "__ior__": ew.bitwise_or, "__ixor__": ew.bitwise_xor,
}


def masked_fill(self, mask, value):
    """`value` where `mask` holds, else self."""
    return ew.where(mask, value, self)


METHODS["masked_fill"] = masked_fill
_INPLACE["masked_fill_"] = masked_fill


def attach() -> None:
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in _INPLACE.items():
        setattr(Tensor, name, _inplace(fn, name))
    Tensor.T = property(lambda self: sh.permute(self, tuple(reversed(range(self.ndim)))))
    Tensor.mT = property(lambda self: sh.transpose(self, -2, -1))
    Tensor.data = property(lambda self: bind("stop_gradient", self))
    Tensor.requires_grad = False
    Tensor.grad = None
    Tensor.is_leaf = True


attach()

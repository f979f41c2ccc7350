"""Shared helpers of the tensor ops: argument normalisation, promotion, broadcasting."""
from __future__ import annotations

import builtins
from typing import Sequence

import numpy as np

from ir import dtypes
from ir.dtypes import DType

from .._tensor import Tensor
from .._trace import bind

_default_float: DType = dtypes.float32


def get_default_dtype() -> DType:
    """The dtype of float tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype (float32 or float64)."""
    global _default_float
    if d not in dtypes.FLOATS:
        raise TypeError(f"set_default_dtype: only float32 and float64 are supported, got {d!r}")
    _default_float = d


def normalize_dim(dim: int, ndim: int, op: str) -> int:
    """A dim in range(ndim); negative dims count from the end (0-d tensors accept 0 and -1)."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def normalize_dims(dims, ndim: int, op: str) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    out = tuple(normalize_dim(d, ndim, op) for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {list(dims)} appears multiple times in the list of dims")
    return tuple(d for d in out if d < ndim) if ndim == 0 else out


def scalar_dtype(x) -> DType:
    if isinstance(x, (bool, np.bool_)):
        return dtypes.bool_
    if isinstance(x, (int, np.integer)):
        return dtypes.int64
    if isinstance(x, (float, np.floating)):
        return _default_float
    raise TypeError(f"unsupported operand type {type(x).__name__}")


def result_type(*operands) -> DType:
    """PyTorch's type promotion: dimensioned tensors, then 0-d tensors, then Python scalars."""
    dim = zero = None
    scalar_cat = None
    for o in operands:
        if isinstance(o, Tensor):
            if o.ndim > 0:
                dim = o.dtype if dim is None else dtypes.promote(dim, o.dtype)
            else:
                zero = o.dtype if zero is None else dtypes.promote(zero, o.dtype)
        else:
            cat = dtypes.category(scalar_dtype(o))
            scalar_cat = cat if scalar_cat is None else builtins.max(scalar_cat, cat)
    res = dim
    if zero is not None and (res is None or dtypes.category(zero) > dtypes.category(res)):
        res = zero
    if scalar_cat is not None and (res is None or scalar_cat > dtypes.category(res)):
        res = (dtypes.bool_, dtypes.int64, _default_float)[scalar_cat]
    return res


def broadcast_shapes(*shapes, op: str = "broadcast") -> tuple[int, ...]:
    """The broadcast of `shapes` under numpy/PyTorch rules, or a ValueError naming `op`."""
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if d != 1:
                if size not in (1, d):
                    raise ValueError(f"{op}: shapes {', '.join(str(tuple(x)) for x in shapes)} are not "
                                     f"broadcastable (dimension {i + ndim} has sizes {size} and {d})")
                size = d
        out.append(size)
    return tuple(out)


def constant(value, dtype: DType, shape: Sequence[int] = (), like: Sequence = ()) -> Tensor:
    """A tensor filled with `value`: a `full` node when any of `like` is traced, else a cheap broadcast view."""
    traced = [t for t in like if isinstance(t, Tensor) and t._trace is not None]
    if traced:
        top = builtins.max((t._trace for t in traced), key=lambda tr: tr.level)
        return top.emit(_FULL, (), {"shape": tuple(shape), "dtype": dtype, "value": _py(value, dtype)})
    return Tensor._wrap(np.broadcast_to(np.array(value, dtype=dtype.np), tuple(shape)))


def _py(value, dtype: DType):
    if dtype.is_bool:
        return bool(value)
    if dtype.is_integer:
        return int(value)
    return float(value)


def convert(t: Tensor, dtype: DType) -> Tensor:
    return t if t.dtype is dtype else bind("convert_element_type", t, dtype=dtype)


def broadcast_to_shape(t: Tensor, shape: tuple[int, ...], op: str = "expand") -> Tensor:
    """`t` broadcast to `shape` (numpy rules) with a broadcast_in_dim, or `t` when already that shape."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    if t.ndim > len(shape):
        raise ValueError(f"{op}: cannot broadcast shape {tuple(t.shape)} to {shape}")
    lead = len(shape) - t.ndim
    for i, d in enumerate(t.shape):
        if d not in (1, shape[lead + i]):
            raise ValueError(f"{op}: cannot broadcast shape {tuple(t.shape)} to {shape}")
    return bind("broadcast_in_dim", t, shape=shape, broadcast_dimensions=tuple(range(lead, len(shape))))


def as_tensor_operand(x, dtype: DType | None = None) -> Tensor:
    """`x` as a Tensor: tensors pass through, numbers and arrays become concrete tensors."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.number, np.bool_)):
        return Tensor._wrap(np.array(x, dtype=(dtype or scalar_dtype(x)).np))
    from .creation import tensor

    return tensor(x, dtype=dtype)


def prepare(operands, op: str, dtype: DType | None = None):
    """Promote and broadcast `operands` (tensors or Python scalars) to a common dtype and shape."""
    dtype = dtype or result_type(*operands)
    shapes = [tuple(o.shape) for o in operands if isinstance(o, Tensor)]
    shape = broadcast_shapes(*shapes, op=op)
    out = []
    for o in operands:
        if isinstance(o, Tensor):
            out.append(broadcast_to_shape(convert(o, dtype), shape, op))
        elif isinstance(o, (bool, int, float, np.number, np.bool_)):
            out.append(constant(o, dtype, shape, operands))
        else:
            raise TypeError(f"{op}: unsupported operand type {type(o).__name__}")
    return out


from ir import get_primitive as _gp  # noqa: E402

_FULL = _gp("full")

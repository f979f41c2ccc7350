"""Argument reading that sits below the Tensor class: the default float dtype and dims.

`Tensor` (``size(dim)``), its repr and every op read these; the module imports only
`tensorplay.ir`, so each of them can depend on it without an import cycle.
`tensorplay.ops._common` re-exports the names for the op modules.

>>> import tensorplay as tp
>>> get_default_dtype(), scalar_dtype(1.5), normalize_dim(-1, 3, "sum")
(tensorplay.float32, tensorplay.float32, 2)
"""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType

__all__ = ["get_default_dtype", "set_default_dtype", "scalar_dtype", "normalize_dim", "normalize_dims"]

_DEFAULT_FLOAT: list[DType] = [dtypes.float32]  # one slot: set_default_dtype rewrites it


def get_default_dtype() -> DType:
    """The dtype of float tensors made from Python floats (float32 unless changed).

    >>> import tensorplay as tp
    >>> tp.get_default_dtype(), tp.tensor([1.5]).dtype
    (tensorplay.float32, tensorplay.float32)
    """
    return _DEFAULT_FLOAT[0]


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype (float32, float64, or a 16-bit float: float16, bfloat16).

    >>> import tensorplay as tp
    >>> tp.set_default_dtype(tp.float64)
    >>> tp.tensor([1.5]).dtype
    tensorplay.float64
    >>> tp.set_default_dtype(tp.float32)
    """
    if d not in dtypes.FLOATS and d not in dtypes.LOW_FLOATS:
        raise TypeError(f"set_default_dtype: only floating point dtypes are supported, got {d!r}")
    _DEFAULT_FLOAT[0] = d


def scalar_dtype(x) -> DType:
    """The dtype of a Python (or numpy) scalar as an operand: bool, int64, or the default float.

    >>> scalar_dtype(True), scalar_dtype(3), scalar_dtype(0.5)
    (tensorplay.bool, tensorplay.int64, tensorplay.float32)
    """
    if isinstance(x, (bool, np.bool_)):
        return dtypes.bool_
    if isinstance(x, (int, np.integer)):
        return dtypes.int64
    if isinstance(x, (float, np.floating)):
        return _DEFAULT_FLOAT[0]
    raise TypeError(f"unsupported operand type {type(x).__name__}")


def normalize_dim(dim: int, ndim: int, op: str) -> int:
    """A dim in range(ndim); negative dims count from the end (0-d tensors accept 0 and -1).

    >>> normalize_dim(-1, 2, "sum"), normalize_dim(0, 0, "sum")
    (1, 0)
    >>> normalize_dim(2, 2, "sum")
    Traceback (most recent call last):
      ...
    IndexError: sum: dimension out of range (expected to be in range of [-2, 1], but got 2)
    """
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def normalize_dims(dims, ndim: int, op: str) -> tuple[int, ...]:
    """`dims` (None: all, an int, or a sequence) as distinct dims in range(ndim).

    >>> normalize_dims(None, 3, "sum"), normalize_dims((-1, 0), 3, "sum")
    ((0, 1, 2), (2, 0))
    """
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    elif not isinstance(dims, (tuple, list)):
        raise TypeError(f"{op}: dim must be an int or a sequence of ints, got {type(dims).__name__}")
    out = tuple(normalize_dim(d, ndim, op) for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {list(dims)} appears multiple times in the list of dims")
    return tuple(d for d in out if d < ndim) if ndim == 0 else out

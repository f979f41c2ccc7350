"""Python data to numpy arrays, as ``tp.tensor(data)`` reads it: the dtype torch would infer for
nested lists and scalars, and the copy (or shared view) of arrays and tensors.

`tensorplay.ops._common` (``as_tensor_operand``) and the factories in `tensorplay.ops.creation`
both build tensors from data with it; it imports only the Tensor class and `tensorplay._args`.

>>> to_array([[1.0, 2.0]], None)
array([[1., 2.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType

from .._args import get_default_dtype, scalar_dtype
from .._tensor import Tensor

__all__ = ["infer_dtype", "to_array"]


def infer_dtype(data) -> DType:
    """The dtype PyTorch would pick for nested Python data.

    >>> infer_dtype([[1, 2], [3.5, 4]]), infer_dtype([True, 2]), infer_dtype([])
    (tensorplay.float32, tensorplay.int64, tensorplay.float32)
    """
    kinds = set()

    def walk(x):
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, np.ndarray):
            kinds.add(dtypes.from_numpy(x.dtype))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        else:
            try:
                kinds.add(scalar_dtype(x))
            except TypeError:
                raise TypeError(f"tensor: could not infer a dtype for an element of type {type(x).__name__} "
                                f"({x!r:.40}): expected numbers, bools, tensors, numpy arrays or (nested) "
                                f"sequences of them") from None

    walk(data)
    if not kinds:
        return get_default_dtype()
    out = None
    for k in kinds:
        out = k if out is None else dtypes.promote(out, k)
    return out


def to_array(data, dtype: DType | None, copy: bool = True) -> np.ndarray:
    """`data` (nested lists, numbers, numpy arrays or concrete tensors) as a numpy array of `dtype`
    (None: the dtype torch would infer). `copy` False shares memory with arrays and tensors when
    the dtype allows.

    >>> to_array([1, 2], None), to_array(3.0, dtypes.float64).dtype
    (array([1, 2]), dtype('float64'))
    """
    if isinstance(data, Tensor):
        arr = data._concrete("tensor(data)")
        target = dtype or data.dtype
        return np.array(arr, dtype=target.np, copy=True) if copy else arr.astype(target.np, copy=False)
    if isinstance(data, np.ndarray):
        target = dtype or dtypes.from_numpy(data.dtype)
        return np.array(data, dtype=target.np, copy=True) if copy else data.astype(target.np, copy=False)
    if isinstance(data, np.generic):  # numpy scalars keep their dtype, as in torch.tensor(np.float64(1))
        data = np.asarray(data)
        target = dtype or dtypes.from_numpy(data.dtype)
        return np.array(data, dtype=target.np)
    target = dtype or infer_dtype(data)

    def unwrap(x):
        if isinstance(x, Tensor):
            return x._concrete("tensor(data)")
        if isinstance(x, (list, tuple)):
            return [unwrap(y) for y in x]
        return x

    try:
        return np.array(unwrap(data), dtype=target.np)
    except (ValueError, TypeError) as e:
        raise ValueError(f"tensor: cannot build a tensor from {type(data).__name__}: {e}") from None

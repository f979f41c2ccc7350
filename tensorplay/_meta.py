"""Meta tensors: shape and dtype without data, as PyTorch's ``device='meta'``.

``t.to("meta")`` and ``module.to("meta")`` give tensors that allocate nothing (one
element broadcast to the shape, read-only) and report ``device(type='meta')``. They
stand where only shapes matter: the template module of ``functional_call`` in the
model-ensembling tutorial, whose parameters are replaced at every call. Reading a meta
tensor's values (``.numpy()``, ``.item()``, ``bool``) raises RuntimeError. Unlike torch,
an operation on a meta tensor is not itself a meta tensor: it computes on NaN
(floating point) or zeros.

>>> import tensorplay as tp
>>> m = tp.nn.Linear(3, 2).to("meta")
>>> m.weight.device, m.weight.is_meta, tuple(m.weight.shape)
(device(type='meta'), True, (2, 3))
>>> tp.ones(2, 3).to("meta")
tensor(..., device='meta', size=(2, 3))
>>> m.weight.numpy()
Traceback (most recent call last):
  ...
RuntimeError: .numpy(): a meta tensor (shape (2, 3)) has no data to read
"""
from __future__ import annotations

import numpy as np

__all__ = ["meta_array", "to_meta"]


def meta_array(shape: tuple, np_dtype) -> np.ndarray:
    """A read-only array of `shape` that holds one element (NaN for floats, else 0)."""
    fill = np.nan if np.dtype(np_dtype).kind == "f" else 0
    return np.broadcast_to(np.array(fill, dtype=np_dtype), tuple(shape))


def to_meta(t):
    """A meta tensor with `t`'s shape and dtype (`t` itself when already one); traced tensors are an error."""
    from ._tensor import Tensor

    if t.is_traced:
        raise RuntimeError(f"to('meta'): not supported under a transform (shape {tuple(t.shape)})")
    if t._meta:
        return t
    out = Tensor._wrap(meta_array(t.shape, t._data.dtype))
    out._meta = True
    return out

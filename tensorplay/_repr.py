"""PyTorch-style printing: ``tensor([0., 0., 0.])``, ``tensor(3.5000)``, ``dtype=`` when not default."""
from __future__ import annotations

import numpy as np

from ir import dtypes


def _float_formatter(arr: np.ndarray):
    finite = arr[np.isfinite(arr)]
    if finite.size == 0 or np.all(finite == np.round(finite)) and (finite.size == 0 or np.abs(finite).max() < 1e8):
        fmt = lambda v: f"{v:.0f}." if np.isfinite(v) else _special(v)  # noqa: E731
    else:
        amax, amin = np.abs(finite).max(), np.abs(finite[finite != 0]).min() if np.any(finite != 0) else 0.0
        if amax >= 1e8 or (amin and amin < 1e-4) or (amin and amax / amin > 1e5):
            fmt = lambda v: f"{v:.4e}" if np.isfinite(v) else _special(v)  # noqa: E731
        else:
            fmt = lambda v: f"{v:.4f}" if np.isfinite(v) else _special(v)  # noqa: E731
    return fmt


def _special(v) -> str:
    return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")


def _format_array(arr: np.ndarray) -> str:
    if arr.dtype == np.bool_:
        fmt = lambda v: "True" if v else "False"  # noqa: E731
    elif arr.dtype.kind == "f":
        fmt = _float_formatter(arr)
    else:
        fmt = lambda v: str(int(v))  # noqa: E731
    if arr.ndim == 0:
        return fmt(arr.item())
    width = max((len(fmt(v)) for v in arr.flat), default=0)
    summarize = arr.size > 1000
    return np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000 if summarize else arr.size + 1,
                           edgeitems=3, max_line_width=80,
                           formatter={"all": lambda v: fmt(v).rjust(width)})


def tensor_repr(t) -> str:
    """The repr of tensor `t` (symbolic tensors show their type and transform)."""
    if t._trace is not None:
        return f"Tensor(shape={tuple(t.shape)}, dtype={t.dtype.name}, traced under {t._trace.transform})"
    arr = t._data
    body = _format_array(arr)
    extras = []
    if arr.size == 0 and arr.ndim != 1:
        extras.append(f"size={tuple(arr.shape)}")
    default = dtypes.float32 if arr.dtype.kind == "f" else dtypes.int64
    from .ops._common import get_default_dtype

    if arr.dtype.kind == "f":
        default = get_default_dtype()
    if t.dtype is not default and t.dtype is not dtypes.bool_:
        extras.append(f"dtype={t.dtype!r}")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"

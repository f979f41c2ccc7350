"""`tp.finfo` and `tp.iinfo`: the numeric limits of a dtype, as torch.finfo / torch.iinfo.

The 16-bit floats are here too: float16 from numpy, bfloat16 from ml_dtypes
(the optional extra that provides its numpy dtype).
"""
from __future__ import annotations

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType


def _dtype(d, op: str, want: str) -> DType:
    from ._device import as_dtype

    if d is None:
        from .ops._common import get_default_dtype

        d = get_default_dtype()
    d = as_dtype(d, op)
    if (want == "f") != d.is_floating_point or d.is_bool:
        kind = "floating point" if want == "f" else "integer"
        raise TypeError(f"{op}: {d!r} is not a {kind} dtype")
    return d


class finfo:
    """Limits of a floating dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution`` and ``dtype`` (its name), as ``torch.finfo``. Without an argument: the default dtype.

    >>> import tensorplay as tp
    >>> f = tp.finfo(tp.float16)
    >>> f.bits, f.eps, f.max, f.tiny
    (16, 0.0009765625, 65504.0, 6.103515625e-05)
    """

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):  # noqa: A002  (torch's parameter name)
        d = _dtype(type, "finfo", "f")
        info = _ml_finfo(d) if d is dtypes.bfloat16 else np.finfo(d.np)
        self.bits = int(d.itemsize * 8)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -int(-np.log10(self.eps))  # numpy's rule (ml_dtypes' bfloat16 differs)
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` and ``dtype``, as ``torch.iinfo``.

    >>> import tensorplay as tp
    >>> tp.iinfo(tp.int32).max
    2147483647
    """

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type):  # noqa: A002
        d = _dtype(type, "iinfo", "i")
        info = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = int(info.bits), int(info.max), int(info.min), d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def _ml_finfo(d: DType):
    import ml_dtypes

    return ml_dtypes.finfo(d.np)

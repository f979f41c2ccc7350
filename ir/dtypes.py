"""Element types of the IR.

A `DType` is an immutable singleton; `tensorplay.float32` *is* `ir.dtypes.float32`.
The short name (`f32`) is what the text format prints.
"""
from __future__ import annotations

import numpy as np


class DType:
    """One element type: its names, numpy counterpart and category."""

    __slots__ = ("name", "short", "np", "kind", "itemsize")

    def __init__(self, name: str, short: str, np_dtype, kind: str):
        self.name = name
        self.short = short
        self.np = np.dtype(np_dtype)
        self.kind = kind  # 'b' bool, 'i' integer, 'f' floating
        self.itemsize = self.np.itemsize

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def __repr__(self) -> str:
        return f"tensorplay.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


float32 = DType("float32", "f32", np.float32, "f")
float64 = DType("float64", "f64", np.float64, "f")
int32 = DType("int32", "i32", np.int32, "i")
int64 = DType("int64", "i64", np.int64, "i")
bool_ = DType("bool", "i1", np.bool_, "b")

ALL = (bool_, int32, int64, float32, float64)
FLOATS = (float32, float64)
INTS = (int32, int64)
_BY_SHORT = {d.short: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL}
_CATEGORY_RANK = {"b": 0, "i": 1, "f": 2}


def from_short(short: str) -> DType:
    """The dtype printed as `short` in the text format (`f32`, `i64`, `i1`, ...)."""
    try:
        return _BY_SHORT[short]
    except KeyError:
        raise ValueError(f"unknown element type {short!r}; expected one of {sorted(_BY_SHORT)}") from None


def from_name(name: str) -> DType:
    return _BY_NAME[name]


def from_numpy(np_dtype) -> DType:
    """The dtype for a numpy dtype; float16 and unsigned types are rejected."""
    dt = np.dtype(np_dtype)
    try:
        return _BY_NP[dt]
    except KeyError:
        raise TypeError(f"numpy dtype {dt} has no tensorplay counterpart "
                        f"(supported: {', '.join(d.name for d in ALL)})") from None


def category(dtype: DType) -> int:
    """0 for bool, 1 for integers, 2 for floating point: the promotion category."""
    return _CATEGORY_RANK[dtype.kind]


def promote(a: DType, b: DType) -> DType:
    """The smallest dtype holding both (PyTorch's promotion lattice for our dtypes)."""
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    return a if a.itemsize >= b.itemsize else b

"""Helpers shared by primitive declarations: type checks with clear messages."""
from __future__ import annotations

from typing import Iterable

from .. import dtypes as dt
from ..types import TensorType


def fail(op: str, msg: str, exc=ValueError):
    raise exc(f"{op}: {msg}")


def check_dtypes(op: str, t: TensorType, allowed: Iterable, what: str = "operand", *,
                 low_precision: bool = True) -> None:
    """TypeError naming `op` unless `t`'s dtype is in `allowed`. The 16-bit floats (computed in
    float32) pass wherever float32 does, unless `low_precision` is False."""
    allowed = tuple(allowed)
    if t.dtype not in allowed and not (low_precision and dt.is_low_float(t.dtype) and dt.float32 in allowed):
        names = ", ".join(d.name for d in allowed)
        fail(op, f"{what} of type {t} has unsupported dtype {t.dtype.name} (expected one of: {names})", TypeError)


def check_same(op: str, *types: TensorType) -> None:
    first = types[0]
    for t in types[1:]:
        if t.shape != first.shape:
            fail(op, f"operand shapes {', '.join(str(tuple(x.shape)) for x in types)} must be equal")
        if t.dtype is not first.dtype:
            fail(op, f"operand dtypes {', '.join(x.dtype.name for x in types)} must be equal", TypeError)


def check_axes(op: str, axes, ndim: int, unique: bool = True, shape=None) -> tuple[int, ...]:
    axes = tuple(axes)
    for a in axes:
        if not isinstance(a, int) or not 0 <= a < ndim:
            where = f" (operand shape {tuple(shape)})" if shape is not None else ""
            fail(op, f"axis {a} out of range for rank {ndim}{where}")
    if unique and len(set(axes)) != len(axes):
        fail(op, f"repeated axis in {list(axes)}")
    return axes

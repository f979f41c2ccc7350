"""`argsort`: the stable sorting permutation along one axis.

Sorting is declared as its permutation only: values are ``take``-along-axis of
the permutation (`tensorplay/ops/sorting.py`), so their derivatives come from
``take``'s rules and the permutation itself, an integer result, is constant.
NaN sorts above every number (first when descending), as in PyTorch; equal
elements keep their order in both directions (``stable=True``).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..primitive import Primitive, register
from ..rules import shift_axis
from ..types import TensorType
from ._util import check_axes, check_dtypes


def _argsort_type(x: TensorType, *, axis, descending) -> TensorType:
    check_dtypes("argsort", x, dt.ALL)
    check_axes("argsort", (axis,), x.ndim, shape=x.shape)
    if not isinstance(descending, bool):
        raise TypeError(f"argsort: descending must be a bool, got {descending!r}")
    return TensorType(x.shape, dt.int64)


def stable_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """numpy's stable argsort (NaN last), or the stable descending order (NaN first).

    >>> stable_argsort(np.array([1.0, np.nan, 1.0, 3.0]), 0, True).tolist()
    [1, 3, 0, 2]
    """
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")  # ties come out reversed ...
    return (n - 1) - np.flip(flipped, axis)  # ... and flipping back restores their order


def _argsort_impl(x, *, axis, descending):
    return stable_argsort(x, axis, descending).astype(np.int64)


argsort = register(Primitive("argsort", _argsort_type, _argsort_impl, num_operands=1, differentiable=False,
                             family="indexing", doc="stable sorting permutation along `axis` (NaN largest)"))


@argsort.def_batch
def _argsort_batch(ctx, values, dims, *, axis, descending):
    (x,), (d,) = values, dims
    return ctx.argsort(x, axis=shift_axis(axis, d), descending=descending), d

"""`constant`: a tensor whose elements are part of the graph (see `ir.constants`)."""
from __future__ import annotations

from ..constants import DenseElements
from ..primitive import Primitive, register
from ..rules import constant as unbatched
from ..types import TensorType
from ._util import fail


def _constant_type(*, value) -> TensorType:
    if not isinstance(value, DenseElements):
        fail("constant", f"value must be DenseElements, got {type(value).__name__}", TypeError)
    return value.type


def _constant_impl(*, value):
    return value.array  # read-only: nothing downstream may write into the graph's own elements


constant = register(Primitive("constant", _constant_type, _constant_impl, num_operands=0, differentiable=False,
                              family="constant", doc="a tensor whose elements are stored in the graph"))
constant.def_batch(unbatched(constant))  # no operands: the same for every sample

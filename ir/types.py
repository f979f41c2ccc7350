"""Static tensor types: a shape tuple and a dtype."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .dtypes import DType


@dataclass(frozen=True, slots=True)
class TensorType:
    """The type of an SSA value: a static shape and an element type."""

    shape: tuple[int, ...]
    dtype: DType

    def __post_init__(self):
        if not all(isinstance(d, int) and d >= 0 for d in self.shape):
            raise ValueError(f"invalid shape {self.shape}: dimensions must be non-negative ints")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype.short}>"

    __repr__ = __str__

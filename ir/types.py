"""Static tensor types: a shape tuple and a dtype."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .dtypes import DType

_new = object.__new__
_setattr = object.__setattr__


@dataclass(frozen=True, slots=True)
class TensorType:
    """The type of an SSA value: a static shape and an element type."""

    shape: tuple[int, ...]
    dtype: DType

    def __init__(self, shape: tuple[int, ...], dtype: DType):
        # written out (the dataclass keeps it): this runs for every type a shape rule builds
        _setattr(self, "shape", shape)
        _setattr(self, "dtype", dtype)
        for d in shape:
            if not (d.__class__ is int or isinstance(d, int)) or d < 0:
                raise ValueError(f"invalid shape {self.shape}: dimensions must be non-negative ints")

    @classmethod
    def _trusted(cls, shape: tuple[int, ...], dtype: DType) -> "TensorType":
        """Internal fast construction from an already-valid shape (a tuple of non-negative ints,
        e.g. a numpy array's shape or another TensorType's): no validation runs."""
        t = _new(cls)
        _setattr(t, "shape", shape)
        _setattr(t, "dtype", dtype)
        return t

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


@dataclass(frozen=True, slots=True)
class TupleType:
    """The type of a control-flow node's result: a fixed sequence of tensor types.

    Graph inputs and outputs are never tuples; `tuple_get` projects an element.

    >>> from tensorplay.ir import float32, int32
    >>> TupleType((TensorType((3, 4), float32), TensorType((), int32)))
    tuple<3x4xf32, i32>
    """

    elements: tuple[TensorType, ...]

    def __init__(self, elements):
        elements = tuple(elements)
        for e in elements:
            if not isinstance(e, TensorType):
                raise TypeError(f"tuple elements must be tensor types, got {e!r}")
        _setattr(self, "elements", elements)

    def __len__(self) -> int:
        return len(self.elements)

    def __getitem__(self, i: int) -> TensorType:
        return self.elements[i]

    def __iter__(self):
        return iter(self.elements)

    def __str__(self) -> str:
        return "tuple<" + ", ".join(element_text(e) for e in self.elements) + ">"

    __repr__ = __str__


def element_text(t: TensorType) -> str:
    """A tensor type without its ``tensor<...>`` wrapper, as tuple types print it: ``3x4xf32``, ``i32``."""
    return "".join(f"{d}x" for d in t.shape) + t.dtype.short


def is_tuple(t) -> bool:
    """True for a `TupleType` (a control-flow node's result)."""
    return t.__class__ is TupleType

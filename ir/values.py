"""SSA values and nodes: the objects a graph is made of (`ir.core` adds graphs and the builder)."""
from __future__ import annotations

import itertools
from typing import Any, Mapping

from .types import TensorType

__all__ = ["Value", "Node", "freeze_attr"]

_ids = itertools.count()


class Value:
    """An SSA value: produced once (by a node, or as a graph input), typed statically."""

    __slots__ = ("type", "node", "id")

    def __init__(self, type: TensorType, node: "Node | None" = None):
        self.type = type
        self.node = node
        self.id = next(_ids)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        return f"Value#{self.id}:{self.type}"


def freeze_attr(v: Any) -> Any:
    """Attributes are hashable: lists become tuples, recursively.

    An attribute that is already frozen (a scalar, a dtype, a tuple of those or of frozen
    tuples) is returned as is, without copying: that is the common case, checked first.
    """
    cls = v.__class__
    if cls is tuple:
        for x in v:
            c = x.__class__
            if c is tuple:
                if freeze_attr(x) is not x:
                    break
            elif c is list or isinstance(x, (list, tuple)):
                break
        else:
            return v
        return tuple(freeze_attr(x) for x in v)
    if cls is list or isinstance(v, (list, tuple)):
        return tuple(freeze_attr(x) for x in v)
    return v


class Node:
    """One primitive application: `out = prim(*inputs, **attrs)`."""

    __slots__ = ("prim", "inputs", "attrs", "out")

    def __init__(self, prim, inputs: tuple[Value, ...], attrs: Mapping[str, Any], out_type: TensorType):
        self.prim = prim
        self.inputs = tuple(inputs)
        self.attrs = dict(attrs)
        self.out = Value(out_type, self)

    @classmethod
    def typed(cls, prim, inputs: tuple[Value, ...], attrs: dict[str, Any], out_type: TensorType) -> "Node":
        """A node whose result type is already known (internal fast path for passes that copy nodes).

        `inputs` must be a tuple and `attrs` a frozen dict the node may keep (no copy is made);
        no type rule runs, so the caller vouches for `out_type` (the verifier re-derives it).
        """
        node = object.__new__(cls)
        node.prim = prim
        node.inputs = inputs
        node.attrs = attrs
        node.out = Value(out_type, node)
        return node

    def __repr__(self) -> str:
        return f"Node({self.prim.name}, {self.inputs}, {self.attrs}) -> {self.out}"

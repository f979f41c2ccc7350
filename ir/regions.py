"""Regions: the subgraphs that control-flow primitives carry in their attributes.

A `Region` wraps a closed `Graph` (it reads only its own inputs: outer values a
body needs are passed to the node as extra leading operands). It is frozen,
hashable and compared by the graph's `structural_key`, so node attributes that
hold regions stay hashable, and the pipeline caches and CSE see structurally
equal regions as equal.

>>> from tensorplay.ir import GraphBuilder, TensorType, float32
>>> def body():
...     b = GraphBuilder("body"); x = b.add_input(TensorType((3,), float32))
...     return Region(b.build([b.sin(x)]))
>>> r = body()
>>> r == body(), hash(r) == hash(body()), r.in_types, r.out_types
(True, True, [tensor<3xf32>], [tensor<3xf32>])
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .types import TensorType, is_tuple

if TYPE_CHECKING:
    from .core import Graph

__all__ = ["Region", "is_region", "region_attrs"]

_setattr = object.__setattr__


class Region:
    """A closed subgraph held by a node attribute, with its typed signature.

    `graph` is the body; `in_types` / `out_types` its signature (tensor types only:
    regions, like graphs, never take or return tuples).
    """

    __slots__ = ("graph", "_key", "_hash")

    def __init__(self, graph: "Graph"):
        for what, types in (("input", graph.in_types), ("output", graph.out_types)):
            for i, t in enumerate(types):
                if not isinstance(t, TensorType):
                    kind = "a tuple" if is_tuple(t) else type(t).__name__
                    raise TypeError(f"region @{graph.name}: {what} {i} is {kind} ({t}); region inputs and "
                                    f"outputs are tensors (project tuples with tuple_get)")
        _setattr(self, "graph", graph)
        _setattr(self, "_key", None)
        _setattr(self, "_hash", None)

    def __setattr__(self, name, value):
        raise AttributeError("Region is immutable")

    @property
    def key(self) -> tuple:
        """The graph's structural key (computed once: the graph is never changed)."""
        key = self._key
        if key is None:
            key = self.graph.structural_key()
            _setattr(self, "_key", key)
        return key

    @property
    def in_types(self) -> list[TensorType]:
        return self.graph.in_types

    @property
    def out_types(self) -> list[TensorType]:
        return self.graph.out_types

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(self.key)
            _setattr(self, "_hash", h)
        return h

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, Region):
            return NotImplemented
        return hash(self) == hash(other) and self.key == other.key

    def __repr__(self) -> str:
        ins = ", ".join(str(t) for t in self.in_types)
        outs = ", ".join(str(t) for t in self.out_types)
        return f"<Region @{self.graph.name}: ({ins}) -> ({outs}), {len(self.graph.nodes)} nodes>"

    def __reduce__(self):
        return (Region, (self.graph,))


def is_region(a) -> bool:
    """True for a `Region` attribute value."""
    return a.__class__ is Region


def region_attrs(attrs: dict) -> list[tuple[str, Region]]:
    """The (name, region) attributes of a node, sorted by name (the printer's order)."""
    return sorted([(k, a) for k, a in attrs.items() if a.__class__ is Region])

"""A graph as a networkx `MultiDiGraph`, for analysis and drawing.

Vertices are named as the printer names values: ``%arg0`` for input 0,
``%3`` for the result of node 3, and ``return:0`` for output 0 (only with
``outputs=True``). Every vertex carries

=========  =============================================================
attribute  meaning
=========  =============================================================
kind       ``"input"``, ``"op"`` or ``"output"``
op         primitive name (``"input"`` / ``"return"`` for the others)
index      input, node or output position
type       the `TensorType` of the value (of the returned value for outputs)
attrs      the node's attributes (empty dict for inputs and outputs)
label      short text for drawings: ``sin``, ``%arg0``, ``return 0``
text       the full IR line of a node, for tooltips
node       the `ir.Node` (None for inputs and outputs)
=========  =============================================================

Edges run from producer to consumer; their key is the operand position (so
``mul %0, %0`` gives two parallel edges) and they carry ``type``, ``shape``
(``"3x4"``, ``""`` for a scalar), ``dtype`` and ``operand``.

This module imports networkx lazily so that ``import ir`` stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .printer import print_node, value_names
from .types import element_text, is_tuple

if TYPE_CHECKING:  # pragma: no cover
    import networkx

    from .core import Graph, Value

__all__ = ["to_networkx", "shape_label"]


def shape_label(v: Value) -> str:
    """The edge label of a value: ``3x4xf32``; ``f32`` for a scalar; ``(4xf32, 10x4xf32)`` for a tuple."""
    if is_tuple(v.type):
        return "(" + ", ".join(element_text(t) for t in v.type.elements) + ")"
    return element_text(v.type)


def to_networkx(graph: Graph, *, outputs: bool = True) -> "networkx.MultiDiGraph":
    """Convert `graph` to a `networkx.MultiDiGraph` (see the module docstring for the attributes).

    >>> from tensorplay import ir
    >>> b = ir.GraphBuilder("f")
    >>> x = b.add_input(ir.TensorType((3,), ir.float32))
    >>> g = b.build([b.mul(x, b.sin(x))])
    >>> G = to_networkx(g)
    >>> sorted(G.nodes)
    ['%0', '%1', '%arg0', 'return:0']
    >>> G.nodes['%1']['op'], G.number_of_edges('%arg0', '%1')
    ('mul', 1)
    """
    import networkx as nx

    names = value_names(graph)
    G = nx.MultiDiGraph(name=graph.name)
    for i, v in enumerate(graph.inputs):
        G.add_node(names[v], kind="input", op="input", index=i, type=v.type, attrs={}, node=None,
                   label=names[v], text=f"{names[v]}: {v.type}")
    for i, n in enumerate(graph.nodes):
        G.add_node(names[n.out], kind="op", op=n.prim.name, index=i, type=n.out.type, attrs=dict(n.attrs),
                   node=n, label=n.prim.name, text=print_node(n, names))
        for k, v in enumerate(n.inputs):
            _add_edge(G, names, v, names[n.out], k)
    if outputs:
        for i, v in enumerate(graph.outputs):
            vid = f"return:{i}"
            G.add_node(vid, kind="output", op="return", index=i, type=v.type, attrs={}, node=None,
                       label=f"return {i}" if len(graph.outputs) > 1 else "return", text=f"return {names.get(v, '?')}")
            _add_edge(G, names, v, vid, 0)
    return G


def _add_edge(G, names: dict, v: Value, target: str, operand: int) -> None:
    source = names.get(v)
    if source is None:  # a value defined nowhere in the graph (malformed); keep the drawing honest
        source = f"?{v.id}"
        G.add_node(source, kind="input", op="undefined", index=-1, type=v.type, attrs={}, node=None,
                   label="undefined", text=f"undefined value: {v.type}")
    G.add_edge(source, target, key=operand, operand=operand, type=v.type, shape=shape_label(v),
               dtype="tuple" if is_tuple(v.type) else v.type.dtype.short)

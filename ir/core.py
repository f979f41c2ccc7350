"""The graph IR: SSA values, nodes, graphs, and a builder that emits nodes.

A `Graph` is immutable by convention: passes read one graph and build another
with a `GraphBuilder`. Every node has exactly one result `Value`.
"""
from __future__ import annotations

from math import prod
from typing import Any, Iterable, Mapping

import numpy as np

from . import dtypes
from .constants import DenseElements
from .primitive import REGISTRY, get_primitive
from .printer import print_graph
from .regions import Region
from .types import TensorType, TupleType
from .values import Node, Value, freeze_attr

__all__ = ["Graph", "GraphBuilder", "Node", "Value", "freeze_attr", "inline", "bind_constants", "result_type",
           "MAX_BYTES"]

# A tensor may not span more bytes than a signed 64-bit offset can address (numpy's own limit):
# a larger type is an error when it is built, not an endless loop in compiled code.
MAX_BYTES = 2 ** 63 - 1

class Graph:
    """A function in SSA form: typed inputs, nodes in topological order, outputs."""

    def __init__(self, inputs: Iterable[Value], nodes: Iterable[Node], outputs: Iterable[Value], name: str = "f",
                 arg_attrs: Mapping[Value, Mapping[str, Any]] | None = None):
        self.inputs = list(inputs)
        self.nodes = list(nodes)
        self.outputs = list(outputs)
        self.name = name
        # Notes on inputs that change no semantics, printed after the input's type as in MLIR
        # (``%arg1: tensor<2xi64> {tp.capture = "random_key"}``); passes may drop them.
        self.arg_attrs: dict[Value, dict[str, Any]] = {v: dict(a) for v, a in (arg_attrs or {}).items() if a}

    @property
    def in_types(self) -> list[TensorType]:
        return [v.type for v in self.inputs]

    @property
    def out_types(self) -> list[TensorType]:
        return [v.type for v in self.outputs]

    def __str__(self) -> str:
        return print_graph(self)

    def __repr__(self) -> str:
        return f"<Graph @{self.name}: {len(self.inputs)} inputs, {len(self.nodes)} nodes, {len(self.outputs)} outputs>"

    def structural_key(self) -> tuple:
        """A hashable key equal for graphs that differ only in value identities and name."""
        index = {v: i for i, v in enumerate(self.inputs)}
        body = []
        for n in self.nodes:
            index[n.out] = len(index)
            attrs = n.attrs
            if not attrs:
                akey = ()
            elif len(attrs) == 1:
                ((k, a),) = attrs.items()
                akey = ((k, _attr_key(a)),)
            else:
                akey = tuple(sorted([(k, _attr_key(a)) for k, a in attrs.items()]))
            t = n.out.type  # types as (shape, dtype): compared and hashed without Python-level methods
            if t.__class__ is TupleType:
                body.append((n.prim.name, tuple([index[v] for v in n.inputs]), akey, t, None))
                continue
            body.append((n.prim.name, tuple([index[v] for v in n.inputs]), akey, t.shape, t.dtype))
        return (tuple([(v.type.shape, v.type.dtype) for v in self.inputs]), tuple(body),
                tuple([index[v] for v in self.outputs]))

    def structural_hash(self) -> int:
        return hash(self.structural_key())

    # Jupyter's rich display: the drawing lives in tensorplay.tools.viz (see `set_display`).
    def _repr_html_(self):
        return _rich_display(self, "html")

    def _repr_svg_(self):
        return _rich_display(self, "svg")

    def to_networkx(self, *, outputs: bool = True):
        """This graph as a `networkx.MultiDiGraph` (see `ir.nx.to_networkx`)."""
        from .nx import to_networkx

        return to_networkx(self, outputs=outputs)


# Rich display hook. `ir` never imports the drawing code (tools depends on ir, not the other way):
# a renderer registers itself with `set_display`; the first display of a graph imports the module
# named by DISPLAY_MODULE (which registers its renderers), if it is installed.
DISPLAY_MODULE = "tensorplay.tools.viz"
_DISPLAY: dict[str, Any] = {}


def set_display(kind: str, render) -> None:
    """Register `render(graph) -> str` as the notebook display of graphs (`kind` 'html' or 'svg')."""
    _DISPLAY[kind] = render


def _rich_display(graph: "Graph", kind: str):
    render = _DISPLAY.get(kind)
    if render is None and DISPLAY_MODULE:
        import importlib

        try:
            importlib.import_module(DISPLAY_MODULE)
        except ImportError:
            return None  # no renderer installed: the notebook shows repr()
        render = _DISPLAY.get(kind)
    return None if render is None else render(graph)


def _attr_key(a: Any) -> Any:
    if isinstance(a, float):
        return ("float", a.hex() if a == a else "nan")
    if a.__class__ is Region:  # a subgraph: its own structural key (value identities and names ignored)
        return ("region", a.key)
    return a


class GraphBuilder:
    """Emits nodes into a new graph, running each primitive's type rule.

    Primitives are available as methods: `b.sin(x)`, `b.reshape(x, shape=(2, 3))`.
    """

    def __init__(self, name: str = "f"):
        self.name = name
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.arg_attrs: dict[Value, dict[str, Any]] = {}

    def add_input(self, type: TensorType, attrs: Mapping[str, Any] | None = None) -> Value:
        """A new graph input of `type`; `attrs` are its notes (see `Graph.arg_attrs`)."""
        v = Value(type)
        self.inputs.append(v)
        if attrs:
            self.arg_attrs[v] = dict(attrs)
        return v

    def emit(self, prim, *inputs: Value, **attrs) -> Value:
        """Append `prim(*inputs, **attrs)` and return its result value."""
        if isinstance(prim, str):
            prim = REGISTRY.get(prim) or get_primitive(prim)
        if attrs:
            attrs = {k: freeze_attr(v) for k, v in attrs.items()}
        for v in inputs:
            if v.__class__ is not Value and not isinstance(v, Value):
                raise TypeError(f"{prim.name}: operands must be IR values, got {type(v).__name__}")
        out_type = result_type(prim, [v.type for v in inputs], attrs)
        node = Node.typed(prim, inputs, attrs, out_type)  # `inputs` and `attrs` are this call's own
        self.nodes.append(node)
        return node.out

    def emit_typed(self, prim, inputs: tuple[Value, ...], attrs: dict[str, Any], out_type: TensorType) -> Value:
        """Append a node whose result type is known and whose `attrs` are frozen; no type rule runs.

        The fast path of passes that copy or filter nodes: `attrs` is copied (the new graph
        never shares a mutable dict with the graph it was read from).
        """
        node = Node.typed(prim, inputs, dict(attrs), out_type)
        self.nodes.append(node)
        return node.out

    def emit_copy(self, node: Node, inputs: tuple[Value, ...]) -> Value:
        """Re-emit `node` on `inputs`, which must have the types of its own operands (checked).

        Same primitive, attributes and result type; no type rule runs.
        """
        for new, old in zip(inputs, node.inputs, strict=True):
            if new.type is not old.type and new.type != old.type:
                raise TypeError(f"{node.prim.name}: copying a node onto an operand of type {new.type}, "
                                f"expected {old.type}")
        return self.emit_typed(node.prim, inputs, node.attrs, node.out.type)

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in REGISTRY:
            raise AttributeError(name)
        prim = REGISTRY[name]
        return lambda *inputs, **attrs: self.emit(prim, *inputs, **attrs)

    # --- small conveniences used by rules -------------------------------------------------
    def const(self, value, shape: tuple[int, ...] = (), dtype=None) -> Value:
        """A constant filled with the Python scalar `value` (dtype defaults to float32)."""
        return self.emit("full", shape=tuple(shape), dtype=dtype or dtypes.float32, value=value)

    def const_like(self, x: Value, value) -> Value:
        return self.const(value, x.shape, x.dtype)

    def zeros_like(self, x: Value) -> Value:
        return self.const_like(x, False if x.dtype.is_bool else 0)

    def results(self, v: Value) -> list[Value]:
        """The tensors of `v`: ``[v]`` for a tensor, one ``tuple_get`` per element for a tuple."""
        if v.type.__class__ is not TupleType:
            return [v]
        return [self.emit("tuple_get", v, index=i) for i in range(len(v.type.elements))]

    def build(self, outputs: Iterable[Value]) -> Graph:
        return Graph(self.inputs, self.nodes, list(outputs), self.name, self.arg_attrs)


def result_type(prim, in_types: list[TensorType], attrs: dict[str, Any]) -> TensorType:
    """The type of `prim` applied to `in_types`: its shape rule, with errors naming the op, and a
    ValueError when the result could not exist (more bytes than a tensor can hold)."""
    try:
        out_type = prim.abstract_eval(*in_types, **attrs)
    except TypeError as e:
        if str(e).startswith(prim.name):
            raise
        raise TypeError(f"{prim.name}: {e}") from None
    if out_type.__class__ is TupleType:
        for t in out_type.elements:
            if t.shape and prod(t.shape) * t.dtype.itemsize > MAX_BYTES:
                _too_big(prim.name, t)
    elif out_type.shape and prod(out_type.shape) * out_type.dtype.itemsize > MAX_BYTES:
        _too_big(prim.name, out_type)
    return out_type


def _too_big(op: str, t: TensorType):
    n = prod(t.shape)
    raise ValueError(f"{op}: result {t} would have {n} elements ({n * t.dtype.itemsize} bytes), more than a "
                     f"tensor can hold (at most {MAX_BYTES} bytes)")


def inline(builder: GraphBuilder, graph: Graph, args: Iterable[Value]) -> list[Value]:
    """Re-emit `graph`'s nodes into `builder` with its inputs bound to `args`; return its outputs."""
    env: dict[Value, Value] = dict(zip(graph.inputs, args, strict=True))
    for n in graph.nodes:
        env[n.out] = builder.emit_copy(n, tuple([env[v] for v in n.inputs]))
    return [env[v] for v in graph.outputs]


def bind_constants(graph: Graph, values: Mapping[int, np.ndarray]) -> Graph:
    """`graph` with input ``i`` replaced by a `constant` node of ``values[i]`` for each key.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32)); c = b.add_input(TensorType((2,), float32))
    >>> g = bind_constants(b.build([b.add(x, c)]), {1: np.array([1.0, 2.0], np.float32)})
    >>> len(g.inputs), [n.prim.name for n in g.nodes]
    (1, ['constant', 'add'])
    """
    for i, a in values.items():
        t = graph.inputs[i].type
        if tuple(np.shape(a)) != t.shape or dtypes.from_numpy(np.asarray(a).dtype) is not t.dtype:
            raise ValueError(f"bind_constants: input {i} of @{graph.name} is {t}, the value is "
                             f"{np.asarray(a).dtype}{list(np.shape(a))}")
    b = GraphBuilder(graph.name)
    env = {}
    for i, v in enumerate(graph.inputs):
        env[v] = b.add_input(v.type, graph.arg_attrs.get(v)) if i not in values else None
    for i, a in values.items():
        env[graph.inputs[i]] = b.emit("constant", value=DenseElements(a))
    for n in graph.nodes:
        env[n.out] = b.emit_copy(n, tuple(env[v] for v in n.inputs))
    return b.build([env[v] for v in graph.outputs])

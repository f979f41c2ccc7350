"""Tracing: turning Python functions over tensors into graphs, and running graphs.

A `Trace` owns a `GraphBuilder`. Tensors of an active trace are symbolic:
every op on them emits a node. Tensors from outside the trace (concrete
tensors, or symbolic tensors of an enclosing trace) become *captured inputs*
of the graph, supplied again at every call, so a model updated in place is seen
as it is now. Random draws inside a trace read a fresh key per call through a
`RandomKey` capture.

Running a graph (`call_graph`) either executes it (all inputs concrete) or, if
some input belongs to an enclosing trace, inlines it there: that one rule is
what makes transforms compose.

Views and in-place writes are functionalized while tracing (`tensorplay._views`):
graphs are always functional, and the final values of arguments and captures
that the function wrote in place are extra graph outputs (`ClosedGraph.mutated`)
that call sites store back with `ClosedGraph.write_back`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tensorplay.ir import Graph, GraphBuilder, TensorType, Value, dtypes
from tensorplay.ir.core import freeze_attr
from tensorplay.ir.passes.simplify import dce
from tensorplay.ir.primitive import REGISTRY, Primitive, get_primitive

from . import _pytree, _views

_STACK: list["Trace"] = []
_levels = itertools.count(1)


class TracingError(RuntimeError):
    """A traced value was used where a concrete one is needed (Python control flow, .item(), ...)."""


def transform_stack() -> str:
    """The active transforms, outermost first: ``vmap(in_dims=0) > grad(argnums=0)``."""
    return " > ".join(t.transform for t in _STACK)


def current_trace() -> "Trace | None":
    return _STACK[-1] if _STACK else None


class RandomKey:
    """A capture source for one random draw of `count` elements: a fresh (seed, offset) key per call."""

    def __init__(self, count: int):
        self.count = count

    def read(self) -> np.ndarray:
        from . import random as _random

        return _random.default_generator.take_key(self.count)

    def materialize(self):
        """The key as a tensor of the innermost active trace, or concrete at top level."""
        trace = current_trace()
        if trace is None:
            return Tensor._wrap(self.read())
        return Tensor._symbolic(trace, trace.capture(self, TensorType((2,), dtypes.int64)))


class Trace:
    """One level of tracing: a graph under construction plus its captures."""

    def __init__(self, transform: str = "trace", name: str = "f"):
        self.transform = transform
        self.level = next(_levels)
        self.builder = GraphBuilder(name)
        self.arg_values: list[Value] = []
        self.capture_values: list[Value] = []
        self.capture_sources: list[Any] = []
        self._capture_index: dict[int, Value] = {}
        self.active = False
        self.views = _views.TraceViews()  # aliasing bookkeeping: arguments, proxies of outside storages
        self.mutated: list[int] = []      # set by finish(): inputs whose final values are extra outputs
        self.output_aliases: list = []    # set by finish(): (input index, view steps) per output, or None

    # --- entering and leaving -------------------------------------------------------------------
    def __enter__(self) -> "Trace":
        self.active = True
        _STACK.append(self)
        return self

    def __exit__(self, *exc) -> None:
        assert _STACK[-1] is self, "trace stack corrupted"
        _STACK.pop()
        self.active = False

    # --- values ---------------------------------------------------------------------------------
    def new_arg(self, type: TensorType):
        v = Value(type)
        self.arg_values.append(v)
        t = Tensor._symbolic(self, v)
        self.views.args.append(t)
        return t

    def capture(self, source: Any, type: TensorType) -> Value:
        """The input standing for `source` (a Tensor or RandomKey), created on first use."""
        key = id(source)
        v = self._capture_index.get(key)
        if v is None:
            v = Value(type)
            self._capture_index[key] = v
            self.capture_values.append(v)
            self.capture_sources.append(source)
        return v

    def lift(self, t) -> Value:
        """The value of tensor `t` inside this trace (capturing its storage if it comes from outside)."""
        if t._trace is self:
            return t._value
        return _views.lift_outside(self, t)

    def emit(self, prim: Primitive, operands: Sequence, attrs: dict):
        vals = [t._value if t._trace is self else _views.lift_outside(self, t) for t in operands]  # self.lift
        out = Tensor._symbolic(self, self.builder.emit(prim, *vals, **attrs))
        if prim.name not in _VIEW_PRIMS:
            return out
        return _views.traced_result(prim, attrs, operands, out)

    def finish(self, outputs: Sequence) -> Graph:
        """The graph returning `outputs`, then the final value of every input written in place.

        Sets `self.mutated` (the graph-input index of each extra output) and
        `self.output_aliases` (see `_views.finish_writes`).
        """
        outs = [self.lift(t) for t in outputs]
        self.mutated, written, self.output_aliases = _views.finish_writes(self, outputs)
        graph = Graph(self.arg_values + self.capture_values, self.builder.nodes, outs + written, self.builder.name)
        return dce(graph)  # inlined transforms leave values they do not return (e.g. grad's primal output)


def _check(prim: Primitive, types, attrs) -> TensorType:
    try:
        return prim.abstract_eval(*types, **attrs)
    except (TypeError, ValueError, IndexError) as e:
        stack = transform_stack()
        if stack:
            raise type(e)(f"{e} (under {stack})") from None
        raise


def bind(name: str | Primitive, *operands, **attrs):
    """Apply primitive `name` to tensors: eagerly via its impl, or by emitting into the top trace."""
    if isinstance(name, str):
        prim = REGISTRY.get(name) or get_primitive(name)
    else:
        prim = name
    if attrs:
        attrs = {k: freeze_attr(v) for k, v in attrs.items()}
    trace = None
    for t in operands:
        tr = t._trace
        if tr is not None and (trace is None or tr.level > trace.level):
            trace = tr
    if _STACK:  # outside tensors touched while tracing are read through the trace (captured), never baked in
        trace = _views.owning_trace(operands, trace)
    if trace is None and prim.random and _STACK:
        trace = _STACK[-1]
    if trace is not None:
        if not trace.active:
            raise TracingError(f"{prim.name}: a tensor traced under {trace.transform} escaped its transform and "
                               f"was used after it finished (leaked tracer); return it from the function instead")
        try:
            return trace.emit(prim, operands, attrs)
        except (TypeError, ValueError, IndexError) as e:
            stack = transform_stack()
            if stack and "(under " not in str(e):
                raise type(e)(f"{e} (under {stack})") from None
            raise
    _check(prim, [t._type() for t in operands], attrs)
    return _views.eager_result(prim, attrs, operands, prim.impl(*(t._data for t in operands), **attrs))


# --- closed graphs: traced functions with their captures -----------------------------------------
@dataclass
class ClosedGraph:
    """A traced function: `graph` takes the flat tensor arguments, then one input per capture.

    `in_tree` describes ``(args, kwargs)``; `static_leaves` holds the non-tensor leaves of the
    arguments (``None`` at tensor positions). `out_tree` describes the result; `out_static` holds
    non-tensor output leaves (``None`` at tensor positions).

    In-place writes: `mutated[i]` is the graph-input index (arguments, then captures) of an input
    the function wrote in place; its final value is graph output ``num_outputs + i`` (the extra
    outputs come after the function's own). Call sites store them back with `write_back`.
    `output_aliases[k]` is ``(input index, view steps)`` when output k is an input or a view of one.
    """

    graph: Graph
    num_args: int
    captures: list
    in_tree: Any = None
    out_tree: Any = None
    static_leaves: list = field(default_factory=list)
    out_static: list = field(default_factory=list)
    mutated: list = field(default_factory=list)
    output_aliases: list = field(default_factory=list)

    @property
    def num_outputs(self) -> int:
        """Graph outputs that are the function's own results (the rest are in-place write-backs)."""
        return len(self.graph.outputs) - len(self.mutated)

    def write_back(self, inputs: Sequence, outputs: Sequence, *, alias_outputs: bool = False) -> list:
        """Store the in-place writes into the caller's `inputs`; return the function's own outputs.

        `inputs`: the tensors the graph ran on (arguments, then `capture_tensors()`); `outputs`:
        all graph outputs. See `tensorplay._views.write_back`, which this calls.
        """
        return _views.write_back(self, inputs, outputs, alias_outputs=alias_outputs)

    def __str__(self) -> str:
        return str(self.graph)

    def _repr_html_(self):
        from tensorplay.tools.viz import graph_to_html

        return graph_to_html(self.graph)

    def _repr_svg_(self):
        from tensorplay.tools.viz import graph_to_svg

        return graph_to_svg(self.graph)

    def capture_tensors(self) -> list:
        """Current values of the captures: tensors as they are now, fresh random keys."""
        return [s.materialize() if isinstance(s, RandomKey) else s for s in self.captures]

    def unflatten_outputs(self, tensors: Sequence) -> Any:
        it = iter(tensors)
        leaves = [next(it) if s is None else s.value for s in self.out_static]
        return _pytree.tree_unflatten(self.out_tree, leaves)


@dataclass(frozen=True)
class _Static:
    value: Any


def trace_function(fn: Callable, args: tuple, kwargs: dict | None = None, *, transform: str = "trace",
                   in_types: Sequence[TensorType | None] | None = None, name: str | None = None) -> ClosedGraph:
    """Trace `fn(*args, **kwargs)` into a ClosedGraph.

    Tensor leaves of the arguments become graph inputs (with `in_types[i]` when given, e.g. the
    per-sample type under vmap); other leaves are passed to `fn` unchanged.
    """
    kwargs = kwargs or {}
    leaves, in_tree = _pytree.tree_flatten((tuple(args), kwargs))
    tensor_pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
    if in_types is not None and len(in_types) != len(tensor_pos):
        raise ValueError(f"{transform}: {len(in_types)} input types for {len(tensor_pos)} tensor arguments")
    fname = name or getattr(fn, "__name__", "f")
    if not fname.isidentifier():
        fname = "f"
    with Trace(transform, fname) as trace:
        traced_leaves = list(leaves)
        for k, i in enumerate(tensor_pos):
            typ = in_types[k] if in_types is not None and in_types[k] is not None else leaves[i]._type()
            traced_leaves[i] = trace.new_arg(typ)
            lay = _views.outside_layout(leaves[i]) if typ.shape == tuple(leaves[i].shape) else None
            if lay is not None:  # a strided caller tensor: reshapes of it copy, as they would eagerly
                trace.views.layouts[id(traced_leaves[i])] = lay
        targs, tkwargs = _pytree.tree_unflatten(in_tree, traced_leaves)
        out = fn(*targs, **tkwargs)
        out_leaves, out_tree = _pytree.tree_flatten(out)
        out_tensors = [o for o in out_leaves if isinstance(o, Tensor)]
        graph = trace.finish(out_tensors)
    return ClosedGraph(graph, len(tensor_pos), list(trace.capture_sources), in_tree, out_tree,
                       [None if isinstance(leaf, Tensor) else leaf for leaf in leaves],
                       [None if isinstance(o, Tensor) else _Static(o) for o in out_leaves],
                       list(trace.mutated), list(trace.output_aliases))


def call_graph(graph: Graph, inputs: Sequence) -> list:
    """Run `graph` on tensors: inline it into the innermost trace that owns an input, else execute it."""
    from tensorplay.ir.core import inline

    trace = None
    for t in inputs:
        tr = t._trace
        if tr is not None and (trace is None or tr.level > trace.level):
            trace = tr
    if _STACK:
        trace = _views.owning_trace(inputs, trace)
    if trace is None:
        from ._exec import execute

        return _views.own_outputs([Tensor._wrap(a) for a in execute(graph, [t._data for t in inputs])], inputs)
    vals = [trace.lift(t) for t in inputs]
    return [Tensor._symbolic(trace, v) for v in inline(trace.builder, graph, vals)]


from ._tensor import Tensor  # noqa: E402  (bound last: _tensor imports this module at its end)

_VIEW_PRIMS = _views.VIEW_PRIMS

"""Tracing: turning Python functions over tensors into graphs, and running graphs.

A `Trace` owns a `GraphBuilder`. Tensors of an active trace are symbolic:
every op on them emits a node. Tensors from outside the trace (concrete
tensors, or symbolic tensors of an enclosing trace) become *captured inputs*
of the graph, supplied again at every call, so a model updated in place is seen
as it is now. Random draws inside a trace read a fresh key per call through a
`RandomKey` capture. The active traces are per thread (`tensorplay._state`).

Running a graph (`call_graph`) either executes it (all inputs concrete) or, if
some input belongs to an enclosing trace, inlines it there: that one rule is
what makes transforms compose.

**Concrete values on demand.** A trace entered by a plain transform (anything but
`tp.compile` and `make_graph`) remembers where its inputs come from. When Python
asks for a traced tensor's value (`bool`, `float`, `.item()`, `.numpy()`, `print`,
`debug_unwrap`), `Trace.concrete_array` evaluates the nodes that produce it with the
primitives' numpy impls, memoised per value, reading the inputs' values from the
caller's tensors (or, for a nested transform, from the enclosing trace, recursively).
Code that never asks pays nothing. The graph records the branch Python took, as JAX's
`grad` does without `jit`. Under vmap a value that depends on the batched arguments has
no single value, and under `tp.compile` no input has one: both raise a TracingError
naming the transform.

Views and in-place writes are functionalized while tracing (`tensorplay._views`):
graphs are always functional, and the final values of arguments and captures
that the function wrote in place are extra graph outputs (`ClosedGraph.mutated`)
that call sites store back with `ClosedGraph.write_back`.
"""
from __future__ import annotations

import itertools
from itertools import islice
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tensorplay.ir import Graph, GraphBuilder, TensorType, Value, dtypes
from tensorplay.ir import values as _ir_values
from tensorplay.ir.core import Node, bind_constants, freeze_attr, inline, result_type
from tensorplay.ir.passes.simplify import _live_nodes as live_nodes
from tensorplay.ir.primitive import REGISTRY, Primitive, get_primitive

from . import _pytree, _views
from ._deferred import Deferred, expand as _expand_deferred, replay as _replay_block
from ._layout import VIEW_PRIMS
from ._state import STATE, TracingError, leaked_tracer
from ._tensor import Tensor
from .compiler import register_reset
from .autograd._record import ACTIVE as _AUTOGRAD_ACTIVE, maybe_record as _record_op, needs_tape as _needs_tape
from .autograd._record import RUN_TAPED as _RUN_TAPED

__all__ = ["Trace", "TracingError", "bind", "call_graph", "trace_function", "ClosedGraph", "RandomKey",
           "transform_stack", "current_trace", "known_array",
           "bind_prim", "bind_general", "memo_traced_op"]

_levels = itertools.count(1)

SYMBOLIC_TRANSFORMS = frozenset({"compile", "make_graph", "trace"})
"""Transforms that trace with symbolic inputs: their tensors have no values while tracing."""

_BROADCAST = get_primitive("broadcast_in_dim")
_FULL = get_primitive("full")
_STOP_GRADIENT = get_primitive("stop_gradient")
_VIEWS_TAKEN_EAGERLY = frozenset({"slice", "reshape", "transpose", "stop_gradient"})


def transform_stack() -> str:
    """The active transforms, outermost first: ``vmap(in_dims=0) > grad(argnums=0)``."""
    return STATE.transform_stack()


def current_trace() -> "Trace | None":
    """The innermost active trace of the running thread, or None."""
    return STATE.top()


class RandomKey:
    """A capture source for one random draw of `count` elements: a fresh (seed, offset) key per call.

    When the draw's value is asked for while tracing, the key is taken then (`pin`) and the
    call uses that same key, so the printed value is the value computed.
    """

    def __init__(self, count: int):
        self.count = count
        self.pinned: np.ndarray | None = None

    def pin(self) -> np.ndarray:
        if self.pinned is None:
            from . import random as _random

            self.pinned = _random.default_generator.take_key(self.count)
        return self.pinned

    def read(self) -> np.ndarray:
        if self.pinned is not None:
            return self.pinned
        from . import random as _random

        return _random.default_generator.take_key(self.count)

    def materialize(self):
        """The key as a tensor of the innermost active trace, or concrete at top level."""
        trace = STATE.top()
        if trace is None:
            return Tensor._wrap(self.read())
        return Tensor._symbolic(trace, trace.capture(self, TensorType((2,), dtypes.int64)))


_BATCHED = object()  # the source of an argument batched under vmap (`Trace._sources`): it has no single value


def fixed_key(shape: tuple, dtype, value) -> tuple:
    """The key of an op constant in `Trace._fixed` (values compared exactly: 0.0 and -0.0 differ)."""
    return (shape, dtype, value.__class__, value if value.__class__ is not float else value.hex())


_NOTHING = _views._NOTHING  # a read-only empty mapping
_new_object = object.__new__


class _TraceBuilder(GraphBuilder):
    """A Trace's GraphBuilder: its node list may hold `Deferred` composite blocks (see
    `tensorplay._deferred`), which reading `nodes` builds first, so every reader of the trace's
    nodes sees real ones. `deferred` is the index of the first block not built yet, or -1. A
    trace's graph inputs are its own (`Trace.arg_values`, `capture_values`): the builder has none."""

    inputs = ()
    arg_attrs = _NOTHING
    deferred = -1

    def __init__(self, name: str, sigs: list):  # (not GraphBuilder's: `nodes` is a property here)
        self.name = name
        self._nodes = []
        self._sigs = sigs

    @property
    def nodes(self) -> list:
        if self.deferred >= 0:
            self.materialise()
        return self._nodes

    def materialise(self) -> None:
        _expand_deferred(self._nodes, self._sigs, self.deferred)
        self.deferred = -1


class _NoValue(Exception):
    """Raised inside concrete evaluation: an input has no value (the reason says why)."""


class Trace:
    """One level of tracing: a graph under construction, its captures, and where its inputs come from.

    `concrete`: the inputs have values (the transform was called on concrete tensors, or on
    tensors of an enclosing trace that has them), so `concrete_array` can compute any value.
    """

    def __init__(self, transform: str = "trace", name: str = "f", *, concrete: bool = False):
        self.transform = transform
        self.level = next(_levels)
        self.concrete = concrete
        self._begin(name)

    def _begin(self, name: str) -> None:
        """The empty graph state (`tensorplay._replay` calls it on a trace that stops replaying)."""
        concrete = self.concrete
        self.arg_values: list[Value] = []
        self.capture_values: list[Value] = []
        self.capture_sources: list[Any] = []
        self.capture_views = concrete     # views of outside storage are inputs (see _views.lift_outside)
        self.mutated: list[int] = []      # set by finish(): inputs whose final values are extra outputs
        # aliasing bookkeeping: arguments, proxies of outside storages (`TraceViews()`, written out)
        self.views = views = _new_object(_views.TraceViews)
        views.args = []
        self.sigs = sigs = []  # per node appended by `append`: its signature id (see `typed_result`)
        self.builder = builder = _new_object(_TraceBuilder)  # `_TraceBuilder(name, sigs)`, written out
        builder.name, builder._nodes, builder._sigs = name, [], sigs
        self._nodes = builder._nodes  # (the node list itself, for appends: `builder.nodes` builds blocks)
        # The tape: per node appended, its signature id, then the ids of its result and operands
        # relative to `base` (the Value ids are one process-wide counter in creation order, so a
        # value of this trace is named by the same number whenever the same program is traced).
        self.base = next(_value_ids)
        self.tape: list = []

    # immutable defaults, set on the instance when they change
    active = False
    made = None  # a trace replaying a template (`tensorplay._replay`): the tensors it made so far
    output_aliases: tuple | list = ()  # set by finish(): (input index, view steps) per output, or None
    # The arguments' caller tensors, when `trace_function` numbered them base+1..n (`source_of`
    # reads them; `_sources` holds every other input's source), and which of them are batched.
    arg_sources: list | None = None
    arg_batched: tuple | None = None
    batched = False                  # some argument is a per-sample slice of a batch (vmap)
    graph_sigs: list | None = None   # set by finish(): the signatures of the graph's nodes, if known
    graph_key: tuple | None = None   # set by finish() with graph_sigs: see `_tape_key`
    arg_key: tuple | None = None     # the arguments' part of `_tape_key` when known (`_arg_key`)
    stored = False                   # set by `_views.store`: some root of this trace was written in place
    # Read-only empties until the first write makes the instance's own (most traces need few):
    _capture_index: dict = _NOTHING   # id(capture source) -> its input
    _known: dict = _NOTHING           # graph value -> its array, computed on demand
    _scalar_sources: dict = _NOTHING  # (dtype, value) -> its 0-d input's tensor
    _scalars: dict = _NOTHING         # ... and shape -> its broadcast value
    _fixed: dict = _NOTHING           # (shape, dtype, exact value) -> its `full` node's value
    _sources: dict = _NOTHING         # graph input -> its caller tensor / capture source / reason

    # --- entering and leaving -------------------------------------------------------------------
    def __enter__(self) -> "Trace":
        self.active = True
        STATE.push(self)
        return self

    def __exit__(self, *exc) -> None:
        STATE.pop(self)
        self.active = False

    # --- values ---------------------------------------------------------------------------------
    def new_arg(self, type: TensorType, source: Tensor | None = None, batched: bool = False):
        """A new argument of the graph; `source` is the caller's tensor it stands for (its value)."""
        v = Value(type)
        self.arg_values.append(v)
        t = _new_tensor(Tensor)  # Tensor._symbolic, inlined
        t._data, t._trace, t._value = None, self, v
        self.views.args.append(t)
        if self.concrete:
            if batched:
                self.batched = True
                self.set_source(v, _BATCHED)
            elif source is not None:
                self.set_source(v, source)
        return t

    def set_source(self, v: Value, source) -> None:
        """Record where graph input `v` gets its value (see `source_of`)."""
        sources = self._sources
        if sources is _NOTHING:
            sources = self._sources = {}
        sources[v] = source

    def source_of(self, v: Value):
        """The caller tensor, capture source or `_NoValue` reason of graph input `v`, or None."""
        source = self._sources.get(v)
        if source is None:
            args = self.arg_sources
            if args is not None:
                k = v.id - self.base - 1
                if 0 <= k < len(args) and self.arg_values[k] is v:
                    batched = self.arg_batched
                    return _BATCHED if batched is not None and batched[k] else args[k]
        return source

    def capture(self, source: Any, type: TensorType) -> Value:
        """The input standing for `source` (a Tensor or RandomKey), created on first use."""
        key = id(source)
        index = self._capture_index
        v = index.get(key)
        if v is None:
            if index is _NOTHING:
                index = self._capture_index = {}
            v = Value(type)
            index[key] = v
            self.capture_values.append(v)
            self.capture_sources.append(source)
            if self.concrete:
                self.set_source(v, source)
        return v

    def lift(self, t) -> Value:
        """The value of tensor `t` inside this trace (capturing its storage if it comes from outside)."""
        if t._trace is self:
            base = t._base
            return t._value if base is None or t._stamp == base._stamp else _views.current_value(t)
        return _views.lift_outside(self, t)

    def emit(self, prim: Primitive, operands: Sequence, attrs: dict):
        """Append `prim(*operands)` to the graph; `attrs` must be frozen and owned by the call (as
        `bind` makes them): the node keeps the dict."""
        # `lift`, inlined for this trace's own roots (the common operand)
        n = len(operands)
        if n == 1:  # one and two operands written out: no list comprehension frame per op
            t = operands[0]
            vals = (t._value if t._trace is self and t._base is None else self.lift(t),)
        elif n == 2:
            t, u = operands
            vals = (t._value if t._trace is self and t._base is None else self.lift(t),
                    u._value if u._trace is self and u._base is None else self.lift(u))
        else:
            vals = tuple([t._value if t._trace is self and t._base is None else self.lift(t) for t in operands])
        out = _new_tensor(Tensor)  # Tensor._symbolic, inlined
        out._data, out._trace, out._value = None, self, self.append(prim, vals, attrs)
        if prim.name not in VIEW_PRIMS:
            return out
        return _views.traced_result(prim, attrs, operands, out)

    def append(self, prim: Primitive, vals: tuple, attrs: dict) -> Value:
        """Append the node `prim(*vals)` (values of this graph; `attrs` frozen, kept by the node)."""
        node = _new_node(Node)  # Node.typed, inlined: the type comes from the memoised shape rule
        node.prim, node.inputs, node.attrs = prim, vals, attrs
        typ, sig = _typed_sig(prim, vals, attrs)
        node.out = value = Value(typ, node)
        self._nodes.append(node)
        self.sigs.append(sig)
        base = self.base
        tape = self.tape
        tape.append(sig)
        tape.append(value.id - base)
        for v in vals:
            tape.append(v.id - base)
        return value

    def materialise(self) -> None:
        """Build the nodes of every deferred composite block (`tensorplay._deferred`) in place: after
        it `builder.nodes` (and `sigs`) hold only real nodes, and every value's `node` is its Node.
        Any reader that walks the trace's nodes or `Value.node` calls it first."""
        b = self.builder
        if b.deferred >= 0:
            b.materialise()

    def scalar_input(self, value, dtype, shape: tuple) -> Tensor:
        """The Python scalar `value` as a graph input broadcast to `shape` (one input per distinct
        value and dtype): scalars that parameterise data do not change the graph's structure."""
        return Tensor._symbolic(self, self.scalar_value(value, dtype, shape))

    def scalar_value(self, value, dtype, shape: tuple) -> Value:
        """The value of `scalar_input(value, dtype, shape)`."""
        key = (dtype, value if value else str(value), shape)  # str: 0.0 and -0.0 are different data
        hit = self._scalars.get(key)
        if hit is not None:
            return hit
        if self._scalars is _NOTHING:
            self._scalars, self._scalar_sources = {}, {}
        source = self._scalar_sources.get(key[:2])
        if source is None:
            source = self._scalar_sources[key[:2]] = Tensor._wrap(np.array(value, dtype=dtype.np))
        value = self.capture(source, source._type())
        if shape:
            value = self.append(_BROADCAST, (value,), {"shape": shape, "broadcast_dimensions": ()})
        self._scalars[key] = value
        return value

    def fixed(self, shape: tuple, dtype, value) -> Tensor:
        """An op's own constant (see `ops._common.fixed`) as a `full` node, one per distinct
        (shape, dtype, value) in this trace (values compared exactly: 0.0 and -0.0 differ)."""
        out = _new_tensor(Tensor)
        out._data, out._trace, out._value = None, self, self.fixed_value(shape, dtype, value)
        return out

    def fixed_value(self, shape: tuple, dtype, value) -> Value:
        """The value of `fixed(shape, dtype, value)`."""
        key = fixed_key(shape, dtype, value)
        hit = self._fixed.get(key)
        if hit is None:
            if self._fixed is _NOTHING:
                self._fixed = {}
            hit = self._fixed[key] = self.append(_FULL, (), {"shape": shape, "dtype": dtype, "value": value})
        return hit

    def wrote_storage_of(self, t: Tensor) -> bool:
        """Has this trace written `t`'s (outside) storage in place (so `t`'s numpy data is stale)?"""
        return self.views.wrote(t)

    def finish(self, outputs: Sequence, *, lazy: bool = False) -> Graph | tuple:
        """The graph returning `outputs`, then the final value of every input written in place.

        Sets `self.mutated` (the graph-input index of each extra output) and
        `self.output_aliases` (see `_views.finish_writes`).

        `lazy=True` (trace_function's call path): when every node was taped, no Graph is built and
        no liveness walk is run; `self.graph_key` is the tape key (of all nodes, dead ones too: equal
        tapes still mean equal graphs) and the result is ``(inputs, nodes, results)``, from which
        `_TracedClosedGraph.graph` builds the graph on first use (a pipeline-cache miss).
        """
        results = self._plain_results(outputs)
        if results is None:
            self.materialise()
            outs = [self.lift(t) for t in outputs]
            self.mutated, written, self.output_aliases = _views.finish_writes(self, outputs)
            results = outs + written
        if lazy:
            nodes, sigs = self._nodes, self.sigs
            if len(nodes) == len(sigs) and None not in sigs:
                inputs = self.arg_values + self.capture_values
                self.graph_key = self._tape_key(inputs, results)
                return inputs, nodes, results
        # dead code (values an inlined transform does not return, values computed only to be
        # printed) is dropped without copying: the nodes are this trace's own
        self.materialise()
        nodes = self.builder.nodes
        live = live_nodes(nodes, results)
        # every node came through `append` and is live: the signatures describe the graph's nodes
        inputs = self.arg_values + self.capture_values
        if len(live) == len(nodes) == len(self.sigs) and None not in self.sigs:
            self.graph_sigs = self.sigs
            self.graph_key = self._tape_key(inputs, results)
        return Graph(inputs, live, results, self.builder.name)

    def _tape_key(self, inputs: list, results: list) -> tuple:
        """The graph's structural key from the tape (every node taped; dead ones are part of it): the inputs as
        (relative id, type id) pairs, the tape, None, the outputs' relative ids.

        Two equal keys are the same graph: a node's signature id fixes its primitive, attributes,
        operand types and so its operand count, which parses the tape; each relative id names one
        value of the trace, an input (the pairs give its position) or an earlier node's result.
        Equal graphs traced by the same program get equal keys (ids are numbered in creation order).
        """
        base = self.base
        type_ids = _TYPE_IDS
        prefix, args = self.arg_key, self.arg_values
        n = len(args)
        if prefix is not None and n and args[0].id - base == 1 and args[-1].id - base == n:
            if len(inputs) == n:  # (the common key, as one tuple display: no list grown item by item)
                return (n, *prefix, *self.tape, None, *[v.id - base for v in results])
            flat = [len(inputs), *prefix]  # the arguments' pairs, numbered 1..n (see `_arg_key`)
            inputs = inputs[n:]
        else:
            flat = [len(inputs)]
        for v in inputs:
            t = v.type
            i = type_ids.get((t.shape, t.dtype))
            flat.append(v.id - base)
            flat.append(_input_type_id(t) if i is None else i)
        flat += self.tape
        flat.append(None)
        for v in results:
            flat.append(v.id - base)
        return tuple(flat)

    def _plain_results(self, outputs: Sequence) -> list | None:
        """The output values when nothing needs `_views.finish_writes` (else None): no outside
        storage (a proxy) and no argument was written in place, and every output is a value this
        trace computed (not an input, not a view), so none aliases an input."""
        if self.stored:  # (else no root of this trace was written: every stamp is 0)
            views = self.views
            for p in views.proxies.values():  # outside storage read (captures), but not written
                if p._stamp:
                    return None
            for a in views.args:
                if a._stamp:
                    return None
        results = []
        for t in outputs:
            if t._trace is not self or t._base is not None:
                return None
            v = t._value
            if v.node is None:
                return None
            results.append(v)
        self.output_aliases = [None] * len(results)  # (self.mutated stays [])
        return results

    # --- concrete values on demand --------------------------------------------------------------
    def concrete_array(self, t: Tensor, what: str) -> np.ndarray:
        """The value of `t` (a tensor of this trace, or storage it shadows), computed on demand.

        Raises TracingError naming the transforms when the value does not exist while tracing
        (under `tp.compile`, or batched under vmap). The array is a read-only view of the memo.
        """
        trace = _views.owning_trace((t,))
        if trace is None:
            return t._data
        if not trace.active:
            raise leaked_tracer(what, trace.transform)
        value = trace.lift(t)
        try:
            arr = trace._evaluate(value).view()
        except _NoValue as e:
            raise TracingError(
                f"{what} needs a concrete value, but this tensor of shape {tuple(value.shape)} is traced under "
                f"{transform_stack() or trace.transform}, {e}. Python control flow cannot depend on such values: "
                f"use tp.where(cond, a, b) for data-dependent choices.") from None
        arr.flags.writeable = False  # the memo (and maybe a caller's storage) is behind it
        return arr

    def _evaluate(self, value: Value) -> np.ndarray:
        """`value`'s array: the nodes producing it run with their numpy impls (memoised per value)."""
        known = self._known
        hit = known.get(value)
        if hit is not None:
            return hit
        if known is _NOTHING:
            known = self._known = {}
        todo, pending, seen = [], [value], set()
        while pending:  # the sub-graph not evaluated yet (iterative: graphs can be deep)
            v = pending.pop()
            if v in known or v in seen:
                continue
            seen.add(v)
            node = v.node
            if node is None:
                known[v] = self._input_array(v)
                continue
            if node.__class__ is Deferred:  # a composite block not built yet: build them all
                self.materialise()
                node = v.node
            todo.append(node)
            pending.extend(node.inputs)
        todo.sort(key=lambda n: n.out.id)  # values are numbered in creation order: a topological order
        for node in todo:
            known[node.out] = node.prim.impl(*[known[x] for x in node.inputs], **node.attrs)
        return known[value]

    def _input_array(self, v: Value) -> np.ndarray:
        """The value of graph input `v`: its caller tensor's (read through the enclosing traces)."""
        source = self.source_of(v)
        if source is None:
            raise _NoValue(f"which traces with symbolic inputs ({self.transform} has no values until it runs)")
        if source is _BATCHED:
            raise _NoValue(f"and it is batched by {self.transform}: it has one value per sample")
        if isinstance(source, _NoValue):
            raise source
        below = STATE.stack[:STATE.stack.index(self)] if self.active else []
        if isinstance(source, RandomKey):
            return self._random_key(source, below)
        return _outside_array(source, below)

    def _random_key(self, source: RandomKey, below: list) -> np.ndarray:
        if self.batched:
            raise _NoValue(f"and it depends on a random draw under {self.transform} (drawn per sample or not, "
                           f"as randomness= says)")
        if below:
            outer = below[-1]
            return outer._evaluate(outer.capture(source, TensorType((2,), dtypes.int64)))
        for s in self.capture_sources:  # keys are taken in draw order, as an unobserved call takes them
            if isinstance(s, RandomKey):
                s.pin()
            if s is source:
                break
        return source.pin()


def _outside_array(t: Tensor, below: list) -> np.ndarray:
    """The value of tensor `t` as seen by the traces `below` (outermost first), or its own storage."""
    trace = _views.owner(t, below) if below else t._trace
    if trace is None:
        return t._data
    if t._trace is None and not trace.views.wrote(t):
        return t._data  # outside storage nobody below has written: its numpy data is current
    if not trace.active:
        raise leaked_tracer("", trace.transform)
    return trace._evaluate(trace.lift(t))


def known_array(t: Tensor) -> np.ndarray | None:
    """`t`'s value if it is known now without computing any node, and a graph that depends on it
    is sound: else None.

    Every active trace must be a plain transform's (`Trace.concrete`): those re-trace on every
    call, so library code may branch on the value (the branch taken is part of the traced graph,
    and the pipeline cache keys on the graph). Under `tp.compile` or any symbolic trace the
    answer is None, so a compiled graph never depends on data. Known: a concrete tensor no
    active trace wrote in place, or an argument or capture of the innermost trace whose caller
    tensor has a value (not batched under vmap, not a random key). The array must not be written.

    >>> import tensorplay as tp
    >>> from tensorplay.func import grad
    >>> def f(x, t):
    ...     print(known_array(t), known_array(x * 2))
    ...     return x.sum()
    >>> _ = grad(f)(tp.ones(2), tp.tensor([3]))
    [3] None
    """
    stack = STATE.stack
    for tr in stack:
        if not tr.concrete:
            return None
    trace = t._trace
    if trace is None:
        if t._meta:
            return None
        for tr in stack:
            if tr.views.wrote(t):
                return None
        return t._data
    if trace is not (stack[-1] if stack else None) or t._base is not None:
        return None
    if trace.made is not None:  # a trace replaying a template (`tensorplay._replay`)
        return trace.known_arg(t)
    v = t._value
    if v.node is not None:
        return None
    hit = trace._known.get(v)
    if hit is not None:
        return hit
    source = trace.source_of(v)
    if not isinstance(source, Tensor):  # no source, a _NoValue reason or a RandomKey
        return None
    try:
        return trace._evaluate(v)
    except _NoValue:
        return None


_new_tensor = object.__new__
_new_node = object.__new__
_new_value = object.__new__
_value_ids = _ir_values._ids  # Value ids: one counter for every Value, in creation order
_TYPES: dict = {}  # (primitive, operand (shape, dtype)s, attrs) -> result type: see `typed_result`
_TYPES_LIMIT = 8192


def typed_result(prim: Primitive, vals: Sequence[Value], attrs: dict) -> TensorType:
    """`result_type(prim, operand types, attrs)`, memoised per signature.

    A shape rule is a pure function of its operands' shapes and dtypes and the (frozen) attributes,
    so a signature that passed once is not checked again; a failing one is never stored, so every
    bad call raises the rule's own error.

    >>> from tensorplay.ir import TensorType, float32, get_primitive
    >>> x = Value(TensorType((2, 3), float32))
    >>> typed_result(get_primitive("neg"), (x,), {})
    tensor<2x3xf32>
    """
    return _typed_sig(prim, vals, attrs)[0]


_sig_ids = itertools.count()  # never reset: an id names one signature for the life of the process
_EXACT = frozenset({int, str, type(None), dtypes.DType})  # attribute classes whose == is identity of meaning


def _exact_attrs(attrs: dict) -> tuple:
    """The items of `attrs` as a key where equal keys mean equal attributes: floats by their bits
    (0.0 and -0.0 differ, a NaN equals itself), bools apart from ints (True == 1 in Python)."""
    for v in attrs.values():  # the common case, ints and (nested) tuples of ints, is its own exact key
        c = v.__class__
        if c is tuple:
            for x in v:
                if x.__class__ is not int:
                    if x.__class__ is tuple:
                        for y in x:
                            if y.__class__ is not int:
                                return tuple([(k, _exact(v)) for k, v in attrs.items()])
                    else:
                        return tuple([(k, _exact(v)) for k, v in attrs.items()])
        elif c not in _EXACT:
            return tuple([(k, v if v.__class__ in _EXACT else _exact(v)) for k, v in attrs.items()])
    return tuple(attrs.items())


def _exact(v):
    c = v.__class__
    if c in _EXACT:
        return v
    if c is tuple:
        return tuple([_exact(x) for x in v])
    if c is float:
        return ("float", v.hex())
    if c is bool:
        return ("bool", v)
    return (c, v)  # another hashable attribute: its class is part of its meaning


def _typed_sig(prim: Primitive, vals: Sequence[Value], attrs: dict) -> tuple:
    """(result type, signature id) of `prim` applied to `vals` with `attrs`, memoised.

    The id is the same for two nodes exactly when their primitive, operand shapes and dtypes and
    attributes (compared exactly, see `_exact_attrs`) are: a node's structure up to its operands'
    identities. It is None when the signature cannot be memoised (checked every time).
    """
    try:
        n = len(vals)
        if n == 1:
            t = vals[0].type
            types = ((t.shape, t.dtype),)
        elif n == 2:
            t, u = vals[0].type, vals[1].type
            types = ((t.shape, t.dtype), (u.shape, u.dtype))
        else:
            types = tuple([(v.type.shape, v.type.dtype) for v in vals])
        key = (prim, types, _exact_attrs(attrs) if attrs else None)
        out = _TYPES.get(key)
    except (TypeError, AttributeError):  # an unhashable attribute or a tuple operand: checked every time
        return result_type(prim, [v.type for v in vals], attrs), None
    if out is None:
        out = (result_type(prim, [v.type for v in vals], attrs), next(_sig_ids))
        if len(_TYPES) >= _TYPES_LIMIT:
            _TYPES.clear()
        _TYPES[key] = out
    return out


def signature_key(graph: Graph, sigs: list) -> tuple:
    """A flat key of `graph` (nodes with signature ids `sigs`, one per node, in order): equal for
    two graphs exactly when `Graph.structural_key` is equal, cheaper to build, hash and compare.

    Each node is its signature id then its operands' positions (the id fixes how many), which
    determines the node; the inputs' types and the outputs' positions complete the graph.
    """
    inputs = graph.inputs
    index = {v: i for i, v in enumerate(inputs)}
    flat = [len(inputs)]
    flat += [_input_type_id(v.type) for v in inputs]
    k = len(index)
    for node, sig in zip(graph.nodes, sigs):
        flat.append(sig)
        for v in node.inputs:
            flat.append(index[v])
        index[node.out] = k
        k += 1
    flat.append(-1)
    flat += [index[v] for v in graph.outputs]
    return tuple(flat)


_TYPE_IDS: dict = {}  # (shape, dtype) of a graph input -> its id in signature keys


def _input_type_id(t) -> int:
    key = (t.shape, t.dtype)
    i = _TYPE_IDS.get(key)
    if i is None:
        if len(_TYPE_IDS) >= _TYPES_LIMIT:
            _TYPE_IDS.clear()
        i = _TYPE_IDS[key] = next(_sig_ids)  # from the signature counter: never reused either
    return i


def _under_stack(e: Exception) -> Exception:
    """`e` with the active transforms named (``... (under vmap(in_dims=0))``), once."""
    stack = transform_stack()
    if not stack or "(under " in str(e):
        return e
    return type(e)(f"{e} (under {stack})")


def _check(prim: Primitive, types, attrs) -> TensorType:
    try:
        return prim.abstract_eval(*types, **attrs)
    except (TypeError, ValueError, IndexError) as e:
        raise _under_stack(e) from None


_FROZEN_CLASSES = frozenset({int, float, bool, str, type(None), dtypes.DType})  # attribute values frozen as they are


def bind(name: str | Primitive, *operands, **attrs):
    """Apply primitive `name` to tensors: eagerly via its impl, or by emitting into the owning trace."""
    if name.__class__ is str:
        prim = REGISTRY.get(name) or get_primitive(name)
    elif isinstance(name, str):
        prim = get_primitive(name)
    else:
        prim = name
    return bind_prim(prim, operands, attrs)


def bind_prim(prim: Primitive, operands: tuple, attrs: dict):
    """`bind` of a `Primitive` with the operands as a tuple and the attributes as a dict the call
    owns (frozen in place): what `ops._common.ebind` calls, without repacking its arguments.

    >>> import tensorplay as tp
    >>> bind_prim(get_primitive("neg"), (tp.ones(2),), {})
    tensor([-1., -1.])
    """
    stack = STATE.stack
    if stack:  # the hot traced case, in one frame: see `_append_known`
        out = _append_known(stack[-1], prim, operands, attrs)
        if out is not None:
            return out
    return bind_general(prim, operands, attrs)


def bind_general(prim: Primitive, operands: tuple, attrs: dict):
    """`bind_prim` without its first step, for a caller that tried `_append_known` itself.

    >>> import tensorplay as tp
    >>> bind_general(get_primitive("neg"), (tp.ones(2),), {})
    tensor([-1., -1.])
    """
    if attrs:  # the call's own dict (from **attrs): frozen in place, only where a value changes
        for k, v in attrs.items():
            if v.__class__ not in _FROZEN_CLASSES:
                f = freeze_attr(v)
                if f is not v:
                    attrs[k] = f
    stack = STATE.stack
    if stack and operands:  # the common traced case: every operand is a tensor of the innermost trace
        top = stack[-1]
        for t in operands:
            if t._trace is not top:
                break
        else:
            try:
                out = top.emit(prim, operands, attrs)
            except (TypeError, ValueError, IndexError) as e:
                raise _under_stack(e) from None
            if not STATE.grad_enabled and STATE.stops_gradient(top):
                out = top.emit(_STOP_GRADIENT, (out,), {})
            return out
    trace = _views.owning_trace(operands)
    if trace is None and prim.random:
        trace = STATE.top()
    if trace is None:
        _check(prim, [t._type() for t in operands], attrs)
        out = _views.eager_result(prim, attrs, operands, prim.impl(*(t._data for t in operands), **attrs))
        if _AUTOGRAD_ACTIVE[0]:
            _record_op(prim, attrs, operands, out)
        return out
    if not trace.active:
        raise leaked_tracer(prim.name, trace.transform)
    if trace.capture_views and prim.name in _VIEWS_TAKEN_EAGERLY and _view_taken_eagerly(prim.name, operands[0]):
        _check(prim, [operands[0]._type()], attrs)
        out = _views.outside_view(prim, attrs, operands[0])
        if out is not None:
            return out
    try:
        out = trace.emit(prim, operands, attrs)
    except (TypeError, ValueError, IndexError) as e:
        raise _under_stack(e) from None
    if STATE.stops_gradient(trace):
        out = trace.emit(_STOP_GRADIENT, (out,), {})
    return out


def _append_known(top: Trace, prim: Primitive, operands: tuple, attrs: dict):
    """`top.emit(prim, operands, attrs)` when it is the common case, else None (the caller takes the
    general path): one or two operands, all roots of `top` (no views), a signature whose result
    type is memoised already, a primitive that is not a view step, gradients recorded.

    The memo key is built from `attrs` as given. It can only equal a stored key (made from frozen
    attributes) when `attrs` is frozen already: a list is unhashable (TypeError) and any other
    unfrozen value (a tuple subclass such as `Size`) keys as ``(class, value)``, which no frozen
    attribute does. So a hit needs no `freeze_attr`, and its shape rule passed before.
    """
    n = len(operands)
    try:
        if n == 2:
            a, b = operands
            if a._trace is not top or b._trace is not top or a._base is not None or b._base is not None:
                return None
            va, vb = a._value, b._value
            t, u = va.type, vb.type
            hit = _TYPES.get((prim, ((t.shape, t.dtype), (u.shape, u.dtype)), _exact_attrs(attrs) if attrs else None))
            vals = (va, vb)
        elif n == 1:
            a = operands[0]
            if a._trace is not top or a._base is not None:
                return None
            va = a._value
            t = va.type
            hit = _TYPES.get((prim, ((t.shape, t.dtype),), _exact_attrs(attrs) if attrs else None))
            vals = (va,)
        else:
            return None
    except (TypeError, AttributeError):  # unhashable attributes, a non-tensor operand: the general path
        return None
    if hit is None or prim.name in VIEW_PRIMS or not STATE.grad_enabled:
        return None
    node = _new_node(Node)
    node.prim, node.inputs, node.attrs = prim, vals, attrs
    value = _new_value(Value)  # Value(type, node), inlined
    value.type, value.node, value.id = hit[0], node, next(_value_ids)
    node.out = value
    top._nodes.append(node)
    sig = hit[1]
    top.sigs.append(sig)
    base = top.base
    if n == 2:
        top.tape.extend((sig, value.id - base, va.id - base, vb.id - base))
    else:
        top.tape.extend((sig, value.id - base, va.id - base))
    out = _new_tensor(Tensor)
    out._data, out._trace, out._value = None, top, value
    return out


# --- op memos: an op that traced as one node replays it --------------------------------------------
_OP_MEMOS: list = []  # every op memo dict (cleared together by `clear_memos`)
_OP_MEMO_LIMIT = 1024


def memo_traced_op(fn: Callable, arity: int) -> Callable:
    """`fn` (an op of `arity` 1 or 2 tensor operands, a pure function of their shapes and dtypes
    under a trace) with a per-signature memo of what it traced: when both operands are roots of
    the innermost trace and the op once traced, for the same operand types, to exactly one node
    reading those operands (the common `x + y`, `w @ x`, `tanh(x)`), the node is appended again
    directly (same primitive, attributes, signature and result type) without running the op layer.
    A binary op that traced, for two distinct operands, to one `memo_composite` hit (the broadcast
    ``x + b``: `ops.elementwise.add`'s block) replays that block's program the same way.

    Anything else runs `fn` as it is: other operand kinds (numpy, Python scalars, views, outside
    tensors), gradients off, eager mode, and every signature that traced to several nodes or
    raised (so an error is raised on every call). `fn` must not depend on anything but its
    operands' types when it traces to one node or block (a global that changed it would emit a
    conversion; a composite it calls must be keyed by static options only).

    >>> import tensorplay as tp
    >>> mul = memo_traced_op(lambda a, b: a * b, 2)
    >>> tp.compile(lambda x: mul(mul(x, x), x))(tp.tensor([2.0]))
    tensor([8.])
    """
    memo: dict = {}
    _OP_MEMOS.append(memo)
    if arity == 2:
        scalars: dict = {}  # the same for `tensor <op> Python number` under a plain transform
        _OP_MEMOS.append(scalars)

        def op(self, other):  # (the names of the wrapped methods' parameters)
            a, b = self, other
            stack = STATE.stack
            if not stack:
                return fn(a, b)
            top = stack[-1]
            made = top.made
            if made is not None:  # replaying a template (`tensorplay._replay`): its next op, on the same tensors?
                e = top.expect[len(made)]
                if e[0] is memo and made[e[1]] is a and made[e[2]] is b:
                    out = e[4]  # (the template's tensor of this result: `_replay._ready`)
                    made.append(out)
                    return out
                out = _replayed_block(top, made, e, memo, a, b)
                if out is not None:
                    return out
            if a.__class__ is not Tensor:
                return fn(a, b)
            if b.__class__ is not Tensor:
                if b.__class__ is float or b.__class__ is int:
                    return _scalar_op(top, fn, scalars, a, b)
                return fn(a, b)
            if a._base is not None or b._base is not None or not STATE.grad_enabled:
                return fn(a, b)
            if a._trace is not top or b._trace is not top:
                return _outside_op(top, fn, memo, a, b)
            va, vb = a._value, b._value
            t, u = va.type, vb.type
            hit = memo.get((t.shape, t.dtype, u.shape, u.dtype))
            if hit is None:
                return _binary_memo(top, fn, memo, a, b, va, vb)
            if hit is _SKIP:
                return fn(a, b)
            if hit[4]:
                if hit[4] is not True:  # a composite's block (two distinct operands), or a second try
                    if hit[4] == _PROGRAM and va is not vb:
                        return _replay_block(top, hit[0], [va, vb])
                    return _binary_memo(top, fn, memo, a, b, va, vb)
                va, vb = vb, va
            # `_replay`, inlined for the most common op of all
            node = _new_node(Node)
            node.prim, node.inputs, node.attrs = hit[0], (va, vb), hit[1]
            value = _new_value(Value)
            value.type, value.node, value.id = hit[3], node, next(_value_ids)
            node.out = value
            top._nodes.append(node)
            sig = hit[2]
            top.sigs.append(sig)
            base = top.base
            top.tape.extend((sig, value.id - base, va.id - base, vb.id - base))
            out = _new_tensor(Tensor)
            out._data, out._trace, out._value = None, top, value
            return out
    else:
        def op(input):  # (the name of the wrapped functions' parameter, as torch's)
            a = input
            stack = STATE.stack
            if not stack:
                return fn(a)
            top = stack[-1]
            made = top.made
            if made is not None:  # (as the binary op's)
                e = top.expect[len(made)]
                if e[0] is memo and made[e[1]] is a:
                    out = e[4]
                    made.append(out)
                    return out
                top.leave()
            if a.__class__ is not Tensor or a._trace is not top or a._base is not None or not STATE.grad_enabled:
                return fn(a)
            va = a._value
            t = va.type
            key = (t.shape, t.dtype)
            hit = memo.get(key)
            if hit is _SKIP:
                return fn(a)
            if hit is not None:  # `_replay`, inlined
                node = _new_node(Node)
                node.prim, node.inputs, node.attrs = hit[0], (va,), hit[1]
                value = _new_value(Value)
                value.type, value.node, value.id = hit[3], node, next(_value_ids)
                node.out = value
                top._nodes.append(node)
                sig = hit[2]
                top.sigs.append(sig)
                base = top.base
                top.tape.extend((sig, value.id - base, va.id - base))
                out = _new_tensor(Tensor)
                out._data, out._trace, out._value = None, top, value
                return out
            n0, s0, t0 = len(top._nodes), len(top.sigs), len(top.tape)
            out = fn(a)
            _learn(memo, key, top, n0, s0, t0, out, (va,))
            if key not in memo:
                _remember(memo, key, _SKIP)
            return out
    op.__name__, op.__qualname__, op.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    op.__module__ = getattr(fn, "__module__", __name__)
    op.__wrapped__ = fn
    return op


def _replayed_block(top: Trace, made: list, e: tuple, memo: dict, a, b) -> Tensor | None:
    """A binary memo op's call on the replaying trace `top` (`tensorplay._replay`) whose next
    template entry `e` is not this op's node: the template's result when `e` is the composite
    block this op replays for these operand types (`_learn_block`: the broadcast ``x + b``), on
    the same tensors; else None, after `top` left the replay (as every other mismatch does).
    When `e` is a capture's first read, this call's operand is taken for it first
    (`_replayed_captures`)."""
    if e[0] is REPLAY_CAPTURE:
        e = _replayed_captures(top.expect, made, a, b)
        if e is None:
            top.leave()
            return None
        if e[0] is memo and made[e[1]] is a and made[e[2]] is b:
            out = e[4]
            made.append(out)
            return out
    prog = e[0]
    if prog.__class__ is tuple and e[2] is not None and made[e[1]] is a and made[e[2]] is b:
        t, u = a._type(), b._type()  # (an operand may be a capture: a concrete tensor)
        hit = memo.get((t.shape, t.dtype, u.shape, u.dtype))
        if hit is not None and hit[0] is prog and hit[4] == _PROGRAM:
            out = e[4]
            made.append(out)
            return out
    top.leave()
    return None


# The first field of a replay template's entry for a capture's first read (`tensorplay._replay`):
# ``(REPLAY_CAPTURE, capture index, (shape, strides, numpy dtype), value, None)``.
REPLAY_CAPTURE = ("a captured tensor",)


def _replayed_captures(expect: list, made: list, a, b) -> tuple | None:
    """For the binary op `a`, `b` on a replaying trace whose next template entries are captures'
    first reads: the entry of the op after them, once this call's operand it reads at each of
    their positions is appended to `made`; None (nothing appended) unless each such operand is a
    concrete root tensor of its capture's shape, strides and dtype."""
    p = q = len(made)
    while expect[q][0] is REPLAY_CAPTURE:
        q += 1
    op = expect[q]
    taken = []
    for r in range(p, q):
        t = a if op[1] == r else b if op[2] == r else None
        if t.__class__ is not Tensor or t._trace is not None or t._base is not None or t._meta:
            return None
        shape, strides, dtype = expect[r][2]
        d = t._data
        if d.shape != shape or d.strides != strides or (d.dtype is not dtype and d.dtype != dtype):
            return None
        taken.append(t)
    made.extend(taken)
    return op


def _learn(memo: dict, key: tuple, top: Trace, n0: int, s0: int, t0: int, out, operands: tuple) -> None:
    """After an op layer call that started with `n0` nodes, `s0` signatures and `t0` tape items in
    `top`: remember its node in `memo` under `key` when the call traced exactly one taped, non-view
    node whose result is `out` and whose inputs are `operands` (or, for two, the same swapped:
    flagged)."""
    nodes = top._nodes
    if len(nodes) != n0 + 1 or len(top.sigs) != s0 + 1 or out.__class__ is not Tensor \
            or out._trace is not top or out._base is not None:
        return
    node = nodes[-1]
    sig = top.sigs[-1]
    if sig is None or node.__class__ is not Node or node.out is not out._value or node.prim.name in VIEW_PRIMS:
        return
    ins = node.inputs
    if ins == operands or (len(operands) == 2 and ins == operands[::-1]):
        _remember(memo, key, (node.prim, dict(node.attrs), sig, node.out.type, ins != operands))
        _retape(top, t0, 1)


def _learn_block(memo: dict, key: tuple, top: Trace, n0: int, s0: int, out, va: Value, vb: Value) -> None:
    """After an op layer call on the distinct values `va`, `vb` that started with `n0` nodes and
    `s0` signatures in `top`: remember in `memo` under `key` the program of the one composite block
    (a `memo_composite` hit, `tensorplay._deferred`) the call appended, when its result is `out`
    and it reads `va`, `vb` in that order. Replaying it (`_deferred.replay`) records the block
    exactly as the composite's hit does, so the key of the trace is the op layer's."""
    nodes = top._nodes
    if len(nodes) != n0 + 1 or len(top.sigs) != s0 + 1 or out.__class__ is not Tensor \
            or out._trace is not top or out._base is not None:
        return
    block = nodes[-1]
    if block.__class__ is not Deferred or block.out is not out._value or block.n_ops != 2 \
            or block.refs[0] is not va or block.refs[1] is not vb:
        return
    _remember(memo, key, (block.prog, None, None, None, _PROGRAM))


def _retape(top: Trace, t0: int, k: int) -> None:
    """Rewrite `top`'s tape since `t0` as its last `k` nodes (all real, taped) recorded one by one, as
    the op memo's replay records them: a composite the op layer ran inside may have recorded its
    nodes as one block step (`_traced_memo`), and the first call must get the key of the hits."""
    tape, base = top.tape, top.base
    del tape[t0:]
    for node, sig in zip(top._nodes[-k:], top.sigs[-k:]):
        tape.append(sig)
        tape.append(node.out.id - base)
        for v in node.inputs:
            tape.append(v.id - base)


def _outside_op(top: Trace, fn: Callable, memo: dict, a: Tensor, b: Tensor) -> Tensor:
    """`fn(a, b)` where one operand is a root of `top` and the other a concrete root from outside
    (a captured weight: `x @ W`), replayed from `memo` as `memo_traced_op` does. The outside
    operand is lifted first (`Trace.lift`: its capture, made on first use, as the op layer's
    `emit` would make it) and the memo is keyed by the values' types, as for two roots. Anything
    else (another trace's tensor, a meta tensor, no operand of `top`) runs `fn` as it is."""
    ta, tb = a._trace, b._trace
    if ta is top:
        if tb is not None or b._meta:
            return fn(a, b)
        va, vb = a._value, top.lift(b)
    elif tb is top:
        if ta is not None or a._meta:
            return fn(a, b)
        va, vb = top.lift(a), b._value
    else:
        return fn(a, b)
    return _binary_memo(top, fn, memo, a, b, va, vb)


def _binary_memo(top: Trace, fn: Callable, memo: dict, a: Tensor, b: Tensor, va: Value, vb: Value) -> Tensor:
    """`fn(a, b)` on the values `va`, `vb` of `top`: replayed from `memo` (keyed by the two values'
    types) when it holds the op, else run through the op layer and learnt."""
    t, u = va.type, vb.type
    key = (t.shape, t.dtype, u.shape, u.dtype)
    hit = memo.get(key)
    if hit is not None:
        if hit is _SKIP:
            return fn(a, b)
        kind = hit[4]
        if kind == _PROGRAM:
            if va is vb:  # (the program reads two operand positions; the op layer keys `x + x` apart)
                return fn(a, b)
            return _replay_block(top, hit[0], [va, vb])
        if kind != _AGAIN:
            return _replay(top, hit, (vb, va) if kind else (va, vb))
    n0, s0, t0 = len(top._nodes), len(top.sigs), len(top.tape)
    out = fn(a, b)
    _learn(memo, key, top, n0, s0, t0, out, (va, vb))
    if va is not vb and memo.get(key) is hit:
        _learn_block(memo, key, top, n0, s0, out, va, vb)
    if memo.get(key) is hit:
        # a composite the op layer ran may have learnt its program in this call (real nodes): its
        # block comes with the next call, so one more try before the op layer for good
        _remember(memo, key, _SKIP if hit is _AGAIN_ENTRY else _AGAIN_ENTRY)
    return out


def _scalar_op(top: Trace, fn: Callable, memo: dict, a: Tensor, b) -> Tensor:
    """`fn(a, b)` for a Python number `b`, replayed from `memo` as `memo_traced_op` does: when `a` is
    a root of the plain transform's trace `top` and the op once traced, for `a`'s type and `b`'s
    class, to one node reading `a` and the scalar's input (`Trace.scalar_value`, in `a`'s dtype and
    shape: no promotion, no conversion), after at most that input's broadcast."""
    if a._trace is not top or a._base is not None or not top.concrete or not STATE.grad_enabled:
        return fn(a, b)
    va = a._value
    t = va.type
    key = (t.shape, t.dtype, b.__class__)
    hit = memo.get(key)
    if hit is not None:
        return _replay(top, hit, (va, top.scalar_value(hit[5](b), t.dtype, t.shape)))
    nodes = top._nodes
    n0, s0, t0 = len(nodes), len(top.sigs), len(top.tape)
    out = fn(a, b)
    k = len(nodes) - n0
    if (k == 1 or k == 2) and len(top.sigs) == s0 + k and out.__class__ is Tensor and out._trace is top \
            and out._base is None:
        node = nodes[-1]
        sig = top.sigs[-1]
        d = t.dtype
        conv = bool if d.is_bool else int if d.is_integer else float  # as `ops._common._py`
        v = conv(b)
        vs = top._scalars.get((d, v if v else str(v), t.shape))
        if sig is not None and node.__class__ is Node and node.out is out._value and node.prim.name not in VIEW_PRIMS \
                and vs is not None and node.inputs == (va, vs) and (k == 1 or nodes[-2].out is vs):
            _remember(memo, key, (node.prim, dict(node.attrs), sig, node.out.type, False, conv))
            _retape(top, t0, k)
    return out


_SKIP = ("not one node",)  # an op memo entry: these operand types trace to more than one node (run the op layer)
# the kind (last field) of a binary op memo entry other than a node's (False, or True: swapped operands)
_PROGRAM = 2  # (program, None, None, None, _PROGRAM): a composite block's program (`_learn_block`)
_AGAIN = 3    # `_AGAIN_ENTRY`: learning failed once; the next call tries again, then `_SKIP`
_AGAIN_ENTRY = (None, None, None, None, _AGAIN)


def _remember(memo: dict, key: tuple, entry: tuple) -> None:
    if len(memo) >= _OP_MEMO_LIMIT:
        memo.clear()
    memo[key] = entry
    if entry is not _SKIP and entry[1].__class__ is dict:  # a node's entry: its attributes dict names it (see `memo_of_node`)
        if len(_MEMO_OF_ATTRS) >= 8 * _OP_MEMO_LIMIT:
            _MEMO_OF_ATTRS.clear()
        _MEMO_OF_ATTRS[id(entry[1])] = (memo, entry)


_MEMO_OF_ATTRS: dict = {}  # id(an op memo entry's attributes) -> (the memo, the entry); the entry holds the dict


def memo_of_node(node: Node) -> tuple | None:
    """``(memo, entry)`` of the op memo entry that appended `node` (a node made by a memo hit
    keeps its entry's own attributes dict), or None for a node the op layer made."""
    got = _MEMO_OF_ATTRS.get(id(node.attrs))
    return got if got is not None and got[1][1] is node.attrs else None


def _replay(top: Trace, hit: tuple, vals: tuple) -> Tensor:
    """Append the memoised node `hit` (primitive, attributes, signature, type, swapped) on `vals`."""
    prim, attrs, sig, typ = hit[0], hit[1], hit[2], hit[3]
    node = _new_node(Node)
    node.prim, node.inputs, node.attrs = prim, vals, attrs  # (the memo's own dict: node attributes are never written)
    value = _new_value(Value)
    value.type, value.node, value.id = typ, node, next(_value_ids)
    node.out = value
    top._nodes.append(node)
    top.sigs.append(sig)
    base = top.base
    if len(vals) == 2:
        top.tape.extend((sig, value.id - base, vals[0].id - base, vals[1].id - base))
    else:
        top.tape.extend((sig, value.id - base, vals[0].id - base))
    out = _new_tensor(Tensor)
    out._data, out._trace, out._value = None, top, value
    return out


def _view_taken_eagerly(name: str, t: Tensor) -> bool:
    """Is a view step on outside concrete storage `t` taken eagerly? Slices are (their offsets stay
    data: the view becomes a graph input when read), and so are further view steps of such views,
    as long as no active trace has written the storage (its numpy data would be stale)."""
    if t._trace is not None or (name != "slice" and t._base is None):
        return False
    return _views.shadowing_trace(t) is None


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
    sigs: tuple | None = None  # (the graph traced, its nodes' signature ids) when known (see `signature_key`)
    key: tuple | None = None   # (the graph traced, its tape key) when known (see `Trace._tape_key`)

    def structural_key(self) -> tuple:
        """A hashable key of `graph`'s structure: the trace's tape key (`Trace._tape_key`, built as the
        ops ran) when every node was taped, else `signature_key` when the signatures are known, else
        ``("struct", Graph.structural_key)``. The three kinds never compare equal (the first item is
        an int, "sig" or "struct").

        >>> import tensorplay as tp
        >>> a = trace_function(lambda x: x * 2, (tp.ones(2),))
        >>> b = trace_function(lambda y: y * 2, (tp.zeros(2),))
        >>> a.structural_key() == b.structural_key()
        True
        """
        key = self.key
        if key is not None and key[0] is self.__dict__.get("_graph", None):  # (not replaced by a pass since)
            return key[1]  # (read without relinking an unlinked graph: a cache hit never needs it)
        if self.sigs is not None:
            graph = self.graph  # (first: building a lazy graph settles `sigs`)
            sigs = self.sigs
            if sigs is not None and sigs[0] is graph:
                return ("sig",) + signature_key(graph, sigs[1])
        return ("struct", self.graph.structural_key())

    @property
    def num_outputs(self) -> int:
        """Graph outputs that are the function's own results (the rest are in-place write-backs)."""
        return len(self.graph.outputs) - len(self.mutated)

    def write_back(self, inputs: Sequence, outputs: Sequence, *, alias_outputs: bool = False) -> list:
        """Apply the in-place writes the traced function made to its inputs; return its own outputs.

        This is the one place where the writes of a traced function reach the caller. Every
        call site of a `ClosedGraph` (tp.compile, and each transform) calls it right after
        running the graph::

            inputs = arg_tensors + closed.capture_tensors()   # in graph-input order
            outs = call_graph(graph, inputs)                  # all graph outputs
            outs = closed.write_back(inputs, outs)
            return closed.unflatten_outputs(outs)

        - `inputs` are the caller's tensors in graph-input order (the flat tensor arguments,
          then the captures); `outputs` are *all* graph outputs. The last
          ``len(closed.mutated)`` of them are the final values of inputs
          ``closed.mutated[i]``; each is stored into that input with eager in-place
          semantics (numpy copy through views), or as an in-place write of the enclosing
          trace when the caller's tensor is itself traced, which composes transforms.
        - A transform that changes shapes must hand over values of the caller's shape: vmap
          moves the batch axis of a written value to the argument's in_dim, and raises when a
          value that depends on the batch is written into an unbatched input (a capture or an
          in_dim=None argument). Mutated outputs are ordinary graph outputs, so a pass
          transforms them like any other (AD passes treat them as auxiliary outputs).
        - `alias_outputs=True` (for passes that keep output shapes, like tp.compile) returns
          the caller's own tensor, or a view of it, for outputs that were an input or a view
          of one, so ``out is x`` holds as in eager mode.

        Raises RuntimeError, before anything is written, when a written input shares memory
        with another input the graph reads: the graph could not have seen the write through
        that alias. Returns the first ``len(outputs) - len(closed.mutated)`` outputs.

        >>> import tensorplay as tp
        >>> from tensorplay._trace import call_graph, trace_function
        >>> x = tp.zeros(3)
        >>> closed = trace_function(lambda x: x[1:].add_(1).sum(), (x,))
        >>> closed.mutated, closed.num_outputs
        ([0], 1)
        >>> inputs = [x] + closed.capture_tensors()
        >>> closed.write_back(inputs, call_graph(closed.graph, inputs))
        [tensor(2.)]
        >>> x
        tensor([0., 1., 1.])
        """
        mutated = self.mutated
        if len(outputs) != len(self.graph.outputs):
            raise ValueError(f"write_back: expected all {len(self.graph.outputs)} outputs of @{self.graph.name} "
                             f"(the function's own, then one per input written in place), got {len(outputs)}")
        outputs = _views.own_outputs(outputs, inputs)
        n = len(outputs) - len(mutated)
        user = list(outputs[:n])
        if mutated:
            _views.check_no_aliased_writes(self, inputs, mutated)
            for idx, value in zip(mutated, outputs[n:]):
                target = inputs[idx]
                if tuple(value.shape) != tuple(target.shape) or value.dtype is not target.dtype:
                    raise ValueError(f"write_back: the value written into input {idx} has type "
                                     f"{value.dtype.name}{list(value.shape)}, but the input is "
                                     f"{target.dtype.name}{list(target.shape)}")
                _views.store(target, value, "write-back")
        if alias_outputs:
            for k, alias in enumerate(self.output_aliases):
                if alias is not None and k < n:
                    idx, steps = alias
                    user[k] = apply_steps(inputs[idx], steps)
        return user

    def self_contained_graph(self) -> Graph:
        """`graph` with the captured tensors as `constant` nodes holding their current values (random
        keys stay inputs, marked ``{tp.capture = "random_key"}``): its text runs on its own, e.g.
        through ``tensorplay-ir run``, which draws a fresh key for each.

        >>> import tensorplay as tp
        >>> w = tp.tensor([1.0, 2.0])
        >>> closed = tp.make_graph(lambda x: x * w, tp.ones(2))
        >>> len(closed.graph.inputs), len(closed.self_contained_graph().inputs)
        (2, 1)
        """
        values = {self.num_args + k: c.numpy() for k, c in enumerate(self.captures) if isinstance(c, Tensor)}
        keys = {self.graph.inputs[self.num_args + k]: {"tp.capture": "random_key"}
                for k, c in enumerate(self.captures) if isinstance(c, RandomKey)}
        graph = self.graph
        if keys:
            graph = Graph(graph.inputs, graph.nodes, graph.outputs, graph.name, {**graph.arg_attrs, **keys})
        return bind_constants(graph, values) if values else graph

    def __str__(self) -> str:
        return str(self.self_contained_graph())

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


class _TracedClosedGraph(ClosedGraph):
    """The ClosedGraph `trace_function` returns: its graph is stored *unlinked* (every node's result
    Value has ``node = None``), so a trace nobody asks the graph of holds no reference cycle and is
    freed by reference counting as soon as the call is done, not by the cyclic collector (which
    otherwise traverses, promotes and finally collects every trace's nodes). Reading `graph`
    restores the links first; the structural key does not need them.
    """

    @property
    def graph(self) -> Graph:
        d = self.__dict__
        nodes = d["_unlinked"]
        if nodes is not None:
            for node in nodes:
                node.out.node = node
            d["_unlinked"] = None
        lazy = d.get("_lazy")
        if lazy is not None:  # (see `_traced`): the graph of the trace's live nodes, built now
            inputs, nodes, results, name, sigs = lazy
            _expand_deferred(nodes, sigs)  # (composite blocks not built while tracing: built now)
            live = live_nodes(nodes, results)
            graph = d["_graph"] = Graph(inputs, live, results, name)
            d["_lazy"] = None
            if d["key"] is not None and d["key"][0] is None:
                d["key"] = (graph, d["key"][1])
            if d["sigs"] is not None and d["sigs"][0] is None:
                d["sigs"] = (graph, sigs) if len(live) == len(nodes) else None
        return d["_graph"]

    @graph.setter
    def graph(self, graph: Graph) -> None:
        d = self.__dict__
        old = d.get("_unlinked")
        if old is not None and d.get("_graph") is not graph:  # the old graph's values: linked again
            for node in old:
                node.out.node = node
        d["_graph"] = graph
        d["_unlinked"] = None
        d["_lazy"] = None

    def _unlink(self) -> None:
        """Drop the node <-> value back references of this trace's nodes (see the class doc)."""
        nodes = self.__dict__["_graph"].nodes
        for node in nodes:
            node.out.node = None
        self.__dict__["_unlinked"] = nodes


def _traced(parts: tuple, name: str, sigs: list, key: tuple, num_args: int, captures: list, in_tree, out_tree,
            static_leaves: list, out_static: list, mutated: list, output_aliases: list) -> _TracedClosedGraph:
    """A `_TracedClosedGraph` whose graph is built on first use from `parts`, ``(inputs, nodes,
    results)`` of a trace whose every node is taped (`Trace.finish(lazy=True)`); its structural key is
    the tape key `key`. The nodes are stored unlinked, as `_unlink` leaves them."""
    closed = _new_closed(_TracedClosedGraph)
    nodes = parts[1]
    for node in nodes:
        node.out.node = None
    closed.__dict__ = {"_graph": None, "_unlinked": nodes, "_lazy": (parts[0], nodes, parts[2], name, sigs),
                       "num_args": num_args, "captures": captures, "in_tree": in_tree, "out_tree": out_tree,
                       "static_leaves": static_leaves, "out_static": out_static, "mutated": mutated,
                       "output_aliases": output_aliases, "sigs": (None, sigs), "key": (None, key)}
    return closed


_new_closed = object.__new__


def _release(trace: Trace) -> None:
    """Drop a finished trace's references to its own tensors (arguments, proxies, traced views),
    which are reference cycles (the tensors point back at the trace)."""
    views = trace.views
    views.args = []
    d = views.__dict__
    if len(d) > 1:  # (only `args` unless some container was written)
        for name in _RELEASED:
            c = d.get(name)
            if c:
                c.clear()


_RELEASED = ("proxies", "sources", "derived", "view_layouts")


def apply_steps(t: Tensor, steps) -> Tensor:
    """`t` viewed through `steps` with tensor ops (eager views, or traced views of `t`)."""
    for name, attrs in steps:
        t = _views.make_diagonal(t, **attrs) if name == "diagonal" else bind(name, t, **attrs)
    return t


@dataclass(frozen=True)
class _Static:
    value: Any


def _known_args(trace: Trace, known: list, leaves: list, batched_mask: tuple | None) -> list:
    """The argument tensors of `trace` for caller tensors `leaves` of types `known` (the caller
    vouches: concrete and C-contiguous, or per-sample slices where `batched_mask` says so):
    `new_arg` for each, written out, with the ids reserved at once."""
    arg_values, arg_tensors = trace.arg_values, trace.views.args
    n = len(known)
    vid = next(islice(_value_ids, n - 1, None)) - n if n else trace.base  # n ids at once
    first = vid + 1
    for typ in known:
        vid += 1
        v = _new_value(Value)
        v.type, v.node, v.id = typ, None, vid
        arg_values.append(v)
        t = _new_tensor(Tensor)
        t._data, t._trace, t._value = None, trace, v
        arg_tensors.append(t)
    _known_sources(trace, first, known, leaves, batched_mask)
    return arg_tensors  # (the trace's own list: neither is changed after this)


def reserve_ids(n: int) -> int:
    """The first of `n` consecutive Value ids, reserved at once (for n > 0)."""
    return next(islice(_value_ids, n - 1, None)) - n + 1


def _known_sources(trace: Trace, first: int, known: list, leaves: list, batched_mask: tuple | None) -> None:
    """Where `trace`'s arguments of types `known`, numbered from `first`, get their values: the
    caller tensors `leaves` (per-sample slices where `batched_mask` says so); and the arguments'
    part of the tape key."""
    if trace.concrete:
        if batched_mask is not None:
            trace.batched = True
        if first == trace.base + 1:  # numbered base+1..n: `source_of` finds them by position
            trace.arg_sources = leaves
            trace.arg_batched = batched_mask
        else:  # (another thread took ids in between)
            for k, (v, leaf) in enumerate(zip(trace.arg_values, leaves)):
                trace.set_source(v, _BATCHED if batched_mask is not None and batched_mask[k] else leaf)
    trace.arg_key = _arg_key(known)


def _call_traced(fn: Callable, in_tree, traced_leaves: list) -> tuple:
    """``(output leaves, output tree, output tensors)`` of `fn` called on the arguments of `in_tree`
    with tensor leaves `traced_leaves` (`in_tree` True: they are the positional arguments)."""
    if in_tree is True:
        out = fn(*traced_leaves)
    else:
        targs, tkwargs = _pytree.tree_unflatten(in_tree, traced_leaves)
        out = fn(*targs, **tkwargs) if tkwargs else fn(*targs)
    if out.__class__ is Tensor:
        return [out], _pytree.LEAF, [out]
    out_leaves, out_tree = _pytree.tree_flatten(out)
    return out_leaves, out_tree, [o for o in out_leaves if isinstance(o, Tensor)]


def _closed(trace: Trace, graph, in_tree, leaves: list, num_args: int, all_tensors: bool,
            out_leaves: list, out_tree, out_tensors: list) -> "_TracedClosedGraph":
    """The ClosedGraph of finished `trace` (`graph`: what `Trace.finish(lazy=True)` returned),
    its own references released."""
    n_out = len(out_leaves)
    out_static = [None] * n_out if len(out_tensors) == n_out else [
        None if isinstance(o, Tensor) else _Static(o) for o in out_leaves]
    static_leaves = [None] * len(leaves) if all_tensors else [
        None if isinstance(leaf, Tensor) else leaf for leaf in leaves]
    if graph.__class__ is tuple:  # every node taped: the graph is built on first use
        closed = _traced(graph, trace.builder.name, trace.sigs, trace.graph_key, num_args, trace.capture_sources,
                         in_tree, out_tree, static_leaves, out_static, trace.mutated, trace.output_aliases)
        _release(trace)
        return closed
    closed = _TracedClosedGraph(graph, num_args, trace.capture_sources, in_tree, out_tree, static_leaves,
                                out_static, trace.mutated, trace.output_aliases,
                                None if trace.graph_sigs is None else (graph, trace.graph_sigs),
                                None if trace.graph_key is None else (graph, trace.graph_key))
    _release(trace)
    closed._unlink()
    return closed


def trace_keyed(fn: Callable, leaves: list, in_tree, known: list, batched_mask: tuple | None, transform: str,
                name: str) -> tuple:
    """The pipeline cache's trace of a call whose argument signature is known (`trace_function` with
    ``flat=(leaves, in_tree, known, batched_mask)``), made so that a cache hit builds no ClosedGraph:
    ``(key, captures, traced)``. In the common case (every output a tensor this trace computed,
    nothing written in place, no random draw) `key` is ``(tape key, output tree)`` and `traced` a
    `KeyedTrace`: its ``closed()`` makes the ClosedGraph on a miss, its ``drop()`` frees the trace on a
    hit. Otherwise `key` is None and `traced` is the ClosedGraph. `captures` are its capture
    sources either way.

    >>> import tensorplay as tp
    >>> x = tp.ones(2)
    >>> key, caps, traced = trace_keyed(lambda x: x * x, [x], _pytree.tree_flatten(((x,), {}))[1],
    ...                                 [x._type()], None, "grad", "f")
    >>> key == (traced.closed().structural_key(), _pytree.LEAF), caps
    (True, [])
    """
    trace = Trace(transform, _graph_name(fn, name), concrete=_is_concrete(transform))
    trace.active = True  # `with trace:`, written out
    STATE.stack.append(trace)
    try:
        traced_leaves = _known_args(trace, known, leaves, batched_mask)
        out_leaves, out_tree, out_tensors = _call_traced(fn, in_tree, traced_leaves)
        graph = trace.finish(out_tensors, lazy=True)
    finally:
        trace.__exit__()
    return keyed_result(trace, graph, in_tree, leaves, out_leaves, out_tree, out_tensors)


def keyed_result(trace: Trace, graph, in_tree, leaves: list, out_leaves: list, out_tree, out_tensors: list) -> tuple:
    """`trace_keyed`'s result for the finished `trace` (`graph`: its ``finish(lazy=True)``)."""
    caps = trace.capture_sources
    if (graph.__class__ is not tuple or len(out_tensors) != len(out_leaves) or trace.mutated
            or any(trace.output_aliases) or (caps and any(isinstance(c, RandomKey) for c in caps))):
        return None, caps, _closed(trace, graph, in_tree, leaves, len(leaves), True, out_leaves, out_tree,
                                   out_tensors)
    return (trace.graph_key, out_tree), caps, KeyedTrace(trace, graph, in_tree, leaves, out_leaves, out_tree, out_tensors)


class KeyedTrace:
    """A finished trace of `trace_keyed` whose ClosedGraph is not built yet: `closed()` builds it (a
    pipeline-cache miss), `drop()` frees the trace without it (a hit). One of them is called once."""

    __slots__ = ("parts",)

    def __init__(self, *parts):
        self.parts = parts

    def closed(self) -> "_TracedClosedGraph":
        trace, graph, in_tree, leaves, out_leaves, out_tree, out_tensors = self.parts
        self.parts = None
        return _closed(trace, graph, in_tree, leaves, len(leaves), True, out_leaves, out_tree, out_tensors)

    def drop(self) -> None:
        """Break the trace's reference cycles (node <-> value, the trace <-> its tensors), so that
        reference counting frees it, as `_closed` leaves a ClosedGraph's."""
        trace, graph = self.parts[0], self.parts[1]
        self.parts = None
        for node in graph[1]:
            node.out.node = None
        _release(trace)


def _graph_name(fn: Callable, name: str | None) -> str:
    """The traced graph's name: `name`, else the function's, when it is an identifier; else "f"."""
    name = name or getattr(fn, "__name__", "f")
    return name if name.isidentifier() else "f"


def _is_concrete(transform: str) -> bool:
    """Do the tensors traced under `transform` have values (not one of `SYMBOLIC_TRANSFORMS`)?"""
    concrete = _CONCRETE.get(transform)
    if concrete is None:
        concrete = transform.split("(", 1)[0] not in SYMBOLIC_TRANSFORMS
        if len(_CONCRETE) < _TYPES_LIMIT:
            _CONCRETE[transform] = concrete
    return concrete


def trace_function(fn: Callable, args: tuple, kwargs: dict | None = None, *, transform: str = "trace",
                   in_types: Sequence[TensorType | None] | None = None, name: str | None = None,
                   flat: tuple | None = None) -> ClosedGraph:
    """Trace `fn(*args, **kwargs)` into a ClosedGraph.

    Tensor leaves of the arguments become graph inputs (with `in_types[i]` when given, e.g. the
    per-sample type under vmap); other leaves are passed to `fn` unchanged. Unless `transform`
    is one of `SYMBOLIC_TRANSFORMS`, traced tensors have values on demand (see the module doc);
    an argument given a type of another shape (a per-sample slice) has none.

    `flat` is ``(leaves, in_tree)`` when the caller has flattened ``(args, kwargs)`` already and
    every leaf is a tensor (the pipeline cache's call path): the arguments are not walked again.
    ``(leaves, in_tree, types)`` also gives each leaf's type (`Tensor._type`), which the caller
    vouches for: every leaf a concrete C-contiguous tensor of that type (a cached signature's).
    ``(leaves, in_tree, types, batched)`` marks the leaves whose type is a per-sample slice of
    theirs (a map's mapped arguments, `in_types` as the map gives them): they have no value.

    >>> import tensorplay as tp
    >>> closed = trace_function(lambda x, ws: ws[0] * x + ws[1], (tp.ones(2), [tp.ones(2), tp.ones(2)]))
    >>> closed.num_args, [n.prim.name for n in closed.graph.nodes]
    (3, ['mul', 'add'])
    """
    kwargs = kwargs or {}
    known = batched_mask = None
    if flat is not None:
        leaves, in_tree = flat[0], flat[1]
        if len(flat) > 2:
            known = flat[2]
            batched_mask = flat[3] if len(flat) > 3 else None
        tensor_pos = range(len(leaves))
        all_tensors = True
    elif not kwargs and all(a.__class__ is Tensor for a in args):  # the common call: tensors only
        leaves = list(args)
        in_tree = _ARG_TREES.get(len(leaves))
        if in_tree is None:
            in_tree = _ARG_TREES[len(leaves)] = _pytree.tree_flatten((tuple(args), {}))[1]
        tensor_pos = range(len(leaves))
        all_tensors = flat = True
    else:
        leaves, in_tree = _pytree.tree_flatten((tuple(args), kwargs))
        tensor_pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
        all_tensors = len(tensor_pos) == len(leaves)
    if in_types is not None and len(in_types) != len(tensor_pos):
        raise ValueError(f"{transform}: {len(in_types)} input types for {len(tensor_pos)} tensor arguments")
    fname = _graph_name(fn, name)
    concrete = _is_concrete(transform)
    trace = Trace(transform, fname, concrete=concrete)
    trace.active = True  # `with trace:`, written out
    STATE.stack.append(trace)
    try:
        arg_values, arg_tensors, sources = trace.arg_values, trace.views.args, trace._sources
        use_known = known is not None and in_types is None  # the signature's exact types: nothing to look up
        if use_known:  # every leaf a concrete C-contiguous tensor of its known type
            traced_leaves = _known_args(trace, known, leaves, batched_mask)
        else:
            traced_leaves = list(leaves)
        new_arg = trace.new_arg
        arg_types = _ARG_TYPES
        by_dtype = _ARG_TYPES_BY_DTYPE
        for k, i in enumerate(() if use_known else tensor_pos):
            leaf = leaves[i]
            typ = None
            batched = False
            if leaf._trace is None:  # the common argument: `new_arg`, inlined
                given = None if in_types is None else in_types[k]
                data = leaf._data
                if given is None:
                    dt = data.dtype
                    by_shape = by_dtype.get(id(dt))  # (dtype, {shape: (type, C strides)}): no dtype hashing
                    hit = by_shape[1].get(data.shape) if by_shape is not None and by_shape[0] is dt else None
                    if hit is not None and data.strides == hit[1]:  # exactly C strides: C-contiguous
                        typ = hit[0]
                elif given.shape != data.shape:  # a per-sample slice (vmap): no value, no layout
                    typ = given
                    batched = True
            if typ is not None:
                v = _new_value(Value)
                v.type, v.node, v.id = typ, None, next(_value_ids)
                arg_values.append(v)
                t = _new_tensor(Tensor)
                t._data, t._trace, t._value = None, trace, v
                arg_tensors.append(t)
                if concrete:
                    if sources is _NOTHING:
                        sources = trace._sources = {}
                    if batched:
                        trace.batched = True
                        sources[v] = _BATCHED
                    else:
                        sources[v] = leaf
                traced_leaves[i] = t
                continue
            typ = in_types[k] if in_types is not None else None
            data = leaf._data
            if leaf._trace is None:  # a concrete caller tensor (the common case): its type, memoised
                shape = data.shape
                if typ is None:
                    typ = arg_types.get((shape, data.dtype))
                    if typ is None:
                        typ = leaf._type()
                        if len(arg_types) >= _TYPES_LIMIT:
                            arg_types.clear()
                            by_dtype.clear()
                        arg_types[(shape, data.dtype)] = typ
                    _remember_arg_type(data, typ)
                same_shape = typ.shape == shape
                plain = data.flags.c_contiguous
            else:
                if typ is None:
                    typ = leaf._value.type
                same_shape = typ.shape == leaf._value.type.shape
                plain = False
            traced_leaves[i] = arg = new_arg(typ, leaf, batched=not same_shape)
            lay = None if plain or not same_shape else _views.outside_layout(leaf)
            if lay is not None:  # a strided caller tensor: reshapes of it copy, as they would eagerly
                trace.views.mine("layouts")[id(arg)] = lay
        out_leaves, out_tree, out_tensors = _call_traced(fn, True if flat is True else in_tree, traced_leaves)
        graph = trace.finish(out_tensors, lazy=True)
    finally:
        trace.__exit__()
    return _closed(trace, graph, in_tree, leaves, len(tensor_pos), all_tensors, out_leaves, out_tree, out_tensors)


_ARG_TYPES: dict = {}  # (numpy shape, numpy dtype) of a concrete argument -> its TensorType
_ARG_TYPES_BY_DTYPE: dict = {}  # id(numpy dtype) -> (that dtype, {shape: (TensorType, C-order strides)})


def _remember_arg_type(data: np.ndarray, typ: TensorType) -> None:
    """Note `typ` for arrays of `data`'s dtype object and shape (the dtype is kept, so its id is not reused)."""
    dt = data.dtype
    entry = _ARG_TYPES_BY_DTYPE.get(id(dt))
    if entry is None or entry[0] is not dt:
        entry = _ARG_TYPES_BY_DTYPE[id(dt)] = (dt, {})
    shape = data.shape
    strides, step = [], dt.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    entry[1][shape] = (typ, tuple(reversed(strides)))
_ARG_TREES: dict = {}  # number of positional tensor arguments -> the TreeDef of (args, {})
_ARG_KEYS: dict = {}   # id(a signature's type list) -> (that list, its arguments' part of the tape key)


def _arg_key(types: list) -> tuple:
    """The arguments' (relative id, type id) pairs of `Trace._tape_key` for arguments of `types`
    numbered 1..n, as `trace_function` numbers them (memoised per type list: a cached signature's,
    kept alive by the entry; type ids are never reused, so an entry made before `_TYPE_IDS` was
    cleared only makes a key that matches nothing)."""
    hit = _ARG_KEYS.get(id(types))
    if hit is not None and hit[0] is types:
        return hit[1]
    flat = []
    for k, t in enumerate(types):
        flat.append(k + 1)
        flat.append(_input_type_id(t))
    if len(_ARG_KEYS) >= _TYPES_LIMIT:
        _ARG_KEYS.clear()
    _ARG_KEYS[id(types)] = (types, tuple(flat))
    return _ARG_KEYS[id(types)][1]
_CONCRETE: dict = {}   # transform name -> does its trace have values (not in SYMBOLIC_TRANSFORMS)


@register_reset
def clear_memos() -> None:
    """Forget the tracing memos (result types per signature, argument types and trees);
    `tp.compiler.reset()` calls it.

    >>> import tensorplay as tp
    >>> _ = tp.compile(lambda x: x + 1)(tp.ones(2))
    >>> tp.compiler.reset(); len(_TYPES)
    0
    """
    _TYPES.clear()
    for memo in _OP_MEMOS:
        memo.clear()
    _ARG_TYPES.clear()
    _ARG_TYPES_BY_DTYPE.clear()
    _ARG_TREES.clear()
    _ARG_KEYS.clear()
    _TYPE_IDS.clear()
    _MEMO_OF_ATTRS.clear()


def call_graph(graph: Graph, inputs: Sequence) -> list:
    """Run `graph` on tensors: inline it into the innermost trace that owns an input, else execute it."""
    trace = _views.owning_trace(inputs)
    if trace is None:
        from ._exec import execute

        if _needs_tape(inputs):  # inputs that require grad: record the graph's ops on the tape
            return _RUN_TAPED[0](graph, inputs)
        return _views.own_outputs([Tensor._wrap(a) for a in execute(graph, [t._data for t in inputs])], inputs)
    if not trace.active:
        raise leaked_tracer(f"@{graph.name}", trace.transform)
    vals = [trace.lift(t) for t in inputs]
    outs = [Tensor._symbolic(trace, v) for v in inline(trace.builder, graph, vals)]
    if STATE.stops_gradient(trace):
        outs = [trace.emit(_STOP_GRADIENT, (t,), {}) for t in outs]
    return outs

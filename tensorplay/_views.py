"""Views and in-place writes: PyTorch's aliasing semantics, eagerly and under tracing.

**Eager.** A concrete tensor is a numpy array. The view primitives (`VIEW_PRIMS`:
reshape when the layout allows, transpose, slice, broadcast_in_dim, stop_gradient)
return numpy views, so every basic index, `view`, `transpose`, `expand`, `narrow`,
`select`, `diagonal`, `split` piece, `.T`, ... shares storage with its operand, and an
in-place op (`np.copyto` into the array) is seen through the base and every other
view. `bind` hands each eager result to `eager_result`, which records ``t._base`` (the
tensor owning the storage, as in torch) and ``t._steps`` (the view primitives that
derive ``t`` from it), and gives every *computed* result fresh, writable, C-contiguous
storage (numpy's `flip` would otherwise alias, and ufuncs keep their operands' strides).

**Traced** (functionalization at trace time, as torch's functional tensors do it). SSA
values are immutable, so aliasing is bookkeeping on the tensors:

- a *root* is a traced tensor that owns its storage: a function argument, the result
  of a computation, a `clone`, or the *proxy* standing for a storage from outside
  the trace (see below). A root's ``_value`` is the storage's current value.
- a traced *view* has ``_base`` (its root) and ``_steps``; its value is the steps
  replayed on the root, re-derived on the next read whenever the root was written
  since (``_stamp`` differs from the root's).
- a write into a tensor scatters the new value back through the steps into the root
  (`tensorplay._scatter`: the inverse of each view step, e.g. a `slice` becomes `pad` + `select`
  or a `concatenate`), rebinds the root's value and bumps its stamp.
- whether a traced `reshape` is a view follows numpy's rule on the strides the
  tensor would have (`Layout`), so a reshape that copies in eager mode copies here.
- a storage from outside the trace (a captured tensor, or one of an enclosing trace)
  is seen through one *proxy* root per storage: its initial value is a captured input,
  and the outside tensor and all its views read and write through the proxy.
  Concrete tensors created *while* tracing are local: ops on them alone run eagerly
  (constant folding) and they are never written back.
- under a plain transform (`Trace.capture_views`), a view of outside storage that the trace
  has not written is an input of its own, and slices of outside storage are taken eagerly
  (`outside_view`): offsets are data, so the graph does not change with them. Two inputs of
  one storage are consistent by construction (`check_no_aliased_writes` exempts them).

The traced graph is therefore always functional. `Trace.finish` appends the final value
of every argument or captured storage that was written as an extra graph output and
records the input it belongs to in ``ClosedGraph.mutated``; `ClosedGraph.write_back` is
the one helper that call sites use to store those values into the caller's tensors.

Layouts and strides are pure functions in `tensorplay._layout`; the trace state lives in
`tensorplay._state`. This module imports neither `_trace` nor anything above it.
"""
from __future__ import annotations

import itertools
from types import MappingProxyType
from typing import Sequence

import numpy as np

from tensorplay.ir import Value, dtypes

from ._layout import (VIEW_PRIMS, Layout, array_layout, contiguous_strides, diagonal_eager, expand_steps,
                      has_overlap, is_c_contiguous, layout_step, through_expand, view_layout)
from ._scatter import scatter
from ._state import STATE, leaked_tracer
from ._tensor import Tensor

_stamps = itertools.count(1)

OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a single "
                   "memory location. Please clone() the tensor before performing the operation.")


def layout_of(trace, root: Tensor, steps=()) -> Layout:
    """The layout of `root` (a root of `trace`) viewed through `steps`."""
    lay = trace.views.layouts.get(id(root))
    if lay is None:
        shape = tuple(root.shape)
        lay = (shape, contiguous_strides(shape))
    return view_layout(lay, steps) if steps else lay


def layout_key(t: Tensor):
    """What a trace depends on in `t`'s layout (None when C-contiguous): part of compile cache keys,
    since whether a reshape is a view (and so whether a write through it reaches `t`) depends on it."""
    lay = outside_layout(t)
    return None if lay is None else lay[1]


def outside_layout(t: Tensor) -> Layout | None:
    """The layout of a root from outside a trace, when it is not C-contiguous."""
    if t._trace is None:
        if t._data.flags.c_contiguous:
            return None
        lay = array_layout(t._data)
        return None if is_c_contiguous(*lay) else lay
    return t._trace.views.layouts.get(id(t))


# === per-trace state ==========================================================================================
_NOTHING = MappingProxyType({})  # a read-only empty mapping: the class default of the containers below


class TraceViews:
    """What one trace knows about storages: its arguments, proxies for outside storages, layouts."""

    # The containers most traces never write are read-only empties of the class until the first
    # write, which makes the instance's own (`mine`): a trace allocates only what it uses.
    locals: set[int] = frozenset()          # ids of concrete tensors created while this trace was active
    proxies: dict[int, Tensor] = _NOTHING   # id(outside root) -> the proxy root standing for it here
    sources: dict[int, Tensor] = _NOTHING   # id(proxy) -> the outside root (kept alive)
    local_proxies: set[int] = frozenset()   # ids of proxies of trace-local tensors (never written back)
    layouts: dict[int, Layout] = _NOTHING   # id(root) -> its layout when it is not C-contiguous
    derived: dict[int, tuple] = _NOTHING    # id(outside view) -> (view, proxy stamp, value)
    view_layouts: dict[int, tuple] = _NOTHING  # id(traced view made by a reshape) -> (view, its layout)

    def __init__(self):
        self.args: list[Tensor] = []  # the argument roots, in graph-input order

    def mine(self, name: str):
        """This trace's own container `name` (made on first use), to write into."""
        c = self.__dict__.get(name)
        if c is None:
            c = self.__dict__[name] = set() if name == "locals" or name == "local_proxies" else {}
        return c

    def wrote(self, t: Tensor) -> bool:
        """Has this trace written the (outside) storage of `t`?"""
        base = t._base
        proxy = self.proxies.get(id(t if base is None else base))
        return proxy is not None and proxy._stamp != 0


# === ownership: which trace reads and writes a tensor's storage ===============================================
def owner(t: Tensor, stack=None):
    """The trace that reads and writes `t`'s storage now, or None for plain eager storage.

    That is the innermost trace of `stack` (default: the running thread's active traces)
    holding a proxy for the storage; else the trace `t` belongs to; else, for a concrete
    tensor that existed before the innermost trace started, that trace (it gets captured);
    else None (trace-local, eager).
    """
    tr = t._trace
    if stack is None:
        stack = STATE.stack
    if not stack:
        return tr
    base = t._base
    key = id(t if base is None else base)
    for trace in reversed(stack):
        if tr is not None and trace.level <= tr.level:
            return tr
        if key in trace.views.proxies:
            return trace
    if tr is not None:
        return tr
    inner = stack[-1]
    return None if key in inner.views.locals else inner


def owning_trace(tensors: Sequence[Tensor]):
    """The innermost owner of `tensors`: where an op on them is emitted (None: run it eagerly).

    This is the one trace-resolution loop; `bind`, `call_graph` and `store` all use it.
    """
    stack = STATE.stack
    trace = None
    if not stack:  # only tensors of finished traces (leaked tracers) can be traced here
        for t in tensors:
            tr = t._trace
            if tr is not None and (trace is None or tr.level > trace.level):
                trace = tr
        return trace
    top = stack[-1]
    for t in tensors:
        tr = t._trace
        o = tr if tr is top else owner(t, stack)  # a tensor of the innermost trace owns itself
        if o is not None and (trace is None or o.level > trace.level):
            trace = o
    return trace


def shadowing_trace(t: Tensor):
    """The active trace that wrote `t`'s (concrete) storage in place, making its numpy data stale."""
    for trace in reversed(STATE.stack):
        if trace.views.wrote(t):
            return trace
    return None


def _proxy(trace, root: Tensor) -> Tensor:
    """The proxy root standing in `trace` for the outside storage `root` (created on first use)."""
    views = trace.views
    proxy = views.proxies.get(id(root))
    if proxy is not None:
        return proxy
    local = root._trace is None and id(root) in views.locals
    arr = root._data if root._trace is None else None
    if local and arr is not None and (arr.size == 1 or arr.size and not arr.flags.writeable and not any(arr.strides)):
        # a trace-local scalar or broadcast scalar (an operand constant): a `full` node under tp.compile,
        # an input under a plain transform (`Trace.scalar_input`), so that its value is data
        dt = dtypes.from_numpy(arr.dtype)
        scalar = arr.reshape(-1)[0].item()
        if trace.concrete:
            value = trace.scalar_input(scalar, dt, tuple(arr.shape))._value
        else:
            value = trace.builder.emit("full", shape=tuple(arr.shape), dtype=dt, value=scalar)
    else:
        value = trace.capture(root, root._type())
    proxy = Tensor._symbolic(trace, value)
    views.mine("proxies")[id(root)] = proxy
    views.mine("sources")[id(proxy)] = root
    if local:
        views.mine("local_proxies").add(id(proxy))
    lay = outside_layout(root)
    if lay is not None:
        views.mine("layouts")[id(proxy)] = lay
    return proxy


def lift_outside(trace, t: Tensor) -> Value:
    """The value in `trace` of a tensor that `trace` does not own (through its storage's proxy).

    A view of outside storage that this trace has not written is an input of its own (when
    `trace.capture_views`): its offsets and strides are then data, not graph constants, so the
    graph does not change with them. Once the storage is written, the view is re-derived from
    the storage's proxy, as every other view is.
    """
    tr = t._trace
    if tr is not None and not tr.active:
        raise leaked_tracer("", tr.transform)
    base = t._base
    if base is None:
        return _proxy(trace, t)._value
    views = trace.views
    proxy = views.proxies.get(id(base))
    stamp = 0 if proxy is None else proxy._stamp
    hit = views.derived.get(id(t))
    if hit is not None and hit[0] is t and hit[1] == stamp:
        return hit[2]
    if stamp == 0 and trace.capture_views:
        value = trace.capture(t, t._type())
    else:
        if proxy is None:
            proxy = _proxy(trace, base)
        value = replay(trace.builder, proxy._value, t._steps)
    views.mine("derived")[id(t)] = (t, stamp, value)
    return value


def current_value(t: Tensor) -> Value:
    """The value of `t` in its own trace now: a view is re-derived when its root was written since."""
    base = t._base
    if base is not None and t._stamp != base._stamp:
        t._value = replay(t._trace.builder, base._value, t._steps)
        t._stamp = base._stamp
    return t._value


def replay(builder, value: Value, steps) -> Value:
    """`value` viewed through `steps` (macro steps expanded), as nodes of `builder`."""
    for name, attrs in expand_steps(value.shape, steps):
        value = builder.emit(name, value, **attrs)
    return value


def make_diagonal(t: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    """The diagonal view of `t` (dims already normalized): always a view, as in torch."""
    attrs = {"offset": offset, "dim1": dim1, "dim2": dim2}
    trace = owner(t)
    if trace is None:
        if t._trace is not None:
            raise leaked_tracer("diagonal", t._trace.transform)
        out = Tensor._wrap(diagonal_eager(t._data, attrs))
        base = t._base
        out._base = t if base is None else base
        out._steps = t._steps + (("diagonal", attrs),)
        return out
    root, steps = _root_and_steps(trace, t)
    value = replay(trace.builder, trace.lift(t), (("diagonal", attrs),))
    out = Tensor._symbolic(trace, value)
    out._base, out._steps, out._stamp = root, steps + (("diagonal", attrs),), root._stamp
    return out


# === creating views ===========================================================================================
def eager_result(prim, attrs: dict, operands: Sequence[Tensor], out: np.ndarray) -> Tensor:
    """Wrap an eager primitive result: record views, give computed results their own storage."""
    name = prim.name
    if name in VIEW_PRIMS and operands:
        src = operands[0]
        data = src._data
        if name == "broadcast_in_dim" and out.size == data.size:
            out = data.reshape(out.shape)  # nothing is repeated: a writable view, like torch's expand
        t = Tensor._wrap(out)
        if np.may_share_memory(out, data):
            base = src._base
            t._base = src if base is None else base
            t._steps = src._steps + ((name, attrs),)
        return t
    flags = out.flags
    if not (flags.writeable and flags.c_contiguous) or (
            out.base is not None and any(np.may_share_memory(out, o._data) for o in operands)):
        out = np.array(out, order="C")
    return Tensor._wrap(out)


def outside_view(prim, attrs: dict, src: Tensor) -> Tensor | None:
    """A view primitive applied to outside concrete storage, taken eagerly (a numpy view with its
    `_base` and steps), or None when it is not a view (a reshape that copies) and must be traced.

    Taking it eagerly keeps its offsets out of the graph: the view becomes an input when read.
    """
    out = eager_result(prim, attrs, (src,), prim.impl(src._data, **attrs))
    return out if out._base is not None else None


def traced_result(prim, attrs: dict, operands: Sequence[Tensor], out: Tensor) -> Tensor:
    """Record `out` (just emitted) as a view of its operand's root when `prim` is a view primitive."""
    name = prim.name
    if name not in VIEW_PRIMS:
        return out
    src = operands[0]
    trace = out._trace
    root, steps = _root_and_steps(trace, src)
    if name == "reshape" and (steps or id(root) in trace.views.layouts) and not _only_unit_dims(src, out):
        lay = layout_step(_view_layout(trace, src, root, steps), name, attrs)
        if lay is None:
            return out  # not expressible with strides: a copy, as in eager mode (never for a C-contiguous root)
        trace.views.mine("view_layouts")[id(out)] = (out, lay)
    out._base = root
    out._steps = steps + ((name, attrs),)
    out._stamp = root._stamp
    return out


def _only_unit_dims(src: Tensor, out: Tensor) -> bool:
    """Does the reshape `src -> out` only add or drop size-1 dimensions (as indexing with an int
    does)? Such a reshape is a view of any strided layout (numpy never copies for it), so its
    layout need not be worked out to know that."""
    a, b = tuple(src.shape), tuple(out.shape)  # src may be a concrete tensor (a captured view)
    return [d for d in a if d != 1] == [d for d in b if d != 1]


def _view_layout(trace, view: Tensor, root: Tensor, steps) -> Layout:
    """The layout of `view` (= `root` through `steps`), from the cache when a reshape recorded it."""
    hit = trace.views.view_layouts.get(id(view))
    if hit is not None and hit[0] is view:
        return hit[1]
    return layout_of(trace, root, steps)


def is_view_of(view: Tensor, t: Tensor) -> bool:
    """Is `view` (derived from `t` by view ops) sharing `t`'s storage?

    >>> import tensorplay as tp
    >>> x = tp.zeros(2, 3)
    >>> is_view_of(x[1], x), is_view_of(x[1] + 0, x)
    (True, False)
    """
    if view is t:
        return True
    root = view._base
    if root is None:
        return False
    base = t._base
    own = t if base is None else base
    if root is own:
        return True
    tr = root._trace
    return tr is not None and tr.views.proxies.get(id(own)) is root


def is_contiguous(t: Tensor) -> bool:
    trace = owner(t)
    if trace is None:
        return bool(t._data.flags.c_contiguous)
    root, steps = _root_and_steps(trace, t)
    return is_c_contiguous(*layout_of(trace, root, steps))


def _root_and_steps(trace, t: Tensor):
    """(root in `trace`, view steps from it) of a tensor that `trace` owns."""
    base = t._base
    if t._trace is trace:
        return (t if base is None else base), t._steps
    return _proxy(trace, t if base is None else base), t._steps


# === writing ==================================================================================================
def store(target: Tensor, value: Tensor, op: str) -> Tensor:
    """Write `value` (same shape and dtype) into `target`'s storage; every view of it sees the write."""
    trace = owning_trace((target, value))
    if trace is None:
        _eager_store(target, value._data, op)
        return target
    if not trace.active:
        raise leaked_tracer(op, trace.transform)
    root, steps = _root_and_steps(trace, target)
    base_layout = layout_of(trace, root)
    if has_overlap(view_layout(base_layout, steps)) or through_expand(base_layout, steps):
        raise RuntimeError(f"{op}: {OVERLAP_MESSAGE}")
    new = trace.lift(value)
    old = root._value
    root._value = scatter(trace.builder, old, steps, new)
    if new.dtype.is_floating_point and STATE.stops_gradient(trace):
        # as in torch, a write under no_grad changes the storage's values, not their derivatives
        b = trace.builder
        root._value = b.add(old, b.stop_gradient(b.sub(root._value, old)))
    root._stamp = next(_stamps)
    trace.stored = True  # (`Trace._plain_results` looks for written roots only after this)
    if target is not root and target._trace is trace:
        target._value = new
        target._stamp = root._stamp
    return target


def _eager_store(target: Tensor, src: np.ndarray, op: str) -> None:
    dst = target._data
    if not dst.flags.writeable:
        # Expanded views (and views of them) are read-only numpy arrays. As in torch, a write is refused
        # only when the written-to tensor itself has elements sharing memory (fill_ is exempt: it writes
        # one value); a view of an expanded tensor without such elements (a row of x.expand(3, n))
        # writes through to the expanded tensor's storage.
        overlap = has_overlap(array_layout(dst))
        expanded = overlap or any(name == "broadcast_in_dim" for name, _ in target._steps)
        if overlap and op not in ("fill_",) + _DEPRECATED_OVERLAP_WRITES:
            raise RuntimeError(f"{op}: {OVERLAP_MESSAGE}")
        alias = _writeable_alias(dst) if expanded else None
        if alias is None:
            raise RuntimeError(f"{op}: {OVERLAP_MESSAGE}" if expanded else
                               f"{op}: cannot write into a read-only tensor (its numpy array is not writeable)")
        if overlap and op in _DEPRECATED_OVERLAP_WRITES:
            import warnings

            warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before "
                          f"performing this operation.", UserWarning, stacklevel=5)
            # as torch: only the filled elements are stored, so a shared location takes the filled value
            same = (src == dst) | (np.isnan(src) & np.isnan(dst)) if src.dtype.kind == "f" else (src == dst)
            np.copyto(alias, src, where=~same)
            return
        dst = alias
    np.copyto(dst, src)


# Writes torch still performs on tensors with elements sharing memory, with a deprecation warning.
_DEPRECATED_OVERLAP_WRITES = ("masked_fill_", "index_fill_")


def _writeable_alias(arr: np.ndarray) -> np.ndarray | None:
    """A writeable array over `arr`'s memory, when the array owning that memory is writeable
    (`arr` is a read-only broadcast view of it); None otherwise."""
    owner = arr
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if not owner.flags.writeable or not (owner.flags.c_contiguous or owner.flags.f_contiguous):
        return None
    offset = arr.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return np.ndarray(arr.shape, arr.dtype, buffer=owner.reshape(-1, order="A"), offset=offset, strides=arr.strides)


# === finishing a trace: the write-backs =====================================================================
def finish_writes(trace, outputs: Sequence[Tensor]) -> tuple[list[int], list[Value], list]:
    """(input indices written, their final values, output aliases) for `trace`'s graph.

    Input indices count the arguments, then the captures, in graph-input order. An
    output alias is ``(input index, steps)`` when the output is that input or a view of
    it (else None), so call sites can return the caller's tensor, as eager mode would.
    """
    views = trace.views
    args = views.args
    n_args = len(args)
    arg_pos = {id(a): k for k, a in enumerate(args)}
    cap_pos = None

    def input_index(root: Tensor):
        nonlocal cap_pos
        k = arg_pos.get(id(root))
        if k is not None:
            return k
        src = views.sources.get(id(root))
        if src is None or id(root) in views.local_proxies:
            return None
        if cap_pos is None:
            cap_pos = {id(s): i for i, s in enumerate(trace.capture_sources)}
        i = cap_pos.get(id(src))
        return None if i is None else n_args + i

    written: list[tuple[int, Value]] = [(k, a._value) for k, a in enumerate(args) if a._stamp]
    for proxy in views.proxies.values():
        if proxy._stamp:
            idx = input_index(proxy)
            if idx is not None:
                written.append((idx, proxy._value))
    aliases = []
    sources = views.sources
    for t in outputs:
        if t._trace is trace and t._base is None and id(t) not in sources:  # a root: computed, or an arg
            k = arg_pos.get(id(t))
            aliases.append(None if k is None else (k, ()))
            continue
        root, steps = _root_and_steps(trace, t) if owner(t) is trace else (None, ())
        idx = input_index(root) if root is not None else None
        aliases.append(None if idx is None else (idx, tuple(steps)))
    if not written:
        return [], [], aliases
    written.sort(key=lambda w: w[0])
    return [i for i, _ in written], [v for _, v in written], aliases


def own_outputs(outputs: Sequence[Tensor], inputs: Sequence[Tensor]) -> list[Tensor]:
    """`outputs` of an executed graph, copied where they share memory with an input array.

    Backends may return views of their input buffers (the interpreter returns numpy views
    for reshape/slice/transpose); a graph output is a value, so it must not change when
    the caller later writes into an input (or when `write_back` does).
    """
    arrays = [t._data for t in inputs if t._trace is None and isinstance(t._data, np.ndarray)]
    out = list(outputs)
    for k, t in enumerate(out):
        if t._trace is None and any(np.may_share_memory(t._data, a) for a in arrays):
            out[k] = Tensor._wrap(np.array(t._data, order="C", copy=True))
    return out


def check_no_aliased_writes(closed, inputs: Sequence[Tensor], mutated: list[int]) -> None:
    """Raise, before anything is written, when an input written in place shares memory with another
    input that the graph reads: the graph could not have seen the write through that alias.

    Two captures of one storage (the storage and a view of it, see `lift_outside`) are exempt:
    the trace itself kept them consistent.
    """
    graph = closed.graph
    read = getattr(closed, "_read_inputs", None)
    if read is None:  # which inputs the graph reads (computed once per ClosedGraph)
        used = {id(v) for node in graph.nodes for v in node.inputs} | {id(v) for v in graph.outputs}
        read = closed._read_inputs = frozenset(j for j, v in enumerate(graph.inputs) if id(v) in used)
    n_args = closed.num_args

    def name(i):
        return f"argument {i}" if i < n_args else f"captured tensor {i - n_args}"

    for i in mutated:
        for j, other in enumerate(inputs):
            if j == i or not (j in mutated or j in read):
                continue
            if i >= n_args and j >= n_args and _same_root(inputs[i], other):
                continue
            if _may_alias(inputs[i], other):
                raise RuntimeError(
                    f"in-place write into {name(i)} of @{graph.name}, which shares memory with {name(j)}: a traced "
                    f"function cannot see writes through aliased inputs. Pass the tensor once, or clone() one "
                    f"of them")


def _may_alias(a: Tensor, b: Tensor) -> bool:
    if a is b:
        return True
    if a._trace is None and b._trace is None:
        x, y = a._data, b._data
        return bool(np.may_share_memory(x, y) and np.shares_memory(x, y))
    if a._trace is not None and b._trace is not None:
        return (a if a._base is None else a._base) is (b if b._base is None else b._base)
    return False



def _same_root(a, b) -> bool:
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False
    return (a if a._base is None else a._base) is (b if b._base is None else b._base)

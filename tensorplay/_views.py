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
  (`scatter`: the inverse of each view step, e.g. a `slice` becomes `pad` + `select`
  or a `concatenate`), rebinds the root's value and bumps its stamp.
- whether a traced `reshape` is a view follows numpy's rule on the strides the
  tensor would have (`Layout`), so a reshape that copies in eager mode copies here.
- a storage from outside the trace (a captured tensor, or one of an enclosing trace)
  is seen through one *proxy* root per storage: its initial value is a captured input,
  and the outside tensor and all its views read and write through the proxy.
  Concrete tensors created *while* tracing are local: ops on them alone run eagerly
  (constant folding) and they are never written back.

The traced graph is therefore always functional. `Trace.finish` appends the final value
of every argument or captured storage that was written as an extra graph output and
records the input it belongs to in ``ClosedGraph.mutated``; `write_back` is the one
helper that call sites use to store those values into the caller's tensors.
"""
from __future__ import annotations

import itertools
from math import prod
from typing import Sequence

import numpy as np

from tensorplay.ir import TensorType, Value, dtypes

from . import _trace as _tr
from ._tensor import Tensor

VIEW_PRIMS = frozenset({"reshape", "transpose", "slice", "broadcast_in_dim", "stop_gradient"})

_stamps = itertools.count(1)

OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a single "
                   "memory location. Please clone() the tensor before performing the operation.")


# === layouts: the strides a tensor would have, to decide whether a reshape is a view ========================
Layout = tuple  # (shape, strides), strides in elements


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(out))


def is_c_contiguous(shape, strides) -> bool:
    """numpy's (relaxed) C-contiguity: size-1 dims are ignored, empty arrays are contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for d, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if d != 1:
            if s != expected:
                return False
            expected *= d
    return True


def reshape_strides(shape, strides, new_shape) -> tuple[int, ...] | None:
    """Strides viewing (shape, strides) as `new_shape`, or None when a copy is needed.

    A port of numpy's ``_attempt_nocopy_reshape`` (C order), so traced and eager
    reshapes agree on view-or-copy.
    """
    shape, strides, new_shape = tuple(shape), tuple(strides), tuple(new_shape)
    if shape == new_shape:
        return strides
    if prod(shape) == 0 or is_c_contiguous(shape, strides):
        return contiguous_strides(new_shape)
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    odims, ostr = [d for d, _ in old], [s for _, s in old]
    ndims, nstr = list(new_shape), [0] * len(new_shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(ndims) and oi < len(odims):
        np_, op = ndims[ni], odims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= ndims[nj]
                nj += 1
            else:
                op *= odims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if ostr[ok] != odims[ok + 1] * ostr[ok + 1]:
                return None
        nstr[nj - 1] = ostr[oj - 1]
        for nk in range(nj - 1, ni, -1):
            nstr[nk - 1] = nstr[nk] * ndims[nk]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    last = nstr[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(ndims)):
        nstr[nk] = last
    return tuple(nstr)


# --- macro view steps: views that no single primitive expresses ---------------------------------------
def diagonal_steps(shape: tuple, attrs: dict) -> tuple:
    """The primitive steps computing ``diagonal(offset, dim1, dim2)`` of a tensor of `shape`.

    As values they are exact; as a view they are not always expressible (the flattening
    reshape copies when the plane is strided), so the step keeps its own layout rule.
    """
    offset, a, b = attrs["offset"], attrs["dim1"], attrs["dim2"]
    rest = [d for d in range(len(shape)) if d not in (a, b)]
    perm = tuple(rest + [a, b])
    n, m = shape[a], shape[b]
    batch = tuple(shape[d] for d in rest)
    rows = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    stop = start + (rows - 1) * (m + 1) + 1 if rows else start
    steps = []
    if perm != tuple(range(len(shape))):
        steps.append(("transpose", {"permutation": perm}))
    steps.append(("reshape", {"shape": batch + (n * m,)}))
    k = len(batch)
    steps.append(("slice", {"start_indices": (0,) * k + (min(start, n * m),),
                            "limit_indices": batch + (min(stop, n * m),),
                            "strides": (1,) * k + (m + 1,)}))
    return tuple(steps)


def diagonal_layout(layout: Layout, attrs: dict) -> Layout:
    shape, strides = layout
    a, b = attrs["dim1"], attrs["dim2"]
    out = step_shape(shape, "diagonal", attrs)
    rest = [d for d in range(len(shape)) if d not in (a, b)]
    return out, tuple(strides[d] for d in rest) + (strides[a] + strides[b],)


def diagonal_eager(arr: np.ndarray, attrs: dict) -> np.ndarray:
    """A writable numpy view of the diagonal (np.diagonal's own view is read-only)."""
    offset, a, b = attrs["offset"], attrs["dim1"], attrs["dim2"]
    d = np.diagonal(arr, offset, a, b)
    key = [slice(None)] * arr.ndim
    key[a] = slice(max(-offset, 0), None)
    key[b] = slice(max(offset, 0), None)
    return np.lib.stride_tricks.as_strided(arr[tuple(key)], shape=d.shape, strides=d.strides)


MACROS = {"diagonal": diagonal_steps}  # name -> (shape, attrs) -> primitive steps


def expand_steps(shape: tuple, steps) -> tuple:
    """`steps` with every macro step replaced by its primitive steps."""
    out = []
    for name, attrs in steps:
        if name in MACROS:
            out.extend(MACROS[name](shape, attrs))
        else:
            out.append((name, attrs))
        shape = step_shape(shape, name, attrs)
    return tuple(out)


def step_shape(shape: tuple, name: str, attrs: dict) -> tuple:
    """The shape after one view step."""
    if name == "diagonal":
        for n, a in diagonal_steps(tuple(shape), attrs):
            shape = step_shape(shape, n, a)
        return tuple(shape)
    if name in ("reshape", "broadcast_in_dim"):
        return tuple(attrs["shape"])
    if name == "transpose":
        return tuple(shape[p] for p in attrs["permutation"])
    if name == "slice":
        return tuple(max(0, -(-(l - s) // k))
                     for s, l, k in zip(attrs["start_indices"], attrs["limit_indices"], attrs["strides"]))
    return tuple(shape)


def layout_step(layout: Layout, name: str, attrs: dict) -> Layout | None:
    """The layout after one view step (None: a reshape that has to copy)."""
    shape, strides = layout
    if name == "diagonal":
        return diagonal_layout(layout, attrs)
    out = step_shape(shape, name, attrs)
    if name == "reshape":
        st = reshape_strides(shape, strides, out)
        return None if st is None else (out, st)
    if name == "transpose":
        return out, tuple(strides[p] for p in attrs["permutation"])
    if name == "slice":
        return out, tuple(s * k for s, k in zip(strides, attrs["strides"]))
    if name == "broadcast_in_dim":
        st = [0] * len(out)
        for i, d in enumerate(attrs["broadcast_dimensions"]):
            st[d] = strides[i] if shape[i] == out[d] else 0
        return out, tuple(st)
    return layout


def has_overlap(layout: Layout) -> bool:
    """Does some element of the layout alias another (an expanded dim)?"""
    return any(s == 0 and d > 1 for d, s in zip(*layout))


def array_layout(arr: np.ndarray) -> Layout:
    item = arr.itemsize or 1
    return tuple(arr.shape), tuple(s // item for s in arr.strides)


def layout_of(trace, root: Tensor, steps=()) -> Layout:
    """The layout of `root` (a root of `trace`) viewed through `steps`."""
    lay = trace.views.layouts.get(id(root))
    if lay is None:
        shape = tuple(root.shape)
        lay = (shape, contiguous_strides(shape))
    for name, attrs in steps:
        nxt = layout_step(lay, name, attrs)
        lay = nxt if nxt is not None else (step_shape(lay[0], name, attrs),
                                           contiguous_strides(step_shape(lay[0], name, attrs)))
    return lay


def layout_key(t: Tensor):
    """What a trace depends on in `t`'s layout (None when C-contiguous): part of compile cache keys,
    since whether a reshape is a view (and so whether a write through it reaches `t`) depends on it."""
    lay = outside_layout(t)
    return None if lay is None else lay[1]


def outside_layout(t: Tensor) -> Layout | None:
    """The layout of a root from outside a trace, when it is not C-contiguous."""
    if t._trace is None:
        lay = array_layout(t._data)
        return None if is_c_contiguous(*lay) else lay
    return t._trace.views.layouts.get(id(t))


# === per-trace state ==========================================================================================
class TraceViews:
    """What one trace knows about storages: its arguments, proxies for outside storages, layouts."""

    def __init__(self):
        self.locals: set[int] = set()          # ids of concrete tensors created while this trace was active
        self.args: list[Tensor] = []           # the argument roots, in graph-input order
        self.proxies: dict[int, Tensor] = {}   # id(outside root) -> the proxy root standing for it here
        self.sources: dict[int, Tensor] = {}   # id(proxy) -> the outside root (kept alive)
        self.local_proxies: set[int] = set()   # ids of proxies of trace-local tensors (never written back)
        self.layouts: dict[int, Layout] = {}   # id(root) -> its layout when it is not C-contiguous
        self.derived: dict[int, tuple] = {}    # id(outside view) -> (view, proxy stamp, value)


def owner(t: Tensor):
    """The trace that reads and writes `t`'s storage now, or None for plain eager storage.

    That is the innermost active trace holding a proxy for the storage; else the trace
    `t` belongs to; else, for a concrete tensor that existed before the innermost
    trace started, that trace (it gets captured); else None (trace-local, eager).
    """
    tr = t._trace
    stack = _tr._STACK
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


def owning_trace(tensors: Sequence[Tensor], trace=None):
    """The innermost of `trace` and the owners of `tensors` (where an op on them is emitted)."""
    stack = _tr._STACK
    top = stack[-1] if stack else None
    for t in tensors:
        tr = t._trace
        o = tr if tr is not None and tr is top else owner(t)  # a tensor of the innermost trace owns itself
        if o is not None and (trace is None or o.level > trace.level):
            trace = o
    return trace


def shadowing_trace(t: Tensor):
    """The active trace that wrote `t`'s (concrete) storage in place, making its numpy data stale."""
    base = t._base
    key = id(t if base is None else base)
    for trace in reversed(_tr._STACK):
        proxy = trace.views.proxies.get(key)
        if proxy is not None and proxy._stamp:
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
        # a trace-local scalar or broadcast scalar (an operand constant): a `full` node, not an input
        dt = dtypes.from_numpy(arr.dtype)
        scalar = arr.reshape(-1)[0].item()
        value = trace.builder.emit("full", shape=tuple(arr.shape), dtype=dt, value=scalar)
    else:
        value = trace.capture(root, root._type())
    proxy = Tensor._symbolic(trace, value)
    views.proxies[id(root)] = proxy
    views.sources[id(proxy)] = root
    if local:
        views.local_proxies.add(id(proxy))
    lay = outside_layout(root)
    if lay is not None:
        views.layouts[id(proxy)] = lay
    return proxy


def lift_outside(trace, t: Tensor) -> Value:
    """The value in `trace` of a tensor that `trace` does not own (through its storage's proxy)."""
    tr = t._trace
    if tr is not None and not tr.active:
        raise _tr.TracingError(f"a tensor traced under {tr.transform} escaped its transform and was used after it "
                               f"finished (leaked tracer); return it from the function instead")
    base = t._base
    root = t if base is None else base
    proxy = _proxy(trace, root)
    if root is t:
        return proxy._value
    hit = trace.views.derived.get(id(t))
    if hit is not None and hit[0] is t and hit[1] == proxy._stamp:
        return hit[2]
    value = replay(trace.builder, proxy._value, t._steps)
    trace.views.derived[id(t)] = (t, proxy._stamp, value)
    return value


def sync_view(t: Tensor) -> None:
    """Re-derive the value of traced view `t` from its root, which was written since."""
    root = t._base
    t._val = replay(t._trace.builder, root._val, t._steps)
    t._stamp = root._stamp


def replay(builder, value: Value, steps) -> Value:
    for name, attrs in expand_steps(value.shape, steps):
        value = builder.emit(name, value, **attrs)
    return value


def apply_steps(t: Tensor, steps) -> Tensor:
    """`t` viewed through `steps` with tensor ops (eager views, or traced views of `t`)."""
    for name, attrs in steps:
        t = make_diagonal(t, **attrs) if name == "diagonal" else _tr.bind(name, t, **attrs)
    return t


def make_diagonal(t: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    """The diagonal view of `t` (dims already normalized): always a view, as in torch."""
    attrs = {"offset": offset, "dim1": dim1, "dim2": dim2}
    trace = owner(t)
    if trace is None:
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


def traced_result(prim, attrs: dict, operands: Sequence[Tensor], out: Tensor) -> Tensor:
    """Record `out` (just emitted) as a view of its operand's root when `prim` is a view primitive."""
    name = prim.name
    if name not in VIEW_PRIMS:
        return out
    src = operands[0]
    trace = out._trace
    base = src._base
    if src._trace is trace:
        root = src if base is None else base
    else:
        root = trace.views.proxies[id(src if base is None else base)]
    steps = src._steps
    if name == "reshape" and (steps or id(root) in trace.views.layouts) and \
            layout_step(layout_of(trace, root, steps), name, attrs) is None:
        return out  # not expressible with strides: a copy, as in eager mode (never for a C-contiguous root)
    out._base = root
    out._steps = steps + ((name, attrs),)
    out._stamp = root._stamp
    return out


def is_view_of(view: Tensor, t: Tensor) -> bool:
    """Is `view` (derived from `t` by view ops) sharing `t`'s storage?"""
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
    base = t._base
    if t._trace is trace:
        return (t if base is None else base), t._steps
    return _proxy(trace, t if base is None else base), t._steps


# === writing ==================================================================================================
def store(target: Tensor, value: Tensor, op: str) -> Tensor:
    """Write `value` (same shape and dtype) into `target`'s storage; every view of it sees the write."""
    trace = owner(target)
    vt = owner(value)
    if vt is not None and (trace is None or vt.level > trace.level):
        trace = vt
    if trace is None:
        if target._trace is not None or value._trace is not None:
            raise _tr.TracingError(f"{op}: a tensor traced under {(target._trace or value._trace).transform} "
                                   f"escaped its transform and was used after it finished (leaked tracer)")
        _eager_store(target, value._data, op)
        return target
    if not trace.active:
        raise _tr.TracingError(f"{op}: a tensor traced under {trace.transform} escaped its transform and was used "
                               f"after it finished (leaked tracer)")
    root, steps = _root_and_steps(trace, target)
    if has_overlap(layout_of(trace, root, steps)) or _through_expand(trace, root, steps):
        raise RuntimeError(f"{op}: {OVERLAP_MESSAGE}")
    new = trace.lift(value)
    root._value = scatter(trace.builder, root._value, steps, new)
    root._stamp = next(_stamps)
    if target is not root and target._trace is trace:
        target._val = new
        target._stamp = root._stamp
    return target


def _through_expand(trace, root: Tensor, steps) -> bool:
    """Is the view taken through an expand that repeats elements? Eagerly such views are read-only
    (numpy marks every view of a broadcast read-only), so traced writes into them fail the same way."""
    lay = layout_of(trace, root)
    for name, attrs in steps:
        nxt = layout_step(lay, name, attrs)
        if name == "broadcast_in_dim" and has_overlap(nxt):
            return True
        lay = nxt if nxt is not None else (step_shape(lay[0], name, attrs),
                                           contiguous_strides(step_shape(lay[0], name, attrs)))
    return False


def _eager_store(target: Tensor, src: np.ndarray, op: str) -> None:
    dst = target._data
    if not dst.flags.writeable:
        # expanded views (and views of them) are read-only numpy arrays
        if has_overlap(array_layout(dst)) or any(name == "broadcast_in_dim" for name, _ in target._steps):
            raise RuntimeError(f"{op}: {OVERLAP_MESSAGE}")
        raise RuntimeError(f"{op}: cannot write into a read-only tensor (its numpy array is not writeable)")
    np.copyto(dst, src)


def scatter(b, base: Value, steps, new: Value) -> Value:
    """The value of `base` after writing `new` into its view `steps` (the view's inverse, step by step)."""
    if not steps:
        return new
    steps = expand_steps(base.shape, steps)
    # operand values are needed only below a slice (to keep the elements it does not cover)
    last_slice = max((i for i, (name, _) in enumerate(steps) if name == "slice"), default=-1)
    types, vals = [base.type], [base]
    for i, (name, attrs) in enumerate(steps[:-1]):
        if i < last_slice:
            vals.append(b.emit(name, vals[-1], **attrs))
            types.append(vals[-1].type)
        else:
            types.append(TensorType(step_shape(types[-1].shape, name, attrs), types[-1].dtype))
    cur = new
    for i in range(len(steps) - 1, -1, -1):
        name, attrs = steps[i]
        cur = _INVERSE[name](b, types[i], vals[i] if i < len(vals) else None, cur, attrs)
    return cur


def _inv_reshape(b, src: TensorType, src_val, cur: Value, attrs) -> Value:
    return cur if cur.shape == src.shape else b.reshape(cur, shape=src.shape)


def _inv_transpose(b, src, src_val, cur, attrs):
    perm = attrs["permutation"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return b.transpose(cur, permutation=tuple(inv))


def _inv_slice(b, src, src_val, cur, attrs):
    starts, limits, strides = attrs["start_indices"], attrs["limit_indices"], attrs["strides"]
    if cur.type.size == 0:
        return src_val
    cut = [d for d in range(len(src.shape)) if cur.shape[d] != src.shape[d]]
    if not cut:
        return cur
    if len(cut) == 1 and strides[cut[0]] == 1:  # one contiguous range: concatenate the untouched ends around it
        d = cut[0]
        lo, hi = starts[d], starts[d] + cur.shape[d]
        pieces = []
        if lo > 0:
            pieces.append(_slice_dim(b, src_val, d, 0, lo))
        pieces.append(cur)
        if hi < src.shape[d]:
            pieces.append(_slice_dim(b, src_val, d, hi, src.shape[d]))
        return pieces[0] if len(pieces) == 1 else b.concatenate(*pieces, axis=d)
    low, high, interior = [], [], []
    for d in range(len(src.shape)):
        n, st = cur.shape[d], strides[d]
        low.append(starts[d])
        interior.append(st - 1)
        high.append(src.shape[d] - starts[d] - (n - 1) * st - 1)
    pad = dict(low=tuple(low), high=tuple(high), interior=tuple(interior))
    mask = b.pad(b.const(True, cur.shape, dtypes.bool_), value=False, **pad)
    zero = False if cur.dtype.is_bool else 0 if cur.dtype.is_integer else 0.0
    return b.select(mask, b.pad(cur, value=zero, **pad), src_val)


def _slice_dim(b, v: Value, d: int, start: int, stop: int) -> Value:
    starts, limits = [0] * v.ndim, list(v.shape)
    starts[d], limits[d] = start, stop
    return b.slice(v, start_indices=tuple(starts), limit_indices=tuple(limits), strides=(1,) * v.ndim)


def _inv_broadcast(b, src, src_val, cur, attrs):
    # only broadcasts that repeat nothing are ever written through (has_overlap guards the others)
    return cur if cur.shape == src.shape else b.reshape(cur, shape=src.shape)


_INVERSE = {
    "reshape": _inv_reshape,              # reshape back
    "transpose": _inv_transpose,          # the inverse permutation
    "slice": _inv_slice,                  # concatenate, or pad + select
    "broadcast_in_dim": _inv_broadcast,   # (non-repeating) reshape back
    "stop_gradient": lambda b, src, src_val, cur, attrs: cur,  # detach()/.data alias the same storage
}


# === finishing a trace: the write-backs =====================================================================
def finish_writes(trace, outputs: Sequence[Tensor]) -> tuple[list[int], list[Value], list]:
    """(input indices written, their final values, output aliases) for `trace`'s graph.

    Input indices count the arguments, then the captures, in graph-input order. An
    output alias is ``(input index, steps)`` when the output is that input or a view of
    it (else None), so call sites can return the caller's tensor, as eager mode would.
    """
    views = trace.views
    n_args = len(views.args)
    cap_pos = {id(s): i for i, s in enumerate(trace.capture_sources)}
    arg_pos = {id(a): k for k, a in enumerate(views.args)}

    def input_index(root: Tensor):
        k = arg_pos.get(id(root))
        if k is not None:
            return k
        src = views.sources.get(id(root))
        if src is None or id(root) in views.local_proxies or id(src) not in cap_pos:
            return None
        return n_args + cap_pos[id(src)]

    written: list[tuple[int, Value]] = []
    for a in views.args:
        if a._stamp:
            written.append((arg_pos[id(a)], a._value))
    for proxy in views.proxies.values():
        if proxy._stamp:
            idx = input_index(proxy)
            if idx is not None:
                written.append((idx, proxy._value))
    written.sort(key=lambda w: w[0])
    aliases = []
    for t in outputs:
        root, steps = _root_and_steps(trace, t) if owner(t) is trace else (None, ())
        idx = input_index(root) if root is not None else None
        aliases.append(None if idx is None else (idx, tuple(steps)))
    return [i for i, _ in written], [v for _, v in written], aliases


def write_back(closed, inputs: Sequence[Tensor], outputs: Sequence[Tensor], *,
               alias_outputs: bool = False) -> list[Tensor]:
    """Apply the in-place writes a traced function made to its inputs; return the function's own outputs.

    This is the one place where the writes of a traced function reach the caller. Every
    call site of a `ClosedGraph` (tp.compile, and each transform) calls it right after
    running the graph::

        inputs = arg_tensors + closed.capture_tensors()   # in graph-input order
        outs = call_graph(graph, inputs)                  # all graph outputs
        outs = closed.write_back(inputs, outs)            # == write_back(closed, inputs, outs)
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
    mutated = list(getattr(closed, "mutated", ()) or ())
    if len(outputs) != len(closed.graph.outputs):
        raise ValueError(f"write_back: expected all {len(closed.graph.outputs)} outputs of @{closed.graph.name} "
                         f"(the function's own, then one per input written in place), got {len(outputs)}")
    outputs = own_outputs(outputs, inputs)
    n = len(outputs) - len(mutated)
    user = list(outputs[:n])
    if mutated:
        _check_no_aliased_writes(closed, inputs, mutated)
        for idx, value in zip(mutated, outputs[n:]):
            target = inputs[idx]
            if tuple(value.shape) != tuple(target.shape) or value.dtype is not target.dtype:
                raise ValueError(f"write_back: the value written into input {idx} has type "
                                 f"{value.dtype.name}{list(value.shape)}, but the input is "
                                 f"{target.dtype.name}{list(target.shape)}")
            store(target, value, "write-back")
    if alias_outputs:
        for k, alias in enumerate(getattr(closed, "output_aliases", ()) or ()):
            if alias is not None and k < n:
                idx, steps = alias
                user[k] = apply_steps(inputs[idx], steps)
    return user


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


def _check_no_aliased_writes(closed, inputs: Sequence[Tensor], mutated: list[int]) -> None:
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


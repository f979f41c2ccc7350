"""`backward` and `grad` over the tape: recorded ops become a graph, the vjp pipeline runs on it.

1. `_collect` walks the records from the outputs back to the leaves; `_build` places them in a
   `Graph` in recording order. Every tensor without a record (leaves, constants, the storage
   of a detached value) is a graph *input*, never a constant, so a structurally equal step
   (the next iteration of a training loop) builds an equal graph.
2. `_backward_graph` runs `ir.passes.reverse.vjp` and joins the two halves into one graph
   ``(*inputs, *cotangents) -> gradients of the wrt inputs``, simplified; it is cached by
   ``(graph.structural_key(), wrt)``, and the executable is kept on the cached graph, so the
   backward of a training loop is compiled once.
3. The graph runs compiled (`_exec.execute`), or, with ``create_graph=True``, op by op through
   `bind` so that the gradient computation is itself recorded (double backward).

Gradients for a tensor with history (``retain_grad()`` or an input of `autograd.grad`) come
from a zero input added to its value: the gradient of that input is the tensor's gradient.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from tensorplay.ir import GraphBuilder
from tensorplay.ir.core import inline
from tensorplay.ir.passes.reverse import vjp
from tensorplay.ir.passes.simplify import simplify

from .._state import STATE
from .._tensor import Tensor
from ._record import ACTIVE, RETAINED, RUN_TAPED, bump_version, version

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")

_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
_CACHE_LIMIT = 256
STATS = {"builds": 0, "hits": 0}  # backward graphs derived / reused (tests check a loop derives once)


def _collect(records) -> list:
    """The records reachable from `records`, in recording (topological) order."""
    seen, stack = {}, [r for r in records if r is not None]
    while stack:
        r = stack.pop()
        if id(r) in seen:
            continue
        if r.freed:
            raise RuntimeError(_FREED)
        seen[id(r)] = r
        stack.extend(rec for _, rec, _ in r.operands if rec is not None and id(rec) not in seen)
    return sorted(seen.values(), key=lambda r: r.seq)


def tape_of(outputs) -> list:
    """The records behind `outputs`, in recording order (raises if a part of it was freed)."""
    return _collect([t.__dict__.get("_ag") for t in outputs])


def _build(outputs, targets, records):
    """The graph of the records behind `outputs`, and what its inputs are.

    Returns ``(graph, input_tensors, wrt, target_slots)``: `target_slots[i]` is the graph-input
    index whose gradient is target ``i``'s, or None when target ``i`` is not used.
    """
    out_recs = [t.__dict__.get("_ag") for t in outputs]
    target_of_rec = {id(t.__dict__["_ag"]): i for i, t in enumerate(targets) if t.__dict__.get("_ag") is not None}
    target_of_leaf = {id(t): i for i, t in enumerate(targets) if t.__dict__.get("_ag") is None}
    b = GraphBuilder("backward")
    tensors, wrt, slots = [], [], [None] * len(targets)
    leaf_values: dict = {}
    rec_values: dict = {}

    def leaf_value(t, ver):
        if ver is not None and version(t) != ver:
            raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an "
                               f"inplace operation: [{t.dtype.name}{list(t.shape)}] is at version "
                               f"{version(t)}; expected version {ver} instead. Hint: the operation that saved "
                               f"it is the one computing the output; clone() it before writing in place.")
        v = leaf_values.get(id(t))
        if v is not None:
            return v
        v = leaf_values[id(t)] = b.add_input(t._type())
        k = target_of_leaf.get(id(t))
        if k is not None:
            slots[k] = len(tensors)
        wrt.append(k is not None)
        tensors.append(t)
        return v

    for r in records:
        vals = tuple([rec_values[id(rec)] if rec is not None else leaf_value(t, ver) for t, rec, ver in r.operands])
        out = b.emit_typed(r.prim, vals, r.attrs, r.out_type)
        k = target_of_rec.get(id(r))
        if k is not None:  # a target with history: its gradient is that of a zero added to it
            slots[k] = len(tensors)
            z = b.add_input(r.out_type)
            tensors.append(None)
            wrt.append(True)
            out = b.emit("add", out, z)
        rec_values[id(r)] = out
    outs = [rec_values[id(r)] if r is not None else leaf_value(t, None) for t, r in zip(outputs, out_recs)]
    return b.build(outs), tensors, wrt, slots


def _backward_graph(graph, wrt):
    """``(*inputs, *one cotangent per output) -> gradient per wrt input``, simplified and cached."""
    key = (graph.structural_key(), tuple(wrt))
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        STATS["hits"] += 1
        return hit
    STATS["builds"] += 1
    v = vjp(graph, wrt)
    b = GraphBuilder("backward")
    b.inputs, b.nodes = list(v.forward.inputs), list(v.forward.nodes)
    n_out = len(graph.outputs)
    res = v.forward.outputs[n_out:]
    cts = [b.add_input(o.type) for o in graph.outputs]
    joined = simplify(b.build(inline(b, v.backward, res + cts)))
    _CACHE[key] = joined
    if len(_CACHE) > _CACHE_LIMIT:
        _CACHE.popitem(last=False)
    return joined


def _free(records) -> None:
    for r in records:
        r.freed = True
        r.operands = None


def run_eagerly(graph, inputs):
    """Run `graph` op by op on tensors through `bind`, so that autograd records it (create_graph)."""
    from tensorplay.ir import TupleType

    from .._control import _run_eagerly as run_tuple_node
    from .._trace import bind

    env = dict(zip(graph.inputs, inputs))
    for node in graph.nodes:
        args = [env[x] for x in node.inputs]
        name = node.prim.name
        if name == "tuple_get":  # the elements of a tuple-valued node (scan, while_loop, ...) are tensors
            env[node.out] = args[0][node.attrs["index"]]
        elif name == "make_tuple":
            env[node.out] = args
        elif isinstance(node.out.type, TupleType):
            env[node.out] = run_tuple_node(node.prim, args, node.attrs)
        else:
            env[node.out] = bind(node.prim, *args, **node.attrs)
    return [env[o] for o in graph.outputs]


def run_taped(graph, inputs) -> list:
    """Run `graph` on concrete tensors so that autograd records it (`_record.needs_tape`).

    An output that is one of the inputs becomes a recorded copy: a graph's results are new tensors.
    """
    from ..ops._common import copy

    outs = run_eagerly(graph, inputs)
    ids = {id(t) for t in inputs}
    return [copy(o) if id(o) in ids else o for o in outs]


def compute_grads(outputs, grad_outputs, targets, *, retain_graph: bool, create_graph: bool,
                  records=None) -> list:
    """Gradients of `outputs` (weighted by `grad_outputs`) for each of `targets` (None: unused);
    `records` is ``tape_of(outputs)`` when the caller has it already."""
    records = tape_of(outputs) if records is None else records
    graph, tensors, wrt, slots = _build(outputs, targets, records)
    if not any(wrt):
        if not retain_graph:
            _free(records)
        return [None] * len(targets)
    back = _backward_graph(graph, wrt)
    zeros = [Tensor._wrap(np.zeros(graph.inputs[i].type.shape, graph.inputs[i].type.dtype.np)) if t is None else t
             for i, t in enumerate(tensors)]
    cts = [g if g.dtype is o.dtype else g.to(o.dtype) for g, o in zip(grad_outputs, outputs)]
    if create_graph:
        grads = run_eagerly(back, zeros + cts)
    else:
        from .._exec import execute

        grads = [Tensor._wrap(a) for a in execute(back, [t._data for t in zeros + cts])]
    if not retain_graph:
        _free(records)
    by_input = dict(zip([i for i, w in enumerate(wrt) if w], grads))
    return [None if s is None else by_input[s] for s in slots]


def leaves_of(records) -> list:
    """The leaf tensors requiring grad that the tape `records` reads, in first-use order."""
    seen, out = set(), []
    for r in records:
        for t, rec, _ in r.operands:
            if rec is None and t.__dict__.get("_rg") and id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    return out


def retained_of(records) -> list:
    """Non-leaf tensors of the tape `records` that called ``retain_grad()`` (and still hold that history)."""
    if not RETAINED:
        return []
    recs = {id(r) for r in records}
    return [t for t in list(RETAINED.values()) if id(t.__dict__.get("_ag")) in recs]


# --- in-place writes: the target takes over the value's history ----------------------------------------
def note_inplace(target, value) -> None:
    """An eager in-place write of `value` into `target` (before the copy): bump the storage version
    and let `target` take over `value`'s history, with torch's errors for writes autograd cannot follow."""
    bump_version(target)
    if not ACTIVE[0] or not STATE.grad_enabled:
        return  # under no_grad a write keeps the target's history, as in torch (the version says it changed)
    td, vd = target.__dict__, value.__dict__
    if not (td.get("_rg") or vd.get("_rg")):
        return
    if td.get("_rg") and td.get("_ag") is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = target._base
    if base is not None and base.__dict__.get("_rg") and base.__dict__.get("_ag") is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and (base.__dict__.get("_rg") or vd.get("_rg")):
        _write_through_view(target, base, value)
        return
    if vd.get("_rg"):
        td["_ag"], td["_rg"] = vd.get("_ag"), True
    else:  # a constant overwrote a tensor with history: it no longer depends on anything
        td["_ag"], td["_rg"] = None, False


def _write_through_view(view, base, value) -> None:
    """Record a write of `value` into `view` of `base` as ops on `base`: the base's new value is the
    view's inverse (`tensorplay._scatter`) applied to `value`, and the view becomes a view of it."""
    from .._scatter import scatter
    from .._trace import apply_steps

    b = GraphBuilder("write_through_view")
    old, new = b.add_input(base._type()), b.add_input(value._type())
    graph = b.build([scatter(b, old, view._steps, new)])
    (new_base,) = run_eagerly(graph, [base, value])
    bd = base.__dict__
    bd["_ag"], bd["_rg"] = new_base.__dict__.get("_ag"), True
    view.__dict__["_ag"] = apply_steps(new_base, view._steps).__dict__.get("_ag")
    view.__dict__["_rg"] = True


RUN_TAPED[0] = run_taped

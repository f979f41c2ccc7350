"""Replaying a plain transform's last trace: a repeated call checks its ops instead of recording them.

A plain transform runs the user's function again on every call (fresh Python semantics), and
after a pipeline-cache hit the trace it recorded is thrown away. This module keeps the last such
trace of an argument signature as a `Template` when every node of it was appended by an op memo
hit (`_trace.memo_traced_op`: ``x @ w``, ``x + b``, ``tanh(x)``) on the arguments, on earlier
results or on captured weights (concrete C-contiguous tensors from outside the function: ``x @ W``
with `W` closed over). The next call runs the function on a `Replaying` trace. Each memo op
checks that it is the template's next op (the same memo, on the same tensors of this call) and
returns a tensor of the template's own result value: no node, value or tape item is made, and the
types are the template's, which the same ops on the same argument types give. A capture's first
read checks that the operand is a concrete tensor of the template's capture's shape, strides and
dtype (any such tensor: its values are the graph's input, read on this call). When the function
returns the template's outputs after its last op, this call traced the template's graph, so it
takes the template's cache key (`Replayed`) and this call's captures.

Anything else makes the trace a real `Trace` first (`Replaying.leave`): another op, operand or
output, a value asked for (`bool`, `print`), another capture, a view, an in-place write, a nested
transform, a change of grad mode (`TraceState.set_grad_mode`: a replay starts only with grad on,
so its ops need not check it). Every use of the trace but the memo ops' check reaches `Replaying.__getattr__` or
`__setattr__`, so nothing can read or change trace state that is not there. The trace adopts the
template's nodes so far, renumbered as a fresh trace numbers its values (so its tape key is a fresh
trace's), and the call goes on as any trace does. The template is consumed then: the next hit makes
another.

>>> import tensorplay as tp
>>> from tensorplay.func import jacfwd
>>> f = jacfwd(lambda x: tp.tanh(x * x))
>>> [f(tp.tensor([0.0, 1.0])).diagonal().tolist() for _ in range(3)][-1]
[0.0, 0.8399486541748047]
"""
from __future__ import annotations

from sys import getrefcount as _refs
from weakref import getweakrefcount as _weak_refs
from typing import Callable

from tensorplay.ir import Value

from ._deferred import Deferred, replay as replay_block
from ._state import STATE
from ._tensor import Tensor
from ._trace import (REPLAY_CAPTURE, KeyedTrace, Trace, _call_traced, _graph_name, _is_concrete, _known_sources,
                     _levels, _value_ids, keyed_result, known_array, memo_of_node, reserve_ids)

__all__ = ["Template", "TemplateBox", "Replaying", "Replayed", "replay_keyed", "template_of"]

_new = object.__new__
_set = object.__setattr__
_END = (None, 0, 0, None, None)  # the entry after a template's last op: no op is it


class Template:
    """A finished trace kept for replay: its argument values, `steps` (per position after the
    arguments: its node, unlinked (``value.node`` is None, so reference counting frees it), or a
    capture's value) and the nodes' signatures, and `expect`, per position of a replaying call's
    `made` list (arguments first, then each op's result or capture), what makes it:
    ``(memo, operand position, second operand position or None, result value, result tensor)``
    for an op, ``(REPLAY_CAPTURE, capture index, (shape, strides, dtype), value, None)`` for a
    capture's first read; `captures` are the captures' positions, `outs` the outputs', `key` the
    trace's cache key.

    A template is used by one call at a time, so it owns the objects a replay hands out: `trace`,
    the `Replaying` trace, and `tensors`, per position, the tensor of each argument and op result
    (an op's is in its entry too; a capture's position holds a placeholder only this list holds),
    which `_ready` reuses for the next replay when nothing else holds them."""

    __slots__ = ("arg_values", "arg_types", "steps", "sigs", "expect", "n_made", "out_tree", "outs", "key", "name",
                 "trace", "tensors", "attributes", "free", "trace_free", "captures")


def template_of(keyed, key: tuple) -> Template | None:
    """The template of the finished `trace_keyed` trace `keyed` (a `KeyedTrace`, which this frees
    either way, as its `drop`) whose cache key is `key`, or None when some node of it is not a memo
    hit on arguments, earlier results or plain captures (`_plain_captures`)."""
    trace, graph, _, _, _, out_tree, _ = keyed.parts
    nodes = graph[1]
    results = graph[2]
    template = None
    if not trace.capture_values or _plain_captures(trace):
        template = _template(trace, nodes, results, out_tree, key)
    keyed.drop()  # (unlinks the nodes; the template keeps them so)
    return template


def _plain_captures(trace: Trace) -> bool:
    """Are all of `trace`'s captures outside roots as a replay checks them: concrete C-contiguous
    tensors that are not views or meta and were not made during the call, with no scalar input?"""
    if trace._scalars:
        return False
    views = trace.views
    for s in trace.capture_sources:
        if s.__class__ is not Tensor or s._trace is not None or s._base is not None or s._meta \
                or not s._data.flags.c_contiguous or id(s) in views.locals:
            return False
    return True


def _template(trace: Trace, nodes: list, results: list, out_tree, key: tuple) -> Template | None:
    args = trace.arg_values
    where = {v: k for k, v in enumerate(args)}
    captured = {v: k for k, v in enumerate(trace.capture_values)}
    sources = trace.capture_sources
    expect: list = [None] * len(args)
    steps: list = []
    positions: list = [None] * len(captured)

    def position(v):  # (of `v` in `made`; a capture gets its entry on its first read)
        p = where.get(v)
        if p is None:
            k = captured.get(v)
            if k is None:
                return None
            d = sources[k]._data
            expect.append((REPLAY_CAPTURE, k, (d.shape, d.strides, d.dtype), v, None))
            steps.append(v)
            p = where[v] = positions[k] = len(expect) - 1
        return p

    for node in nodes:
        if node.__class__ is Deferred:  # a composite block (`_deferred`): checked by its program
            ops = node.refs[:node.n_ops]
            if len(ops) > 2:
                return None
            a, b = position(ops[0]), position(ops[1]) if len(ops) == 2 else None
            if a is None or (b is None and len(ops) == 2):
                return None
            expect.append((node.prog, a, b, node.out, None))
        else:
            got = memo_of_node(node)
            if got is None:
                return None
            memo, entry = got
            ins = node.inputs
            if len(ins) == 1:
                a = position(ins[0])
                if a is None:
                    return None
                expect.append((memo, a, None, node.out, None))
            else:
                a, b = position(ins[0]), position(ins[1])
                if a is None or b is None:
                    return None
                if entry[4] is True:  # the memo appends the node with its operands swapped
                    a, b = b, a
                expect.append((memo, a, b, node.out, None))
        steps.append(node)
        where[node.out] = len(expect) - 1
    outs = [where.get(v) for v in results]
    if None in outs or None in positions or any(expect[k][0] is REPLAY_CAPTURE for k in outs):
        return None
    expect.append(_END)
    template = _new(Template)
    template.arg_values, template.steps, template.sigs = args, steps, trace.sigs
    template.arg_types = [v.type for v in args]
    template.expect, template.out_tree, template.outs, template.key = expect, out_tree, outs, key
    template.captures = positions
    template.n_made = n = len(expect) - 1
    template.name = trace.builder.name
    template.trace = None
    # (made by the first replay's `_ready`; a capture's position keeps a placeholder)
    template.tensors = [object() if e is not None and e[0] is REPLAY_CAPTURE else None for e in expect[:n]]
    template.attributes = [None] * n
    # what `_ready` sums when no one else holds them: each is in `tensors`, an op's also in `expect`
    template.free = _FREE_MAPPED * n + n - len(args) - len(positions)
    template.trace_free = _FREE_LOCAL + n - len(positions)  # (the trace: held by the template and its tensors)
    return template


def _free_refs() -> tuple[int, int]:
    """What `getrefcount` says of an object only one list holds, in the two patterns `_ready`
    reads it: mapped over the list, and read into a local first (the counts are the interpreter's
    business, so they are measured)."""
    holder = [_new(Tensor)]
    t = holder[0]
    return list(map(_refs, holder))[0] - 1, _refs(t)  # (- 1: `t`)


_FREE_MAPPED, _FREE_LOCAL = _free_refs()


def _ready(template: Template) -> "Replaying":
    """The trace a replay of `template` runs on, with a tensor for each of its arguments and op
    results that nothing else holds.

    The last replay's trace and tensors are taken again when their reference counts show that no
    one kept them (a tensor that escaped is a leaked tracer of its finished trace, and keeps it)
    and no attribute or weak reference was added to them (each has its own, empty `__dict__`,
    which `attributes` lists); any other is made anew. Their slots need no check: tensorplay
    rebinds a traced tensor's value only through its trace, which ends a replay. Reusing them
    saves making and freeing 2 objects per argument and op."""
    trace, tensors = template.trace, template.tensors
    if (trace.__class__ is Replaying and sum(map(_refs, tensors)) == template.free and not any(template.attributes)
            and not sum(map(_weak_refs, tensors)) and _refs(trace) == template.trace_free):
        return trace
    values, expect, attributes = template.arg_values, template.expect, template.attributes
    n = len(values)
    for k in range(template.n_made):
        t = tensors[k]
        if t.__class__ is not Tensor and t is not None:  # (a capture's placeholder)
            continue
        held = _FREE_LOCAL + (k >= n)  # (an op's result is in its `expect` entry too)
        if t is None or _refs(t) != held or attributes[k] or _weak_refs(t) or t.__dict__ is not attributes[k]:
            t = tensors[k] = _tensor(trace, values[k] if k < n else expect[k][3])
            attributes[k] = t.__dict__
            if k >= n:
                e = expect[k]
                expect[k] = (e[0], e[1], e[2], e[3], t)
    if trace.__class__ is not Replaying or _refs(trace) != template.trace_free:
        trace = template.trace = _new(Replaying)
        for t in tensors:
            if t.__class__ is Tensor:
                t._trace = trace
    return trace


def _tensor(trace, value) -> Tensor:
    t = _new(Tensor)
    t._data, t._trace, t._value = None, trace, value
    return t


def _idle(trace: "Replaying") -> None:
    """Mark a replay finished (a tensor that escaped it then sees a finished trace) and drop its
    references to the call's tensors and to the template (which holds the trace: no cycle is left
    for the collector)."""
    d = trace.__dict__
    d["made"] = d["leaves"] = d["template"] = d["expect"] = None


class TemplateBox(list):
    """The replay template of one user function and argument signature: a list of at most one (a
    call takes it out while it replays it), and `fails`, how many replays or templates of it failed
    running (the pipeline stops keeping templates after a few)."""

    __slots__ = ("fails",)

    def __init__(self):
        super().__init__()
        self.fails = 0


class Replaying:
    """A trace replaying `template` (see the module docstring); `leave` makes it a `Trace`.

    Its own state is in its ``__dict__``: `transform`, `level`, `concrete`, `active` (as a Trace's),
    `made`, `expect`, `template`, and the call's `leaves` and `batched` mask."""

    def __getattr__(self, name: str):
        self.leave()
        return getattr(self, name)

    def __setattr__(self, name: str, value) -> None:
        self.leave()
        setattr(self, name, value)

    def leave(self) -> None:
        """Become the `Trace` this call has recorded so far: the template's arguments and its first
        ops' nodes, renumbered, as a fresh trace of the same ops would hold them."""
        d = self.__dict__
        made, template = d.pop("made"), d.pop("template")
        del d["expect"]
        leaves, batched = d.pop("leaves"), d.pop("batched")
        _set(self, "__class__", Trace)
        if made is None:  # (a finished replay, reached through a tensor that escaped it)
            self._begin("f")
            return
        self._begin(template.name)
        args = template.arg_values
        n = len(args)
        first = reserve_ids(n) if n else self.base + 1
        arg_values, arg_tensors = self.arg_values, self.views.args
        for k in range(n):
            v = args[k]
            v.id = first + k
            arg_values.append(v)
            arg_tensors.append(made[k])
        _known_sources(self, first, template.arg_types, leaves, batched)
        nodes, sigs, tape, base = self._nodes, self.sigs, self.tape, self.base
        done = len(made) - n
        moved: dict = {}  # a block's template result or a capture's value -> its value in this trace
        sig_of = iter(template.sigs)
        for k, node in enumerate(template.steps[:done]):
            if node.__class__ is Value:  # a capture, lifted where the op that first read it lifted it
                moved[node] = self.lift(made[n + k])
                continue
            sig = next(sig_of)
            if node.__class__ is Deferred:
                # recorded again as the composite's hit records it (its ids, constants and tape
                # step are this trace's), with the template's result Value as its result: a value
                # read before the replay was left (the operand list of the memo hit that leaves it)
                # is this trace's, as an adopted node's result is
                ops = [moved.get(u, u) for u in node.refs[:node.n_ops]]
                result, fresh = node.out, replay_block(self, node.prog, ops)._value
                block = fresh.node
                result.node, result.id = block, fresh.id
                block.out = result
                continue
            if moved:
                node.inputs = tuple([moved.get(u, u) for u in node.inputs])
            v = node.out
            v.node, v.id = node, next(_value_ids)
            nodes.append(node)
            sigs.append(sig)
            tape.append(sig)
            tape.append(v.id - base)
            for u in node.inputs:
                tape.append(u.id - base)
        template.steps = None  # (its nodes are this trace's now)

    def known_arg(self, t: Tensor):
        """`_trace.known_array(t)` for a tensor `t` of this replaying trace: its caller tensor's
        array when `t` is an argument with one (not batched), None for an op's result (no value is
        known without computing it)."""
        d = self.__dict__
        made = d["made"]
        if made is not None:
            for k in range(len(d["template"].arg_values)):
                if made[k] is t:
                    batched, source = d["batched"], d["leaves"][k]
                    if batched is not None and batched[k]:
                        return None
                    if source.__class__ is Tensor and source._trace is None and source._base is None \
                            and not source._meta:
                        return source._data
                    break
            else:
                return None
        self.leave()
        return known_array(t)


class Replayed:
    """A call that replayed its template to the end: `drop()` (a cache hit) gives the template back to
    its signature's `box`; `closed()` (a miss) makes the trace real and returns its ClosedGraph."""

    __slots__ = ("trace", "template", "box", "parts")

    def drop(self) -> None:
        _idle(self.trace)  # (the trace <-> its tensors cycle; the caller's tensors)
        if not self.box:
            self.box.append(self.template)

    def closed(self):
        trace = self.trace
        trace.leave()
        out_leaves, out_tree, out_tensors, in_tree, leaves = self.parts
        graph = trace.finish(out_tensors, lazy=True)
        traced = keyed_result(trace, graph, in_tree, leaves, out_leaves, out_tree, out_tensors)[2]
        return traced.closed() if traced.__class__ is KeyedTrace else traced


def replay_keyed(box: list, fn: Callable, leaves: list, in_tree, batched_mask: tuple | None, transform: str,
                 name: str) -> tuple | None:
    """`trace_keyed`'s ``(key, captures, traced)`` for a call that replays the template in `box` (a
    signature's list of at most one), taken out while in use; None when the box is empty. `traced`
    is a `Replayed` when the call replayed the template to the end, else as `trace_keyed`'s."""
    if not STATE.grad_enabled:  # (the template's ops were recorded with it on; see `TraceState.set_grad_mode`)
        return None
    try:
        template = box.pop()
    except IndexError:  # (empty, or another thread's call has it)
        return None
    trace = _ready(template)
    args = template.tensors[:len(template.arg_values)]
    made = list(args)
    d = trace.__dict__
    if d.get("transform") is transform and d.get("made", 0) is None:  # (this template's idle trace again)
        d["level"] = next(_levels)
        d["active"], d["made"], d["expect"], d["template"] = True, made, template.expect, template
        d["leaves"], d["batched"] = leaves, batched_mask
    else:
        _set(trace, "__dict__", {"transform": transform, "level": next(_levels), "concrete": _is_concrete(transform),
                                 "active": True, "made": made, "expect": template.expect, "template": template,
                                 "leaves": leaves, "batched": batched_mask})
    stack = STATE.stack
    stack.append(trace)
    try:
        out_leaves, out_tree, out_tensors = _call_traced(fn, in_tree, args)
    except BaseException:
        if trace.__class__ is Replaying:
            _idle(trace)
            box.append(template)
        raise
    finally:
        if trace.__class__ is Replaying:
            if not stack or stack[-1] is not trace:
                raise RuntimeError("tensorplay: trace stack corrupted (traces must be left in the order entered)")
            stack.pop()
            trace.__dict__["active"] = False
        else:
            trace.__exit__()
    if trace.__class__ is Replaying:
        outs = template.outs
        if len(made) == template.n_made and len(out_leaves) == len(outs) and (
                out_tree is template.out_tree or out_tree == template.out_tree):
            for t, k in zip(out_leaves, outs):
                if t is not made[k]:
                    break
            else:
                done = _new(Replayed)
                done.trace, done.template, done.box = trace, template, box
                done.parts = (out_leaves, out_tree, out_tensors, in_tree, leaves)
                captures = template.captures
                return template.key, [made[k] for k in captures] if captures else [], done
        trace.leave()
    graph = trace.finish(out_tensors, lazy=True)
    return keyed_result(trace, graph, in_tree, leaves, out_leaves, out_tree, out_tensors)

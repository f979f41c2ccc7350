"""Replaying a library composite's traced nodes: `memo_composite`.

A composite such as `cross_entropy` runs dozens of Python op-layer calls (promotion,
broadcasting, shape checks) to emit ~20 nodes, and under the plain transforms it is re-traced
on every call. Its nodes are a pure function of its operands' types and its static options
(plus the decisions it takes from known values, which the caller puts in the key), so once
traced they can be appended again directly, without running the op layer: the same
primitives, attributes, signatures and result types, in the same order, reading the same
operands. The graph, and so the trace's structural key, is exactly the one the op layer emits.

What may be replayed (checked when the composite is first traced for a key; anything else is
traced through the op layer every time): every new node was taped with a known signature,
and each of its inputs is an operand, an earlier new node, an op constant (`Trace.fixed`) or a
Python scalar's graph input (`Trace.scalar_value`); the result is a new node's value (not a
view). The constants and scalars are taken again through the trace's own dedup, so the graph
matches the op layer's whatever the trace held before.
"""
from __future__ import annotations

import itertools
from typing import Callable

from ._deferred import FIXED, NODE, SCALAR, replay as _run
from ._state import STATE
from ._trace import _typed_sig, fixed_key
from ._tensor import Tensor
from tensorplay.ir import get_primitive
from .compiler import register_reset

__all__ = ["memo_composite", "clear"]

_MEMOS: list = []
_LIMIT = 512

_NODE, _FIXED, _SCALAR = NODE, FIXED, SCALAR
_tokens = itertools.count(1)  # a program's tape token is minus one of these: never a signature id (>= 0)


def memo_composite(fn: Callable) -> Callable:
    """``call(key, operands, *args, **kwargs)`` running ``fn(*args, **kwargs)`` under a memo of its
    traced nodes.

    `operands` are the tensors `fn` reads (among `args`); `key` is a hashable value that, with the
    operands' types, determines what `fn` emits (its static options and any decision it takes from
    known values; None: do not memoise this call). A hit appends the recorded nodes on the current
    operands (a concrete operand is captured first, as the op layer would at its first use), as
    a `Deferred` block built only when read (`tensorplay._deferred`); eager calls, gradients off,
    operands of an enclosing trace, concrete views and views of storage written since run `fn`
    as it is.

    >>> import tensorplay as tp
    >>> from tensorplay.func import grad
    >>> sq = memo_composite(lambda x: (x * x).sum())
    >>> [grad(lambda x: sq(("sq",), (x,), x))(tp.tensor([1.0, 2.0])).tolist() for _ in range(2)]
    [[2.0, 4.0], [2.0, 4.0]]
    """
    memo: dict = {}
    _MEMOS.append(memo)

    def call(key, operands: tuple, *args, **kwargs):
        stack = STATE.stack
        if not stack or key is None or not STATE.grad_enabled:
            return fn(*args, **kwargs)
        top = stack[-1]
        n = len(operands)
        # the common hits in one frame each: one or two distinct roots of `top` (the key is flat:
        # the caller's key, then (shape, dtype) per operand, then the aliasing pattern if any)
        if n == 2:
            a, b = operands
            if a.__class__ is Tensor and b.__class__ is Tensor and a._trace is top and b._trace is top \
                    and a._base is None and b._base is None:
                va, vb = a._value, b._value
                if va is not vb:
                    t, u = va.type, vb.type
                    try:
                        prog = memo.get((key, t.shape, t.dtype, u.shape, u.dtype))
                    except TypeError:  # an unhashable option
                        return fn(*args, **kwargs)
                    if prog is not None:
                        return _run(top, prog, [va, vb])
        elif n == 1:
            a = operands[0]
            if a.__class__ is Tensor and a._trace is top and a._base is None:
                va = a._value
                t = va.type
                try:
                    prog = memo.get((key, t.shape, t.dtype))
                except TypeError:
                    return fn(*args, **kwargs)
                if prog is not None:
                    return _run(top, prog, [va])
        vals = []
        full_key = [key]
        for t in operands:
            if t.__class__ is not Tensor:
                return fn(*args, **kwargs)
            if t._trace is not top:
                if t._trace is not None or t._base is not None:
                    return fn(*args, **kwargs)
                v = top.lift(t)  # a concrete tensor from outside: captured (before the memo's range)
            else:
                base = t._base
                if base is not None and t._stamp != base._stamp:  # a view of a storage written since
                    return fn(*args, **kwargs)
                v = t._value
            vals.append(v)
            t = v.type
            full_key.append(t.shape)  # (shape, dtype) pairs: a TensorType's own hash is Python code
            full_key.append(t.dtype)
        if n > 1 and (vals[0] is vals[1] if n == 2 else len({id(v) for v in vals}) < n):
            # an operand passed twice (add(x, x)): the recorded nodes read it through one position,
            # so the aliasing pattern is part of the key
            full_key.append(tuple([next(i for i, u in enumerate(vals) if u is v) for v in vals]))
        full_key = tuple(full_key)
        try:
            prog = memo.get(full_key)
        except TypeError:  # an unhashable option
            return fn(*args, **kwargs)
        if prog is not None:
            return _run(top, prog, vals)
        top.materialise()  # (so the counts below index real nodes, whatever `fn` builds)
        nodes, sigs = top.builder.nodes, top.sigs
        n0, s0, t0 = len(nodes), len(sigs), len(top.tape)
        fixed_before = {id(v): k for k, v in top._fixed.items()}
        scalars_before = {id(v): k for k, v in top._scalars.items()}
        out = fn(*args, **kwargs)
        prog = _learn(top, n0, s0, t0, vals, out, fixed_before, scalars_before)
        if prog is not None:
            if len(memo) >= _LIMIT:
                memo.clear()
                _clear_op_programs()
            memo[full_key] = prog
        return out

    def hit(top, key, a, b=None):
        """`call`'s hit for one or two distinct roots `a`, `b` of the innermost trace `top` (the
        caller has checked ``STATE.stack``), without `call`'s argument packing; None when it is
        not one (then the caller runs `call`)."""
        if b is None:
            if a._trace is top and a._base is None and STATE.grad_enabled:
                va = a._value
                t = va.type
                prog = memo.get((key, t.shape, t.dtype))
                if prog is not None:
                    return _run(top, prog, [va])
            return None
        if a._trace is top and b._trace is top and a._base is None and b._base is None and STATE.grad_enabled:
            va, vb = a._value, b._value
            if va is not vb:
                t, u = va.type, vb.type
                prog = memo.get((key, t.shape, t.dtype, u.shape, u.dtype))
                if prog is not None:
                    return _run(top, prog, [va, vb])
        return None

    call.__name__ = getattr(fn, "__name__", "composite")
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn
    call.hit = hit
    return call


def _learn(top, n0: int, s0: int, t0: int, operands: list, out, fixed_before: dict, scalars_before: dict):
    """The replay program of the nodes appended to `top` since (`n0` nodes, `s0` signatures, `t0`
    tape items), or None. When there is one, the tape since `t0` is rewritten to the form a hit
    records (see `_run`), so this call and the hits after it have the same structural key."""
    top.materialise()  # (nested composites' blocks: their nodes are part of this program)
    nodes, sigs = top.builder.nodes, top.sigs
    new = nodes[n0:]
    if len(sigs) - s0 != len(new) or out.__class__ is not Tensor or out._trace is not top \
            or out._base is not None:
        return None
    new_sigs = sigs[s0:]
    if None in new_sigs:
        return None
    fixed = {id(v): k for k, v in top._fixed.items()}
    scalars = {id(v): k for k, v in top._scalars.items()}
    where = {id(v): i for i, v in enumerate(operands)}
    prog: list = []
    values = list(operands)  # per program position: the value it stands for in this call
    base = top.base
    outside_tape: list = []  # the tape items of the op constants and scalar inputs made by this call
    k = len(operands)

    def ref(v) -> int | None:
        nonlocal k
        i = where.get(id(v))
        if i is not None:
            return i
        f = fixed_before.get(id(v))
        if f is not None:  # an op constant of the trace made before: taken again through its dedup
            prog.append(_fixed_step(v.node.attrs))
        else:
            s = scalars_before.get(id(v)) or scalars.get(id(v))  # (a 0-d scalar is its input: no node)
            if s is None:
                return None
            prog.append((_SCALAR, _scalar_args(top, s)))
        values.append(v)
        where[id(v)] = k
        k += 1
        return k - 1

    for node, sig in zip(new, new_sigs):
        v = node.out
        if id(v) in fixed or id(v) in scalars:
            if id(v) in fixed:
                prog.append(_fixed_step(node.attrs))
            else:
                prog.append((_SCALAR, _scalar_args(top, scalars[id(v)])))
            outside_tape.append(sig)
            outside_tape.append(v.id - base)
            for u in node.inputs:
                outside_tape.append(u.id - base)
        else:
            ins = []
            for u in node.inputs:
                i = ref(u)
                if i is None:
                    return None
                ins.append(i)
            prog.append((_NODE, (node.prim, dict(node.attrs), sig, v.type), tuple(ins)))
        values.append(v)
        where[id(v)] = k
        k += 1
    i = where.get(id(out._value))
    if i is None or i < len(operands) or prog[i - len(operands)][0] != _NODE:
        return None
    n_ops = len(operands)
    segments: list = []  # runs of NODE steps as their lengths, the other steps as they are
    refs, starts, consecutive, prev = list(operands), [], True, None
    for step, v in zip(prog, values[n_ops:]):
        if step[0] == _NODE:
            if segments and segments[-1].__class__ is int:
                segments[-1] += 1
                consecutive = consecutive and v.id == prev + 1
            else:
                segments.append(1)
                starts.append(v.id)
            prev = v.id
        else:
            segments.append(step)
            refs.append(v)
    r = values[i]
    run = sum(1 for j in range(i - n_ops + 1) if prog[j][0] == _NODE and (j == 0 or prog[j - 1][0] != _NODE)) - 1
    token = -next(_tokens)
    # (a block of one run of nodes reading only its operands, the common case, is made by `_run`'s
    # first branch: its node count, else 0)
    simple = segments[0] if len(segments) == 1 else 0
    lazy = (prog, tuple(segments), token, n_ops, r.type, run, r.id - starts[run], simple)
    if consecutive:  # (ids taken by others in between, e.g. another thread: this call keeps its own tape)
        tape = top.tape
        del tape[t0:]
        tape += outside_tape
        tape.append(token)
        for u in refs:
            tape.append(u.id - base)
        for s in starts:
            tape.append(s - base)
    return lazy


def _fixed_step(attrs: dict) -> tuple:
    """The FIXED step of an op constant (a `full` node's attributes): (kind, its `Trace._fixed`
    key, the attributes, result type and signature id its node is appended with, as `Trace.append`
    would append it; signature None: through `Trace.fixed_value`)."""
    attrs = dict(attrs)
    typ, sig = _typed_sig(_FULL, (), attrs)
    return (_FIXED, fixed_key(attrs["shape"], attrs["dtype"], attrs["value"]), attrs, typ, sig)


def _scalar_args(top, key: tuple) -> tuple:
    """(dtype, value, shape) for `Trace.scalar_value` from its memo key (which spells a zero as a
    string, to tell 0.0 from -0.0): the value is read back from the scalar's source tensor."""
    d, _, shape = key
    return d, top._scalar_sources[key[:2]]._data.item(), shape


_FULL = get_primitive("full")


def _clear_op_programs() -> None:
    """Forget the op memos (`memo_traced_op`) too when the composite memos overflow: they may hold
    programs of these memos (a block they saw), whose tokens a re-learnt program no longer has."""
    from ._trace import _OP_MEMOS

    for m in _OP_MEMOS:
        m.clear()


@register_reset
def clear() -> None:
    """Forget every composite memo (`tp.compiler.reset()` calls it).

    >>> clear(); sum(len(m) for m in _MEMOS)
    0
    """
    for m in _MEMOS:
        m.clear()

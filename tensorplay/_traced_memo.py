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

from typing import Callable

from ._state import STATE
from ._tensor import Tensor
from tensorplay.ir import Value
from tensorplay.ir import values as _ir_values
from tensorplay.ir.core import Node
from .compiler import register_reset

__all__ = ["memo_composite", "clear"]

_MEMOS: list = []
_LIMIT = 512

_NODE, _FIXED, _SCALAR = 0, 1, 2


def memo_composite(fn: Callable) -> Callable:
    """``call(key, operands, *args, **kwargs)`` running ``fn(*args, **kwargs)`` under a memo of its
    traced nodes.

    `operands` are the tensors `fn` reads (among `args`); `key` is a hashable value that, with the
    operands' types, determines what `fn` emits (its static options and any decision it takes from
    known values; None: do not memoise this call). A hit appends the recorded nodes on the current
    operands (a concrete operand is captured first, as the op layer would at its first use); eager
    calls, gradients off, operands of an enclosing trace, concrete views and views of storage
    written since run `fn` as it is.

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
        vals = []
        types = []
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
            types.append(v.type)
        full_key = (key, tuple(types))
        if len(vals) > 1 and len({id(v) for v in vals}) < len(vals):
            # an operand passed twice (add(x, x)): the recorded nodes read it through one position,
            # so the aliasing pattern is part of the key
            full_key += (tuple([next(i for i, u in enumerate(vals) if u is v) for v in vals]),)
        try:
            prog = memo.get(full_key)
        except TypeError:  # an unhashable option
            return fn(*args, **kwargs)
        if prog is not None:
            return _run(top, prog, vals)
        nodes, sigs = top.builder.nodes, top.sigs
        n0, s0 = len(nodes), len(sigs)
        fixed_before = {id(v): k for k, v in top._fixed.items()}
        scalars_before = {id(v): k for k, v in top._scalars.items()}
        out = fn(*args, **kwargs)
        prog = _learn(top, n0, s0, vals, out, fixed_before, scalars_before)
        if prog is not None:
            if len(memo) >= _LIMIT:
                memo.clear()
            memo[full_key] = prog
        return out

    call.__name__ = getattr(fn, "__name__", "composite")
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn
    return call


def _learn(top, n0: int, s0: int, operands: list, out, fixed_before: dict, scalars_before: dict):
    """The replay program of the nodes appended to `top` since (`n0` nodes, `s0` signatures), or None."""
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
    k = len(operands)

    def ref(v) -> int | None:
        nonlocal k
        i = where.get(id(v))
        if i is not None:
            return i
        f = fixed_before.get(id(v))
        if f is not None:  # an op constant of the trace made before: taken again through its dedup
            a = v.node.attrs
            prog.append((_FIXED, a["shape"], a["dtype"], a["value"]))
        else:
            s = scalars_before.get(id(v)) or scalars.get(id(v))  # (a 0-d scalar is its input: no node)
            if s is None:
                return None
            prog.append((_SCALAR, _scalar_args(top, s)))
        where[id(v)] = k
        k += 1
        return k - 1

    for node, sig in zip(new, new_sigs):
        v = node.out
        if id(v) in fixed:
            a = node.attrs
            prog.append((_FIXED, a["shape"], a["dtype"], a["value"]))
        elif id(v) in scalars:
            prog.append((_SCALAR, _scalar_args(top, scalars[id(v)])))
        else:
            ins = []
            for u in node.inputs:
                i = ref(u)
                if i is None:
                    return None
                ins.append(i)
            prog.append((_NODE, (node.prim, dict(node.attrs), sig, v.type), tuple(ins)))
        where[id(v)] = k
        k += 1
    i = where.get(id(out._value))
    if i is None or i < len(operands):
        return None
    return prog, i


def _scalar_args(top, key: tuple) -> tuple:
    """(dtype, value, shape) for `Trace.scalar_value` from its memo key (which spells a zero as a
    string, to tell 0.0 from -0.0): the value is read back from the scalar's source tensor."""
    d, _, shape = key
    return d, top._scalar_sources[key[:2]]._data.item(), shape


def _run(top, prog, operands: list) -> Tensor:
    steps, result = prog
    vals = list(operands)
    push = vals.append
    nodes, sigs, tape, base = top.builder.nodes, top.sigs, top.tape, top.base
    ids = _ir_values._ids
    new = object.__new__
    for step in steps:
        kind = step[0]
        if kind == _NODE:  # `Trace.append` with the memoised type and signature
            prim, attrs, sig, typ = step[1]
            ins = tuple([vals[i] for i in step[2]])
            node = new(Node)
            node.prim, node.inputs, node.attrs = prim, ins, attrs  # (the memo's own dict: never written)
            value = new(Value)
            value.type, value.node, value.id = typ, node, next(ids)
            node.out = value
            nodes.append(node)
            sigs.append(sig)
            tape.append(sig)
            tape.append(value.id - base)
            for u in ins:
                tape.append(u.id - base)
            push(value)
        elif kind == _FIXED:
            push(top.fixed(step[1], step[2], step[3])._value)
        else:
            d, value, shape = step[1]
            push(top.scalar_value(value, d, shape))
    out = object.__new__(Tensor)
    out._data, out._trace, out._value = None, top, vals[result]
    return out


@register_reset
def clear() -> None:
    """Forget every composite memo (`tp.compiler.reset()` calls it).

    >>> clear(); sum(len(m) for m in _MEMOS)
    0
    """
    for m in _MEMOS:
        m.clear()

"""Reverse mode: transposing linear graphs (VJP = linearize + transpose is `ir.passes.reverse`).

Design choice: reverse mode is built as JAX builds it -- JVP, then partial
evaluation into a primal graph and a linear tangent graph
(`ir.passes.partial_eval.linearize`), then *transposition* of the linear graph
-- rather than with a VJP rule per primitive. Why:

- one derivative rule per primitive (its JVP) serves forward mode, reverse
  mode and `linearize`; only the ~20 primitives that are *linear* in some
  operand (add, mul by a residual, reshape, slice, dot_general, ...) need a
  transpose rule, and those rules are mechanical (the adjoint of a layout op
  is another layout op);
- `linearize` falls out for free: evaluate the primal graph once, keep the
  residuals, run only the linear graph per tangent;
- the backward graph is an ordinary graph of ordinary primitives, so it can
  be differentiated again (forward-over-reverse, `hessian = jacfwd(jacrev)`),
  batched and compiled like any other graph;
- a nonlinearity that slips into a tangent computation is caught here (a
  linear node whose primitive has no transpose rule, or `mul` of two linear
  operands), instead of silently producing a wrong gradient.

A transpose rule has the frozen signature (see `ir/primitive.py`)::

    transpose(ctx, ct, operands, **attrs) -> list[ct | None]

`operands[i]` is an `UndefinedPrimal` for the linear operands (whose
cotangents the rule returns) and the residual `Value` otherwise; `ct` is the
cotangent of the result (never a symbolic zero: nodes whose result has no
cotangent are skipped). A ``None`` in the result is a zero cotangent. The cotangent of a
tuple value (a control-flow node's result) is a tuple with one entry per element, ``None``
for the elements without one; `tuple_get` transposes into such a tuple.
"""
from __future__ import annotations

from typing import Sequence

from ..core import Graph, GraphBuilder, Value
from ..primitive import UndefinedPrimal
from ..types import is_tuple

__all__ = ["transpose", "is_undefined"]


def is_undefined(x) -> bool:
    """True for the `UndefinedPrimal` marker of a linear operand.

    >>> from tensorplay.ir import TensorType, UndefinedPrimal, float32
    >>> is_undefined(UndefinedPrimal(TensorType((2,), float32))), is_undefined(None)
    (True, False)
    """
    return isinstance(x, UndefinedPrimal)


def transpose(graph: Graph, linear: Sequence[bool], with_cotangent: Sequence[bool] | None = None) -> Graph:
    """Transpose `graph`, which is linear in the inputs flagged in `linear`.

    The result takes ``(*non-linear inputs, *one cotangent per output)`` and returns one
    cotangent per linear input (zeros where nothing flows back). With `with_cotangent`, only
    the flagged outputs get a cotangent input; the others have a zero cotangent.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); r = b.add_input(TensorType((3,), float32)); t = b.add_input(TensorType((3,), float32))
    >>> g = b.build([b.reduce_sum(b.mul(t, r), axes=(0,))])
    >>> gt = transpose(g, [False, True])  # (r, ct) -> broadcast(ct) * r
    >>> [n.prim.name for n in gt.nodes], gt.in_types, gt.out_types
    (['broadcast_in_dim', 'mul'], [tensor<3xf32>, tensor<f32>], [tensor<3xf32>])
    """
    linear = list(linear)
    if len(linear) != len(graph.inputs):
        raise ValueError(f"transpose: {len(linear)} flags for the {len(graph.inputs)} inputs of @{graph.name}")
    b = GraphBuilder(graph.name + "_T")
    env: dict[Value, Value] = {}
    is_linear: set[Value] = set()
    for v, lin in zip(graph.inputs, linear):
        if lin:
            is_linear.add(v)
        else:
            env[v] = b.add_input(v.type)
    with_cotangent = [True] * len(graph.outputs) if with_cotangent is None else list(with_cotangent)
    ct_in = [b.add_input(v.type) if w else None for v, w in zip(graph.outputs, with_cotangent)]

    linear_nodes = []
    for n in graph.nodes:  # forward: replay the non-linear part (constants, residual arithmetic)
        if any(v in is_linear for v in n.inputs):
            is_linear.add(n.out)
            linear_nodes.append(n)
        else:
            env[n.out] = b.emit_copy(n, tuple([env[v] for v in n.inputs]))

    ct: dict[Value, Value] = {}

    def accumulate(v: Value, c) -> None:
        if c is None or v not in is_linear:
            return
        if is_tuple(v.type):
            c = _tuple_cotangent(b, v, c, ct.get(v))
            if c is not None:
                ct[v] = c
            return
        if c.type != v.type:
            raise AssertionError(f"transpose: cotangent of type {c.type} for a value of type {v.type}")
        ct[v] = b.add(ct[v], c) if v in ct else c

    for v, c in zip(graph.outputs, ct_in):
        accumulate(v, c)
    for n in reversed(linear_nodes):  # backward: propagate cotangents through the linear nodes
        c = ct.pop(n.out, None)
        if c is None:
            continue
        if n.prim.transpose is None:
            raise NotImplementedError(f"transpose: primitive {n.prim.name!r} has no transpose rule, but it is "
                                      f"applied to a linear value (is the JVP rule emitting a nonlinear op?)")
        operands = [UndefinedPrimal(v.type) if v in is_linear else env[v] for v in n.inputs]
        cts = n.prim.transpose(b, c, operands, **n.attrs)
        if len(cts) != len(n.inputs):
            raise AssertionError(f"transpose rule of {n.prim.name} returned {len(cts)} cotangents "
                                 f"for {len(n.inputs)} operands")
        for v, cv in zip(n.inputs, cts):
            accumulate(v, cv)
    return b.build([ct[v] if v in ct else b.zeros_like(v) for v, lin in zip(graph.inputs, linear) if lin])


def _tuple_cotangent(b: GraphBuilder, v: Value, c, old):
    """The cotangent `c` (one entry per element) of tuple value `v`, added to `old`; None if all zero."""
    c = tuple(c)
    elements = v.type.elements
    if len(c) != len(elements):
        raise AssertionError(f"transpose: {len(c)} cotangents for a value of type {v.type}")
    for e, t in zip(c, elements):
        if e is not None and e.type != t:
            raise AssertionError(f"transpose: cotangent of type {e.type} for a tuple element of type {t}")
    if old is not None:
        c = tuple(a if d is None else d if a is None else b.add(a, d) for a, d in zip(old, c))
    return None if all(e is None for e in c) else c

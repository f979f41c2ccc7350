"""Forward-mode differentiation as a graph pass, and the helpers JVP rules are written with.

`jvp(graph, wrt)` returns a graph that computes the primal outputs *and* their
tangents. Tangents are symbolic: a value whose tangent is ``None`` is known to
have a zero derivative, so nothing is emitted for it. Inputs that are not
differentiated, integer and boolean values, outputs of non-differentiable
primitives (comparisons, `argmax`, `iota`, `full`, random draws, ...) all carry
``None``; a node whose operands all have zero tangents is copied unchanged.
Zeros are materialised (as a `full` node) only where a rule or an output needs
an actual value.

Reverse mode is built on top of this pass, as in JAX: every JVP rule is
written so that the tangent it emits is *linear* in the operand tangents
(tangents are only negated, added, scaled by primal values, reshaped, sliced,
contracted with primal values, ...). `partial_eval` then splits the JVP graph
into its primal part and a linear tangent part, and `transpose` runs the linear
part backwards (see `ir/passes/transpose.py` for why this design was chosen).

A JVP rule has the frozen signature (see `ir/primitive.py`)::

    jvp(ctx, primals, tangents, **attrs) -> (primal_out, tangent_out | None)

where `ctx` is the `GraphBuilder` of the new graph. ``ctx.for_transpose`` is True when
the JVP is taken to be transposed (reverse mode): a custom VJP rule then emits a linear
node that transposes into the user's backward function.

Control-flow nodes (`ir/prims/control.py`) return tuples; the tangent of a tuple value is
a Python tuple with one tangent (a `Value` or ``None``) per element, or ``None`` when all
of them are zero, so symbolic zeros survive `tuple_get`. The family helpers (in
`ir.rules`, re-exported here) turn the common cases into one line per primitive:

- `defjvp_unary(prim, row)`: ``row(ctx, t, x, y) -> tangent`` with ``y = prim(x)``;
- `defjvp_binary(prim, dx, dy)`: one contribution per operand tangent, summed;
- `defjvp_linear(prim)`: the primitive is linear in all operands, so the
  tangent is the primitive applied to the tangents (zeros filled in as needed);
- `defjvp_zero(prim)`: piecewise-constant primitives (`floor`, `sign`, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core import Graph, GraphBuilder, Value
from ..primitive import Primitive
from ..types import is_tuple
from ..rules import add_tangents, defjvp_binary, defjvp_linear, defjvp_unary, defjvp_zero, instantiate, scalar_like

__all__ = ["JVPGraph", "jvp", "defjvp_unary", "defjvp_binary", "defjvp_linear", "defjvp_zero", "add_tangents",
           "instantiate", "scalar_like"]


# --- the pass ------------------------------------------------------------------------------------
@dataclass
class JVPGraph:
    """The result of `jvp`.

    `graph` takes ``(*primal inputs, *tangents of the inputs flagged in wrt)`` and returns
    ``(*primal outputs, *tangents of the outputs flagged in tangent_outputs)``.
    ``zero_outputs[k]`` is True when the `k`-th output tangent is identically zero (a symbolic
    zero, materialised as a `full` node in `graph`).
    """

    graph: Graph
    num_primal_inputs: int
    num_tangent_inputs: int
    zero_outputs: list[bool]


def jvp(graph: Graph, wrt: Sequence[bool], tangent_outputs: Sequence[bool] | None = None, *,
        for_transpose: bool = False) -> JVPGraph:
    """Forward-mode differentiate `graph` with respect to the inputs flagged in `wrt`.

    Flagged inputs must be floating point (a `TypeError` otherwise); a node whose operands all
    have zero tangents costs nothing beyond its primal copy. With `tangent_outputs`, only the
    flagged outputs get a tangent output (the others' tangents are not computed).
    `for_transpose` tells the rules that the result will be linearized and transposed.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> g = b.build([b.sin(x)])
    >>> j = jvp(g, [True])
    >>> [n.prim.name for n in j.graph.nodes], j.graph.in_types, j.zero_outputs
    (['sin', 'cos', 'mul'], [tensor<3xf32>, tensor<3xf32>], [False])
    """
    wrt = list(wrt)
    if len(wrt) != len(graph.inputs):
        raise ValueError(f"jvp: {len(wrt)} flags for the {len(graph.inputs)} inputs of @{graph.name}")
    b = GraphBuilder(graph.name + "_jvp")
    b.for_transpose = for_transpose
    env: dict[Value, Value] = {}
    tangent: dict[Value, "Value | tuple | None"] = {}
    for v in graph.inputs:
        env[v] = b.add_input(v.type)
    for i, (v, flag) in enumerate(zip(graph.inputs, wrt)):
        if not flag:
            continue
        if not v.dtype.is_floating_point:
            raise TypeError(f"jvp: input {i} of @{graph.name} has type {v.type}; only floating point "
                            f"inputs can be differentiated")
        tangent[v] = b.add_input(v.type)
    for node in graph.nodes:
        ins = [env[v] for v in node.inputs]
        ts = [tangent.get(v) for v in node.inputs]
        if not node.prim.differentiable or all(t is None for t in ts):
            env[node.out] = b.emit_copy(node, tuple(ins))
            continue
        if node.prim.jvp is None:
            raise NotImplementedError(f"jvp: primitive {node.prim.name!r} has no JVP rule")
        out, t = node.prim.jvp(b, ins, ts, **node.attrs)
        env[node.out] = out
        t = _check_rule_result(node.prim, node.out, out, t)
        if t is not None:
            tangent[node.out] = t
    outs = [env[v] for v in graph.outputs]
    wanted = [True] * len(outs) if tangent_outputs is None else list(tangent_outputs)
    touts = [tangent.get(v) for v, w in zip(graph.outputs, wanted) if w]
    zero = [t is None for t in touts]
    touts = [instantiate(b, t, env[v]) for t, v in zip(touts, [v for v, w in zip(graph.outputs, wanted) if w])]
    return JVPGraph(b.build(outs + touts), len(graph.inputs), sum(wrt), zero)


def _check_rule_result(prim: Primitive, old: Value, out: Value, t):
    """The rule's tangent, checked against the primal type; integer tangents and all-zero tuples
    become None (a symbolic zero)."""
    if out.type != old.type:
        raise AssertionError(f"jvp rule of {prim.name}: primal result {out.type}, expected {old.type}")
    if t is None:
        return None
    if not is_tuple(old.type):
        if t.type != old.type:
            raise AssertionError(f"jvp rule of {prim.name}: tangent {t.type} does not match primal {old.type}")
        return t if old.dtype.is_floating_point else None
    t = tuple(t)
    if len(t) != len(old.type.elements):
        raise AssertionError(f"jvp rule of {prim.name}: {len(t)} tangents for a tuple of {len(old.type.elements)}")
    for k, (e, et) in enumerate(zip(t, old.type.elements)):
        if e is not None and e.type != et:
            raise AssertionError(f"jvp rule of {prim.name}: tangent {k} is {e.type}, primal element is {et}")
    t = tuple(e if e is not None and et.dtype.is_floating_point else None for e, et in zip(t, old.type.elements))
    return None if all(e is None for e in t) else t

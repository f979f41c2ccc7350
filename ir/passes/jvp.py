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

where `ctx` is the `GraphBuilder` of the new graph. The family helpers below
turn the common cases into one line per primitive:

- `unary_jvp(row)`: ``row(ctx, t, x, y) -> tangent`` with ``y = prim(x)``;
- `binary_jvp(dx, dy)`: one contribution per operand tangent, summed;
- `linear_jvp(prim)`: the primitive is linear in all operands, so the tangent
  is the primitive applied to the tangents (zeros filled in where needed);
- `zero_jvp(prim)`: piecewise-constant primitives (`floor`, `sign`, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..core import Graph, GraphBuilder, Value
from ..primitive import Primitive

__all__ = ["JVPGraph", "jvp", "unary_jvp", "binary_jvp", "linear_jvp", "zero_jvp", "add_tangents",
           "instantiate", "scalar_like"]


# --- helpers for rules ---------------------------------------------------------------------------
def scalar_like(ctx: GraphBuilder, like: Value, value: float) -> Value:
    """A `full` node of `like`'s shape and dtype holding `value` (converted to the dtype's kind)."""
    dtype = like.dtype
    py = bool(value) if dtype.is_bool else int(value) if dtype.is_integer else float(value)
    return ctx.const(py, like.shape, dtype)


def instantiate(ctx: GraphBuilder, tangent: Value | None, like: Value) -> Value:
    """`tangent`, or explicit zeros of `like`'s type when it is a symbolic zero."""
    return ctx.zeros_like(like) if tangent is None else tangent


def add_tangents(ctx: GraphBuilder, a: Value | None, b: Value | None) -> Value | None:
    """The sum of two tangents, either of which may be a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return ctx.add(a, b)


UnaryRow = Callable[[GraphBuilder, Value, Value, Value], Value]
BinaryRow = Callable[[GraphBuilder, Value, Value, Value, Value], Value]


def unary_jvp(row: UnaryRow) -> Callable:
    """A JVP rule from ``row(ctx, t, x, y)``: the tangent of ``y = prim(x)`` along ``t``."""
    def rule(ctx, primals, tangents, **attrs):
        (x,), (t,) = primals, tangents
        y = ctx.emit(rule.prim, x, **attrs)
        return y, None if t is None else row(ctx, t, x, y)
    rule.prim = None  # bound by `defjvp`
    return rule


def binary_jvp(dx: BinaryRow | None, dy: BinaryRow | None) -> Callable:
    """A JVP rule summing ``dx(ctx, tx, x, y, out)`` and ``dy(ctx, ty, x, y, out)`` (each linear in its tangent)."""
    def rule(ctx, primals, tangents, **attrs):
        (x, y), (tx, ty) = primals, tangents
        out = ctx.emit(rule.prim, x, y, **attrs)
        t = None
        if tx is not None and dx is not None:
            t = dx(ctx, tx, x, y, out)
        if ty is not None and dy is not None:
            t = add_tangents(ctx, t, dy(ctx, ty, x, y, out))
        return out, t
    rule.prim = None
    return rule


def linear_jvp() -> Callable:
    """The JVP rule of a primitive linear in all of its operands: apply it to the tangents."""
    def rule(ctx, primals, tangents, **attrs):
        out = ctx.emit(rule.prim, *primals, **attrs)
        if all(t is None for t in tangents):
            return out, None
        ts = [instantiate(ctx, t, x) for t, x in zip(tangents, primals)]
        return out, ctx.emit(rule.prim, *ts, **attrs)
    rule.prim = None
    return rule


def zero_jvp() -> Callable:
    """The JVP rule of a piecewise-constant primitive: its derivative is zero wherever it exists."""
    def rule(ctx, primals, tangents, **attrs):
        return ctx.emit(rule.prim, *primals, **attrs), None
    rule.prim = None
    return rule


def defjvp(prim: Primitive, rule: Callable) -> None:
    """Install a helper-made `rule` on `prim` (binding the primitive it re-emits)."""
    if hasattr(rule, "prim"):
        rule.prim = prim
    prim.def_jvp(rule)


# --- the pass ------------------------------------------------------------------------------------
@dataclass
class JVPGraph:
    """The result of `jvp`.

    `graph` takes ``(*primal inputs, *tangents of the inputs flagged in wrt)`` and returns
    ``(*primal outputs, *output tangents)``. ``zero_outputs[k]`` is True when output `k`'s tangent
    is identically zero (a symbolic zero, materialised as a `full` node in `graph`).
    """

    graph: Graph
    num_primal_inputs: int
    num_tangent_inputs: int
    zero_outputs: list[bool]


def jvp(graph: Graph, wrt: Sequence[bool]) -> JVPGraph:
    """Forward-mode differentiate `graph` with respect to the inputs flagged in `wrt`.

    Flagged inputs must be floating point (a `TypeError` otherwise); a node whose operands all
    have zero tangents costs nothing beyond its primal copy.

    >>> from ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> g = b.build([b.sin(x)])
    >>> print(jvp(g, [True]).graph)  # doctest: +NORMALIZE_WHITESPACE
    func @f_jvp(%0: tensor<3xf32>, %1: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
      %2 = tp.sin %0 : tensor<3xf32>
      %3 = tp.cos %0 : tensor<3xf32>
      %4 = tp.mul %1, %3 : tensor<3xf32>
      return %2, %4
    }
    """
    wrt = list(wrt)
    if len(wrt) != len(graph.inputs):
        raise ValueError(f"jvp: {len(wrt)} flags for the {len(graph.inputs)} inputs of @{graph.name}")
    b = GraphBuilder(graph.name + "_jvp")
    env: dict[Value, Value] = {}
    tangent: dict[Value, Value | None] = {}
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
            env[node.out] = b.emit(node.prim, *ins, **node.attrs)
            continue
        if node.prim.jvp is None:
            raise NotImplementedError(f"jvp: primitive {node.prim.name!r} has no JVP rule")
        out, t = node.prim.jvp(b, ins, ts, **node.attrs)
        _check_rule_result(node.prim, node.out, out, t)
        env[node.out] = out
        tangent[node.out] = t if out.dtype.is_floating_point else None
    outs = [env[v] for v in graph.outputs]
    touts = [tangent.get(v) for v in graph.outputs]
    zero = [t is None for t in touts]
    touts = [instantiate(b, t, o) for t, o in zip(touts, outs)]
    return JVPGraph(b.build(outs + touts), len(graph.inputs), sum(wrt), zero)


def _check_rule_result(prim: Primitive, old: Value, out: Value, t: Value | None) -> None:
    if out.type != old.type:
        raise AssertionError(f"jvp rule of {prim.name}: primal result {out.type}, expected {old.type}")
    if t is not None and t.type != old.type:
        raise AssertionError(f"jvp rule of {prim.name}: tangent {t.type} does not match primal {old.type}")

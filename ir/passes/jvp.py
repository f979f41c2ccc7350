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

- `defjvp_unary(prim, row)`: ``row(ctx, t, x, y) -> tangent`` with ``y = prim(x)``;
- `defjvp_binary(prim, dx, dy)`: one contribution per operand tangent, summed;
- `defjvp_linear(prim)`: the primitive is linear in all operands, so the
  tangent is the primitive applied to the tangents (zeros filled in as needed);
- `defjvp_zero(prim)`: piecewise-constant primitives (`floor`, `sign`, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..core import Graph, GraphBuilder, Value
from ..primitive import Primitive

__all__ = ["JVPGraph", "jvp", "defjvp_unary", "defjvp_binary", "defjvp_linear", "defjvp_zero", "add_tangents",
           "instantiate", "scalar_like"]


# --- helpers for rules ---------------------------------------------------------------------------
def scalar_like(ctx: GraphBuilder, like: Value, value: float) -> Value:
    """A `full` node of `like`'s shape and dtype holding `value` (converted to the dtype's kind).

    >>> from tensorplay.ir import GraphBuilder, TensorType, int32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), int32))
    >>> scalar_like(b, x, 2.0).node.attrs
    {'shape': (2,), 'dtype': tensorplay.int32, 'value': 2}
    """
    dtype = like.dtype
    py = bool(value) if dtype.is_bool else int(value) if dtype.is_integer else float(value)
    return ctx.const(py, like.shape, dtype)


def instantiate(ctx: GraphBuilder, tangent: Value | None, like: Value) -> Value:
    """`tangent`, or explicit zeros of `like`'s type when it is a symbolic zero.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> instantiate(b, None, x).node.prim.name, instantiate(b, x, x) is x
    ('full', True)
    """
    return ctx.zeros_like(like) if tangent is None else tangent


def add_tangents(ctx: GraphBuilder, a: Value | None, b: Value | None) -> Value | None:
    """The sum of two tangents, either of which may be a symbolic zero.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); t = b.add_input(TensorType((2,), float32))
    >>> add_tangents(b, None, t) is t, add_tangents(b, None, None), add_tangents(b, t, t).node.prim.name
    (True, None, 'add')
    """
    if a is None:
        return b
    if b is None:
        return a
    return ctx.add(a, b)


UnaryRow = Callable[[GraphBuilder, Value, Value, Value], Value]
BinaryRow = Callable[[GraphBuilder, Value, Value, Value, Value], Value]


def defjvp_unary(prim: Primitive, row: UnaryRow) -> None:
    """Give `prim` the JVP ``row(ctx, t, x, y)``: the tangent of ``y = prim(x)`` along ``t``.

    >>> from tensorplay.ir import GraphBuilder, Primitive, TensorType, float32
    >>> square = Primitive("square", lambda x: x, lambda x: x * x)  # a throwaway, unregistered primitive
    >>> defjvp_unary(square, lambda b, t, x, y: b.mul(t, b.mul(x, scalar_like(b, x, 2))))  # t·2x
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> [n.prim.name for n in jvp(b.build([b.emit(square, x)]), [True]).graph.nodes]
    ['square', 'full', 'mul', 'mul']
    """
    def rule(ctx, primals, tangents, **attrs):
        (x,), (t,) = primals, tangents
        y = ctx.emit(prim, x, **attrs)
        return y, None if t is None else row(ctx, t, x, y)
    prim.def_jvp(rule)


def defjvp_binary(prim: Primitive, dx: BinaryRow | None, dy: BinaryRow | None) -> None:
    """Give `prim` the JVP ``dx(ctx, tx, x, y, out) + dy(ctx, ty, x, y, out)``, each linear in its tangent.

    Only the contributions of non-zero tangents are emitted:

    >>> from tensorplay.ir import GraphBuilder, Primitive, TensorType, float32
    >>> times = Primitive("times", lambda x, y: x, lambda x, y: x * y)  # unregistered, for the example
    >>> defjvp_binary(times, lambda b, t, x, y, o: b.mul(t, y), lambda b, t, x, y, o: b.mul(x, t))
    >>> b = GraphBuilder(); x, y = (b.add_input(TensorType((), float32)) for _ in range(2))
    >>> [n.prim.name for n in jvp(b.build([b.emit(times, x, y)]), [True, False]).graph.nodes]
    ['times', 'mul']
    """
    def rule(ctx, primals, tangents, **attrs):
        (x, y), (tx, ty) = primals, tangents
        out = ctx.emit(prim, x, y, **attrs)
        t = None
        if tx is not None and dx is not None:
            t = dx(ctx, tx, x, y, out)
        if ty is not None and dy is not None:
            t = add_tangents(ctx, t, dy(ctx, ty, x, y, out))
        return out, t
    prim.def_jvp(rule)


def defjvp_linear(prim: Primitive) -> None:
    """`prim` is linear in all of its operands: its tangent is `prim` applied to the tangents.

    >>> from tensorplay.ir import GraphBuilder, Primitive, TensorType, float32
    >>> double = Primitive("double", lambda x: x, lambda x: 2 * x)  # unregistered, for the example
    >>> defjvp_linear(double)
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> [n.prim.name for n in jvp(b.build([b.emit(double, x)]), [True]).graph.nodes]
    ['double', 'double']
    """
    def rule(ctx, primals, tangents, **attrs):
        out = ctx.emit(prim, *primals, **attrs)
        if all(t is None for t in tangents):
            return out, None
        ts = [instantiate(ctx, t, x) for t, x in zip(tangents, primals)]
        return out, ctx.emit(prim, *ts, **attrs)
    prim.def_jvp(rule)


def defjvp_zero(prim: Primitive) -> None:
    """`prim` is piecewise constant: its derivative is zero wherever it exists.

    >>> from tensorplay.ir import GraphBuilder, Primitive, TensorType, float32
    >>> step = Primitive("step", lambda x: x, lambda x: (x > 0) * 1.0)  # unregistered, for the example
    >>> defjvp_zero(step)
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> jvp(b.build([b.emit(step, x)]), [True]).zero_outputs
    [True]
    """
    def rule(ctx, primals, tangents, **attrs):
        return ctx.emit(prim, *primals, **attrs), None
    prim.def_jvp(rule)


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


def jvp(graph: Graph, wrt: Sequence[bool], tangent_outputs: Sequence[bool] | None = None) -> JVPGraph:
    """Forward-mode differentiate `graph` with respect to the inputs flagged in `wrt`.

    Flagged inputs must be floating point (a `TypeError` otherwise); a node whose operands all
    have zero tangents costs nothing beyond its primal copy. With `tangent_outputs`, only the
    flagged outputs get a tangent output (the others' tangents are not computed).

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
            env[node.out] = b.emit_copy(node, tuple(ins))
            continue
        if node.prim.jvp is None:
            raise NotImplementedError(f"jvp: primitive {node.prim.name!r} has no JVP rule")
        out, t = node.prim.jvp(b, ins, ts, **node.attrs)
        _check_rule_result(node.prim, node.out, out, t)
        env[node.out] = out
        tangent[node.out] = t if out.dtype.is_floating_point else None
    outs = [env[v] for v in graph.outputs]
    wanted = [True] * len(outs) if tangent_outputs is None else list(tangent_outputs)
    touts = [tangent.get(v) for v, w in zip(graph.outputs, wanted) if w]
    zero = [t is None for t in touts]
    touts = [instantiate(b, t, env[v]) for t, v in zip(touts, [v for v, w in zip(graph.outputs, wanted) if w])]
    return JVPGraph(b.build(outs + touts), len(graph.inputs), sum(wrt), zero)


def _check_rule_result(prim: Primitive, old: Value, out: Value, t: Value | None) -> None:
    if out.type != old.type:
        raise AssertionError(f"jvp rule of {prim.name}: primal result {out.type}, expected {old.type}")
    if t is not None and t.type != old.type:
        raise AssertionError(f"jvp rule of {prim.name}: tangent {t.type} does not match primal {old.type}")

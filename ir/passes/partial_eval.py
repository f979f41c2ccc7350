"""Partial evaluation: split a graph into the part computable from known inputs and the rest.

Reverse mode uses it on a JVP graph (`ir.passes.jvp`) whose tangent inputs are
*unknown*: the known part is the primal computation (it also produces the
*residuals*, the primal values the tangent computation reads), and the unknown
part is the linear tangent map, ready for `ir.passes.transpose`. `linearize`
packages that split.

Constants (nodes whose operands are all constants, such as `full`, `iota` or a
broadcast of a `full`; random draws excluded) are never residuals: they are
re-emitted on the side that needs them, so residuals are only values that
actually depend on inputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core import Graph, GraphBuilder, Node, Value
from .jvp import jvp

__all__ = ["PartialEval", "partial_eval", "Linearized", "linearize", "prune_residuals"]


@dataclass
class PartialEval:
    """`known`: known inputs -> (*known-side outputs, *residuals).
    `unknown`: (*residuals, *unknown inputs) -> unknown-side outputs."""

    known: Graph
    unknown: Graph
    num_residuals: int


def partial_eval(graph: Graph, unknown_inputs: Sequence[bool], unknown_outputs: Sequence[bool]) -> PartialEval:
    """Split `graph`: nodes depending on an unknown input go to the unknown graph.

    Each output goes to the side named by `unknown_outputs`; a known-side output that depends on an
    unknown input is an error. Inputs keep their relative order on each side.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32)); t = b.add_input(TensorType((), float32))
    >>> c = b.cos(x)
    >>> pe = partial_eval(b.build([b.sin(x), b.mul(t, c)]), [False, True], [False, True])
    >>> pe.num_residuals, len(pe.known.nodes), [n.prim.name for n in pe.unknown.nodes]
    (1, 2, ['mul'])
    """
    unknown_inputs, unknown_outputs = list(unknown_inputs), list(unknown_outputs)
    if len(unknown_inputs) != len(graph.inputs) or len(unknown_outputs) != len(graph.outputs):
        raise ValueError(f"partial_eval: flags for {len(unknown_inputs)} inputs and {len(unknown_outputs)} outputs, "
                         f"graph @{graph.name} has {len(graph.inputs)} and {len(graph.outputs)}")
    unknown: set[Value] = {v for v, u in zip(graph.inputs, unknown_inputs) if u}
    constant: set[Value] = set()
    for n in graph.nodes:
        if any(v in unknown for v in n.inputs):
            unknown.add(n.out)
        elif not n.prim.random and all(v in constant for v in n.inputs):
            constant.add(n.out)

    kb = GraphBuilder(graph.name + "_known")
    kenv: dict[Value, Value] = {}
    for v, u in zip(graph.inputs, unknown_inputs):
        if not u:
            kenv[v] = kb.add_input(v.type)
    for n in graph.nodes:
        if n.out not in unknown:
            kenv[n.out] = kb.emit_copy(n, tuple([kenv[v] for v in n.inputs]))

    ub = GraphBuilder(graph.name + "_unknown")
    residuals: list[Value] = []       # known values of `graph` that the unknown side reads
    res_inputs: list[Value] = []      # their inputs in the unknown graph
    uenv: dict[Value, Value] = {}

    def read(v: Value) -> Value:
        """`v` inside the unknown graph: computed there, a re-emitted constant, or a residual."""
        if v in uenv:
            return uenv[v]
        if v in constant:
            # re-emit the constant's producers in post order, with an explicit stack: a chain of
            # constants may be thousands of nodes deep
            stack = [v]
            while stack:
                if stack[-1] in uenv:  # reached twice (a diamond)
                    stack.pop()
                    continue
                n: Node = stack[-1].node
                missing = [a for a in n.inputs if a not in uenv]
                if missing:
                    stack.extend(missing)
                    continue
                uenv[stack.pop().node.out] = ub.emit_copy(n, tuple([uenv[a] for a in n.inputs]))
        else:
            residuals.append(v)
            uenv[v] = Value(v.type)
            res_inputs.append(uenv[v])
        return uenv[v]

    unknown_in = [Value(v.type) for v, u in zip(graph.inputs, unknown_inputs) if u]
    uenv.update(zip([v for v, u in zip(graph.inputs, unknown_inputs) if u], unknown_in))
    for n in graph.nodes:
        if n.out in unknown:
            uenv[n.out] = ub.emit_copy(n, tuple([read(v) for v in n.inputs]))
    unknown_outs = [read(v) for v, u in zip(graph.outputs, unknown_outputs) if u]
    ub.inputs = res_inputs + unknown_in

    known_outs = []
    for k, (v, u) in enumerate(zip(graph.outputs, unknown_outputs)):
        if u:
            continue
        if v in unknown:
            raise ValueError(f"partial_eval: output {k} of @{graph.name} is on the known side "
                             f"but depends on an unknown input")
        known_outs.append(kenv[v])
    known = kb.build(known_outs + [kenv[v] for v in residuals])
    return PartialEval(known, ub.build(unknown_outs), len(residuals))


@dataclass
class Linearized:
    """`graph` linearized with respect to some of its inputs.

    - `primal`: the inputs of the original graph -> (*outputs, *residuals);
    - `linear`: (*residuals, *input tangents) -> output tangents, linear in the tangents;
    - ``zero_outputs[k]``: output `k`'s tangent is identically zero.
    """

    primal: Graph
    linear: Graph
    num_residuals: int
    zero_outputs: list[bool]


def linearize(graph: Graph, wrt: Sequence[bool], tangent_outputs: Sequence[bool] | None = None) -> Linearized:
    """JVP of `graph` with respect to the inputs flagged in `wrt`, split into primal and linear parts.

    With `tangent_outputs`, the linear graph only returns the tangents of the flagged outputs.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> lin = linearize(b.build([b.sin(x)]), [True])
    >>> [n.prim.name for n in lin.primal.nodes], [n.prim.name for n in lin.linear.nodes]
    (['sin', 'cos'], ['mul'])
    """
    j = jvp(graph, wrt, tangent_outputs)
    n_out, n_tan = len(graph.outputs), len(j.zero_outputs)
    pe = partial_eval(j.graph, [False] * j.num_primal_inputs + [True] * j.num_tangent_inputs,
                      [False] * n_out + [True] * n_tan)
    return Linearized(pe.known, pe.unknown, pe.num_residuals, j.zero_outputs)


def prune_residuals(known: Graph, unknown: Graph, num_residuals: int) -> tuple[Graph, Graph, int]:
    """Drop the residuals `unknown` never reads (after simplification some become dead).

    Residuals are the last `num_residuals` outputs of `known` and the first `num_residuals`
    inputs of `unknown`; returns the two graphs without the unused ones and the new count.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> k = b.build([b.sin(x), b.cos(x)])
    >>> b = GraphBuilder(); r = b.add_input(TensorType((), float32)); t = b.add_input(TensorType((), float32))
    >>> k2, u2, n = prune_residuals(k, b.build([b.neg(t)]), 1)
    >>> n, len(k2.outputs), len(u2.inputs)
    (0, 1, 1)
    """
    used = {v for n in unknown.nodes for v in n.inputs} | set(unknown.outputs)
    keep = [v in used for v in unknown.inputs[:num_residuals]]
    if all(keep):
        return known, unknown, num_residuals
    n_known = len(known.outputs) - num_residuals
    res_out = [v for v, k in zip(known.outputs[n_known:], keep) if k]
    res_in = [v for v, k in zip(unknown.inputs[:num_residuals], keep) if k]
    return (Graph(known.inputs, known.nodes, known.outputs[:n_known] + res_out, known.name),
            Graph(res_in + unknown.inputs[num_residuals:], unknown.nodes, unknown.outputs, unknown.name),
            len(res_out))

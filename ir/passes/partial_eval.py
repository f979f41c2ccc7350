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

from dataclasses import dataclass, field
from typing import Sequence

from ..core import Graph, GraphBuilder, Node, Value
from ..types import is_tuple
from .jvp import jvp

__all__ = ["PartialEval", "PartialEvalContext", "partial_eval", "Linearized", "linearize", "prune_residuals"]


@dataclass
class PartialEval:
    """`known`: known inputs -> (*known-side outputs, *residuals).
    `unknown`: (*residuals, *unknown inputs) -> unknown-side outputs.
    ``unknown_outputs[k]``: output `k` went to the unknown side."""

    known: Graph
    unknown: Graph
    num_residuals: int
    unknown_outputs: list[bool] = field(default_factory=list)


class PartialEvalContext:
    """The `ctx` of a partial-evaluation rule, for one node being split.

    - `known` / `unknown`: the builders of the two graphs;
    - ``residual(v)``: a value `v` of the known graph, read on the unknown side (it becomes a
      residual: a known-graph output and an unknown-graph input);
    - ``lift(i)``: operand `i` of the node on the unknown side (its unknown value, a re-emitted
      constant, or a residual);
    - `for_transpose`: the unknown side will be transposed (reverse mode).

    A rule ``partial_eval(ctx, operands, unknowns, **attrs)`` gets per operand its value on its
    own side (``unknowns[i]`` says which) and returns one ``(unknown, value)`` per result element
    (one for a tensor result), the value in the graph of that side; or None to send the whole
    node to the unknown side.
    """

    def __init__(self, known: GraphBuilder, unknown: GraphBuilder, residual, lift, for_transpose: bool):
        self.known = known
        self.unknown = unknown
        self.residual = residual
        self.lift = lift
        self.for_transpose = for_transpose


def partial_eval(graph: Graph, unknown_inputs: Sequence[bool], unknown_outputs: Sequence[bool | None],
                 *, for_transpose: bool = False) -> PartialEval:
    """Split `graph`: nodes depending on an unknown input go to the unknown graph.

    Each output goes to the side named by `unknown_outputs`: True sends it to the unknown side
    (a known value becomes a residual), False to the known side (an error if it depends on an
    unknown input), None to the side it is computed on. Inputs keep their relative order on each
    side. Nodes whose primitive has a `partial_eval` rule (control flow) are split by it.

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
    kb = GraphBuilder(graph.name + "_known")
    ub = GraphBuilder(graph.name + "_unknown")
    kenv: dict[Value, Value] = {}     # value of `graph` -> its value in the known graph
    uenv: dict[Value, Value] = {}     # value of `graph` -> its value in the unknown graph
    unknown: set[Value] = set()       # values of `graph` computed on the unknown side
    constant: set[Value] = set()      # known values re-emitted (not saved) where the unknown side needs them
    split: dict[Value, list] = {}     # tuple value -> (unknown, value) per element, as a rule split it
    residuals: list[Value] = []       # known-graph values the unknown side reads ...
    res_inputs: dict[Value, Value] = {}  # ... and their inputs in the unknown graph

    for v, u in zip(graph.inputs, unknown_inputs):
        if u:
            unknown.add(v)
        else:
            kenv[v] = kb.add_input(v.type)
    unknown_in = [Value(v.type) for v, u in zip(graph.inputs, unknown_inputs) if u]
    uenv.update(zip([v for v, u in zip(graph.inputs, unknown_inputs) if u], unknown_in))

    def residual(kv: Value) -> Value:
        """Known-graph value `kv` as an input of the unknown graph."""
        r = res_inputs.get(kv)
        if r is None:
            r = res_inputs[kv] = Value(kv.type)
            residuals.append(kv)
        return r

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
            uenv[v] = residual(kenv[v])
        return uenv[v]

    for n in graph.nodes:
        if n.inputs and n.inputs[0] in split:  # a tuple a rule split: only tuple_get reads tuples
            if n.prim.name != "tuple_get":
                raise AssertionError(f"partial_eval: {n.prim.name} reads a tuple; only tuple_get may")
            side_unknown, value = split[n.inputs[0]][n.attrs["index"]]
            (uenv if side_unknown else kenv)[n.out] = value
            if side_unknown:
                unknown.add(n.out)
            continue
        unk = [v in unknown for v in n.inputs]
        if not any(unk):
            kenv[n.out] = kb.emit_copy(n, tuple([kenv[v] for v in n.inputs]))
            if not n.prim.random and all(v in constant for v in n.inputs):
                constant.add(n.out)
            continue
        result = None
        if n.prim.partial_eval is not None:
            ctx = PartialEvalContext(kb, ub, residual, lambda i, _n=n: read(_n.inputs[i]), for_transpose)
            ops = [uenv[v] if u else kenv[v] for v, u in zip(n.inputs, unk)]
            result = n.prim.partial_eval(ctx, ops, unk, **n.attrs)
        if result is None:
            unknown.add(n.out)
            uenv[n.out] = ub.emit_copy(n, tuple([read(v) for v in n.inputs]))
        elif is_tuple(n.out.type):
            split[n.out] = list(result)
        else:
            ((side_unknown, value),) = result
            (uenv if side_unknown else kenv)[n.out] = value
            if side_unknown:
                unknown.add(n.out)

    out_unknown = []
    for k, (v, u) in enumerate(zip(graph.outputs, unknown_outputs)):
        if u is False and v in unknown:
            raise ValueError(f"partial_eval: output {k} of @{graph.name} is on the known side "
                             f"but depends on an unknown input")
        out_unknown.append(bool(u) or (u is None and v in unknown))
    unknown_outs = [read(v) for v, u in zip(graph.outputs, out_unknown) if u]
    known_outs = [kenv[v] for v, u in zip(graph.outputs, out_unknown) if not u]
    ub.inputs = [res_inputs[r] for r in residuals] + unknown_in
    known = kb.build(known_outs + residuals)
    return PartialEval(known, ub.build(unknown_outs), len(residuals), out_unknown)


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


def linearize(graph: Graph, wrt: Sequence[bool], tangent_outputs: Sequence[bool] | None = None, *,
              for_transpose: bool = False) -> Linearized:
    """JVP of `graph` with respect to the inputs flagged in `wrt`, split into primal and linear parts.

    With `tangent_outputs`, the linear graph only returns the tangents of the flagged outputs.
    `for_transpose` says the linear graph will be transposed (custom VJP rules depend on it).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> lin = linearize(b.build([b.sin(x)]), [True])
    >>> [n.prim.name for n in lin.primal.nodes], [n.prim.name for n in lin.linear.nodes]
    (['sin', 'cos'], ['mul'])
    """
    j = jvp(graph, wrt, tangent_outputs, for_transpose=for_transpose)
    n_out, n_tan = len(graph.outputs), len(j.zero_outputs)
    pe = partial_eval(j.graph, [False] * j.num_primal_inputs + [True] * j.num_tangent_inputs,
                      [False] * n_out + [True] * n_tan, for_transpose=for_transpose)
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

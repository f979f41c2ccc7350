"""Reverse mode as one pipeline: linearize, transpose, simplify, prune.

Every reverse-mode user -- `vjp`, `grad_graph` (the one graph of ``grad``) and the
``linearize`` transform (which stops before transposing) -- goes through `split`, so the
sequence is written once:

1. `partial_eval.linearize`: JVP, then partial evaluation into a primal graph (inputs ->
   outputs and residuals) and a linear graph (residuals, tangents -> output tangents);
2. optionally `transpose.transpose` of the linear graph (residuals, cotangents -> input
   cotangents);
3. `simplify` of both graphs;
4. `partial_eval.prune_residuals`: residuals the simplified second graph no longer reads are
   dropped from both sides (and the primal graph is simplified again if that left dead nodes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core import Graph, GraphBuilder, inline
from .partial_eval import linearize, prune_residuals
from .simplify import simplify
from .transpose import transpose

__all__ = ["Split", "split", "VJPGraphs", "vjp", "grad_graph"]


@dataclass
class Split:
    """A graph split for reverse mode (or for `linearize`), both parts simplified.

    - `forward`: the inputs -> (*outputs, *residuals);
    - `second`: the backward graph ``(*residuals, *cotangents) -> cotangents of the wrt inputs``
      when transposed, else the linear graph ``(*residuals, *tangents) -> output tangents``;
    - ``zero_outputs[k]``: output `k` (of those with a tangent) does not depend on the wrt inputs.
    """

    forward: Graph
    second: Graph
    num_residuals: int
    zero_outputs: list[bool]


def split(graph: Graph, wrt: Sequence[bool], tangent_outputs: Sequence[bool] | None = None, *,
          transposed: bool = True, simplified: bool = True) -> Split:
    """Linearize `graph` in the inputs flagged in `wrt`, transpose the linear part if `transposed`,
    and (if `simplified`) simplify both parts and drop the residuals the second part does not read.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> s = split(b.build([b.sin(x)]), [True])
    >>> [n.prim.name for n in s.forward.nodes], [n.prim.name for n in s.second.nodes], s.num_residuals
    (['sin', 'cos'], ['mul'], 1)
    """
    lin = linearize(graph, wrt, tangent_outputs, for_transpose=transposed)
    second = lin.linear
    if transposed:
        n_tan = len(second.inputs) - lin.num_residuals
        second = transpose(second, [False] * lin.num_residuals + [True] * n_tan)
    if not simplified:
        return Split(lin.primal, second, lin.num_residuals, lin.zero_outputs)
    primal = simplify(lin.primal)
    forward, second, n_res = prune_residuals(primal, simplify(second), lin.num_residuals)
    if forward is not primal:  # simplified already, unless pruning the residuals left dead nodes
        forward = simplify(forward)
    return Split(forward, second, n_res, lin.zero_outputs)


@dataclass
class VJPGraphs:
    """Reverse mode for a graph, as two ordinary graphs.

    - `forward`: the inputs -> (*outputs, *residuals);
    - `backward`: (*residuals, *one cotangent per output) -> one cotangent per `wrt` input;
    - ``zero_outputs[k]``: the `k`-th output (with a cotangent) does not depend on the `wrt` inputs.
    """

    forward: Graph
    backward: Graph
    num_residuals: int
    zero_outputs: list[bool]


def vjp(graph: Graph, wrt: Sequence[bool], with_cotangent: Sequence[bool] | None = None) -> VJPGraphs:
    """Reverse mode of `graph` with respect to the inputs flagged in `wrt` (`split`, transposed).

    With `with_cotangent`, only the flagged outputs take a cotangent in `backward`.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> v = vjp(b.build([b.sin(x)]), [True])
    >>> [n.prim.name for n in v.forward.nodes], [n.prim.name for n in v.backward.nodes]
    (['sin', 'cos'], ['mul'])
    """
    s = split(graph, wrt, with_cotangent)
    return VJPGraphs(s.forward, s.second, s.num_residuals, s.zero_outputs)


def grad_graph(graph: Graph, wrt: Sequence[bool], seeds: Sequence[float | None], *,
               simplified: bool = False) -> Graph:
    """One graph computing outputs and gradients: ``inputs -> (*outputs, *cotangents of the wrt inputs)``.

    The backward pass starts from the constant cotangent ``seeds[k]`` (a Python number filling
    the output's shape) for output `k`, and from zero where the seed is None -- `grad` seeds
    its scalar output with 1 and its auxiliary outputs with None. With `simplified`, both halves
    and the joined graph are simplified (what ``grad`` runs).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> g = grad_graph(b.build([b.sin(x)]), [True], [1.0])
    >>> [n.prim.name for n in g.nodes]
    ['sin', 'cos', 'full', 'mul']
    >>> [n.prim.name for n in grad_graph(b.build([b.sin(x)]), [True], [1.0], simplified=True).nodes]
    ['cos', 'sin']
    """
    v = split(graph, wrt, [s is not None for s in seeds], simplified=simplified)
    b = GraphBuilder(graph.name + "_grad")
    # the forward graph is this call's own intermediate: its nodes start the new graph as they are
    b.inputs, b.nodes = list(v.forward.inputs), list(v.forward.nodes)
    back = v.second
    fwd = v.forward.outputs
    outs, res = fwd[:len(graph.outputs)], fwd[len(graph.outputs):]
    cts = [b.const(s, o.shape, o.dtype) for s, o in zip(seeds, outs) if s is not None]
    joined = b.build(outs + inline(b, back, res + cts))
    return simplify(joined) if simplified else joined

"""The batching pass (vmap as a graph-to-graph pass) and the helpers batching rules are built from.

`batch_graph(graph, in_dims, axis_size)` returns a new graph computing `graph`
for `axis_size` samples at once: input *i* carries the batch axis at
``in_dims[i]`` (``None``: the same value for every sample), and each output
gets it at the requested out dim. Nodes are re-emitted one by one; a node
whose operands are all unbatched is copied unchanged (its result stays
unbatched: no needless broadcasting), otherwise its primitive's batching rule
runs::

    rule(ctx, values, dims, **attrs) -> (value, out_dim | None)

`ctx` is a `BatchBuilder`: a `GraphBuilder` that also knows `axis_size` and
`randomness`. Rules move the batch axis only when they must. The family
helpers in `ir.rules` (re-exported here: `vectorized`, `reducer`,
`arg_reducer`, `random_draw`, ...) give most primitives a one-line rule; the
rest are written next to their primitive in `ir/prims/*.py`.

>>> from tensorplay.ir import GraphBuilder, TensorType, float32
>>> b = GraphBuilder()
>>> x = b.add_input(TensorType((3,), float32))
>>> g = b.build([b.reduce_sum(b.sin(x), axes=(0,))])
>>> print(batch_graph(g, [1], axis_size=5))  # doctest: +NORMALIZE_WHITESPACE
func @f(%arg0: tensor<3x5xf32>) -> tensor<5xf32> {
  %0 = tp.sin %arg0 : tensor<3x5xf32>
  %1 = tp.reduce_sum %0 {axes = [0]} : tensor<5xf32>
  return %1
}
"""
from __future__ import annotations

from typing import Sequence

from ..core import Graph, GraphBuilder, Value
from ..primitive import Primitive
from ..regions import Region
from ..rules import (BatchDim, BatchingError, arg_reducer, batched_shape, common_bdim, constant,  # noqa: F401
                     int64_indices, materialize, move_axis, move_bdim, permute, random_draw, reducer, shift_axis,
                     vectorized)
from ..types import TensorType, TupleType

RANDOMNESS = ("error", "different", "same")

__all__ = ["BatchBuilder", "BatchingError", "batch_graph", "batch_inline", "batch_region", "batched_outputs",
           "batched_shape", "batched_type",
           "shift_axis", "move_axis", "move_bdim", "permute", "materialize", "common_bdim",
           "int64_indices", "vectorized", "constant", "reducer", "arg_reducer",
           "random_draw", "RANDOMNESS"]


class BatchBuilder(GraphBuilder):
    """The `ctx` of batching rules: a `GraphBuilder` plus the batch size and the randomness mode."""

    def __init__(self, axis_size: int, randomness: str = "error", name: str = "f"):
        super().__init__(name)
        if not isinstance(axis_size, int) or axis_size < 0:
            raise BatchingError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")
        if randomness not in RANDOMNESS:
            raise BatchingError(f"vmap: randomness must be one of {RANDOMNESS}, got {randomness!r}")
        self.axis_size = axis_size
        self.randomness = randomness


# --- the pass ------------------------------------------------------------------------------------
def _normalize_dim(dim: BatchDim, ndim: int, what: str) -> BatchDim:
    """A batch dim for a per-sample rank `ndim` (negative dims count from the end of the batched rank)."""
    if dim is None:
        return None
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise BatchingError(f"vmap: {what} must be an int or None, got {dim!r}")
    if not -(ndim + 1) <= dim <= ndim:
        raise BatchingError(f"vmap: {what} = {dim} is out of range for a batched value of rank {ndim + 1} "
                            f"(expected a dim in [{-(ndim + 1)}, {ndim}])")
    return dim % (ndim + 1)


def batch_inline(ctx: BatchBuilder, graph: Graph,
                 args: Sequence[tuple[Value, BatchDim]]) -> list[tuple[Value, BatchDim]]:
    """Re-emit `graph` into `ctx` batched: `args` are (value, batch dim) per input; returns the same per output."""
    if len(args) != len(graph.inputs):
        raise BatchingError(f"vmap: @{graph.name} takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[Value, tuple[Value, BatchDim]] = dict(zip(graph.inputs, args))
    for node in graph.nodes:
        vals = [env[v][0] for v in node.inputs]
        dims = [env[v][1] for v in node.inputs]
        if all(d is None for d in dims) and not node.prim.random:
            env[node.out] = (ctx.emit_copy(node, tuple(vals)), None)
            continue
        env[node.out] = _apply_rule(ctx, node.prim, vals, dims, node.attrs, node.out.type)
    return [env[v] for v in graph.outputs]


def batched_type(t: TensorType | TupleType, dim, size: int) -> TensorType | TupleType:
    """`t` with a batch axis of `size` at `dim`; for a tuple, `dim` is None (nothing batched) or one
    batch dim (int or None) per element."""
    if t.__class__ is TupleType:
        dims = (None,) * len(t.elements) if dim is None else dim
        return TupleType([batched_type(e, d, size) for e, d in zip(t.elements, dims, strict=True)])
    return TensorType(batched_shape(t.shape, dim, size), t.dtype)


def _apply_rule(ctx: BatchBuilder, prim: Primitive, vals: list[Value], dims: list[BatchDim], attrs: dict,
                per_sample: TensorType | TupleType) -> tuple[Value, BatchDim]:
    if prim.batch is None:
        raise NotImplementedError(f"vmap: primitive {prim.name!r} has no batching rule")
    out, d = prim.batch(ctx, vals, dims, **attrs)
    if per_sample.__class__ is TupleType:
        # a tuple's batch dim is one per element, or None when no element is batched
        if d is not None and all(e is None for e in d):
            d = None
        expected = batched_type(per_sample, d, ctx.axis_size)
    else:
        expected = TensorType(batched_shape(per_sample.shape, d, ctx.axis_size), per_sample.dtype)
    if out.type != expected:  # a rule bug: catch it here rather than as a wrong answer later
        raise RuntimeError(f"vmap: the batching rule of {prim.name} returned {out.type} with batch dim {d}, "
                           f"expected {expected} (operand dims {dims}, attributes {attrs})")
    return out, d


def batch_region(ctx: BatchBuilder, region: Region, in_dims: Sequence[BatchDim],
                 force: Sequence[bool]) -> tuple[Region, list[BatchDim]]:
    """`region` batched for the control-flow rules: input i carries its batch axis at `in_dims[i]`;
    every batched output gets it at 0, and output k is broadcast to batched when `force[k]` even if
    it does not depend on the batch. Returns the new region and each output's dim (0 or None)."""
    graph = region.graph
    sub = BatchBuilder(ctx.axis_size, ctx.randomness, graph.name)
    args = [(sub.add_input(batched_type(v.type, d, ctx.axis_size)), d) for v, d in zip(graph.inputs, in_dims,
                                                                                        strict=True)]
    outs, dims = [], []
    for (v, d), f in zip(batch_inline(sub, graph, args), force, strict=True):
        if d is None and not f:
            outs.append(v)
            dims.append(None)
        else:
            outs.append(materialize(sub, v, d, 0))
            dims.append(0)
    return Region(sub.build(outs)), dims


def batch_graph(graph: Graph, in_dims: Sequence[BatchDim], axis_size: int,
                out_dims: BatchDim | Sequence[BatchDim] = 0, *, randomness: str = "error",
                name: str | None = None) -> Graph:
    """The batched version of `graph` (see the module docstring).

    `in_dims[i]` is the batch axis of input *i* in the batched graph (negative
    counts from the end, ``None``: unbatched). `out_dims` (one int/None for all
    outputs, or one per output) places each output's batch axis; an unbatched
    output with an int out dim is broadcast, and ``None`` is allowed only for
    outputs that are unbatched. `randomness` is how random primitives with an
    unbatched key behave ('error' rejects them, 'same' draws once for every
    sample; with 'different' the caller passes batched keys).
    """
    in_dims = list(in_dims)
    if len(in_dims) != len(graph.inputs):
        raise BatchingError(f"vmap: {len(in_dims)} in_dims for the {len(graph.inputs)} inputs of @{graph.name}")
    if isinstance(out_dims, (list, tuple)):
        out_dims = list(out_dims)
        if len(out_dims) != len(graph.outputs):
            raise BatchingError(f"vmap: {len(out_dims)} out_dims for the {len(graph.outputs)} outputs of @{graph.name}")
    else:
        out_dims = [out_dims] * len(graph.outputs)
    ctx = BatchBuilder(axis_size, randomness, name or graph.name)
    args = []
    for i, (v, d) in enumerate(zip(graph.inputs, in_dims)):
        d = _normalize_dim(d, v.ndim, f"in_dims[{i}]")
        args.append((ctx.add_input(TensorType(batched_shape(v.shape, d, axis_size), v.dtype)), d))
    outs = []
    for k, ((v, d), want) in enumerate(zip(batch_inline(ctx, graph, args), out_dims)):
        per_sample_rank = v.ndim - (d is not None)
        want = _normalize_dim(want, per_sample_rank, f"out_dims[{k}]")
        if want is None:
            if d is not None:
                raise BatchingError(f"vmap: out_dims[{k}] is None, but output {k} ({graph.outputs[k].type} per "
                                    f"sample) is batched; None is only allowed for outputs that do not depend "
                                    f"on the batched inputs")
            outs.append(v)
        else:
            outs.append(materialize(ctx, v, d, want))
    return ctx.build(outs)


def batched_outputs(graph: Graph, batched_inputs: Sequence[bool]) -> list[bool]:
    """Which outputs of `graph` are batched when the inputs flagged in `batched_inputs` are.

    Exactly the outputs the pass returns with a batch axis: a node is batched iff one of its
    operands is (random draws with an unbatched key stay unbatched under randomness='same'),
    except for control flow, whose results are batched element by element as its rule batches
    them (a loop carry that never meets the batch stays unbatched).
    """
    batched: dict[Value, object] = {v: True for v, b in zip(graph.inputs, batched_inputs, strict=True) if b}
    for node in graph.nodes:
        flags = [batched.get(v) for v in node.inputs]
        if not any(flags):
            continue
        if node.prim.name == "tuple_get":
            if flags[0][node.attrs["index"]]:
                batched[node.out] = True
        elif node.out.type.__class__ is TupleType:
            elements = _batched_elements(node, flags)
            if any(elements):
                batched[node.out] = elements
        else:
            batched[node.out] = True
    return [v in batched for v in graph.outputs]


def _batched_elements(node, flags) -> tuple[bool, ...]:
    """Which elements of a tuple-valued node's result are batched (its operands are tensors): its
    batching rule run on stand-ins of batch size 1."""
    ctx = BatchBuilder(1, "same", "probe")
    dims = [0 if f else None for f in flags]
    vals = [ctx.add_input(batched_type(v.type, d, 1)) for v, d in zip(node.inputs, dims)]
    _, out = node.prim.batch(ctx, vals, dims, **node.attrs)
    return tuple(d is not None for d in out)

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
helpers at the end of this module (`vectorized`, `reducer`, `arg_reducer`,
`random_draw`) give most primitives a one-line rule; the rest are written next
to their primitive, in the "batching rules" section of `ir/prims/*.py`.

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

from typing import Callable, Sequence

from .. import dtypes as dt
from ..core import Graph, GraphBuilder, Value
from ..primitive import Primitive
from ..types import TensorType

BatchDim = int | None
RANDOMNESS = ("error", "different", "same")

__all__ = ["BatchBuilder", "BatchingError", "batch_graph", "batch_inline", "batched_outputs", "batched_shape",
           "shift_axis", "move_axis", "move_bdim", "permute", "materialize", "common_bdim",
           "int64_indices", "vectorized", "constant", "reducer", "arg_reducer",
           "random_draw", "RANDOMNESS"]


class BatchingError(ValueError):
    """A graph that cannot be batched as asked (bad in/out dims, randomness, a rule's misuse)."""


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
def batched_shape(shape: Sequence[int], dim: BatchDim, size: int) -> tuple[int, ...]:
    """`shape` with a batch axis of `size` inserted at `dim` (unchanged when `dim` is None)."""
    shape = tuple(shape)
    if dim is None:
        return shape
    return shape[:dim] + (size,) + shape[dim:]


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


def _apply_rule(ctx: BatchBuilder, prim: Primitive, vals: list[Value], dims: list[BatchDim], attrs: dict,
                per_sample: TensorType) -> tuple[Value, BatchDim]:
    if prim.batch is None:
        raise NotImplementedError(f"vmap: primitive {prim.name!r} has no batching rule")
    out, d = prim.batch(ctx, vals, dims, **attrs)
    expected = TensorType(batched_shape(per_sample.shape, d, ctx.axis_size), per_sample.dtype)
    if out.type != expected:  # a rule bug: catch it here rather than as a wrong answer later
        raise RuntimeError(f"vmap: the batching rule of {prim.name} returned {out.type} with batch dim {d}, "
                           f"expected {expected} (operand dims {dims}, attributes {attrs})")
    return out, d


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
    operands is (random draws with an unbatched key stay unbatched under randomness='same').
    """
    batched = {v for v, b in zip(graph.inputs, batched_inputs, strict=True) if b}
    for node in graph.nodes:
        if any(v in batched for v in node.inputs):
            batched.add(node.out)
    return [v in batched for v in graph.outputs]


# --- helpers for rules ---------------------------------------------------------------------------
def shift_axis(axis: int, bdim: BatchDim) -> int:
    """The axis of a batched value (batch axis at `bdim`) that holds per-sample axis `axis`."""
    return axis if bdim is None or axis < bdim else axis + 1


def move_axis(ctx: GraphBuilder, x: Value, src: int, dst: int) -> Value:
    """`x` with axis `src` moved to position `dst` (no node when src == dst)."""
    if src == dst:
        return x
    perm = list(range(x.ndim))
    perm.pop(src)
    perm.insert(dst, src)
    return permute(ctx, x, perm)


def permute(ctx: GraphBuilder, x: Value, perm: Sequence[int]) -> Value:
    """`x` transposed by `perm` (no node for the identity permutation)."""
    perm = tuple(perm)
    if perm == tuple(range(x.ndim)):
        return x
    return ctx.transpose(x, permutation=perm)


def move_bdim(ctx: BatchBuilder, x: Value, dim: int, dst: int) -> Value:
    """Batched `x` with its batch axis moved from `dim` to `dst`."""
    return move_axis(ctx, x, dim, dst)


def materialize(ctx: BatchBuilder, x: Value, dim: BatchDim, dst: int) -> Value:
    """`x` with its batch axis at `dst`; an unbatched `x` is broadcast along a new batch axis there."""
    if dim is not None:
        return move_axis(ctx, x, dim, dst)
    shape = batched_shape(x.shape, dst, ctx.axis_size)
    return ctx.broadcast_in_dim(x, shape=shape, broadcast_dimensions=tuple(i for i in range(len(shape)) if i != dst))


def common_bdim(ctx: BatchBuilder, values: Sequence[Value], dims: Sequence[BatchDim]) -> tuple[list[Value], int]:
    """Operands of equal per-sample rank with their batch axes at one position (the first batched
    operand's): others are moved only if theirs differs, unbatched ones broadcast there."""
    target = next(d for d in dims if d is not None)
    return [materialize(ctx, v, d, target) if d != target else v for v, d in zip(values, dims)], target


# --- family rules --------------------------------------------------------------------------------
def vectorized(prim: Primitive) -> Callable:
    """The rule of an elementwise primitive on operands of equal shape (unary, binary, select, casts)."""
    def rule(ctx: BatchBuilder, values, dims, **attrs):
        vals, d = common_bdim(ctx, values, dims)
        return ctx.emit(prim, *vals, **attrs), d
    return rule


def constant(prim: Primitive) -> Callable:
    """The rule of an operand-free primitive (iota, full): its result is the same for every sample.

    The pass never needs it (a node without batched operands is copied as is); it exists so that
    every primitive answers the batching question."""
    def rule(ctx: BatchBuilder, values, dims, **attrs):
        return ctx.emit(prim, *values, **attrs), None
    return rule


def reducer(prim: Primitive) -> Callable:
    """The rule of a reduction over `axes`: shift the axes past the batch axis."""
    def rule(ctx: BatchBuilder, values, dims, *, axes, **attrs):
        (x,), (d,) = values, dims
        axes = tuple(shift_axis(a, d) for a in axes)
        out = ctx.emit(prim, x, axes=axes, **attrs)
        return out, d - sum(a < d for a in axes)
    return rule


def arg_reducer(prim: Primitive) -> Callable:
    """The rule of an index-of-extremum reduction over one `axis`."""
    def rule(ctx: BatchBuilder, values, dims, *, axis, **attrs):
        (x,), (d,) = values, dims
        axis = shift_axis(axis, d)
        return ctx.emit(prim, x, axis=axis, **attrs), d - (axis < d)
    return rule


def random_draw(prim: Primitive) -> Callable:
    """The rule of a counter-based draw from a key of shape (*K, 2).

    A batched key is a batch of keys, so the draw is batched for free. An
    unbatched key follows `ctx.randomness`: 'same' draws once for all samples,
    'error' refuses, and 'different' needs the caller to pass batched keys
    (`tensorplay.func.vmap` splits each key into one per sample).
    """
    def rule(ctx: BatchBuilder, values, dims, **attrs):
        (key,), (d,) = values, dims
        if d is None:
            if ctx.randomness == "same":
                return ctx.emit(prim, key, **attrs), None
            if ctx.randomness == "error":
                raise BatchingError(f"vmap: random operation {prim.name} under vmap with randomness='error'; "
                                    f"use randomness='different' or 'same', or draw outside vmap")
            raise BatchingError(f"vmap: {prim.name} under randomness='different' needs a batched key "
                                f"(one key per sample), got an unbatched key of shape {key.shape}")
        if d == key.ndim - 1:  # the batch axis sits after the (seed, counter) axis: put it first
            key, d = move_bdim(ctx, key, d, 0), 0
        return ctx.emit(prim, key, **attrs), d
    return rule


def int64_indices(ctx: BatchBuilder, idx: Value) -> Value:
    """Integer indices widened to int64 (flattened batch offsets may not fit in int32)."""
    return idx if idx.dtype is dt.int64 else ctx.convert_element_type(idx, dtype=dt.int64)

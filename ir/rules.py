"""Rule-family helpers: the pieces primitive declarations are written with.

This module depends only on the IR core (values, builder, primitive, types),
so every primitive module can import it, and the passes import it too (they
re-export these names). Signatures are frozen (see `ir/primitive.py`):

- batching rules ``rule(ctx, values, dims, **attrs) -> (value, out_dim | None)``,
  where `ctx` is a builder with ``axis_size`` (and ``randomness``);
- JVP rules ``rule(ctx, primals, tangents, **attrs) -> (primal_out, tangent | None)``;
- transpose rules ``rule(ctx, ct, operands, **attrs) -> [ct | None, ...]``.

Families: `vectorized` (elementwise on equal shapes), `reducer` /
`arg_reducer` (over axes), `constant` (no operands), `random_draw` (keys);
`defjvp_unary` / `defjvp_binary` (a derivative row per operand),
`defjvp_linear`, `defjvp_zero`; `fold_elementwise`, `fold_same_value`
(constant folding).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import dtypes as dt
from .core import GraphBuilder, Value
from .primitive import Primitive, UndefinedPrimal
from .types import TensorType

BatchDim = int | None


class BatchingError(ValueError):
    """A graph that cannot be batched as asked (bad in/out dims, randomness, a rule's misuse)."""


def is_undefined(x) -> bool:
    """True for the `UndefinedPrimal` marker of a linear operand (in transpose rules).

    >>> is_undefined(UndefinedPrimal(TensorType((2,), dt.float32))), is_undefined(None)
    (True, False)
    """
    return isinstance(x, UndefinedPrimal)


def free_axes(ndim: int, *used) -> tuple[int, ...]:
    """The axes of a rank-`ndim` operand that are in none of the `used` groups (dot_general's free dims).

    >>> free_axes(4, (1,), (3,))
    (0, 2)
    """
    taken = {a for group in used for a in group}
    return tuple(a for a in range(ndim) if a not in taken)


# === batching ====================================================================================
def batched_shape(shape: Sequence[int], dim: BatchDim, size: int) -> tuple[int, ...]:
    """`shape` with a batch axis of `size` inserted at `dim` (unchanged when `dim` is None)."""
    shape = tuple(shape)
    if dim is None:
        return shape
    return shape[:dim] + (size,) + shape[dim:]


# --- helpers ---------------------------------------------------------------------------
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


def move_bdim(ctx: GraphBuilder, x: Value, dim: int, dst: int) -> Value:
    """Batched `x` with its batch axis moved from `dim` to `dst`."""
    return move_axis(ctx, x, dim, dst)


def materialize(ctx: GraphBuilder, x: Value, dim: BatchDim, dst: int) -> Value:
    """`x` with its batch axis at `dst`; an unbatched `x` is broadcast along a new batch axis there."""
    if dim is not None:
        return move_axis(ctx, x, dim, dst)
    shape = batched_shape(x.shape, dst, ctx.axis_size)
    return ctx.broadcast_in_dim(x, shape=shape, broadcast_dimensions=tuple(i for i in range(len(shape)) if i != dst))


def common_bdim(ctx: GraphBuilder, values: Sequence[Value], dims: Sequence[BatchDim]) -> tuple[list[Value], int]:
    """Operands of equal per-sample rank with their batch axes at one position (the first batched
    operand's): others are moved only if theirs differs, unbatched ones broadcast there."""
    target = next(d for d in dims if d is not None)
    return [materialize(ctx, v, d, target) if d != target else v for v, d in zip(values, dims)], target


# --- family rules --------------------------------------------------------------------------------
def vectorized(prim: Primitive) -> Callable:
    """The rule of an elementwise primitive on operands of equal shape (unary, binary, select, casts)."""
    def rule(ctx: GraphBuilder, values, dims, **attrs):
        vals, d = common_bdim(ctx, values, dims)
        return ctx.emit(prim, *vals, **attrs), d
    return rule


def constant(prim: Primitive) -> Callable:
    """The rule of an operand-free primitive (iota, full): its result is the same for every sample.

    The pass never needs it (a node without batched operands is copied as is); it exists so that
    every primitive answers the batching question."""
    def rule(ctx: GraphBuilder, values, dims, **attrs):
        return ctx.emit(prim, *values, **attrs), None
    return rule


def reducer(prim: Primitive) -> Callable:
    """The rule of a reduction over `axes`: shift the axes past the batch axis."""
    def rule(ctx: GraphBuilder, values, dims, *, axes, **attrs):
        (x,), (d,) = values, dims
        axes = tuple(shift_axis(a, d) for a in axes)
        out = ctx.emit(prim, x, axes=axes, **attrs)
        return out, d - sum(a < d for a in axes)
    return rule


def arg_reducer(prim: Primitive) -> Callable:
    """The rule of an index-of-extremum reduction over one `axis`."""
    def rule(ctx: GraphBuilder, values, dims, *, axis, **attrs):
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
    def rule(ctx: GraphBuilder, values, dims, **attrs):
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


def int64_indices(ctx: GraphBuilder, idx: Value) -> Value:
    """Integer indices widened to int64 (flattened batch offsets may not fit in int32)."""
    return idx if idx.dtype is dt.int64 else ctx.convert_element_type(idx, dtype=dt.int64)


# === differentiation =============================================================================
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
    >>> from tensorplay.ir.passes.jvp import jvp as _jvp
    >>> square = Primitive("square", lambda x: x, lambda x: x * x)  # a throwaway, unregistered primitive
    >>> defjvp_unary(square, lambda b, t, x, y: b.mul(t, b.mul(x, scalar_like(b, x, 2))))  # t·2x
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> [n.prim.name for n in _jvp(b.build([b.emit(square, x)]), [True]).graph.nodes]
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
    >>> from tensorplay.ir.passes.jvp import jvp as _jvp
    >>> times = Primitive("times", lambda x, y: x, lambda x, y: x * y)  # unregistered, for the example
    >>> defjvp_binary(times, lambda b, t, x, y, o: b.mul(t, y), lambda b, t, x, y, o: b.mul(x, t))
    >>> b = GraphBuilder(); x, y = (b.add_input(TensorType((), float32)) for _ in range(2))
    >>> [n.prim.name for n in _jvp(b.build([b.emit(times, x, y)]), [True, False]).graph.nodes]
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
    >>> from tensorplay.ir.passes.jvp import jvp as _jvp
    >>> double = Primitive("double", lambda x: x, lambda x: 2 * x)  # unregistered, for the example
    >>> defjvp_linear(double)
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> [n.prim.name for n in _jvp(b.build([b.emit(double, x)]), [True]).graph.nodes]
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
    >>> from tensorplay.ir.passes.jvp import jvp as _jvp
    >>> step = Primitive("step", lambda x: x, lambda x: (x > 0) * 1.0)  # unregistered, for the example
    >>> defjvp_zero(step)
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> _jvp(b.build([b.emit(step, x)]), [True]).zero_outputs
    [True]
    """
    def rule(ctx, primals, tangents, **attrs):
        return ctx.emit(prim, *primals, **attrs), None
    prim.def_jvp(rule)


# === constant folding ============================================================================
def fold_elementwise(prim: Primitive) -> Callable:
    """Fold an elementwise node on constant fills: its impl applied to the fill values.

    >>> from tensorplay import ir
    >>> add = ir.get_primitive("add")
    >>> x = ir.GraphBuilder().add_input(TensorType((3,), dt.float32))
    >>> float(fold_elementwise(add)([1.5, 2.0], [x, x], {}, x.type))
    3.5
    """
    def fold(consts, operands, attrs, out: TensorType):
        args = [np.asarray(c, dtype=v.dtype.np) for c, v in zip(consts, operands)]
        with np.errstate(all="ignore"):
            return prim.impl(*args, **attrs)[()]
    return fold


def fold_same_value(consts, operands, attrs, out: TensorType):
    """Fold a node whose constant result holds its (first) operand's fill value (layout ops, max/min).

    >>> fold_same_value([7], [], {}, None)
    7
    """
    return consts[0]

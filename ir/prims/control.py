"""Control flow: primitives that carry regions, and the tuples they return.

Each control-flow node has one result of `TupleType`; `tuple_get` projects an
element and `make_tuple` builds one. The regions (`ir.Region`) are closed: outer
values a body reads are the node's leading operands ("consts"), counted by an
attribute.

- ``cond(pred, *operands) {true, false}``: ``pred`` is a 0-d bool; both regions
  take the operands' types and return the same types; the result is the tuple of
  the taken branch's outputs.
- ``while_loop(*cond_consts, *body_consts, *init) {cond, body, num_cond_consts,
  num_body_consts}``: ``cond(*cond_consts, *carry) -> bool``, ``body(*body_consts,
  *carry) -> carry``; the result is the final carry.
- ``scan(*consts, *init, *xs) {body, num_consts, num_carry, length, reverse}``:
  ``body(*consts, *carry, *x) -> (*carry, *y)`` over slices of the xs along axis 0
  (from the end when ``reverse``); the result is ``(*final carry, *stacked ys)``.

The numpy impls run the regions with the interpreter.

>>> from tensorplay.ir import GraphBuilder, Region, TensorType, float32, int32
>>> body = GraphBuilder("body")
>>> c, x = body.add_input(TensorType((), float32)), body.add_input(TensorType((), float32))
>>> s = body.add(c, x)
>>> region = Region(body.build([s, s]))
>>> b = GraphBuilder()
>>> init, xs = b.add_input(TensorType((), float32)), b.add_input(TensorType((4,), float32))
>>> t = b.scan(init, xs, body=region, num_consts=0, num_carry=1, length=4, reverse=False)
>>> t.type
tuple<f32, 4xf32>
>>> import numpy as np
>>> [a.tolist() for a in SCAN.impl(np.float32(0), np.arange(4, dtype=np.float32), body=region, num_consts=0,
...                                num_carry=1, length=4, reverse=False)]
[6.0, [0.0, 1.0, 3.0, 6.0]]
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes as dt
from ..core import GraphBuilder, Value, inline
from ..interpreter import interpret
from ..passes.batching import BatchBuilder, batch_inline, batch_region
from ..primitive import Primitive, register
from ..regions import Region
from ..rules import materialize, move_bdim
from ..types import TensorType, TupleType

__all__ = ["TUPLE_GET", "MAKE_TUPLE", "COND", "WHILE_LOOP", "SCAN", "types_text", "BOOL_SCALAR"]

BOOL_SCALAR = TensorType((), dt.bool_)


def types_text(types: Sequence) -> str:
    """``(tensor<3xf32>, tensor<i32>)``: a list of types as error messages show it."""
    return "(" + ", ".join(str(t) for t in types) + ")"


def _tensor_operands(op: str, types: Sequence) -> None:
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise TypeError(f"{op}: operand {i} is {t}, expected a tensor (project tuples with tuple_get)")


def _region(op: str, name: str, r) -> Region:
    if not isinstance(r, Region):
        raise TypeError(f"{op}: attribute {name} must be a Region, got {type(r).__name__}")
    return r


def _count(op: str, name: str, n, limit: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{op}: {name} must be a non-negative int, got {n!r}")
    if n > limit:
        raise ValueError(f"{op}: {name} = {n}, but the node has only {limit} operands left to count")
    return n


def _takes(op: str, what: str, region: Region, types: Sequence) -> None:
    """`region`'s inputs must have exactly `types`."""
    if list(region.in_types) != list(types):
        raise TypeError(f"{op}: the {what} region takes {types_text(region.in_types)}, but it is given "
                        f"{types_text(types)}")


def _interpret(region: Region, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    return interpret(region.graph, args)


# --- tuples --------------------------------------------------------------------------------------
def _tuple_get_type(t, *, index):
    if not isinstance(t, TupleType):
        raise TypeError(f"tuple_get: operand is {t}, expected a tuple")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(t.elements):
        raise ValueError(f"tuple_get: index {index!r} out of range for {t}")
    return t.elements[index]


def _make_tuple_type(*types):
    _tensor_operands("make_tuple", types)
    return TupleType(types)


TUPLE_GET = register(Primitive(
    "tuple_get", _tuple_get_type, lambda t, *, index: t[index], num_operands=1, family="control", roles=("tuple",),
    doc="element `index` of a tuple (the result of a control-flow node)"))

MAKE_TUPLE = register(Primitive(
    "make_tuple", _make_tuple_type, lambda *xs: tuple(xs), variadic=True, family="control",
    doc="a tuple of its operands"))


# --- cond ----------------------------------------------------------------------------------------
def _cond_type(pred, *operands, true, false):
    true, false = _region("cond", "true", true), _region("cond", "false", false)
    if not isinstance(pred, TensorType) or pred.shape != () or pred.dtype is not dt.bool_:
        raise TypeError(f"cond: the predicate must be a 0-d bool tensor ({BOOL_SCALAR}), got {pred}")
    _tensor_operands("cond", operands)
    _takes("cond", "true", true, operands)
    _takes("cond", "false", false, operands)
    if list(true.out_types) != list(false.out_types):
        raise TypeError(f"cond: the branches return different types: true returns {types_text(true.out_types)}, "
                        f"false returns {types_text(false.out_types)}")
    return TupleType(true.out_types)


def _cond_impl(pred, *operands, true, false):
    return tuple(_interpret(true if bool(pred) else false, operands))


COND = register(Primitive(
    "cond", _cond_type, _cond_impl, variadic=True, family="control", roles=("pred",),
    doc="the true or the false region applied to the operands, as the 0-d bool predicate says"))


# --- while_loop ----------------------------------------------------------------------------------
def _while_parts(operands, num_cond_consts, num_body_consts):
    ncc = _count("while_loop", "num_cond_consts", num_cond_consts, len(operands))
    nbc = _count("while_loop", "num_body_consts", num_body_consts, len(operands) - ncc)
    return operands[:ncc], operands[ncc:ncc + nbc], operands[ncc + nbc:]


def _while_type(*operands, cond, body, num_cond_consts, num_body_consts):
    cond, body = _region("while_loop", "cond", cond), _region("while_loop", "body", body)
    _tensor_operands("while_loop", operands)
    cconsts, bconsts, carry = _while_parts(operands, num_cond_consts, num_body_consts)
    _takes("while_loop", "cond", cond, (*cconsts, *carry))
    if list(cond.out_types) != [BOOL_SCALAR]:
        raise TypeError(f"while_loop: the cond region must return one 0-d bool ({BOOL_SCALAR}), it returns "
                        f"{types_text(cond.out_types)}")
    _takes("while_loop", "body", body, (*bconsts, *carry))
    if list(body.out_types) != list(carry):
        raise TypeError(f"while_loop: the body changes the carry type: the carry is {types_text(carry)}, the "
                        f"body returns {types_text(body.out_types)}")
    return TupleType(carry)


def _while_impl(*operands, cond, body, num_cond_consts, num_body_consts):
    cconsts, bconsts, carry = _while_parts(operands, num_cond_consts, num_body_consts)
    carry = list(carry)
    while bool(_interpret(cond, (*cconsts, *carry))[0]):
        carry = _interpret(body, (*bconsts, *carry))
    return tuple(carry)


WHILE_LOOP = register(Primitive(
    "while_loop", _while_type, _while_impl, variadic=True, family="control",
    doc="the body region applied to the carry while the cond region returns true"))


# --- scan ----------------------------------------------------------------------------------------
def _scan_parts(operands, num_consts, num_carry):
    nc = _count("scan", "num_consts", num_consts, len(operands))
    nk = _count("scan", "num_carry", num_carry, len(operands) - nc)
    return operands[:nc], operands[nc:nc + nk], operands[nc + nk:]


def _scan_type(*operands, body, num_consts, num_carry, length, reverse):
    body = _region("scan", "body", body)
    _tensor_operands("scan", operands)
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ValueError(f"scan: length must be a non-negative int, got {length!r}")
    if not isinstance(reverse, bool):
        raise TypeError(f"scan: reverse must be a bool, got {reverse!r}")
    consts, carry, xs = _scan_parts(operands, num_consts, num_carry)
    for i, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            raise ValueError(f"scan: xs[{i}] of type {x} must have a leading dimension of length {length}")
    slices = [TensorType(x.shape[1:], x.dtype) for x in xs]
    _takes("scan", "body", body, (*consts, *carry, *slices))
    outs = list(body.out_types)
    if outs[:len(carry)] != list(carry):
        raise TypeError(f"scan: the body changes the carry type: the carry is {types_text(carry)}, the body "
                        f"returns {types_text(outs[:len(carry)])} for it")
    ys = [TensorType((length, *y.shape), y.dtype) for y in outs[len(carry):]]
    return TupleType((*carry, *ys))


def _scan_impl(*operands, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = _scan_parts(operands, num_consts, num_carry)
    carry = list(carry)
    y_types = body.out_types[num_carry:]
    ys = [np.empty((length, *t.shape), t.dtype.np) for t in y_types]
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = _interpret(body, (*consts, *carry, *(x[i] for x in xs)))
        carry = outs[:num_carry]
        for y, out in zip(ys, outs[num_carry:]):
            y[i] = out
    return (*carry, *ys)


SCAN = register(Primitive(
    "scan", _scan_type, _scan_impl, variadic=True, family="control",
    doc="the body region over slices of the xs along axis 0, threading a carry; the ys stacked"))


# === batching (vmap) ==============================================================================
# Inside the batched regions every batched value has its batch axis at 0 (`batch_region`); xs and
# ys of a scan carry it at 1, behind the scanned axis.
def _to_front(ctx, values, dims):
    """`values` with their batch axes moved to 0 (unbatched ones stay as they are)."""
    return [v if d is None else move_bdim(ctx, v, d, 0) for v, d in zip(values, dims)], \
           [None if d is None else 0 for d in dims]


def _carry_fixpoint(ctx, body: Region, const_dims, carry_dims, slice_dims, num_carry: int) -> list[bool]:
    """Which carries are batched: those batched at the start, and those the body makes batched from a
    batched const, x or carry, iterated to a fixed point (JAX's rule: batch such a carry from the start)."""
    batched = [d is not None for d in carry_dims]
    while True:
        dims = [*const_dims, *(0 if b else None for b in batched), *slice_dims]
        _, out_dims = batch_region(ctx, body, dims, [False] * len(body.out_types))
        new = [b or d is not None for b, d in zip(batched, out_dims[:num_carry])]
        if new == batched:
            return batched
        batched = new


def _materialize_all(ctx, values, dims, batched):
    """Values at batch dim 0 where `batched` says so (broadcasting unbatched ones), else as they are."""
    return [materialize(ctx, v, d, 0) if b else v for v, d, b in zip(values, dims, batched)]


def _elements(ctx, t: Value, n: int) -> list[Value]:
    return [ctx.tuple_get(t, index=i) for i in range(n)]


def _cond_batch(ctx, values, dims, *, true, false):
    (pred, *ops), (pdim, *odims) = values, dims
    ops, odims = _to_front(ctx, ops, odims)
    n = len(true.out_types)
    if pdim is None:  # one branch for every sample: a cond of the batched branches
        _, tdims = batch_region(ctx, true, odims, [False] * n)
        _, fdims = batch_region(ctx, false, odims, [False] * n)
        force = [a is not None or b is not None for a, b in zip(tdims, fdims)]
        t, out_dims = batch_region(ctx, true, odims, force)
        f, _ = batch_region(ctx, false, odims, force)
        return ctx.cond(pred, *ops, true=t, false=f), tuple(out_dims)
    # a predicate per sample: both branches run, each sample selects its own result
    pred = move_bdim(ctx, pred, pdim, 0)
    args = list(zip(ops, odims))
    touts = batch_inline(ctx, true.graph, args)
    fouts = batch_inline(ctx, false.graph, args)
    outs = []
    for (tv, td), (fv, fd) in zip(touts, fouts):
        tv, fv = materialize(ctx, tv, td, 0), materialize(ctx, fv, fd, 0)
        mask = ctx.broadcast_in_dim(pred, shape=tv.shape, broadcast_dimensions=(0,))
        outs.append(ctx.select(mask, tv, fv))
    return ctx.make_tuple(*outs), (0,) * n


def _any(ctx, pred: Value) -> Value:
    """Is any sample's (B,) bool predicate true? (A sum, so that an empty batch is False.)"""
    count = ctx.reduce_sum(ctx.convert_element_type(pred, dtype=dt.int32), axes=(0,))
    return ctx.gt(count, ctx.const(0, (), dt.int32))


def _masked_loop_regions(ctx, cond: Region, body: Region, cc_dims, bc_dims):
    """The regions of a while loop whose predicate is batched: every carry is batched at 0; the loop
    runs while some sample's predicate holds, and a sample whose predicate is false keeps its carry.
    New cond: (*cc, *carry) -> any(pred); new body: (*cc, *bc, *carry) -> select(pred, body, carry)."""
    n = len(body.out_types)
    cond_b, _ = batch_region(ctx, cond, [*cc_dims, *[0] * n], [True])
    body_b, _ = batch_region(ctx, body, [*bc_dims, *[0] * n], [True] * n)
    nc, nb = len(cc_dims), len(bc_dims)

    b = BatchBuilder(ctx.axis_size, ctx.randomness, "cond")
    ins = [b.add_input(t) for t in cond_b.in_types]
    (pred,) = inline(b, cond_b.graph, ins)
    new_cond = Region(b.build([_any(b, pred)]))

    b = BatchBuilder(ctx.axis_size, ctx.randomness, "body")
    cc = [b.add_input(t) for t in cond_b.in_types[:nc]]
    bc = [b.add_input(t) for t in body_b.in_types[:nb]]
    carry = [b.add_input(t) for t in body_b.in_types[nb:]]
    (pred,) = inline(b, cond_b.graph, [*cc, *carry])
    new = inline(b, body_b.graph, [*bc, *carry])
    outs = [b.select(b.broadcast_in_dim(pred, shape=v.shape, broadcast_dimensions=(0,)), v, c)
            for v, c in zip(new, carry)]
    return new_cond, Region(b.build(outs))


def _while_batch(ctx, values, dims, *, cond, body, num_cond_consts, num_body_consts):
    values, dims = _to_front(ctx, values, dims)
    cconsts, bconsts, init = _while_parts(values, num_cond_consts, num_body_consts)
    cdims, bdims, idims = _while_parts(dims, num_cond_consts, num_body_consts)
    n = len(init)
    batched = _carry_fixpoint(ctx, body, bdims, idims, [], n)
    carry_dims = [0 if b else None for b in batched]
    _, (pdim,) = batch_region(ctx, cond, [*cdims, *carry_dims], [False])
    if pdim is None:  # every sample stops at the same step
        cond_r, _ = batch_region(ctx, cond, [*cdims, *carry_dims], [False])
        body_r, _ = batch_region(ctx, body, [*bdims, *carry_dims], batched)
        init = _materialize_all(ctx, init, idims, batched)
        out = ctx.while_loop(*cconsts, *bconsts, *init, cond=cond_r, body=body_r, num_cond_consts=len(cconsts),
                             num_body_consts=len(bconsts))
        return out, tuple(carry_dims)
    cond_r, body_r = _masked_loop_regions(ctx, cond, body, cdims, bdims)
    init = _materialize_all(ctx, init, idims, [True] * n)
    out = ctx.while_loop(*cconsts, *cconsts, *bconsts, *init, cond=cond_r, body=body_r,
                         num_cond_consts=len(cconsts), num_body_consts=len(cconsts) + len(bconsts))
    return out, (0,) * n


def _scan_batch(ctx, values, dims, *, body, num_consts, num_carry, length, reverse):
    consts, init, xs = _scan_parts(values, num_consts, num_carry)
    kdims, idims, xdims = _scan_parts(dims, num_consts, num_carry)
    consts, kdims = _to_front(ctx, consts, kdims)
    xs = [x if d is None else move_bdim(ctx, x, d, 1) for x, d in zip(xs, xdims)]
    slice_dims = [None if d is None else 0 for d in xdims]
    batched = _carry_fixpoint(ctx, body, kdims, idims, slice_dims, num_carry)
    carry_dims = [0 if b else None for b in batched]
    n_y = len(body.out_types) - num_carry
    body_r, out_dims = batch_region(ctx, body, [*kdims, *carry_dims, *slice_dims], [*batched, *[False] * n_y])
    init = _materialize_all(ctx, init, idims, batched)
    out = ctx.scan(*consts, *init, *xs, body=body_r, num_consts=num_consts, num_carry=num_carry, length=length,
                   reverse=reverse)
    y_dims = [None if d is None else 1 for d in out_dims[num_carry:]]
    return out, (*carry_dims, *y_dims)


TUPLE_GET.def_batch(lambda ctx, values, dims, *, index: (ctx.tuple_get(values[0], index=index), dims[0][index]))
MAKE_TUPLE.def_batch(lambda ctx, values, dims: (ctx.make_tuple(*values), tuple(dims)))
COND.def_batch(_cond_batch)
WHILE_LOOP.def_batch(_while_batch)
SCAN.def_batch(_scan_batch)


# === examples for the registry-driven tests =======================================================
# Each primitive's `examples()`: (args, attrs, expected) with small regions written with the builder
# and an expectation written in numpy by hand (never through the interpreter).
def _make_region(name: str, in_types: Sequence[TensorType], body) -> Region:
    b = GraphBuilder(name)
    return Region(b.build(body(b, *[b.add_input(t) for t in in_types])))


def _t(shape, dtype=dt.float64) -> TensorType:
    return TensorType(tuple(shape), dtype)


def _arr(shape, dtype=np.float64, start=0.3):
    n = int(np.prod(shape))
    return (start + 0.37 * np.arange(n) % 1.7).astype(dtype).reshape(shape)


_TUPLES = [  # first element of every dtype; 0-d, size-1 and empty elements
    [_arr((2, 3), np.float32), np.array(3, np.int32)],
    [_arr((0,)), np.array([True])],
    [np.arange(4, dtype=np.int64).reshape(1, 4), _arr((0, 2), np.float32)],
    [np.array(7, np.int32)],
    [np.array([True, False])],
]


def _tuple_examples():
    return [(list(xs), {}, lambda *a: tuple(a)) for xs in _TUPLES]


def _tuple_get_examples():
    return [(list(xs), {"index": i}, lambda *a, index: a[index]) for xs in _TUPLES for i in range(len(xs))]


def _cond_examples():
    x3, y3 = _t((3,)), _t((3,))
    two = _make_region("true", (x3, y3), lambda b, x, y: [b.mul(b.sin(x), y), b.add(x, y)])
    two_f = _make_region("false", (x3, y3), lambda b, x, y: [b.sub(x, y), b.mul(x, y)])
    scalar_t = _make_region("true", (_t(()),), lambda b, x: [b.exp(x)])
    scalar_f = _make_region("false", (_t(()),), lambda b, x: [b.neg(x)])
    empty = _t((0, 2), dt.float32)
    empty_t = _make_region("true", (empty,), lambda b, x: [b.add(x, x)])
    empty_f = _make_region("false", (empty,), lambda b, x: [x])
    one = _t((1,))
    one_t = _make_region("true", (one, one), lambda b, x, unused: [b.mul(x, x)])
    one_f = _make_region("false", (one, one), lambda b, unused, y: [b.cos(y)])
    out = []
    for p in (True, False):
        out.append(([np.array(p), _arr((3,)), _arr((3,), start=1.1)], {"true": two, "false": two_f},
                    lambda p, x, y, **_: (np.sin(x) * y, x + y) if p else (x - y, x * y)))
        out.append(([np.array(p), _arr(())], {"true": scalar_t, "false": scalar_f},
                    lambda p, x, **_: (np.exp(x),) if p else (-x,)))
    out.append(([np.array(True), _arr((0, 2), np.float32)], {"true": empty_t, "false": empty_f},
                lambda p, x, **_: (x + x,)))
    out.append(([np.array(False), _arr((1,)), _arr((1,), start=0.9)], {"true": one_t, "false": one_f},
                lambda p, x, y, **_: (x * x,) if p else (np.cos(y),)))
    return out


def _while_examples():
    i32, v3 = _t((), dt.int32), _t((3,))
    # cond: i < n (n a cond const); body: (i + 1, x * w + 0.5) (w a body const)
    cond = _make_region("cond", (i32, i32, v3), lambda b, n, i, x: [b.lt(i, n)])
    body = _make_region("body", (v3, i32, v3), lambda b, w, i, x: [
        b.add(i, b.const(1, (), dt.int32)), b.add(b.mul(x, w), b.const(0.5, (3,), dt.float64))])

    def counted(n, w, i, x, **_):
        while i < n:
            i, x = i + 1, x * w + 0.5
        return np.int32(i), x

    # no consts: halve a scalar until it is below 0.1
    s = _t(())
    halve_cond = _make_region("cond", (s,), lambda b, x: [b.gt(x, b.const(0.1, (), dt.float64))])
    halve = _make_region("body", (s,), lambda b, x: [b.mul(x, b.const(0.5, (), dt.float64))])

    def halving(x, **_):
        while x > 0.1:
            x = x * 0.5
        return (x,)

    # an empty carry next to a counter
    e = _t((0, 2), dt.float32)
    ecount = _make_region("cond", (i32, e), lambda b, i, x: [b.lt(i, b.const(2, (), dt.int32))])
    ebody = _make_region("body", (i32, e), lambda b, i, x: [b.add(i, b.const(1, (), dt.int32)), b.neg(x)])
    attrs = {"num_cond_consts": 1, "num_body_consts": 1}
    return [
        ([np.array(3, np.int32), _arr((3,), start=0.8), np.array(0, np.int32), _arr((3,))],
         {"cond": cond, "body": body, **attrs}, counted),
        ([np.array(1, np.int32), _arr((3,), start=0.8), np.array(4, np.int32), _arr((3,))],  # runs zero times
         {"cond": cond, "body": body, **attrs}, counted),
        ([np.array(1.7)], {"cond": halve_cond, "body": halve, "num_cond_consts": 0, "num_body_consts": 0}, halving),
        ([np.array(0, np.int32), _arr((0, 2), np.float32)],
         {"cond": ecount, "body": ebody, "num_cond_consts": 0, "num_body_consts": 0},
         lambda i, x, **_: (np.int32(2), x)),
    ]


def _scan_examples():
    v3 = _t((3,))
    # consts w; carry c; xs x: c' = c * w + x, y = sin(c)
    body = _make_region("body", (v3, v3, v3), lambda b, w, c, x: [b.add(b.mul(c, w), x), b.sin(c)])

    def affine(w, c, xs, *, reverse, **_):
        ys = np.zeros_like(xs)
        for i in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            ys[i] = np.sin(c)
            c = c * w + xs[i]
        return c, ys

    # 0-d carry and two xs: c' = c + x * z, ys = (c * x, x > 0.5 as bool)
    s = _t(())
    two = _make_region("body", (s, s, s), lambda b, c, x, z: [
        b.add(c, b.mul(x, z)), b.mul(c, x), b.gt(x, b.const(0.5, (), dt.float64))])

    def running(c, xs, zs, **_):
        ys, flags = np.zeros_like(xs), np.zeros(xs.shape, bool)
        for i in range(len(xs)):
            ys[i], flags[i] = c * xs[i], xs[i] > 0.5
            c = c + xs[i] * zs[i]
        return c, ys, flags

    # no xs, an int counter and a size-1 float carry
    count = _make_region("body", (_t((), dt.int32), _t((1,), dt.float32)), lambda b, i, v: [
        b.add(i, b.const(1, (), dt.int32)), b.mul(v, b.const(2.0, (1,), dt.float32)),
        b.convert_element_type(i, dtype=dt.float32)])

    def counting(i, v, *, length, **_):
        ys = np.zeros(length, np.float32)
        for k in range(length):
            ys[k] = i
            i, v = i + 1, v * np.float32(2)
        return np.int32(i), v.astype(np.float32), ys

    common = {"num_consts": 1, "num_carry": 1}
    return [
        ([_arr((3,), start=0.7), _arr((3,)), _arr((4, 3), start=0.2)],
         {"body": body, "length": 4, "reverse": False, **common}, affine),
        ([_arr((3,), start=0.7), _arr((3,)), _arr((4, 3), start=0.2)],
         {"body": body, "length": 4, "reverse": True, **common}, affine),
        ([_arr((3,), start=0.7), _arr((3,)), _arr((0, 3))], {"body": body, "length": 0, "reverse": False, **common},
         affine),
        ([_arr(()), _arr((5,)), _arr((5,), start=1.2)],
         {"body": two, "length": 5, "reverse": False, "num_consts": 0, "num_carry": 1}, running),
        ([np.array(2, np.int32), _arr((1,), np.float32)],
         {"body": count, "length": 3, "reverse": False, "num_consts": 0, "num_carry": 2}, counting),
    ]


MAKE_TUPLE.examples = _tuple_examples
TUPLE_GET.examples = _tuple_get_examples
COND.examples = _cond_examples
WHILE_LOOP.examples = _while_examples
SCAN.examples = _scan_examples


# The differentiation rules of every control primitive, the tuple ones included, are in control_ad.py.

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
from ..interpreter import interpret
from ..primitive import Primitive, register
from ..regions import Region
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
    "tuple_get", _tuple_get_type, lambda t, *, index: t[index], num_operands=1, family="control",
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

"""The tape: eager ops on tensors that require grad record one `Record` each.

A record is an IR node waiting to be placed in a graph: the primitive, its frozen attrs and,
per operand, the operand tensor with the record that produced it *at the time* (None for a
leaf or a constant) and its storage version. The result tensor points at its record
(`grad_fn`). `backward` (`_engine`) turns the records between the leaves and the outputs into
a `Graph`. Values are still computed eagerly; the record costs one small object per op, and
nothing is recorded unless some tensor ever required grad and grad mode is on.
"""
from __future__ import annotations

import itertools
import weakref

from .._state import STATE

_seq = itertools.count()
ACTIVE = [False]  # set once any tensor requires grad: until then bind skips the check entirely
RETAINED: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # id -> non-leaf that retains grad


class Record:
    """One recorded op; also the tensor's ``grad_fn`` (``name()`` gives e.g. ``MulBackward0``)."""

    __slots__ = ("prim", "attrs", "operands", "seq", "out_type", "freed", "__weakref__")

    def __init__(self, prim, attrs, operands, out_type):
        self.prim, self.attrs, self.out_type = prim, attrs, out_type
        self.operands = operands  # ((tensor, producing record or None, version), ...)
        self.seq = next(_seq)
        self.freed = False

    def name(self) -> str:
        return "".join(p.capitalize() for p in self.prim.name.split("_")) + "Backward0"

    @property
    def next_functions(self) -> tuple:
        """The records (or None for leaves and constants) feeding this one, as torch's grad_fn."""
        if self.operands is None:
            return ()
        return tuple((rec, 0) for _, rec, _ in self.operands)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


def version(t) -> int:
    """The version of `t`'s storage (bumped by every in-place write into it or a view of it)."""
    base = t._base
    return (t if base is None else base).__dict__.get("_ver", 0)


def bump_version(t) -> None:
    root = t if t._base is None else t._base
    d = root.__dict__
    d["_ver"] = d.get("_ver", 0) + 1


def maybe_record(prim, attrs, operands, out) -> None:
    """Called by `bind` after an eager op: record it when grad mode is on and an operand requires grad."""
    if not STATE.grad_enabled or prim.name == "stop_gradient":
        return
    for t in operands:
        if t.__dict__.get("_rg"):
            break
    else:
        return
    if not out.dtype.is_floating_point:
        return  # comparisons, argmax, ...: integer results carry no gradient (as torch)
    ops = tuple((t, t.__dict__.get("_ag"), version(t)) for t in operands)
    d = out.__dict__
    d["_ag"] = Record(prim, attrs, ops, out._type())
    d["_rg"] = True


# `_engine.run_taped`, put here when `_engine` is imported: `_trace` runs graphs on the tape through
# it without importing `_engine` (which imports `_trace`)
RUN_TAPED: list = [None]


def needs_tape(tensors) -> bool:
    """Must a graph run on these concrete tensors be recorded (grad mode on, one of them requires grad)?

    Then a transform's graph (``vmap``/``grad``/... called on such tensors) runs op by op through
    `bind` (`_engine.run_taped`), so its result has a ``grad_fn`` and ``backward`` reaches them.
    """
    if not ACTIVE[0] or not STATE.grad_enabled:
        return False
    for t in tensors:
        if t.__dict__.get("_rg"):
            return True
    return False

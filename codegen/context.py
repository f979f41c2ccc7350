"""What a lowering sees while one kernel is emitted: the builder, the kernel's
buffers, and `value(v, idx)` — the element of SSA value `v` at index `idx`,
loaded from a buffer when `v` is materialised, otherwise computed by lowering
its (fused) node at that index.

An `Index` names one element of a tensor of static shape, either by its
coordinates (`dims`) or by its row-major position (`linear`), or both; the
missing form is derived on demand. Layout lowerings map an output index to an
operand index, so a chain of reshape/transpose/broadcast/slice is plain index
arithmetic inside one loop nest. Reshape and size-preserving broadcast keep the
linear position, so fused elementwise chains over them stay contiguous loads
that LLVM vectorises.

Run-time errors (an index out of range) are reported through a *status word*:
every kernel function takes a pointer to the entry's i64 status, which the
entry returns. A lowering calls `checked_index`, which ORs "out of range" into
a per-node flag kept in a register (a vectorisable or-reduction, no branch in
the loop) and clamps the index so the load stays in bounds; `finish` stores
the node's code (its position in `graph.nodes` + 1) into the status when the
flag is set. The `Executable` checks the status once per call and raises.
"""
from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from llvmlite import ir

from tensorplay.ir.core import Node, Value
from . import irutil as u
from .registry import LOWERINGS

if TYPE_CHECKING:
    from .schedule import Kernel


def strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of `shape`."""
    out = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        out[k] = out[k + 1] * max(shape[k + 1], 1)  # an empty tensor has no elements to address
    return tuple(out)


class Index:
    """One element of a tensor of static `shape`: coordinates and/or linear position (i64 values).

    `ranges`, when known, bounds each coordinate statically: ``lo <= dims[a] < hi`` for
    ``(lo, hi) = ranges[a]`` (a loop nest's box, `schedule.Kernel.boxes`), so that a lowering can
    settle at compile time what would otherwise be a per-element test (pad, concatenate)."""

    __slots__ = ("shape", "_dims", "_linear", "ranges")

    def __init__(self, shape: tuple[int, ...], dims: list[ir.Value] | None = None,
                 linear: ir.Value | None = None, ranges: tuple[tuple[int, int], ...] | None = None):
        assert dims is not None or linear is not None or not shape or prod(shape) <= 1
        assert ranges is None or (dims is not None and len(ranges) == len(shape))
        self.shape = shape
        self._dims = dims
        self._linear = linear
        self.ranges = ranges

    def dims(self, b: ir.IRBuilder) -> list[ir.Value]:
        if self._dims is None:
            if self._linear is None:  # 0-d or single-element tensor
                self._dims = [u.i64(0)] * len(self.shape)
            else:
                st = strides(self.shape)
                dims = []
                outer = True  # the linear position is below the size: the outermost real dim needs no modulo
                for s, n in zip(st, self.shape):
                    if n <= 1:
                        dims.append(u.i64(0))
                        continue
                    q = u.idiv(b, self._linear, s)
                    dims.append(q if outer else u.imod(b, q, n))
                    outer = False
                self._dims = dims
        return self._dims

    def linear(self, b: ir.IRBuilder) -> ir.Value:
        if self._linear is None:
            if self._dims is None:
                self._linear = u.i64(0)
            else:
                acc = u.i64(0)
                for d, s, n in zip(self._dims, strides(self.shape), self.shape):
                    if n > 1:
                        acc = u.iadd(b, acc, u.imul(b, d, s))
                self._linear = acc
        return self._linear


class KernelContext:
    """Emission state for one kernel function: builder, buffers and the memo of computed elements."""

    def __init__(self, builder: ir.IRBuilder, kernel: "Kernel", buffers: dict[Value, ir.Value],
                 status: ir.Value | None = None, codes: dict[Node, int] | None = None,
                 final: frozenset = frozenset()):
        self.b = builder
        self.final = final  # graph outputs no kernel reads: candidates for streaming stores (`streamed`)
        self.kernel = kernel
        self.buffers = buffers
        self.fused = kernel.fused_values()
        self._memo: dict[tuple[Value, Index], ir.Value] = {}
        self._status = status  # ptr to the entry's i64 status word
        self._codes = codes or {}  # node -> its error code (position in graph.nodes + 1)
        self._flags: dict[Node, ir.Value] = {}  # node -> i1 slot: "an index was out of range"

    # --- element access -----------------------------------------------------------------------
    def value(self, v: Value, idx: Index) -> ir.Value:
        """The element of `v` at `idx`, as a register value (bool as i1)."""
        key = (v, idx)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if v in self.fused:
            node = v.node
            out = LOWERINGS[node.prim.name].emit(self, node, idx)
            low = v.dtype
            if low.kind == "f" and low.itemsize == 2 and not _exact_in(node, low):
                out = u.round_to(self.b, out, low)  # computed in float32: one rounding per operation
        else:
            out = self.load(v, idx)
        self._memo[key] = out
        return out

    def operands(self, node: Node, idx: Index) -> list[ir.Value]:
        """All operands of an elementwise node at the same index."""
        return [self.value(v, idx) for v in node.inputs]

    def pointer(self, v: Value, idx: Index) -> ir.Value:
        """Address of element `idx` of the materialised value `v`."""
        base = self.buffers[v]
        off = idx.linear(self.b)
        if isinstance(off, ir.Constant) and off.constant == 0:
            return base
        return self.b.gep(base, [off], inbounds=True, source_etype=u.mem_type(v.dtype))

    def load(self, v: Value, idx: Index) -> ir.Value:
        t = u.mem_type(v.dtype)
        x = self.b.load(self.pointer(v, idx), typ=t, align=_ALIGN[t])
        if t is u.I16:  # a 16-bit float: computed in float32
            return u.widen(self.b, x, v.dtype)
        return self.b.trunc(x, u.I1) if v.dtype.is_bool else x

    def store(self, v: Value, idx: Index, x: ir.Value) -> None:
        t = u.mem_type(v.dtype)
        if v.dtype.is_bool:
            x = self.b.zext(x, u.I8)
        elif t is u.I16:
            x = u.narrow(self.b, x, v.dtype)
        self.b.store(x, self.pointer(v, idx), align=_ALIGN[t])

    def streamed(self, v: Value) -> int | None:
        """The vector width (bytes) of non-temporal stores for output `v` -- a graph output that no
        kernel reads, of at least `irutil.streaming` bytes -- or None: regular stores."""
        if v not in self.final:
            return None
        lo, width = u.streaming()
        return width if lo is not None and v.type.size * u.type_bytes(u.mem_type(v.dtype)) >= lo else None

    # --- run-time checks ----------------------------------------------------------------------
    def checked_index(self, node: Node, j: ir.Value, n: int) -> ir.Value:
        """Index `j` (any integer type) into an axis of size `n >= 1`, as i64: flags `node` as having
        read out of range when `j` is not in [0, n), and returns `j` clamped into range."""
        b = self.b
        if j.type != u.I64:
            j = b.sext(j, u.I64)
        bad = b.icmp_unsigned(">=", j, u.i64(n))  # negative indices are huge unsigned
        slot = self._flags.get(node)
        if slot is None:
            slot = self._flags[node] = u.alloca_at_entry(b, u.I1, "oob", init=u.const(u.I1, 0))
        b.store(b.or_(b.load(slot, typ=u.I1), bad), slot)
        return b.select(bad, u.i64(0), j)

    def clear_flags(self) -> None:
        """Lower every flag raised so far (before emitting a kernel's body a second time)."""
        for slot in self._flags.values():
            self.b.store(u.const(u.I1, 0), slot)

    def finish(self) -> None:
        """Report the flags raised in this kernel into the status word (call before returning)."""
        b = self.b
        for node, slot in self._flags.items():
            with u.if_then(b, b.load(slot, typ=u.I1)):
                b.store(u.i64(self._codes.get(node, -1)), self._status)

    def forget(self) -> None:
        """Drop memoised elements (call when leaving the loop body they were computed in)."""
        self._memo.clear()


_ALIGN = {u.I8: 1, u.I16: 2, u.I32: 4, u.I64: 8, u.F32: 4, u.F64: 8}
# Elementwise results that are exact in the operands' 16-bit type (no rounding needed after float32).
_EXACT_LOW = frozenset({"neg", "abs", "sign", "floor", "ceil", "round", "max", "min", "select", "stop_gradient"})


def _exact_in(node: Node, low) -> bool:
    """Is `node`'s float32 result already a value of 16-bit type `low` (moves, exact ops on `low` operands)?"""
    if node.prim.family == "layout" or node.prim.name == "take":
        return True
    if node.prim.name == "convert_element_type":
        return node.inputs[0].dtype is low
    return node.prim.name in _EXACT_LOW and all(x.dtype is low for x in node.inputs if x.dtype.kind == "f")

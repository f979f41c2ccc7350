"""Control-flow lowerings: real branches and loops in the entry function.

A control node's regions are scheduled like any graph (`schedule.Control`), so a
loop body is fused and vectorised kernels; these lowerings emit the control flow
around their calls (`module.EntryBuilder`, `module.ControlSite`):

- ``cond``: a branch on the predicate byte; each side runs its region writing the
  result buffers directly.
- ``scan``: one LLVM loop over the static `length` (never unrolled here). Step t
  reads the x slices and writes the y slices in place, at byte offset
  s * slice size (s = t, or length-1-t when `reverse`): no slice is copied.
- ``while_loop``: a loop that runs the ``cond`` region, leaves when it is false,
  then runs the ``body`` region.

Carries are double-buffered: the body reads the current buffer and writes the
next, and the two swap at every step, so no kernel writes what it reads. The first
step reads the `init` operand itself (no copy in). For a scan, whose trip count is
static, the buffers are ordered so that the last step writes the result buffer
(no copy out); a while loop copies its final carry once when it ended in the other
buffer. A carry the body returns unchanged stays in its init buffer throughout. A scan carry
whose new value is also one of its ys (``return h, h``) lives in the ys slices instead: step t
writes slice s(t) and step t + 1 reads it, so nothing is copied per step (`_SliceCarry`).

Index errors: after every step the loop leaves when a kernel has set the status
word, so an error inside a body raises at the call and never feeds a wrong carry
into further steps (a while loop whose condition depends on it would not end).

`tuple_get` is an alias (its value is the element's buffer); `make_tuple` and the
custom-rule calls are removed before scheduling (`schedule.normalize`): a
custom_jvp_call or custom_vjp_call runs its primal function `fun`, a checkpoint its
`body`, a custom_vjp_lin (forward mode through a custom VJP) the transpose of the
user's `bwd`, inlined so that they fuse with their neighbours. (A checkpoint's
rematerialisation is a property of the differentiated graph, which already recomputes
its body in the backward pass; compiled, the body is plain code.)
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from llvmlite import ir

from tensorplay.ir.core import Graph, Node
from .. import irutil as u
from ..registry import Lowering, register


def _nbytes(t) -> int:
    return t.size * t.dtype.itemsize


class _Loop:
    """An emitted loop: `iv` counts completed steps (i64); `leave_if(c)` exits when `c` holds."""

    def __init__(self, b: ir.IRBuilder, iv: ir.Value, exit_block: ir.Block):
        self._b = b
        self.iv = iv
        self._exit = exit_block

    def leave_if(self, cond: ir.Value) -> None:
        b = self._b
        stay = b.append_basic_block("loop.stay")
        b.cbranch(cond, self._exit, stay)
        b.position_at_end(stay)


@contextmanager
def _loop(b: ir.IRBuilder, count: int | None, name: str) -> Iterator[_Loop]:
    """``for (iv = 0; count is None or iv < count; ++iv) { <body> }`` with early exits; the builder
    continues after the loop."""
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    exit_ = b.append_basic_block(f"{name}.exit")
    b.branch(head)
    b.position_at_end(head)
    iv = b.phi(u.I64, name=name)
    iv.add_incoming(u.i64(0), pre)
    if count is None:
        b.branch(body)
    else:
        b.cbranch(b.icmp_signed("<", iv, u.i64(count)), body, exit_)
    b.position_at_end(body)
    yield _Loop(b, iv, exit_)
    iv.add_incoming(b.add(iv, u.i64(1), name=f"{name}.next", flags=("nuw", "nsw")), b.block)
    b.branch(head)
    b.position_at_end(exit_)


class _Carry:
    """One loop carry: its init buffer, the buffers it alternates between, and its result.

    Step t writes `bufs[t % 2]` and reads `init` (t = 0) or `bufs[(t - 1) % 2]`."""

    def __init__(self, init: ir.Value, result: ir.Value | None, other: ir.Value | None, invariant: bool,
                 final_in_first: bool = True):
        self.init = init
        self.result = result
        self.invariant = invariant
        self.bufs = (result, other) if final_in_first else (other, result)

    def current(self, b: ir.IRBuilder, loop: _Loop) -> ir.Value:
        if self.invariant:
            return self.init
        if self.bufs[1] is None:  # a one-step loop: only step 0 runs
            return self.init
        odd = b.trunc(loop.iv, u.I1)
        first = b.icmp_unsigned("==", loop.iv, u.i64(0))
        return b.select(first, self.init, b.select(odd, self.bufs[0], self.bufs[1]))

    def next(self, b: ir.IRBuilder, loop: _Loop) -> ir.Value | None:
        if self.invariant:
            return None
        if self.bufs[1] is None:
            return self.bufs[0]
        return b.select(b.trunc(loop.iv, u.I1), self.bufs[1], self.bufs[0])


def _carries(site, node: Node, init: list, body: Graph, n_consts: int, always_two: bool,
             final_in_first=lambda j: True) -> list[_Carry]:
    out = []
    for j, ptr in enumerate(init):
        invariant = body.outputs[j] is body.inputs[n_consts + j]
        result = site.results[j]
        if invariant:
            out.append(_Carry(ptr, result, None, True))
            continue
        if result is None:
            result = site.temp(f"final{j}")
        other = site.temp(f"carry{j}") if always_two else None
        out.append(_Carry(ptr, result, other, False, final_in_first(j)))
    return out


def _carry_temps(node: Node, body: Graph, n_consts: int, n_carry: int, used: list[bool], two: bool) -> dict:
    temps = {}
    for j in range(n_carry):
        if body.outputs[j] is body.inputs[n_consts + j]:
            continue
        t = node.out.type.elements[j]
        if not used[j]:
            temps[f"final{j}"] = _nbytes(t)
        if two:
            temps[f"carry{j}"] = _nbytes(t)
    return temps


class _SliceCarry:
    """A carry whose new value is also a y (``return h, h``): it lives in the ys slices. Step t
    writes slice s(t), which the next step reads as its carry: no carry buffers, no per-step copy;
    the final carry is copied out of the last slice once."""

    invariant = False

    def __init__(self, init: ir.Value, result: ir.Value | None, ys: ir.Value, slice_bytes: int, length: int,
                 reverse: bool):
        self.init, self.result, self._ys = init, result, ys
        self._bytes, self._length, self._reverse = slice_bytes, length, reverse

    def _slice(self, b: ir.IRBuilder, s: ir.Value) -> ir.Value:
        return b.gep(self._ys, [b.mul(s, u.i64(self._bytes))], inbounds=True, source_etype=u.I8)

    def current(self, b: ir.IRBuilder, loop: _Loop) -> ir.Value:
        # the slice step t - 1 wrote: s(t - 1) = t - 1, or length - t when reverse
        prev = b.sub(u.i64(self._length), loop.iv) if self._reverse else b.sub(loop.iv, u.i64(1))
        first = b.icmp_unsigned("==", loop.iv, u.i64(0))
        return b.select(first, self.init, self._slice(b, b.select(first, u.i64(0), prev)))

    def next(self, b: ir.IRBuilder, loop: _Loop) -> ir.Value:
        return self._slice(b, b.sub(u.i64(self._length - 1), loop.iv) if self._reverse else loop.iv)

    def last(self, b: ir.IRBuilder) -> ir.Value:
        return self._slice(b, u.i64(0 if self._reverse else self._length - 1))


def _slice_carries(body: Graph, nc: int, nk: int, ys_used: list[bool]) -> dict[int, int]:
    """carry j -> y m for the carries whose new value is also y m (a computed value, not a body
    input, whose stacked ys are wanted): they live in the ys slices (`_SliceCarry`)."""
    inputs = set(body.inputs)
    out: dict[int, int] = {}
    taken: set[int] = set()
    for j in range(nk):
        v = body.outputs[j]
        if v in inputs or v in body.outputs[:j]:
            continue
        for m, y in enumerate(body.outputs[nk:]):
            if y is v and ys_used[m] and m not in taken:
                out[j] = m
                taken.add(m)
                break
    return out


# --- scan ----------------------------------------------------------------------------------------
def _scan_temps(node: Node, used: list[bool]) -> dict:
    a = node.attrs
    body, nc, nk = a["body"].graph, a["num_consts"], a["num_carry"]
    temps = _carry_temps(node, body, nc, nk, used, a["length"] >= 2)
    if a["length"] > 0:
        for j in _slice_carries(body, nc, nk, used[nk:]):
            temps.pop(f"final{j}", None)
            temps.pop(f"carry{j}", None)
    for m in range(nk, len(node.out.type.elements)):
        if not used[m]:  # every step writes its y into one slice nobody reads
            temps[f"y{m}"] = _nbytes(body.outputs[m].type)
    return temps


def _emit_scan(entry, site) -> None:
    b = entry.b
    node = site.node
    a = node.attrs
    body, nc, nk, length = a["body"].graph, a["num_consts"], a["num_carry"], a["length"]
    ops = site.operands
    consts, init, xs = ops[:nc], ops[nc:nc + nk], ops[nc + nk:]
    x_types = body.in_types[nc + nk:]
    y_types = body.out_types[nk:]
    in_slices = _slice_carries(body, nc, nk, [p is not None for p in site.results[nk:]]) if length > 0 else {}
    if in_slices:  # their temps were not planned (`_scan_temps`): give `_carries` a buffer it won't use
        site = _SliceSite(site, in_slices)
    carries = _carries(site, node, init, body, nc, length >= 2,
                       final_in_first=lambda j: (length - 1) % 2 == 0)
    for j, m in in_slices.items():
        carries[j] = _SliceCarry(init[j], site.results[j], site.results[nk + m], _nbytes(y_types[m]), length,
                                 a["reverse"])
    if length > 0:
        with _loop(b, length, "scan") as loop:
            s = b.sub(u.i64(length - 1), loop.iv) if a["reverse"] else loop.iv
            x_at = [entry.at(x, b.mul(s, u.i64(_nbytes(t)))) for x, t in zip(xs, x_types)]
            ys = []
            for m, t in enumerate(y_types):
                ptr = site.results[nk + m]
                if m in in_slices.values():
                    ys.append(None)  # written by its carry (the same value, the same slice)
                else:
                    ys.append(site.temp(f"y{nk + m}") if ptr is None else entry.at(ptr, b.mul(s, u.i64(_nbytes(t)))))
            site.region("body", consts + [c.current(b, loop) for c in carries] + x_at,
                        [c.next(b, loop) for c in carries] + ys)
            loop.leave_if(entry.failed())
    for c, t in zip(carries, body.in_types[nc:nc + nk]):
        if c.result is None:
            continue
        if c.invariant or length == 0:
            entry.copy(c.result, c.init, t)
        elif isinstance(c, _SliceCarry):
            entry.copy(c.result, c.last(b), t)


class _SliceSite:
    """A ControlSite whose temps for the slice carries were not planned: asking for one gives None
    (never used: `_emit_scan` replaces those carries)."""

    def __init__(self, site, in_slices: dict[int, int]):
        self._site = site
        self._skip = {f"{k}{j}" for j in in_slices for k in ("final", "carry")}

    def temp(self, name: str):
        return None if name in self._skip else self._site.temp(name)

    def __getattr__(self, name):
        return getattr(self._site, name)


# --- while_loop ----------------------------------------------------------------------------------
def _while_temps(node: Node, used: list[bool]) -> dict:
    a = node.attrs
    temps = _carry_temps(node, a["body"].graph, a["num_body_consts"], len(node.out.type.elements), used, True)
    temps["pred"] = 1
    return temps


def _emit_while(entry, site) -> None:
    b = entry.b
    node = site.node
    a = node.attrs
    body, ncc, nbc = a["body"].graph, a["num_cond_consts"], a["num_body_consts"]
    ops = site.operands
    cond_consts, body_consts, init = ops[:ncc], ops[ncc:ncc + nbc], ops[ncc + nbc:]
    carries = _carries(site, node, init, body, nbc, True)
    pred = site.temp("pred")
    with _loop(b, None, "while") as loop:
        current = [c.current(b, loop) for c in carries]
        site.region("cond", cond_consts + current, [pred])
        stop = b.icmp_unsigned("==", b.load(pred, typ=u.I8), u.const(u.I8, 0))
        loop.leave_if(b.or_(stop, entry.failed()))
        site.region("body", body_consts + current, [c.next(b, loop) for c in carries])
        loop.leave_if(entry.failed())
    # `current` was computed in the loop header, which dominates both exits
    for c, cur, t in zip(carries, current, body.in_types[nbc:]):
        if c.result is None:
            continue
        if c.invariant:
            entry.copy(c.result, c.init, t)
            continue
        with u.if_then(b, b.icmp_unsigned("!=", cur, c.result)):
            entry.copy(c.result, cur, t)


# --- cond ----------------------------------------------------------------------------------------
def _cond_temps(node: Node, used: list[bool]) -> dict:
    return {f"result{i}": _nbytes(t) for i, t in enumerate(node.out.type.elements) if not used[i]}


def _emit_cond(entry, site) -> None:
    b = entry.b
    pred = b.icmp_unsigned("!=", b.load(site.operands[0], typ=u.I8), u.const(u.I8, 0))
    results = [site.temp(f"result{i}") if p is None else p for i, p in enumerate(site.results)]
    with b.if_else(pred) as (then, otherwise):
        with then:
            site.region("true", site.operands[1:], results)
        with otherwise:
            site.region("false", site.operands[1:], results)


register("cond", Lowering("control", _emit_cond, temps=_cond_temps))
register("scan", Lowering("control", _emit_scan, temps=_scan_temps))
register("while_loop", Lowering("control", _emit_while, temps=_while_temps))
register("tuple_get", Lowering("alias", None))
register("make_tuple", Lowering("alias", None))


# --- inlined regions: the custom-rule primitives -------------------------------------------------
def inline_region(attr: str):
    """An `inline` rule running region `attr` of the node on its trailing operands (leading
    operands, if any, serve only the node's other regions)."""
    def inline(node: Node) -> tuple[Graph, tuple]:
        graph = node.attrs[attr].graph
        return graph, node.inputs[len(node.inputs) - len(graph.inputs):]
    return inline


def _inline_custom_vjp_lin(node: Node) -> tuple[Graph, tuple]:
    """custom_vjp_lin (forward mode through a custom VJP): the user's bwd transposed, as its impl."""
    from tensorplay.ir.prims.custom import forward_tangent_graph

    bwd, n_consts = node.attrs["bwd"], node.attrs["num_consts"]
    n_res = len(node.inputs) - len(bwd.out_types) - n_consts
    return forward_tangent_graph(bwd, n_consts, n_res), node.inputs


register("custom_jvp_call", Lowering("inline", None, inline=inline_region("fun")))
register("custom_vjp_call", Lowering("inline", None, inline=inline_region("fun")))
register("checkpoint", Lowering("inline", None, inline=inline_region("body")))
register("custom_vjp_lin", Lowering("inline", None, inline=_inline_custom_vjp_lin))

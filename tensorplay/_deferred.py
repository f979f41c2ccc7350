"""Deferred composite blocks: a memo hit's nodes, built only when someone reads them.

A `memo_composite` hit (`tensorplay._traced_memo`) does not build the composite's Nodes and
Values: only its result is visible to user code. It reserves the block's value ids (so every
later value is numbered as if the nodes existed), records one compact tape step, and appends one
`Deferred` entry to the trace's node list, whose result Value points at it (``value.node``).
`expand` turns the entries into the nodes the eager replay would have appended, with the same
ids, primitives, attributes and inputs, in place: `Trace.materialise` calls it before any reader
walks the trace's nodes, and `_TracedClosedGraph.graph` when a finished trace's graph is built.

The tape step of a block is its program's token (a negative int: never a signature id), the
relative ids of its operands and outside values (op constants, scalar inputs) in program order,
then the relative id of the first value of each run of consecutive nodes. The program fixes every
node's primitive, attributes, result type and which of those values (or earlier nodes of the
block) it reads, so equal steps mean equal nodes: the trace's structural key stays sound.
"""
from __future__ import annotations

from itertools import islice

from tensorplay.ir import Value, get_primitive
from tensorplay.ir.core import Node
from tensorplay.ir.values import _ids

from ._tensor import Tensor
from ._views import _NOTHING

__all__ = ["Deferred", "expand", "replay", "NODE", "FIXED", "SCALAR"]

NODE, FIXED, SCALAR = 0, 1, 2  # the kinds of a composite program's steps (see `_traced_memo`)

_new = object.__new__
_FULL = get_primitive("full")


class Deferred:
    """A composite block not built yet: its program's steps, the values it reads (operands, then
    the outside values of its FIXED/SCALAR steps in order), the first id of each run of NODE steps,
    the number of operands, its result Value (``out.node`` is this entry until it is built), and
    the nodes of the outside values the hit made (``(nodes, signature ids)`` or None), which go
    where their steps are. `prog` is the memo program the block replays (`_traced_memo`), which an
    op memo that saw the block remembers to replay it without the op layer (`memo_traced_op`)."""

    __slots__ = ("steps", "refs", "starts", "n_ops", "out", "made", "prog")

    def nodes(self) -> tuple[list, list]:
        """(the block's nodes, their signature ids), built now; the result Value is linked to its node.

        >>> from tensorplay.ir import TensorType, float32, get_primitive
        >>> x = Value(TensorType((2,), float32))
        >>> out = Value(TensorType((2,), float32))
        >>> d = _new(Deferred)
        >>> steps = ((NODE, (get_primitive("neg"), {}, 7, out.type), (0,)),)
        >>> d.steps, d.refs, d.starts, d.n_ops, d.out, d.made = steps, [x], [out.id], 1, out, None
        >>> out.node = d
        >>> nodes, sigs = d.nodes()
        >>> nodes[0].out is out, out.node is nodes[0], nodes[0].inputs == (x,), sigs
        (True, True, True, [7])
        """
        refs, starts, out = self.refs, self.starts, self.out
        n = self.n_ops
        vals = refs[:n]
        push = vals.append
        nodes, sigs = [], []
        made, made_sigs = self.made or ((), ())
        ext, run, cur, in_run, m = n, -1, 0, False, 0
        for step in self.steps:
            if step[0] != NODE:
                v = refs[ext]
                if m < len(made) and made[m].out is v:
                    nodes.append(made[m])
                    sigs.append(made_sigs[m])
                    m += 1
                push(v)
                ext += 1
                in_run = False
                continue
            if not in_run:
                run += 1
                cur = starts[run]
                in_run = True
            prim, attrs, sig, typ = step[1]
            node = _new(Node)
            node.prim, node.inputs, node.attrs = prim, tuple([vals[i] for i in step[2]]), attrs
            if cur == out.id:
                value = out
            else:
                value = _new(Value)
                value.type, value.id = typ, cur
            value.node = node
            node.out = value
            cur += 1
            nodes.append(node)
            sigs.append(sig)
            push(value)
        return nodes, sigs


def expand(nodes: list, sigs: list, start: int = 0) -> None:
    """Replace every `Deferred` entry of `nodes` (from index `start`) by its nodes, in place (the
    lists may be held by others); when `sigs` is parallel to `nodes` (every node taped), its entry
    by their signature ids too (else `sigs` describes no graph and is left as it is)."""
    parallel = len(nodes) == len(sigs)
    out_nodes = nodes[:start]
    out_sigs = sigs[:start] if parallel else None
    for k in range(start, len(nodes)):
        entry = nodes[k]
        if entry.__class__ is Deferred:
            more, more_sigs = entry.nodes()
            out_nodes += more
            if parallel:
                out_sigs += more_sigs
        else:
            out_nodes.append(entry)
            if parallel:
                out_sigs.append(sigs[k])
    nodes[:] = out_nodes
    if parallel:
        sigs[:] = out_sigs


def replay(top, prog, operands: list) -> Tensor:
    """A memo hit: the block of `prog` (a `memo_composite` program, see `_traced_memo._learn`) on
    `operands` (the values it reads, a list the block keeps) as one `Deferred` entry of `top`.
    Its outside values (op constants, scalar inputs) are taken now through the trace's dedup, the
    ids of its runs of nodes reserved in order (as building them would take them), and one tape
    step recorded.

    On a trace replaying a template (`tensorplay._replay`) whose next op is this block of `prog`
    on the same operands, the result is the template's, and nothing is recorded."""
    made = top.made
    if made is not None:
        e = top.expect[len(made)]
        if e[0] is prog and _same_operands(made, e, operands):
            out = e[4]
            made.append(out)
            return out
        top.leave()
    k = prog[7]
    base = top.base
    tape = top.tape
    nodes = top._nodes
    if k:  # one run of `k` nodes reading only the operands: nothing made outside the block
        if k == 1:
            start = next(_ids)
        elif k == 2:
            start = next(_ids)
            next(_ids)
        else:
            start = next(islice(_ids, k - 1, None)) - k + 1  # `k` ids at once
        tape.append(prog[2])
        for v in operands:
            tape.append(v.id - base)
        tape.append(start - base)
        block = _new(Deferred)
        value = _new(Value)
        value.type, value.node, value.id = prog[4], block, start + prog[6]
        block.steps, block.refs, block.starts, block.n_ops, block.out, block.made, block.prog = \
            prog[0], operands, [start], prog[3], value, None, prog
        b = top.builder
        if b.deferred < 0:
            b.deferred = len(nodes)
        nodes.append(block)
        top.sigs.append(prog[2])
        out = _new(Tensor)
        out._data, out._trace, out._value = None, top, value
        return out
    refs = operands
    starts = []
    sigs = top.sigs
    made = False
    for seg in prog[1]:
        if seg.__class__ is int:
            if seg == 1:
                starts.append(next(_ids))
            elif seg == 2:
                starts.append(next(_ids))
                next(_ids)
            else:
                starts.append(next(islice(_ids, seg - 1, None)) - seg + 1)  # `seg` ids at once
        elif seg[0] == FIXED:
            fixed = top._fixed
            v = fixed.get(seg[1])
            if v is None:
                if not made:
                    made, n_before, s_before = True, len(nodes), len(sigs)
                sig = seg[4]
                if sig is None:
                    a = seg[2]
                    v = top.fixed_value(a["shape"], a["dtype"], a["value"])
                else:  # `Trace.fixed_value` with the memoised type and signature
                    node = _new(Node)
                    node.prim, node.inputs, node.attrs = _FULL, (), seg[2]
                    v = _new(Value)
                    v.type, v.node, v.id = seg[3], node, next(_ids)
                    node.out = v
                    nodes.append(node)
                    sigs.append(sig)
                    tape.append(sig)
                    tape.append(v.id - base)
                    if fixed is _NOTHING:  # (the trace's read-only empty until its first constant)
                        fixed = top._fixed = {}
                    fixed[seg[1]] = v
            refs.append(v)
        else:
            if not made:  # (a scalar's input is made on its first use in the trace)
                made, n_before, s_before = True, len(nodes), len(sigs)
            d, value, shape = seg[1]
            refs.append(top.scalar_value(value, d, shape))
    token = prog[2]
    tape.append(token)
    for v in refs:
        tape.append(v.id - base)
    for s in starts:
        tape.append(s - base)
    block = _new(Deferred)
    value = _new(Value)
    value.type, value.node, value.id = prog[4], block, starts[prog[5]] + prog[6]
    block.steps, block.refs, block.starts, block.n_ops, block.out, block.prog = \
        prog[0], refs, starts, prog[3], value, prog
    if not made or len(nodes) == n_before:
        block.made = None
    else:  # outside values made now: their nodes move into the block, where the op layer puts them
        block.made = (nodes[n_before:], sigs[s_before:])
        del nodes[n_before:]
        del sigs[s_before:]
    b = top.builder
    if b.deferred < 0:
        b.deferred = len(nodes)
    nodes.append(block)
    sigs.append(token)
    out = _new(Tensor)
    out._data, out._trace, out._value = None, top, value
    return out


def _same_operands(made: list, expected: tuple, operands: list) -> bool:
    """Whether `operands` (values of the replaying trace's own tensors) are those of the positions
    of `made` that the template's block entry `expected` reads (``(prog, first, second, ...)``,
    the second None for one operand)."""
    n = len(operands)
    if n == 1:
        return expected[2] is None and made[expected[1]]._value is operands[0]
    return n == 2 and expected[2] is not None and made[expected[1]]._value is operands[0] \
        and made[expected[2]]._value is operands[1]

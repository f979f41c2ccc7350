"""Differentiation rules of the control-flow primitives (declared in `ir/prims/control.py`).

Each rule differentiates, splits or transposes the node's regions with the ordinary graph
passes and emits one new control-flow node, as JAX does for `lax.cond` / `lax.scan`:

- **jvp**: the region is differentiated as a region (`ir.passes.jvp`). Symbolic zeros stay
  symbolic: only operands with a tangent get a tangent operand, and for loops the carries whose
  tangent is nonzero are found by a fixpoint (a carry with a zero initial tangent becomes nonzero
  when the body mixes a nonzero tangent into it) and then instantiated.
- **partial_eval** (reverse mode's split of a JVP graph): `cond` is split into a known cond that
  also returns the residuals of the branch taken (residual slots of equal type are shared by the
  branches, the other branch fills them with zeros) and an unknown cond over them; `scan` into a
  known scan that stacks each step's residuals as extra ys (residuals that depend only on the
  consts are computed once, outside the loop; those a few cheap elementwise ops compute from other
  stacked residuals, such as s * (1 - s) of a sigmoid s, are recomputed by the unknown body) and
  an unknown scan that reads them as xs;
  `while_loop` keeps its known carries on the known side and recomputes the whole loop on the
  unknown side (enough for forward mode and `linearize`).
- **transpose**: a linear `cond` transposes into a cond of the transposed branches; a linear
  `scan` into a scan in the opposite direction of the transposed body, whose carry also
  accumulates the cotangents of the linear consts over the steps; a summand that is a product of
  two per-step values (an RNN's dW = sum_t dg_t^T h_t) leaves the loop instead, as one
  contraction of the stacked operands over the step axis too. `while_loop` has no transpose:
  its trip count is not known ahead, so reverse mode through it is an error naming the fix.
- `tuple_get` / `make_tuple` move structured tangents and cotangents (tuples with one entry
  per element, ``None`` for a symbolic zero) between tuples and their elements.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..core import Graph, GraphBuilder, Value, inline
from ..passes.jvp import jvp
from ..passes.partial_eval import partial_eval
from ..passes.simplify import _live_nodes as live_nodes
from ..passes.transpose import transpose
from ..regions import Region
from ..rules import instantiate, is_undefined
from .control import COND, MAKE_TUPLE, SCAN, TUPLE_GET, WHILE_LOOP

__all__ = ["WHILE_REVERSE_ERROR", "permute_graph", "elements", "pack"]

WHILE_REVERSE_ERROR = (
    "Reverse-mode differentiation (grad, vjp, jacrev, backward) does not work through while_loop, nor "
    "through fori_loop with traced (tensor) bounds: the number of steps is not known ahead. Use "
    "tp.fori_loop with Python int bounds, or tp.scan, which reverse mode supports; forward mode (jvp, "
    "jacfwd) works through while_loop.")


# --- helpers -------------------------------------------------------------------------------------
def permute_graph(graph: Graph, in_order: Sequence[int], out_order: Sequence[int]) -> Graph:
    """`graph` with its inputs and outputs reordered (the same nodes: no copy).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32, int32
    >>> b = GraphBuilder(); x, i = b.add_input(TensorType((), float32)), b.add_input(TensorType((), int32))
    >>> permute_graph(b.build([x, i]), [1, 0], [1, 0]).in_types
    [tensor<i32>, tensor<f32>]
    """
    return Graph([graph.inputs[i] for i in in_order], graph.nodes, [graph.outputs[i] for i in out_order],
                 graph.name)


def elements(ctx: GraphBuilder, t: Value) -> list[Value]:
    """The elements of tuple value `t`, as `tuple_get` nodes.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> [v.type for v in elements(b, pack(b, [x, x]))]
    [tensor<2xf32>, tensor<2xf32>]
    """
    return [ctx.tuple_get(t, index=i) for i in range(len(t.type.elements))]


def pack(ctx: GraphBuilder, values: Sequence[Value]) -> Value:
    """A tuple of `values` (a `make_tuple` node).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> pack(b, [x]).type
    tuple<2xf32>
    """
    return ctx.make_tuple(*values)


def _flag(ctx) -> bool:
    return getattr(ctx, "for_transpose", False)


def _interleave(n_primal: int, groups: Sequence[tuple[int, int]]) -> list[int]:
    """Positions in a JVP graph's ``(*primals, *tangents)`` listing, reordered group by group as
    ``(*primals of group, *tangents of group)``. `groups` are (primal count, tangent count)."""
    order, p, t = [], 0, n_primal
    for n_p, n_t in groups:
        order += list(range(p, p + n_p)) + list(range(t, t + n_t))
        p, t = p + n_p, t + n_t
    return order


def _with_unused_inputs(graph: Graph, extra: Sequence, at: int) -> Graph:
    """`graph` taking extra (unused) inputs of the types `extra`, inserted at input position `at`."""
    new = [Value(t) for t in extra]
    return Graph(graph.inputs[:at] + new + graph.inputs[at:], graph.nodes, graph.outputs, graph.name)


def _restrict(graph: Graph, keep_in: Sequence[bool], keep_out: Sequence[bool]) -> Graph | None:
    """`graph` with only the flagged inputs and outputs (dead nodes dropped), or None if a kept
    output reads a dropped input."""
    outs = [v for v, k in zip(graph.outputs, keep_out) if k]
    nodes = live_nodes(graph.nodes, outs)
    dropped = {v for v, k in zip(graph.inputs, keep_in) if not k}
    if any(v in dropped for v in outs) or any(v in dropped for n in nodes for v in n.inputs):
        return None
    return Graph([v for v, k in zip(graph.inputs, keep_in) if k], nodes, outs, graph.name)


# --- tuples --------------------------------------------------------------------------------------
def _tuple_get_jvp(ctx, primals, tangents, *, index):
    (t,), (dt,) = primals, tangents
    return ctx.tuple_get(t, index=index), None if dt is None else dt[index]


def _tuple_get_transpose(ctx, ct, operands, *, index):
    (t,) = operands
    cts = [None] * len(t.type.elements)
    cts[index] = ct
    return [tuple(cts)]


def _make_tuple_jvp(ctx, primals, tangents):
    return ctx.make_tuple(*primals), tuple(tangents)


def _make_tuple_transpose(ctx, ct, operands):
    return list(ct)


# --- cond ----------------------------------------------------------------------------------------
def _cond_jvp(ctx, primals, tangents, *, true, false):
    pred, ops, t_ops = primals[0], primals[1:], tangents[1:]
    nz = [t is not None for t in t_ops]
    first = [jvp(r.graph, nz, for_transpose=_flag(ctx)) for r in (true, false)]
    out_nz = [not (a and b) for a, b in zip(first[0].zero_outputs, first[1].zero_outputs)]
    jt, jf = (jvp(r.graph, nz, out_nz, for_transpose=_flag(ctx)).graph for r in (true, false))
    out = ctx.cond(pred, *ops, *[t for t in t_ops if t is not None], true=Region(jt), false=Region(jf))
    return _split_primal_tangent(ctx, out, len(out_nz), out_nz)


def _split_primal_tangent(ctx, out: Value, n: int, nz: Sequence[bool]):
    """(primal tuple, structured tangent) of a node returning ``(*n primals, *tangents of the nz ones)``."""
    vals = elements(ctx, out)
    tans = iter(vals[n:])
    return pack(ctx, vals[:n]), tuple(next(tans) if z else None for z in nz)


def _merge_residuals(types_per_branch: Sequence[Sequence]) -> tuple[list, list[list[int]]]:
    """Shared residual slots for the branches: a slot per (type, occurrence) over all branches;
    returns the slot types and, per branch, the slot of each of its residuals."""
    slots: list = []
    index: dict = {}
    per_branch = []
    for types in types_per_branch:
        seen: Counter = Counter()
        mine = []
        for t in types:
            key = (t, seen[t])
            seen[t] += 1
            if key not in index:
                index[key] = len(slots)
                slots.append(t)
            mine.append(index[key])
        per_branch.append(mine)
    return slots, per_branch


def _cond_partial_eval(ctx, operands, unknowns, *, true, false):
    if unknowns[0]:
        return None  # an unknown predicate: the whole cond is unknown
    ops_uk = list(unknowns[1:])
    n_out = len(true.out_types)
    first = [partial_eval(r.graph, ops_uk, [None] * n_out) for r in (true, false)]
    out_uk = [a or b for a, b in zip(first[0].unknown_outputs, first[1].unknown_outputs)]
    pes = [partial_eval(r.graph, ops_uk, out_uk) for r in (true, false)]
    res_types = [pe.known.out_types[len(pe.known.outputs) - pe.num_residuals:] for pe in pes]
    slots, slot_of = _merge_residuals(res_types)
    known_ops = [v for v, u in zip(operands[1:], ops_uk) if not u]
    known_branches, unknown_branches = [], []
    for pe, mine in zip(pes, slot_of):
        kb = GraphBuilder(pe.known.name)
        outs = inline(kb, pe.known, [kb.add_input(v.type) for v in known_ops])
        n_known = len(outs) - pe.num_residuals
        filled = [None] * len(slots)
        for r, s in zip(outs[n_known:], mine):
            filled[s] = r
        known_branches.append(kb.build(outs[:n_known] + [r if r is not None else _zeros(kb, t)
                                                         for r, t in zip(filled, slots)]))
        ub = GraphBuilder(pe.unknown.name)
        slot_in = [ub.add_input(t) for t in slots]
        unk_in = [ub.add_input(t) for t in pe.unknown.in_types[pe.num_residuals:]]
        unknown_branches.append(ub.build(inline(ub, pe.unknown, [slot_in[s] for s in mine] + unk_in)))
    n_known_out = n_out - sum(out_uk)
    known_vals: list[Value] = []
    if n_known_out or slots:
        known = ctx.known.cond(operands[0], *known_ops, true=Region(known_branches[0]),
                               false=Region(known_branches[1]))
        known_vals = elements(ctx.known, known)
    unknown_vals: list[Value] = []
    if any(out_uk):
        res = [ctx.residual(r) for r in known_vals[n_known_out:]]
        unk = ctx.unknown.cond(ctx.lift(0), *res, *[ctx.lift(i + 1) for i, u in enumerate(ops_uk) if u],
                               true=Region(unknown_branches[0]), false=Region(unknown_branches[1]))
        unknown_vals = elements(ctx.unknown, unk)
    kit, uit = iter(known_vals), iter(unknown_vals)
    return [(True, next(uit)) if u else (False, next(kit)) for u in out_uk]


def _zeros(b: GraphBuilder, t) -> Value:
    return b.const(False if t.dtype.is_bool else 0, t.shape, t.dtype)


def _cond_transpose(ctx, ct, operands, *, true, false):
    pred, ops = operands[0], operands[1:]
    if is_undefined(pred):
        raise AssertionError("cond: the predicate cannot be linear")
    lin = [is_undefined(o) for o in ops]
    with_ct = [c is not None for c in ct]
    gt, gf = (transpose(r.graph, lin, with_ct) for r in (true, false))
    res = [o for o, li in zip(ops, lin) if not li]
    out = ctx.cond(pred, *res, *[c for c in ct if c is not None], true=Region(gt), false=Region(gf))
    cts = iter(elements(ctx, out))
    return [None] + [next(cts) if li else None for li in lin]


# --- scan ----------------------------------------------------------------------------------------
def _scan_jvp(ctx, primals, tangents, *, body, num_consts, num_carry, length, reverse):
    g = body.graph
    nc, nk = num_consts, num_carry
    nz = [t is not None for t in tangents]
    const_nz, carry_nz, xs_nz = nz[:nc], nz[nc:nc + nk], nz[nc + nk:]
    for _ in range(nk + 1):  # each round turns at least one carry nonzero, or stops
        j = jvp(g, const_nz + carry_nz + xs_nz, for_transpose=_flag(ctx))
        out_nz = [not z for z in j.zero_outputs]
        grown = [a or b for a, b in zip(carry_nz, out_nz[:nk])]
        if grown == carry_nz:
            break
        carry_nz = grown
    ys_nz = out_nz[nk:]
    j = jvp(g, const_nz + carry_nz + xs_nz, carry_nz + ys_nz, for_transpose=_flag(ctx))
    n_tc, n_tk, n_tx, n_ty = sum(const_nz), sum(carry_nz), sum(xs_nz), sum(ys_nz)
    n_x, n_y = len(xs_nz), len(ys_nz)
    body_jvp = permute_graph(j.graph, _interleave(nc + nk + n_x, [(nc, n_tc), (nk, n_tk), (n_x, n_tx)]),
                             _interleave(nk + n_y, [(nk, n_tk), (n_y, n_ty)]))
    consts, carry, xs = primals[:nc], primals[nc:nc + nk], primals[nc + nk:]
    t_consts, t_carry, t_xs = tangents[:nc], tangents[nc:nc + nk], tangents[nc + nk:]
    out = ctx.scan(*consts, *[t for t in t_consts if t is not None],
                   *carry, *[instantiate(ctx, t, c) for t, c, z in zip(t_carry, carry, carry_nz) if z],
                   *xs, *[t for t in t_xs if t is not None],
                   body=Region(body_jvp), num_consts=nc + n_tc, num_carry=nk + n_tk, length=length,
                   reverse=reverse)
    vals = elements(ctx, out)
    carry_out, t_carry_out = vals[:nk], iter(vals[nk:nk + n_tk])
    ys, t_ys = vals[nk + n_tk:nk + n_tk + n_y], iter(vals[nk + n_tk + n_y:])
    tangent = tuple(next(t_carry_out) if z else None for z in carry_nz) + tuple(next(t_ys) if z else None
                                                                                 for z in ys_nz)
    return pack(ctx, carry_out + ys), tangent


def _scan_partial_eval(ctx, operands, unknowns, *, body, num_consts, num_carry, length, reverse):
    g = body.graph
    nc, nk = num_consts, num_carry
    ny = len(g.outputs) - nk
    const_uk, carry_uk, xs_uk = list(unknowns[:nc]), list(unknowns[nc:nc + nk]), list(unknowns[nc + nk:])
    for _ in range(nk + 1):
        pe = partial_eval(g, const_uk + carry_uk + xs_uk, [True if u else None for u in carry_uk] + [None] * ny)
        grown = [a or b for a, b in zip(carry_uk, pe.unknown_outputs[:nk])]
        if grown == carry_uk:
            break
        carry_uk = grown
    out_uk = pe.unknown_outputs
    in_uk = const_uk + carry_uk + xs_uk
    known_body, n_res = pe.known, pe.num_residuals
    n_known_out = len(known_body.outputs) - n_res
    known_idx = [i for i, u in enumerate(in_uk) if not u]
    nc_known = sum(not u for u in const_uk)
    nk_known = sum(not u for u in carry_uk)
    # residuals: a known const input is forwarded, a value of the consts alone is hoisted out of
    # the loop, the rest is stacked as extra ys of the known scan
    const_inputs = known_body.inputs[:nc_known]
    invariant = set(const_inputs)
    for n in known_body.nodes:
        if not n.prim.random and all(v in invariant for v in n.inputs):
            invariant.add(n.out)
    res = known_body.outputs[n_known_out:]
    hoisted = [r in invariant for r in res]
    outer_consts = [operands[i] for i in known_idx[:nc_known]]
    hoist_graph = Graph(const_inputs, live_nodes(known_body.nodes, [r for r, h in zip(res, hoisted) if h]),
                        [r for r, h in zip(res, hoisted) if h])
    hoisted_vals = iter(inline(ctx.known, hoist_graph, outer_consts))
    remat = _recomputable(known_body, res, hoisted)
    stacked_res = [r for r, h, m in zip(res, hoisted, remat) if not h and not m]
    kouts = known_body.outputs[:n_known_out] + stacked_res
    kbody = Graph(known_body.inputs, live_nodes(known_body.nodes, kouts), kouts, known_body.name)
    known_vals: list[Value] = []
    if kouts:
        known = ctx.known.scan(*[operands[i] for i in known_idx], body=Region(kbody), num_consts=nc_known,
                               num_carry=nk_known, length=length, reverse=reverse)
        known_vals = elements(ctx.known, known)
    stacked_vals = iter(known_vals[n_known_out:])
    invariant_res, stacked_in, remat_in = [], [], []
    ubody = pe.unknown
    kept_at: dict[Value, Value] = {}  # a stacked residual of the known body -> its unknown-body input
    for r_in, r, h, m in zip(ubody.inputs[:n_res], res, hoisted, remat):
        if h:
            invariant_res.append((r_in, ctx.residual(next(hoisted_vals))))
        elif m:
            remat_in.append((r_in, r))
        else:
            stacked_in.append((r_in, ctx.residual(next(stacked_vals))))
            kept_at.setdefault(r, r_in)
    unk_in = ubody.inputs[n_res:]
    nc_unk, nk_unk = sum(const_uk), sum(carry_uk)
    order = ([r for r, _ in invariant_res] + unk_in[:nc_unk] + unk_in[nc_unk:nc_unk + nk_unk]
             + [r for r, _ in stacked_in] + unk_in[nc_unk + nk_unk:])
    ubody = _with_recomputed(Graph(order + [r_in for r_in, _ in remat_in], ubody.nodes, ubody.outputs, ubody.name),
                             len(order), [r for _, r in remat_in], kept_at)
    unknown_vals: list[Value] = []
    if ubody.outputs:
        lifted = [ctx.lift(i) for i, u in enumerate(in_uk) if u]
        unk = ctx.unknown.scan(*[v for _, v in invariant_res], *lifted[:nc_unk + nk_unk],
                               *[v for _, v in stacked_in], *lifted[nc_unk + nk_unk:],
                               body=Region(ubody), num_consts=len(invariant_res) + nc_unk, num_carry=nk_unk,
                               length=length, reverse=reverse)
        unknown_vals = elements(ctx.unknown, unk)
    kit, uit = iter(known_vals[:n_known_out]), iter(unknown_vals)
    return [(True, next(uit)) if u else (False, next(kit)) for u in out_uk]


# Residuals a scan need not stack: those that a few cheap elementwise ops compute from other stacked
# residuals (s * (1 - s) from a stacked sigmoid s, 1 - t * t from a stacked tanh t). The backward
# body recomputes them: fewer per-step stores and loads, and fewer kernels in the forward body.
CHEAP_RECOMPUTE = frozenset({"add", "sub", "mul", "neg", "full", "constant"})
MAX_RECOMPUTED_NODES = 6


def _recomputable(body: Graph, res: Sequence[Value], hoisted: Sequence[bool]) -> list[bool]:
    """Per residual of the known `body`: recompute it in the unknown body instead of stacking it
    (see CHEAP_RECOMPUTE). Residuals are decided in definition order, each from the ones kept
    stacked before it."""
    position = {n.out: i for i, n in enumerate(body.nodes)}
    order = sorted(range(len(res)), key=lambda i: position.get(res[i], -1))
    kept: set[Value] = set()
    out = [False] * len(res)
    for i in order:
        r = res[i]
        if hoisted[i]:
            continue
        cone = None if r in kept else _cheap_cone(r, kept)
        if cone is not None and 0 < cone <= MAX_RECOMPUTED_NODES:
            out[i] = True
        else:
            kept.add(r)
    return out


def _cheap_cone(v: Value, leaves: set, seen: set | None = None) -> int | None:
    """Number of nodes computing `v` from `leaves` by CHEAP_RECOMPUTE ops alone, or None."""
    seen = set() if seen is None else seen
    if v in leaves or v in seen:
        return 0
    n = v.node
    if n is None or n.prim.name not in CHEAP_RECOMPUTE:
        return None
    seen.add(v)
    total = 1
    for o in n.inputs:
        if o.type.shape != v.type.shape:
            return None
        c = _cheap_cone(o, leaves, seen)
        if c is None:
            return None
        total += c
    return total


def _with_recomputed(graph: Graph, n_kept: int, recomputed: Sequence[Value], kept_at: dict) -> Graph:
    """`graph` whose inputs after the first `n_kept` are computed in it instead: input
    ``n_kept + j`` is `recomputed[j]`, a value of the known body, emitted from the known-body
    values in `kept_at` (each mapped to one of `graph`'s first inputs)."""
    if not recomputed:
        return graph
    b = GraphBuilder(graph.name)
    ins = [b.add_input(v.type) for v in graph.inputs[:n_kept]]
    env: dict[Value, Value] = {k: ins[graph.inputs.index(v)] for k, v in kept_at.items()}

    def emit(v: Value) -> Value:
        if v not in env:
            n = v.node
            env[v] = b.emit_copy(n, tuple([emit(o) for o in n.inputs]))
        return env[v]

    return b.build(inline(b, graph, ins + [emit(r) for r in recomputed]))


def _scan_transpose(ctx, ct, operands, *, body, num_consts, num_carry, length, reverse):
    nc, nk = num_consts, num_carry
    consts, init, xs = operands[:nc], operands[nc:nc + nk], operands[nc + nk:]
    lin_c = [is_undefined(c) for c in consts]
    lin_x = [is_undefined(x) for x in xs]
    ct_carry, ct_ys = list(ct[:nk]), list(ct[nk:])
    g = body.graph
    ys_types = g.out_types[nk:]
    with_ct = [True] * nk + [c is not None for c in ct_ys]
    # the body transposed: (*res consts, *res xs, *ct carry out, *ct ys) -> (*ct lin consts, *ct carry, *ct lin xs)
    gt = transpose(g, lin_c + [True] * nk + lin_x, with_ct)
    res_c = [c for c, li in zip(consts, lin_c) if not li]
    res_x = [x for x, li in zip(xs, lin_x) if not li]
    n_lc, n_lx = sum(lin_c), sum(lin_x)
    carry_types = g.in_types[nc:nc + nk]
    lin_c_types = [t for t, li in zip(g.in_types[:nc], lin_c) if li]
    cts_y = [c for c in ct_ys if c is not None]
    # the cotangent of a linear const is a sum over the steps; its products of per-step values leave
    # the loop as one contraction over the stacked operands (below), the rest is carried
    kept, products, extra = _split_accumulation(gt, n_lc, len(res_c), len(res_x), nk)
    outer_of = dict(zip(gt.inputs[len(res_c):len(res_c) + len(res_x)], res_x))
    outer_of.update(zip(gt.inputs[len(res_c) + len(res_x) + nk:], cts_y))
    tb = GraphBuilder(g.name + "_T")
    rc = [tb.add_input(c.type) for c in res_c]
    acc = [tb.add_input(t) for t, terms in zip(lin_c_types, kept) if terms]
    cc = [tb.add_input(t) for t in carry_types]
    rx = [tb.add_input(gt.in_types[len(res_c) + k]) for k in range(len(res_x))]
    cy = [tb.add_input(t) for t, w in zip(ys_types, with_ct[nk:]) if w]
    flat_kept = [v for terms in kept for v in terms]
    body_outs = flat_kept + gt.outputs[n_lc:] + extra
    outs = inline(tb, Graph(gt.inputs, live_nodes(gt.nodes, body_outs), body_outs, gt.name), rc + rx + cc + cy)
    sums, at = [], 0
    for terms in kept:
        if terms:
            sums.append(_sum(tb, outs[at:at + len(terms)]))
        at += len(terms)
    new_acc = [tb.add(a, s) for a, s in zip(acc, sums)]
    tbody = tb.build(new_acc + outs[at:])
    n_acc = len(acc)
    ct_carry = [c if c is not None else _zeros(ctx, t) for c, t in zip(ct_carry, carry_types)]
    out = ctx.scan(*res_c, *[_zeros(ctx, t) for t, terms in zip(lin_c_types, kept) if terms], *ct_carry, *res_x,
                   *cts_y, body=Region(tbody), num_consts=len(res_c),
                   num_carry=n_acc + nk, length=length, reverse=not reverse)
    vals = elements(ctx, out)
    assert len(vals) == n_acc + nk + n_lx + len(extra)
    stacked = dict(outer_of)
    for v, s in zip(gt.outputs[n_lc + nk:] + extra, vals[n_acc + nk:]):
        stacked.setdefault(v, s)
    accs, ct_lin_c = iter(vals[:n_acc]), []
    for terms, prods in zip(kept, products):
        parts = [next(accs)] if terms else []
        parts += [_stacked_product(ctx, node, stacked) for node in prods]
        ct_lin_c.append(_sum(ctx, parts))
    ct_c, ct_init, ct_x = iter(ct_lin_c), vals[n_acc:n_acc + nk], iter(vals[n_acc + nk:n_acc + nk + n_lx])
    return ([next(ct_c) if li else None for li in lin_c] + [c if is_undefined(v) else None
                                                           for c, v in zip(ct_init, init)]
            + [next(ct_x) if li else None for li in lin_x])


def _sum(b: GraphBuilder, terms: Sequence[Value]) -> Value:
    total = terms[0]
    for t in terms[1:]:
        total = b.add(total, t)
    return total


def _terms(v: Value) -> list[Value]:
    """The summands of `v` through a tree of same-shape `add` nodes."""
    n = v.node
    if n is None or n.prim.name != "add" or any(o.type != v.type for o in n.inputs):
        return [v]
    return _terms(n.inputs[0]) + _terms(n.inputs[1])


def _split_accumulation(gt: Graph, n_lc: int, n_rc: int, n_rx: int, nk: int):
    """How the transposed body `gt` (inputs ``(*res consts, *res xs, *ct carry, *ct ys)``, outputs
    ``(*ct lin consts, *ct carry, *ct lin xs)``) accumulates the cotangent of each linear const:
    ``(kept, products, extra)``.

    A summand ``dot_general(p, q)`` without batch dimensions whose operands both change from step
    to step sums over the steps to one contraction of the stacked p and q that also contracts the
    step axis (dW = sum_t dg_t^T h_t = dG^T H): it leaves the loop (`products[k]`, its nodes)
    unless stacking an operand the scan does not stack already would write more per step than the
    accumulator it saves. `kept[k]` are the other summands (carried as before), `extra` the values
    the body must return as new ys to stack such operands."""
    per_step = set(gt.inputs[n_rc:])
    for n in gt.nodes:
        if any(v in per_step for v in n.inputs):
            per_step.add(n.out)
    available = set(gt.inputs[n_rc:n_rc + n_rx]) | set(gt.inputs[n_rc + n_rx + nk:]) | set(gt.outputs[n_lc + nk:])
    kept, products, extra = [], [], []
    for v in gt.outputs[:n_lc]:
        mine_kept, mine = [], []
        for term in _terms(v):
            n, perm = _under_transposes(term)
            if n is not None and n.prim.name == "dot_general" and not any(n.attrs["batch"]) \
                    and all(o in per_step for o in n.inputs) \
                    and all(o in available or o.type.size <= term.type.size for o in n.inputs):
                mine.append((n, perm))
                for o in n.inputs:
                    if o not in available and o not in extra:
                        extra.append(o)
            else:
                mine_kept.append(term)
        kept.append(mine_kept)
        products.append(mine)
    return kept, products, extra


def _under_transposes(v: Value):
    """(the node under a chain of `transpose` nodes producing `v`, the chain's composed permutation
    or None when there is no transpose)."""
    perm = None
    n = v.node
    while n is not None and n.prim.name == "transpose":
        p = tuple(n.attrs["permutation"])
        perm = p if perm is None else tuple(p[i] for i in perm)
        n = n.inputs[0].node
    return n, perm


def _stacked_product(ctx, product, stacked: dict) -> Value:
    """The sum over the steps of one body `dot_general` node (then permuted): the same contraction
    of its stacked operands that also contracts their leading step axis."""
    node, perm = product
    (ca, cb) = node.attrs["contract"]
    p, q = (stacked[o] for o in node.inputs)
    out = ctx.dot_general(p, q, contract=((0, *(c + 1 for c in ca)), (0, *(c + 1 for c in cb))), batch=((), ()))
    return out if perm is None else ctx.transpose(out, permutation=perm)


# --- while_loop ----------------------------------------------------------------------------------
def _while_jvp(ctx, primals, tangents, *, cond, body, num_cond_consts, num_body_consts):
    ncc, nbc = num_cond_consts, num_body_consts
    nk = len(primals) - ncc - nbc
    g = body.graph
    nz = [t is not None for t in tangents]
    bconst_nz, carry_nz = nz[ncc:ncc + nbc], nz[ncc + nbc:]
    for _ in range(nk + 1):
        j = jvp(g, bconst_nz + carry_nz, for_transpose=_flag(ctx))
        grown = [a or not z for a, z in zip(carry_nz, j.zero_outputs)]
        if grown == carry_nz:
            break
        carry_nz = grown
    j = jvp(g, bconst_nz + carry_nz, carry_nz, for_transpose=_flag(ctx))
    n_tb, n_tk = sum(bconst_nz), sum(carry_nz)
    body_jvp = permute_graph(j.graph, _interleave(nbc + nk, [(nbc, n_tb), (nk, n_tk)]),
                             _interleave(nk, [(nk, n_tk)]))
    cconsts, bconsts, carry = primals[:ncc], primals[ncc:ncc + nbc], primals[ncc + nbc:]
    t_carry_types = [c.type for c, z in zip(carry, carry_nz) if z]
    cond_jvp = _with_unused_inputs(cond.graph, t_carry_types, len(cond.graph.inputs))
    t_b, t_k = tangents[ncc:ncc + nbc], tangents[ncc + nbc:]
    out = ctx.while_loop(*cconsts, *bconsts, *[t for t in t_b if t is not None],
                         *carry, *[instantiate(ctx, t, c) for t, c, z in zip(t_k, carry, carry_nz) if z],
                         cond=Region(cond_jvp), body=Region(body_jvp), num_cond_consts=ncc,
                         num_body_consts=nbc + n_tb)
    return _split_primal_tangent(ctx, out, nk, carry_nz)


def _while_partial_eval(ctx, operands, unknowns, *, cond, body, num_cond_consts, num_body_consts):
    ncc, nbc = num_cond_consts, num_body_consts
    nk = len(operands) - ncc - nbc
    if any(unknowns[:ncc]):
        return None
    bconst_uk, carry_uk = list(unknowns[ncc:ncc + nbc]), list(unknowns[ncc + nbc:])
    g = body.graph
    for _ in range(nk + 1):
        pe = partial_eval(g, bconst_uk + carry_uk, [True if u else None for u in carry_uk])
        grown = [a or b for a, b in zip(carry_uk, pe.unknown_outputs)]
        if grown == carry_uk:
            break
        carry_uk = grown
    known_carry = [not u for u in carry_uk]
    kcond = _restrict(cond.graph, [True] * ncc + known_carry, [True])
    kbody = _restrict(g, [not u for u in bconst_uk] + known_carry, known_carry)
    if kcond is None or kbody is None:
        return None  # the trip count depends on unknown values: all of it is unknown
    known_vals: list[Value] = []
    if any(known_carry):
        keep = [True] * ncc + [not u for u in bconst_uk] + known_carry
        known = ctx.known.while_loop(*[v for v, k in zip(operands, keep) if k], cond=Region(kcond),
                                     body=Region(kbody), num_cond_consts=ncc,
                                     num_body_consts=sum(not u for u in bconst_uk))
        known_vals = elements(ctx.known, known)
    # the unknown side runs the whole loop again: the known carries are recomputed there
    unk = ctx.unknown.while_loop(*[ctx.lift(i) for i in range(len(operands))], cond=cond, body=body,
                                 num_cond_consts=ncc, num_body_consts=nbc)
    unknown_vals = elements(ctx.unknown, unk)
    kit = iter(known_vals)
    return [(True, uv) if u else (False, next(kit)) for u, uv in zip(carry_uk, unknown_vals)]


def _while_transpose(ctx, ct, operands, **attrs):
    raise ValueError(WHILE_REVERSE_ERROR)


TUPLE_GET.def_jvp(_tuple_get_jvp)
TUPLE_GET.def_transpose(_tuple_get_transpose)
MAKE_TUPLE.def_jvp(_make_tuple_jvp)
MAKE_TUPLE.def_transpose(_make_tuple_transpose)
COND.def_jvp(_cond_jvp)
COND.def_partial_eval(_cond_partial_eval)
COND.def_transpose(_cond_transpose)
SCAN.def_jvp(_scan_jvp)
SCAN.def_partial_eval(_scan_partial_eval)
SCAN.def_transpose(_scan_transpose)
WHILE_LOOP.def_jvp(_while_jvp)
WHILE_LOOP.def_partial_eval(_while_partial_eval)
WHILE_LOOP.def_transpose(_while_transpose)

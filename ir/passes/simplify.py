"""Simplification passes: dead-code elimination, common-subexpression elimination, constant
folding and algebraic identities. They run after differentiation, whose rules are written for
clarity (they multiply by ones, broadcast then reduce, transpose twice) and rely on this pass to
leave the derivative graph lean.

Every pass is pure: it reads a graph and builds a new one with the same input and output types.

The rewriting is one forward walk. Each node is re-emitted through `_Simplifier.simplify`, which

1. folds it when all of its operands are `full` constants (elementwise ops, layout ops and
   reductions of a constant are constants);
2. tries the rows of `RULES` registered for its primitive -- a row returns an existing value or
   emits a cheaper replacement (through `emit` again, so replacements are simplified too);
3. reuses an identical earlier node (CSE);
4. otherwise emits it.

Dead nodes of the input are skipped, and those left behind by rewrites are dropped at the end.
Because each node is visited with final operands and replacements are simplified in turn, one
walk reaches the fixed point. Copied nodes keep their known result type: only the new nodes a
rule emits run a type rule.

Rewrites that would change results for special values are left out: ``x * 0 -> 0`` only for
integer and boolean ``x`` (``inf * 0`` is ``nan``), ``x - x`` is kept, and `stop_gradient` is
kept (a simplified graph may be differentiated again). ``x + 0 -> x`` does turn ``-0.0 + 0.0``
into ``-0.0``, as every optimising compiler's algebraic simplifier does. A product with the
identity basis of jacrev/jacfwd is read as its other operand, with a nan exactly where the
product's ``0 * inf`` terms would put one (`_dot_of_identity`).
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..core import Graph, GraphBuilder, Node, Value, _attr_key, freeze_attr
from ..primitive import Primitive, get_primitive
from ..prims.linalg import free_axes
from ..regions import Region
from ..types import TensorType, TupleType

__all__ = ["simplify", "dce", "cse", "fold_layout", "RULES", "LAYOUT_RULES", "node_count"]


def node_count(graph: Graph) -> int:
    """The number of nodes of `graph` (what `simplify` reduces).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> node_count(b.build([b.neg(b.neg(x))])), node_count(simplify(b.build([b.neg(b.neg(x))])))
    (2, 0)
    """
    return len(graph.nodes)


# --- pattern helpers -----------------------------------------------------------------------------
def producer(v: Value, name: str) -> Node | None:
    """The node computing `v` if it is an application of primitive `name`."""
    n = v.node
    return n if n is not None and n.prim.name == name else None


def const_value(v: Value) -> Any:
    """The fill value of `v` if it is a `full` constant, else None."""
    n = producer(v, "full")
    return None if n is None else n.attrs["value"]


def is_const(v: Value, c) -> bool:
    """True if `v` is a `full` constant equal to `c` (never for nan)."""
    value = const_value(v)
    return value is not None and not isinstance(value, bool) and value == c


def _scalar(value, dtype):
    """`value` as the Python scalar a `full` node of `dtype` stores."""
    value = np.asarray(value, dtype=dtype.np).item()
    return bool(value) if dtype.is_bool else int(value) if dtype.is_integer else float(value)


# --- the rewrite table ---------------------------------------------------------------------------
Rule = Callable[..., Value | None]  # rule(s, *operands, **attrs) -> replacement or None


def _reshape_reshape(s, x, *, shape):
    inner = producer(x, "reshape")
    return s.emit("reshape", inner.inputs[0], shape=shape) if inner else None


def _transpose_transpose(s, x, *, permutation):
    inner = producer(x, "transpose")
    if inner is None:
        return None
    first = inner.attrs["permutation"]
    return s.emit("transpose", inner.inputs[0], permutation=tuple(first[p] for p in permutation))


def _broadcast_broadcast(s, x, *, shape, broadcast_dimensions):
    inner = producer(x, "broadcast_in_dim")
    if inner is None:
        return None
    dims = tuple(broadcast_dimensions[d] for d in inner.attrs["broadcast_dimensions"])
    return s.emit("broadcast_in_dim", inner.inputs[0], shape=shape, broadcast_dimensions=dims)


def _broadcast_as_reshape(s, x, *, shape, broadcast_dimensions):
    """A broadcast that expands nothing (it only inserts size-1 axes) is a reshape."""
    if x.shape == shape or any(x.shape[i] != shape[d] for i, d in enumerate(broadcast_dimensions)):
        return None
    if any(shape[d] != 1 for d in range(len(shape)) if d not in broadcast_dimensions):
        return None
    return s.emit("reshape", x, shape=shape)


def _reduce_of_broadcast(s, x, *, axes):
    """reduce_sum over axes that a broadcast added: broadcast to the kept axes, times their count."""
    bcast = producer(x, "broadcast_in_dim")
    if bcast is None:
        return None
    dims = bcast.attrs["broadcast_dimensions"]
    if any(a in dims for a in axes):
        return None
    src = bcast.inputs[0]
    kept = [d for d in range(x.ndim) if d not in axes]
    shape = tuple(x.shape[d] for d in kept)
    out = s.emit("broadcast_in_dim", src, shape=shape, broadcast_dimensions=tuple(kept.index(d) for d in dims))
    n = prod(x.shape[a] for a in axes)
    return out if n == 1 else s.emit("mul", out, s.const(n, out.type))


def _reduce_reduce(s, x, *, axes):
    inner = producer(x, "reduce_sum")
    if inner is None:
        return None
    first = inner.attrs["axes"]
    kept = [d for d in range(inner.inputs[0].ndim) if d not in first]
    return s.emit("reduce_sum", inner.inputs[0], axes=tuple(sorted(first + tuple(kept[a] for a in axes))))


def _rev_rev(s, x, *, axes):
    inner = producer(x, "rev")
    return inner.inputs[0] if inner is not None and sorted(inner.attrs["axes"]) == sorted(axes) else None


def _dot_of_transpose(s, x, y, *, contract, batch):
    """Read a transposed operand of dot_general through the permutation, when its free axes stay in order."""
    (lc, rc), (lb, rb) = contract, batch
    for side, v, c, bt in ((0, x, lc, lb), (1, y, rc, rb)):
        t = producer(v, "transpose")
        if t is None:
            continue
        perm = t.attrs["permutation"]
        free = [perm[j] for j in free_axes(v.ndim, c, bt)]
        if free != sorted(free):
            continue
        nc, nb = tuple(perm[j] for j in c), tuple(perm[j] for j in bt)
        if side == 0:
            return s.emit("dot_general", t.inputs[0], y, contract=(nc, rc), batch=(nb, rb))
        return s.emit("dot_general", x, t.inputs[0], contract=(lc, nc), batch=(lb, nb))
    return None


def _unit_axes_map(before: tuple, after: tuple) -> list[int] | None:
    """For a reshape `before` -> `after` that only inserts or removes 1-axes: per axis of `after`,
    the axis of `before` holding the same elements (None for a 1-axis); else None."""
    if [d for d in before if d != 1] != [d for d in after if d != 1]:
        return None
    where = iter([a for a, d in enumerate(before) if d != 1])
    return [None if d == 1 else next(where) for d in after]


def _dot_of_unit_reshape(s, x, y, *, contract, batch):
    """Read an operand of dot_general through a reshape that only inserts or removes 1-axes (the
    rows vmap and jacrev add), when its contracted and batch axes are not among them: the product of
    the reshape's input, reshaped to the product's shape (unit axes only: a free reshape)."""
    (lc, rc), (lb, rb) = contract, batch
    for side, v, c, bt in ((0, x, lc, lb), (1, y, rc, rb)):
        r = producer(v, "reshape")
        if r is None:
            continue
        src = r.inputs[0]
        where = _unit_axes_map(src.shape, v.shape)
        if where is None or any(where[a] is None for a in (*c, *bt)):
            continue
        nc, nb = tuple(where[a] for a in c), tuple(where[a] for a in bt)
        if side == 0:
            d = s.emit("dot_general", src, y, contract=(nc, rc), batch=(nb, rb))
        else:
            d = s.emit("dot_general", x, src, contract=(lc, nc), batch=(lb, nb))
        out_shape = prim_out_shape(x, y, contract, batch)
        return d if d.shape == out_shape else s.emit("reshape", d, shape=out_shape)
    return None


def prim_out_shape(x: Value, y: Value, contract, batch) -> tuple:
    """dot_general's result shape: batch axes, then the lhs's free axes, then the rhs's."""
    (lc, rc), (lb, rb) = contract, batch
    return (tuple(x.shape[a] for a in lb) + tuple(x.shape[a] for a in free_axes(x.ndim, lc, lb))
            + tuple(y.shape[a] for a in free_axes(y.ndim, rc, rb)))


def _dot_of_unit_contraction(s, x, y, *, contract, batch):
    """A floating-point product whose contracted axes all have size 1 (an outer product, batched or
    not: the ``x^T g`` rows of per-sample gradients) is a multiply of the operands broadcast to the
    result: one fused pass over the output, where a gemm of inner size 1 per batch slice also reads
    every output line before writing it. Each result element is the one product either way."""
    (lc, rc), (lb, rb) = contract, batch
    if x.dtype is not y.dtype or not x.dtype.is_floating_point or any(x.shape[a] != 1 for a in lc):
        return None
    out_shape = prim_out_shape(x, y, contract, batch)
    nb, nx = len(lb), x.ndim - len(lc) - len(lb)

    def spread(v, c, bt, dims):  # v's batch and free axes, in the result's order, broadcast onto it
        kept = (*bt, *free_axes(v.ndim, c, bt))
        if kept + tuple(c) != tuple(range(v.ndim)):
            v = s.emit("transpose", v, permutation=kept + tuple(c))
        if c:
            v = s.emit("reshape", v, shape=v.shape[:len(kept)])
        return s.emit("broadcast_in_dim", v, shape=out_shape, broadcast_dimensions=dims)

    ny = len(out_shape) - nb - nx
    lhs = spread(x, lc, lb, (*range(nb), *range(nb, nb + nx)))
    rhs = spread(y, rc, rb, (*range(nb), *range(nb + nx, nb + nx + ny)))
    return s.emit("mul", lhs, rhs)


def _transpose_of_dot(s, x, *, permutation):
    """A transpose swapping the lhs-free and rhs-free axis groups of a dot_general (batch axes kept in front)
    is the product with its operands swapped -- when the transpose is the product's only use (otherwise
    both products would be computed)."""
    dot = producer(x, "dot_general")
    if dot is None or not s.single_use(x):
        return None
    lhs, rhs = dot.inputs
    (lc, rc), (lb, rb) = dot.attrs["contract"], dot.attrs["batch"]
    nb, nm = len(lb), lhs.ndim - len(lc) - len(lb)
    if permutation != (*range(nb), *range(nb + nm, x.ndim), *range(nb, nb + nm)):
        return None
    return s.emit("dot_general", rhs, lhs, contract=(rc, lc), batch=(rb, lb))


def _mul_by_zero(s, x, y):
    if x.dtype.is_floating_point:
        return None
    return y if is_const(y, 0) else x if is_const(x, 0) else None


# --- the one-hot basis of jacrev / jacfwd: a contraction with the (scaled) identity --------------
def _identity_size(v: Value) -> int | None:
    """n when `v` is the n x n identity built as ``convert(iota(dim 0) == iota(dim 1))`` (the
    Jacobian basis), else None."""
    c = producer(v, "convert_element_type")
    e = None if c is None else producer(c.inputs[0], "eq")
    if e is None or v.ndim != 2 or v.shape[0] != v.shape[1]:
        return None
    iotas = [producer(x, "iota") for x in e.inputs]
    if None in iotas or any(i.out.shape != v.shape for i in iotas):
        return None
    return v.shape[0] if {i.attrs["dimension"] for i in iotas} == {0, 1} else None


def _scaled_identity(v: Value) -> tuple[int, list] | None:
    """(n, factors) when `v` is the n x n identity times broadcasts of vectors along one of its
    axes or of scalars, in multiplication order: factors = [(w, axis or None for a scalar)]."""
    n = _identity_size(v)
    if n is not None:
        return n, []
    m = producer(v, "mul")
    if m is None:
        return None
    for e, bv in (m.inputs, m.inputs[::-1]):
        bc = producer(bv, "broadcast_in_dim")
        w = None if bc is None else bc.inputs[0]
        if w is None or not (w.ndim == 0 or (w.ndim == 1 and w.shape == (v.shape[0],) == (v.shape[1],))):
            continue
        inner = _scaled_identity(e)
        if inner is not None:
            return inner[0], inner[1] + [(w, bc.attrs["broadcast_dimensions"][0] if w.ndim else None)]
    return None


def _dot_of_identity(s, x, y, *, contract, batch):
    """dot_general with the identity basis jacrev/jacfwd build (possibly scaled: diag(d)) reads the
    other operand A through a transpose (times d) instead of a product of n^3 multiply-adds.

    Special values stay those of the product: a term 0 * v off the diagonal is nan when v (an entry
    of A or of a scaling vector) is not finite, so the result is nan exactly there (a count of the
    non-finite entries per contracted fibre, minus the diagonal's own)."""
    if batch != ((), ()) or len(contract[0]) != 1:
        return None
    for e, a, ce, ca, e_first in ((x, y, contract[0][0], contract[1][0], True),
                                 (y, x, contract[1][0], contract[0][0], False)):
        found = _scaled_identity(e) if e.dtype is a.dtype and a.dtype.is_floating_point else None
        if found is None:
            continue
        n, factors = found
        along = tuple(d for d in range(a.ndim) if d != ca)  # A's free axes; ca indexes the diagonal

        def on_a(v, dims):  # broadcast v onto A's shape
            return s.emit("broadcast_in_dim", v, shape=a.shape, broadcast_dimensions=dims)

        def nonfinite(v):  # v - v is nan exactly where v is inf or nan
            z = s.emit("sub", v, v)
            return s.emit("ne", z, z)

        value, row_bad, col_bad = a, None, None
        if factors:
            diag = None
            for w, axis in factors:
                w_n = w if w.ndim else s.emit("broadcast_in_dim", w, shape=(n,), broadcast_dimensions=())
                diag = w_n if diag is None else s.emit("mul", diag, w_n)
                bad = nonfinite(w_n)
                if axis == ce:  # w[k]: an entry of each contracted fibre
                    col_bad = bad if col_bad is None else s.emit("or", col_bad, bad)
                elif n > 1:  # w[i] (or a scalar) times the zeros of row i
                    row_bad = bad if row_bad is None else s.emit("or", row_bad, bad)
            value = s.emit("mul", a, on_a(diag, (ca,)))
        g = nonfinite(a)
        if col_bad is not None:
            g = s.emit("or", g, on_a(col_bad, (ca,)))
        if n > 1:
            ints = s.emit("convert_element_type", g, dtype=dtypes.int32)
            count = on_a(s.emit("reduce_sum", ints, axes=(ca,)), along)
            bad = s.emit("gt", s.emit("sub", count, ints), s.const(0, TensorType(a.shape, dtypes.int32)))
            if row_bad is not None:
                bad = s.emit("or", bad, on_a(row_bad, (ca,)))
            value = s.emit("select", bad, s.const(float("nan"), TensorType(a.shape, a.dtype)), value)
        return s.emit("transpose", value, permutation=(ca,) + along if e_first else along + (ca,))
    return None


def _iota_of_one(s, *, shape, dtype, dimension):
    """An iota along a dimension of size 1 is all zeros (the 1 x 1 basis of a scalar output folds to 1)."""
    return s.const(0, TensorType(shape, dtype)) if shape[dimension] == 1 else None


# --- control flow --------------------------------------------------------------------------------
# The rules of cond / while_loop / scan rebuild the node when they can make it smaller: they drop
# the results nothing reads (`s.take_used()`: the tuple elements the graph reads), the carries no
# kept result depends on, the operands no region reads, and move loop-invariant body nodes out in
# front of the loop. They return ``make_tuple`` of the new node's elements (a placeholder constant
# for a dropped one, which nothing reads), so the ``tuple_get`` rule hands each reader its element.
def _live_inputs(graph: Graph, outputs) -> set[int]:
    """The input positions of `graph` that its outputs at positions `outputs` depend on."""
    live = {graph.outputs[k] for k in outputs}
    for n in reversed(graph.nodes):
        if n.out in live:
            live.update(n.inputs)
    return {i for i, v in enumerate(graph.inputs) if v in live}


def _subgraph(graph: Graph, inputs, outputs) -> Graph:
    """`graph` restricted to the inputs and outputs at those positions (the rest must not be needed)."""
    b = GraphBuilder(graph.name)
    env = {graph.inputs[i]: b.add_input(graph.inputs[i].type) for i in inputs}
    outs = [graph.outputs[k] for k in outputs]
    for n in _live_nodes(graph.nodes, outs):
        env[n.out] = b.emit_typed(n.prim, tuple([env[v] for v in n.inputs]), n.attrs, n.out.type)
    return b.build([env[v] for v in outs])


def _same_region(old: Region, graph: Graph) -> Region:
    return old if graph.structural_key() == old.key else Region(graph)


def _hoist(s, region: Region, consts: list[Value]) -> tuple[Region, list[Value]]:
    """Move the body nodes that depend only on the region's first ``len(consts)`` inputs (and read at
    least one of them, maybe through constants like ``full``) in front of the loop: they become new
    consts. Random draws stay inside."""
    g, n = region.graph, len(consts)
    outer: dict[Value, Value] = dict(zip(g.inputs[:n], consts))
    hoisted = []
    for node in g.nodes:
        if node.prim.random or not node.inputs or not any(v in outer for v in node.inputs):
            continue
        if all(v in outer or _is_constant(v) for v in node.inputs):
            args = tuple([outer[v] if v in outer else _copy_constant(s, v) for v in node.inputs])
            outer[node.out] = s.simplify(node.prim, args, node.attrs, node.out.type)
            hoisted.append(node.out)
    if not hoisted:
        return region, consts
    b = GraphBuilder(g.name)
    env = {v: b.add_input(v.type) for v in g.inputs[:n]}
    env.update({v: b.add_input(v.type) for v in hoisted})
    env.update({v: b.add_input(v.type) for v in g.inputs[n:]})
    for node in g.nodes:
        if node.out not in env:
            env[node.out] = b.emit_typed(node.prim, tuple([env[v] for v in node.inputs]), node.attrs, node.out.type)
    new = b.build([env[v] for v in g.outputs])
    return Region(new), [*consts, *[outer[v] for v in hoisted]]


def _is_constant(v: Value) -> bool:
    """A value computed from no operands (``full``, ``iota``), the same in every iteration."""
    n = v.node
    return n is not None and not n.inputs and not n.prim.random


def _copy_constant(s, v: Value) -> Value:
    return s.simplify(v.node.prim, (), v.node.attrs, v.type)


def _rebuilt(s, new: Value, kept: list[int], types) -> Value:
    """``make_tuple`` of the old node's elements: element k of `new` for the kept, placeholders for the rest."""
    position = {k: j for j, k in enumerate(kept)}
    elements = [s.emit("tuple_get", new, index=position[k]) if k in position else s.const(0, t)
                for k, t in enumerate(types)]
    return s.emit("make_tuple", *elements)


def _needed(used, n: int) -> list[bool]:
    return [used is None or k in used for k in range(n)]


def _cond_rule(s, pred, *ops, true, false):
    used = s.take_used()
    p = const_value(pred)
    if p is not None:                                                            # cond(const, ...) -> its branch
        return s.emit("make_tuple", *s.inline((true if p else false).graph, ops))
    if true == false:                                                            # cond(p, f, f) -> f
        return s.emit("make_tuple", *s.inline(true.graph, ops))
    need = [k for k, u in enumerate(_needed(used, len(true.out_types))) if u]
    reads = sorted(_live_inputs(true.graph, need) | _live_inputs(false.graph, need))
    if len(need) == len(true.out_types) and len(reads) == len(ops):
        return None
    t, f = (Region(_subgraph(r.graph, reads, need)) for r in (true, false))
    new = s.emit("cond", pred, *[ops[i] for i in reads], true=t, false=f)
    return _rebuilt(s, new, need, true.out_types)


def _loop_carries(need_carry: list[bool], deps) -> list[bool]:
    """Carries needed: those read, and those a needed part of the loop depends on, to a fixed point.
    `deps(need)` is the set of carry positions the needed outputs (and the loop's test) read."""
    need = list(need_carry)
    while True:
        more = [b or k in deps(need) for k, b in enumerate(need)]
        if more == need:
            return need
        need = more


def _scan_rule(s, *ops, body, num_consts, num_carry, length, reverse):
    used = s.take_used()
    consts, init, xs = ops[:num_consts], ops[num_consts:num_consts + num_carry], ops[num_consts + num_carry:]
    n_y = len(body.out_types) - num_carry
    if length == 0:                                                              # scan of length 0 -> init
        ys = [s.const(0, TensorType((0, *t.shape), t.dtype)) for t in body.out_types[num_carry:]]
        return s.emit("make_tuple", *init, *ys)
    region, consts = _hoist(s, body, list(consts))                               # loop invariants out
    nc = len(consts)
    g = region.graph
    need_y = _needed(None if used is None else {k - num_carry for k in used if k >= num_carry}, n_y)
    ys_out = [num_carry + j for j in range(n_y) if need_y[j]]

    def deps(need):
        live = _live_inputs(g, [k for k in range(num_carry) if need[k]] + ys_out)
        return {i - nc for i in live if nc <= i < nc + num_carry}

    need_c = _loop_carries(_needed(used, num_carry), deps)
    carries = [k for k in range(num_carry) if need_c[k]]
    live = _live_inputs(g, carries + ys_out)
    kept_consts = [i for i in range(nc) if i in live]
    kept_xs = [j for j in range(len(xs)) if nc + num_carry + j in live]
    if region is body and len(kept_consts) == nc and len(carries) == num_carry and len(ys_out) == n_y \
            and len(kept_xs) == len(xs):
        return None
    inputs = kept_consts + [nc + k for k in carries] + [nc + num_carry + j for j in kept_xs]
    new_body = Region(_subgraph(g, inputs, carries + ys_out))
    new = s.emit("scan", *[consts[i] for i in kept_consts], *[init[k] for k in carries], *[xs[j] for j in kept_xs],
                 body=new_body, num_consts=len(kept_consts), num_carry=len(carries), length=length, reverse=reverse)
    out_types = [*(v.type for v in init), *(TensorType((length, *t.shape), t.dtype) for t in body.out_types[num_carry:])]
    return _rebuilt(s, new, carries + ys_out, out_types)


def _while_rule(s, *ops, cond, body, num_cond_consts, num_body_consts):
    used = s.take_used()
    ncc, nbc = num_cond_consts, num_body_consts
    cconsts, bconsts, init = ops[:ncc], ops[ncc:ncc + nbc], ops[ncc + nbc:]
    if const_value(cond.graph.outputs[0]) is False:                              # while(false) -> init
        return s.emit("make_tuple", *init)
    cond_r, cconsts = _hoist(s, cond, list(cconsts))                             # loop invariants out
    body_r, bconsts = _hoist(s, body, list(bconsts))
    ncc, nbc, n = len(cconsts), len(bconsts), len(init)
    cg, bg = cond_r.graph, body_r.graph
    cond_reads = {i - ncc for i in _live_inputs(cg, [0]) if i >= ncc}

    def deps(need):
        live = _live_inputs(bg, [k for k in range(n) if need[k]])
        return cond_reads | {i - nbc for i in live if i >= nbc}

    need = _loop_carries(_needed(used, n), deps)
    carries = [k for k in range(n) if need[k]]
    kept_cc = sorted(i for i in _live_inputs(cg, [0]) if i < ncc)
    kept_bc = sorted(i for i in _live_inputs(bg, carries) if i < nbc)
    if cond_r is cond and body_r is body and len(carries) == n and len(kept_cc) == ncc and len(kept_bc) == nbc:
        return None
    new_cond = Region(_subgraph(cg, kept_cc + [ncc + k for k in carries], [0]))
    new_body = Region(_subgraph(bg, kept_bc + [nbc + k for k in carries], carries))
    new = s.emit("while_loop", *[cconsts[i] for i in kept_cc], *[bconsts[i] for i in kept_bc],
                 *[init[k] for k in carries], cond=new_cond, body=new_body, num_cond_consts=len(kept_cc),
                 num_body_consts=len(kept_bc))
    return _rebuilt(s, new, carries, [v.type for v in init])


RULES: dict[str, list[Rule]] = {
    "add": [
        lambda s, x, y: x if is_const(y, 0) else None,                              # x + 0 -> x
        lambda s, x, y: y if is_const(x, 0) else None,                              # 0 + x -> x
        lambda s, x, y: s.emit("sub", x, y.node.inputs[0]) if producer(y, "neg") else None,  # x + -y -> x - y
        lambda s, x, y: s.emit("sub", y, x.node.inputs[0]) if producer(x, "neg") else None,  # -x + y -> y - x
    ],
    "sub": [
        lambda s, x, y: x if is_const(y, 0) else None,                              # x - 0 -> x
        lambda s, x, y: s.emit("neg", y) if is_const(x, 0) else None,               # 0 - x -> -x
        lambda s, x, y: s.emit("add", x, y.node.inputs[0]) if producer(y, "neg") else None,  # x - -y -> x + y
    ],
    "mul": [
        lambda s, x, y: x if is_const(y, 1) else None,                              # x * 1 -> x
        lambda s, x, y: y if is_const(x, 1) else None,                              # 1 * x -> x
        lambda s, x, y: s.emit("neg", x) if is_const(y, -1) else None,              # x * -1 -> -x
        lambda s, x, y: s.emit("neg", y) if is_const(x, -1) else None,              # -1 * x -> -x
        _mul_by_zero,                                                               # x * 0 -> 0 (integer x only)
    ],
    "div": [
        lambda s, x, y: x if is_const(y, 1) else None,                              # x / 1 -> x
        lambda s, x, y: s.emit("neg", x) if is_const(y, -1) else None,              # x / -1 -> -x
    ],
    "pow": [
        lambda s, x, y: x if is_const(y, 1) else None,                              # x ** 1 -> x
        lambda s, x, y: s.emit("mul", x, x) if is_const(y, 2) else None,            # x ** 2 -> x * x
    ],
    "dot_general": [
        _dot_of_transpose,                                                          # dot(transpose(x), y) -> dot(x, y)
        _dot_of_unit_reshape,                                                       # dot(reshape(x), y), 1-axes only
        _dot_of_unit_contraction,                                                   # dot with k = 1 -> x * y, broadcast
        _dot_of_identity,                                                           # dot(diag(d), A) -> d * A^T (nan kept)
    ],
    "iota": [_iota_of_one],                                                         # iota along a 1-axis -> 0
    "neg": [
        lambda s, x: x.node.inputs[0] if producer(x, "neg") else None,              # neg(neg(x)) -> x
    ],
    "select": [
        lambda s, p, x, y: x if x is y else None,                                   # select(p, x, x) -> x
        lambda s, p, x, y: x if const_value(p) is True else None,                   # select(true, x, y) -> x
        lambda s, p, x, y: y if const_value(p) is False else None,                  # select(false, x, y) -> y
    ],
    "convert_element_type": [
        lambda s, x, *, dtype: x if x.dtype is dtype else None,                     # convert to own dtype -> x
    ],
    "reshape": [
        lambda s, x, *, shape: x if x.shape == shape else None,                     # reshape to own shape -> x
        _reshape_reshape,                                                           # reshape∘reshape -> reshape
    ],
    "transpose": [
        lambda s, x, *, permutation: x if permutation == tuple(range(x.ndim)) else None,  # identity -> x
        _transpose_transpose,                                                       # transpose∘transpose -> transpose
        _transpose_of_dot,                                                          # transpose(dot(x, y)) -> dot(y, x)
    ],
    "broadcast_in_dim": [
        lambda s, x, *, shape, broadcast_dimensions:                                # broadcast to own shape -> x
            x if x.shape == shape and broadcast_dimensions == tuple(range(x.ndim)) else None,
        _broadcast_broadcast,                                                       # broadcast∘broadcast -> broadcast
        _broadcast_as_reshape,                                                      # broadcast adding 1-axes -> reshape
    ],
    "reduce_sum": [
        lambda s, x, *, axes: x if not axes else None,                              # sum over no axes -> x
        _reduce_of_broadcast,                                                       # broadcast then reduce_sum -> x * n
        _reduce_reduce,                                                             # sum∘sum -> sum
    ],
    "slice": [
        lambda s, x, *, start_indices, limit_indices, strides:                      # full-range slice -> x
            x if limit_indices == x.shape and not any(start_indices) and set(strides) <= {1} else None,
    ],
    "pad": [
        lambda s, x, *, low, high, interior, value:                                 # no padding -> x
            x if not any(low) and not any(high) and not any(interior) else None,
    ],
    "rev": [
        lambda s, x, *, axes: x if not axes else None,                              # rev over no axes -> x
        _rev_rev,                                                                   # rev∘rev -> x
    ],
    "concatenate": [
        lambda s, *xs, axis: xs[0] if len(xs) == 1 else None,                       # concat of one -> x
    ],
    "tuple_get": [
        lambda s, t, *, index: t.node.inputs[index] if producer(t, "make_tuple") else None,  # make_tuple(xs)[i] -> xs[i]
    ],
    "cond": [_cond_rule],                     # constant predicate or equal branches -> the branch; unused parts dropped
    "scan": [_scan_rule],                     # length 0 -> init; invariants hoisted; unused ys, carries, operands dropped
    "while_loop": [_while_rule],              # constant-false test -> init; invariants hoisted; unused parts dropped
}

LAYOUT_RULES: dict[str, list[Rule]] = {
    "dot_general": [_dot_of_transpose, _dot_of_unit_reshape],
    "transpose": RULES["transpose"],
    "reshape": RULES["reshape"],
}
"""The rules of `fold_layout`: products reading through transposes and 1-axis reshapes."""


# --- constant folding ----------------------------------------------------------------------------
def _fold(prim: Primitive, inputs: tuple[Value, ...], consts: list, attrs: dict, out: TensorType):
    """The fill value of `prim` applied to `full` constants (`consts`: their values), or None.

    Each primitive says how it folds (`Primitive.fold`; None: it does not)."""
    if prim.fold is None:
        return None
    try:
        value = prim.fold(consts, inputs, attrs, out)
        return None if value is None else _scalar(value, out.dtype)
    except (OverflowError, ValueError):  # e.g. an integer result out of range: leave the node alone
        return None


class _Simplifier:
    """Emits simplified nodes into a new graph (see the module docstring)."""

    def __init__(self, name: str, rules: dict[str, list[Rule]], fold: bool):
        self.b = GraphBuilder(name)
        self.rules = rules
        self.fold = fold
        self.memo: dict[tuple, Value] = {}
        self.uses: dict[Value, int] = {}  # new value -> uses of the input-graph values it stands for
        self.used: set[int] | None = None  # the tuple elements read of the node being simplified (None: all)
        self.regions: dict[Region, Region] = {}  # a region -> its simplified version

    def take_used(self) -> set[int] | None:
        """The elements of the current node's tuple result that the graph reads (None: all), once:
        nodes a rule emits in turn see None."""
        used, self.used = self.used, None
        return used

    def inline(self, graph: Graph, args) -> list[Value]:
        """`graph`'s nodes simplified into this graph, its inputs bound to `args`; its outputs."""
        env = dict(zip(graph.inputs, args, strict=True))
        for n in graph.nodes:
            env[n.out] = self.simplify(n.prim, tuple([env[v] for v in n.inputs]), n.attrs, n.out.type)
        return [env[v] for v in graph.outputs]

    def region(self, r: Region) -> Region:
        """`r` with its graph simplified (the same object when nothing changes)."""
        hit = self.regions.get(r)
        if hit is None:
            hit = self.regions[r] = _same_region(r, _rewrite(r.graph, self.rules, self.fold))
        return hit

    def single_use(self, v: Value) -> bool:
        """Is `v` used once in the graph being simplified (values a rule made are counted as used once)?"""
        return self.uses.get(v, 1) <= 1

    def const(self, value, type: TensorType) -> Value:
        return self.emit("full", shape=type.shape, dtype=type.dtype, value=_scalar(value, type.dtype))

    def emit(self, prim: Primitive | str, *inputs: Value, **attrs) -> Value:
        """A new application (from a rule): run its type rule, then simplify it."""
        prim = get_primitive(prim) if isinstance(prim, str) else prim
        attrs = {k: freeze_attr(a) for k, a in attrs.items()}
        return self.simplify(prim, inputs, attrs, prim.abstract_eval(*(v.type for v in inputs), **attrs))

    def simplify(self, prim: Primitive, inputs: tuple[Value, ...], attrs: dict, out_type: TensorType) -> Value:
        """`prim(*inputs, **attrs)` of known type `out_type` (attrs frozen): folded, rewritten, reused or emitted."""
        if prim.family == "control":  # regions are simplified first, recursively
            attrs = {k: self.region(a) if a.__class__ is Region else a for k, a in attrs.items()}
        if self.fold and inputs and not prim.random:
            consts = [const_value(v) for v in inputs]
            if None not in consts:
                value = _fold(prim, inputs, consts, attrs, out_type)
                if value is not None:
                    return self.const(value, out_type)
        for rule in self.rules.get(prim.name, ()):
            r = rule(self, *inputs, **attrs)
            if r is not None:
                if r.type != out_type:
                    raise AssertionError(f"simplify: a {prim.name} rewrite produced {r.type}, expected {out_type}")
                return r
        if len(attrs) == 1:
            ((k, a),) = attrs.items()
            key = (prim, inputs, k, _attr_key(a))
        else:
            key = (prim, inputs, *sorted([(k, _attr_key(a)) for k, a in attrs.items()]))
        v = self.memo.get(key)
        if v is None:
            v = self.memo[key] = self.b.emit_typed(prim, inputs, attrs, out_type)
        return v


def _live_nodes(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """The nodes some output depends on, in their order."""
    live = set(outputs)
    kept = []
    for n in reversed(nodes):
        if n.out in live:
            kept.append(n)
            live.update(n.inputs)
    kept.reverse()
    return kept


def _rewrite(graph: Graph, rules: dict[str, list[Rule]], fold: bool) -> Graph:
    """One forward walk over the live nodes of `graph`, then dead nodes of the new graph dropped.

    A node's operands are final when it is visited and every replacement a rule emits is
    simplified in turn, so the result is a fixed point: a second walk finds nothing more to do.
    Copied nodes keep their result type (no type rule runs); only rules' new nodes are type-checked.
    """
    s = _Simplifier(graph.name, rules, fold)
    env: dict[Value, Value] = {v: s.b.add_input(v.type) for v in graph.inputs}
    live = _live_nodes(graph.nodes, graph.outputs)
    uses: dict[Value, int] = {}
    for v in graph.outputs:
        uses[v] = uses.get(v, 0) + 1
    read: dict[Value, set[int] | None] = {}  # tuple value -> the elements read (None: all)
    for n in live:
        for v in n.inputs:
            uses[v] = uses.get(v, 0) + 1
            if v.type.__class__ is TupleType:
                _note_read(read, v, n)
    counts = s.uses
    for n in live:
        s.used = read.get(n.out)
        new = env[n.out] = s.simplify(n.prim, tuple([env[v] for v in n.inputs]), n.attrs, n.out.type)
        counts[new] = counts.get(new, 0) + uses[n.out]
    outputs = [env[v] for v in graph.outputs]
    # dead nodes left behind by rewrites; every node here is new, so filtering copies nothing
    return Graph(s.b.inputs, _live_nodes(s.b.nodes, outputs), outputs, graph.name)


def _note_read(read: dict, v: Value, n: Node) -> None:
    if n.prim.name != "tuple_get":
        read[v] = None
    elif v not in read:
        read[v] = {n.attrs["index"]}
    elif read[v] is not None:
        read[v].add(n.attrs["index"])


def dce(graph: Graph) -> Graph:
    """`graph` without the nodes no output depends on (inputs are kept, even if unused).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32)); _ = b.cos(x)
    >>> [n.prim.name for n in dce(b.build([b.sin(x)])).nodes]
    ['sin']
    """
    return _copy(graph, _live_nodes(graph.nodes, graph.outputs))


def _copy(graph: Graph, nodes: list[Node]) -> Graph:
    """A new graph of copies of `nodes` (a subset of `graph`'s, in order), with fresh values."""
    b = GraphBuilder(graph.name)
    env: dict[Value, Value] = {v: b.add_input(v.type) for v in graph.inputs}
    for n in nodes:
        env[n.out] = b.emit_typed(n.prim, tuple([env[v] for v in n.inputs]), n.attrs, n.out.type)
    return b.build([env[v] for v in graph.outputs])


def cse(graph: Graph) -> Graph:
    """`graph` with repeated computations (same primitive, operands and attributes) merged.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((), float32))
    >>> [n.prim.name for n in cse(b.build([b.add(b.sin(x), b.sin(x))])).nodes]
    ['sin', 'add']
    """
    return _rewrite(graph, {}, fold=False)


def fold_layout(graph: Graph) -> Graph:
    """`graph` with the transposes and 1-axis reshapes around its products read through by the
    products (`LAYOUT_RULES`): BLAS takes a transposed operand or result by its flags, so no copy
    is made (the code generator's view of the rules `simplify` also applies). `graph` itself
    when no product has such a neighbour; otherwise no other rewrite than CSE and DCE is made.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); a = b.add_input(TensorType((3, 2), float32)); w = b.add_input(TensorType((3, 4), float32))
    >>> g = b.build([b.dot_general(b.transpose(a, permutation=(1, 0)), w, contract=((1,), (0,)), batch=((), ()))])
    >>> [n.prim.name for n in fold_layout(g).nodes]
    ['dot_general']
    """
    if not any(_layout_neighbour(n) for n in graph.nodes):
        return graph
    out = _rewrite(graph, LAYOUT_RULES, fold=False)
    return Graph(out.inputs, out.nodes, out.outputs, graph.name,
                 {new: graph.arg_attrs[old] for old, new in zip(graph.inputs, out.inputs) if old in graph.arg_attrs})


def _layout_neighbour(n: Node) -> bool:
    """Is `n` a product reading a transpose or reshape, or a transpose or reshape of a product?"""
    name = n.prim.name
    if name == "dot_general":
        return any(v.node is not None and v.node.prim.name in ("transpose", "reshape") for v in n.inputs)
    return (name in ("transpose", "reshape") and n.inputs[0].node is not None
            and n.inputs[0].node.prim.name == "dot_general")


def simplify(graph: Graph, *, max_rounds: int = 1) -> Graph:
    """DCE, CSE, constant folding and the algebraic identities of `RULES`, to a fixed point.

    One walk reaches the fixed point (see `_rewrite`); `max_rounds` > 1 re-walks while a walk
    still removes nodes, a check for new rules that look further than their operands' producers.
    A graph with control flow is walked up to `CONTROL_ROUNDS` times (regions are simplified
    recursively; see the control-flow rules).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((3,), float32))
    >>> y = b.mul(b.transpose(b.transpose(x, permutation=(0,)), permutation=(0,)), b.const(1.0, (3,)))
    >>> g = b.build([b.add(y, b.sin(x))])
    >>> [n.prim.name for n in g.nodes], [n.prim.name for n in simplify(g).nodes]
    (['transpose', 'transpose', 'full', 'mul', 'sin', 'add'], ['sin', 'add'])
    """
    out = _rewrite(graph, RULES, fold=True)
    size = _size(out)
    if size[1]:  # control flow: a result dropped late can make parts of an earlier loop dead
        max_rounds = max(max_rounds, CONTROL_ROUNDS)
    for _ in range(max_rounds - 1):
        again = _rewrite(out, RULES, fold=True)
        again_size = _size(again)
        if again_size >= size:
            break
        out, size = again, again_size
    return out


CONTROL_ROUNDS = 4
"""How many walks `simplify` makes at most on a graph with control flow: information about unused
results flows backwards, from a reader to the loop before it, one walk at a time."""


def _size(graph: Graph) -> tuple[int, int]:
    """(nodes and tuple elements, nested ones included; the number of nodes carrying regions)."""
    total, control = 0, 0
    for n in graph.nodes:
        total += 1
        t = n.out.type
        if t.__class__ is TupleType:
            total += len(t.elements)
        for a in n.attrs.values():
            if a.__class__ is Region:
                sub, sub_control = _size(a.graph)
                total += sub
                control += 1 + sub_control
    return total, control

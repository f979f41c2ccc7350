"""User-defined derivatives and rematerialisation: primitives that carry regions.

- ``custom_jvp_call(*jvp_consts, *fun_consts, *args) {fun, jvp, num_jvp_consts, num_fun_consts}``:
  evaluates ``fun(*fun_consts, *args)``; its JVP is the user's rule
  ``jvp(*jvp_consts, *args, *tangents) -> (*outs, *tangent outs)`` (zero tangents are passed as
  zeros), inlined in place of the node, so the rule is differentiated again like any code.
- ``custom_vjp_call(*fwd_consts, *bwd_consts, *fun_consts, *args) {fun, fwd, bwd, ...}``:
  evaluates ``fun``; reverse mode runs ``fwd(*fwd_consts, *args) -> (*outs, *residuals)`` forward
  and ``bwd(*bwd_consts, *residuals, *cotangents) -> argument cotangents`` backward. Its JVP
  inlines `fwd` and, for reverse mode, emits ``custom_vjp_lin`` (a linear node whose transpose is
  `bwd`); in forward mode (jvp, jacfwd) the tangent is `bwd` transposed (bwd must be linear in
  the cotangents, as a VJP is).
- ``checkpoint(*args) {body, policy}``: evaluates ``body``; reverse mode saves only the operands
  (and, under a `policy` other than the default nothing_saveable, the intermediate values it names
  saveable: every one, or the dot_general results) and recomputes the body in the backward pass
  (inside a checkpoint region of its own, so that the recomputation is not merged back into the
  forward pass).

Consts are the tensors the user's functions close over; the operands of `fun` come last, so
that evaluating the node (the interpreter, codegen) runs `fun` on its trailing operands. Derivatives do not flow into the consts of
custom rules (the user's rule does not say how): differentiating with respect to one is an error
that asks for the tensor to be passed as an argument.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes as dt
from ..core import Graph, GraphBuilder, Value, inline
from ..interpreter import interpret
from ..passes.batching import batch_graph, batched_outputs
from ..passes.jvp import jvp
from ..passes.partial_eval import partial_eval
from ..passes.simplify import _live_nodes as live_nodes
from ..passes.transpose import transpose
from ..primitive import Primitive, register
from ..regions import Region
from ..rules import instantiate, is_undefined
from ..types import TensorType, TupleType
from .control import types_text
from .control_ad import elements, pack

__all__ = ["CUSTOM_JVP_CALL", "CUSTOM_VJP_CALL", "CUSTOM_VJP_LIN", "CHECKPOINT", "CustomRuleError"]


class CustomRuleError(TypeError):
    """A custom derivative rule whose results do not match the function it is for."""


def _region(op: str, name: str, r) -> Region:
    if not isinstance(r, Region):
        raise TypeError(f"{op}: attribute {name} must be a Region, got {type(r).__name__}")
    return r


def _counts(op: str, operands: Sequence, *counts: int) -> list[Sequence]:
    """`operands` cut into groups of `counts`, then the rest."""
    parts, k = [], 0
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0 or k + n > len(operands):
            raise ValueError(f"{op}: operand counts {counts} do not fit {len(operands)} operands")
        parts.append(operands[k:k + n])
        k += n
    return parts + [operands[k:]]


def _expect(op: str, what: str, got: Sequence, expected: Sequence, exc=CustomRuleError) -> None:
    if list(got) != list(expected):
        raise exc(f"{op}: {what} {types_text(got)}, expected {types_text(expected)}")


def _no_const_tangents(op: str, tangents: Sequence) -> None:
    if any(t is not None for t in tangents):
        raise ValueError(f"{op}: the function closes over a tensor that is being differentiated; custom derivative "
                         f"rules only give derivatives for their arguments: pass that tensor as an argument")


def _tuple_result(types) -> TupleType:
    return TupleType(tuple(types))


def _batch_region(region: Region, dims: Sequence, axis_size: int, out_batched: Sequence[bool], randomness) -> Region:
    """`region` batched with the operands' batch dims, outputs at axis 0 where flagged, else unbatched."""
    return Region(batch_graph(region.graph, list(dims), axis_size, [0 if b else None for b in out_batched],
                              randomness=randomness))


def _moved_to_front(ctx, values, dims):
    """Batched operands with their batch axis at 0 (unbatched ones untouched), and their dims."""
    from ..rules import move_bdim

    vals = [v if d is None else move_bdim(ctx, v, d, 0) for v, d in zip(values, dims)]
    return vals, [None if d is None else 0 for d in dims]


def _union(*flags: Sequence[bool]) -> list[bool]:
    return [any(fs) for fs in zip(*flags)]


# --- custom_jvp_call -----------------------------------------------------------------------------
def _custom_jvp_type(*operands, fun, jvp, num_fun_consts, num_jvp_consts):
    op = "custom_jvp_call"
    fun, jvp = _region(op, "fun", fun), _region(op, "jvp", jvp)
    jconsts, fconsts, args = _counts(op, operands, num_jvp_consts, num_fun_consts)
    _expect(op, "the function takes", fun.in_types, [*fconsts, *args], TypeError)
    _expect(op, "the jvp rule takes", jvp.in_types, [*jconsts, *args, *args], TypeError)
    outs = list(fun.out_types)
    _expect(op, "the jvp rule returns (primal outputs, tangents)", jvp.out_types, outs + outs)
    return _tuple_result(outs)


def _custom_jvp_impl(*operands, fun, jvp, num_fun_consts, num_jvp_consts):
    _, fconsts, args = _counts("custom_jvp_call", operands, num_jvp_consts, num_fun_consts)
    return tuple(interpret(fun.graph, [*fconsts, *args]))


def _custom_jvp_jvp(ctx, primals, tangents, *, fun, jvp, num_fun_consts, num_jvp_consts):
    op = "custom_jvp_call"
    jconsts, _, args = _counts(op, primals, num_jvp_consts, num_fun_consts)
    _no_const_tangents(op, tangents[:num_fun_consts + num_jvp_consts])
    t_args = [instantiate(ctx, t, a) for t, a in zip(tangents[num_fun_consts + num_jvp_consts:], args)]
    outs = inline(ctx, jvp.graph, [*jconsts, *args, *t_args])
    n = len(fun.out_types)
    return pack(ctx, outs[:n]), tuple(outs[n:])


def _custom_jvp_batch(ctx, values, dims, *, fun, jvp, num_fun_consts, num_jvp_consts):
    values, dims = _moved_to_front(ctx, values, dims)
    nf, nj = num_fun_consts, num_jvp_consts
    jdims, fdims, adims = dims[:nj], dims[nj:nj + nf], dims[nj + nf:]
    fb = [d is not None for d in fdims + adims]
    jb = [d is not None for d in jdims + adims + adims]
    n = len(fun.out_types)
    jout = batched_outputs(jvp.graph, jb)
    out_b = _union(batched_outputs(fun.graph, fb), jout[:n], jout[n:])
    size, rnd = ctx.axis_size, getattr(ctx, "randomness", "error")
    out = ctx.custom_jvp_call(*values, fun=_batch_region(fun, fdims + adims, size, out_b, rnd),
                              jvp=_batch_region(jvp, jdims + adims + adims, size, out_b + out_b, rnd),
                              num_fun_consts=nf, num_jvp_consts=nj)
    return out, tuple(0 if b else None for b in out_b)


CUSTOM_JVP_CALL = register(Primitive(
    "custom_jvp_call", _custom_jvp_type, _custom_jvp_impl, jvp=_custom_jvp_jvp, batch=_custom_jvp_batch,
    variadic=True, family="control",
    doc="the fun region, differentiated in forward mode by the user's jvp region"))


# --- custom_vjp_call -----------------------------------------------------------------------------
def _vjp_parts(operands, num_fun_consts, num_fwd_consts, num_bwd_consts):
    """(fun consts, fwd consts, bwd consts, args) of the operands ``(*fwd, *bwd, *fun consts, *args)``."""
    wconsts, bconsts, fconsts, args = _counts("custom_vjp_call", operands, num_fwd_consts, num_bwd_consts,
                                              num_fun_consts)
    return fconsts, wconsts, bconsts, args


def _custom_vjp_type(*operands, fun, fwd, bwd, num_fun_consts, num_fwd_consts, num_bwd_consts):
    op = "custom_vjp_call"
    fun, fwd, bwd = (_region(op, k, r) for k, r in (("fun", fun), ("fwd", fwd), ("bwd", bwd)))
    fconsts, wconsts, bconsts, args = _vjp_parts(operands, num_fun_consts, num_fwd_consts, num_bwd_consts)
    _expect(op, "the function takes", fun.in_types, [*fconsts, *args], TypeError)
    _expect(op, "fwd takes", fwd.in_types, [*wconsts, *args], TypeError)
    outs = list(fun.out_types)
    _expect(op, "fwd returns as its outputs", fwd.out_types[:len(outs)], outs)
    res = list(fwd.out_types[len(outs):])
    _expect(op, "bwd takes", bwd.in_types, [*bconsts, *res, *outs], TypeError)
    _expect(op, "bwd returns cotangents", bwd.out_types, list(args))
    return _tuple_result(outs)


def _custom_vjp_impl(*operands, fun, fwd, bwd, num_fun_consts, num_fwd_consts, num_bwd_consts):
    fconsts, _, _, args = _vjp_parts(operands, num_fun_consts, num_fwd_consts, num_bwd_consts)
    return tuple(interpret(fun.graph, [*fconsts, *args]))


def forward_tangent_graph(bwd: Region, num_consts: int, num_res: int) -> Graph:
    """``(*consts, *residuals, *argument tangents) -> output tangents``: the VJP `bwd` transposed.

    Forward mode of a custom VJP rule: `bwd` is linear in its cotangents, so its transpose maps
    argument tangents to output tangents.

    >>> from tensorplay.ir import GraphBuilder, Region, TensorType, float32
    >>> b = GraphBuilder("bwd"); r, ct = b.add_input(TensorType((3,), float32)), b.add_input(TensorType((3,), float32))
    >>> g = forward_tangent_graph(Region(b.build([b.mul(ct, r)])), 0, 1)  # (r, t) -> t * r
    >>> [n.prim.name for n in g.nodes], g.in_types
    (['mul'], [tensor<3xf32>, tensor<3xf32>])
    """
    g = bwd.graph
    n_ct = len(g.inputs) - num_consts - num_res
    try:
        return transpose(g, [False] * (num_consts + num_res) + [True] * n_ct)
    except (NotImplementedError, AssertionError, TypeError) as e:  # TypeError: a cotangent reached a non-linear operand
        raise CustomRuleError(f"custom_vjp_call: forward-mode differentiation (jvp, jacfwd) of a custom_vjp function "
                              f"transposes its bwd, which must then be linear in the cotangents: {e}") from None


def _custom_vjp_jvp(ctx, primals, tangents, *, fun, fwd, bwd, num_fun_consts, num_fwd_consts, num_bwd_consts):
    op = "custom_vjp_call"
    _, wconsts, bconsts, args = _vjp_parts(primals, num_fun_consts, num_fwd_consts, num_bwd_consts)
    nconst = num_fun_consts + num_fwd_consts + num_bwd_consts
    _no_const_tangents(op, tangents[:nconst])
    outs_res = inline(ctx, fwd.graph, [*wconsts, *args])
    n = len(fun.out_types)
    outs, res = outs_res[:n], outs_res[n:]
    if all(t is None for t in tangents[nconst:]):
        return pack(ctx, outs), None
    t_args = [instantiate(ctx, t, a) for t, a in zip(tangents[nconst:], args)]
    if getattr(ctx, "for_transpose", False):
        lin = ctx.custom_vjp_lin(*bconsts, *res, *t_args, bwd=bwd, num_consts=num_bwd_consts)
        return pack(ctx, outs), tuple(elements(ctx, lin))
    fwd_lin = forward_tangent_graph(bwd, num_bwd_consts, len(res))
    return pack(ctx, outs), tuple(inline(ctx, fwd_lin, [*bconsts, *res, *t_args]))


def _custom_vjp_batch(ctx, values, dims, *, fun, fwd, bwd, num_fun_consts, num_fwd_consts, num_bwd_consts):
    """All three regions batched consistently: residuals and outputs at axis 0 where batched, and an
    unbatched argument whose cotangent depends on the batch is broadcast (its transpose then sums
    the per-sample cotangents)."""
    values, dims = _moved_to_front(ctx, values, dims)
    nf, nw, nb = num_fun_consts, num_fwd_consts, num_bwd_consts
    fdims, wdims, bdims, adims = (list(p) for p in _vjp_parts(dims, nf, nw, nb))
    n_fixed, n = nf + nw + nb, len(fun.out_types)
    while True:  # each round batches at least one more argument, or stops
        fwd_out = batched_outputs(fwd.graph, [d is not None for d in wdims + adims])
        out_b = _union(batched_outputs(fun.graph, [d is not None for d in fdims + adims]), fwd_out[:n])
        res_b = fwd_out[n:]
        arg_b = _union([d is not None for d in adims],
                       batched_outputs(bwd.graph, [d is not None for d in bdims] + res_b + out_b))
        if arg_b == [d is not None for d in adims]:
            break
        values = values[:n_fixed] + [_broadcast(ctx, v) if b and d is None else v
                                     for v, d, b in zip(values[n_fixed:], adims, arg_b)]
        adims = [0 if b else None for b in arg_b]
    size, rnd = ctx.axis_size, getattr(ctx, "randomness", "error")
    ct_dims = [0 if b else None for b in res_b + out_b]
    out = ctx.custom_vjp_call(
        *values, fun=_batch_region(fun, fdims + adims, size, out_b, rnd),
        fwd=_batch_region(fwd, wdims + adims, size, out_b + res_b, rnd),
        bwd=_batch_region(bwd, bdims + ct_dims, size, arg_b, rnd),
        num_fun_consts=nf, num_fwd_consts=nw, num_bwd_consts=nb)
    return out, tuple(0 if b else None for b in out_b)


def _broadcast(ctx, v: Value) -> Value:
    from ..rules import materialize

    return materialize(ctx, v, None, 0)


CUSTOM_VJP_CALL = register(Primitive(
    "custom_vjp_call", _custom_vjp_type, _custom_vjp_impl, jvp=_custom_vjp_jvp, batch=_custom_vjp_batch,
    variadic=True, family="control",
    doc="the fun region, differentiated in reverse mode by the user's fwd and bwd regions"))


# --- custom_vjp_lin ------------------------------------------------------------------------------
def _lin_type(*operands, bwd, num_consts):
    op = "custom_vjp_lin"
    bwd = _region(op, "bwd", bwd)
    n_t = len(bwd.out_types)
    if n_t > len(operands) - num_consts:
        raise ValueError(f"{op}: {len(operands)} operands cannot hold {num_consts} consts and {n_t} tangents")
    _expect(op, "the tangents are", operands[len(operands) - n_t:], bwd.out_types, TypeError)
    _expect(op, "bwd takes consts and residuals", bwd.in_types[:len(operands) - n_t], operands[:len(operands) - n_t],
            TypeError)
    return _tuple_result(bwd.in_types[len(operands) - n_t:])


def _lin_impl(*operands, bwd, num_consts):
    n_t = len(bwd.out_types)
    g = forward_tangent_graph(bwd, num_consts, len(operands) - n_t - num_consts)
    return tuple(interpret(g, list(operands)))


def _lin_jvp(ctx, primals, tangents, *, bwd, num_consts):
    n_t = len(bwd.out_types)
    n_fixed = len(primals) - n_t
    if all(t is None for t in tangents[:n_fixed]):  # linear in the tangents: the tangent is the node again
        out = ctx.custom_vjp_lin(*primals, bwd=bwd, num_consts=num_consts)
        t = [instantiate(ctx, t, p) for t, p in zip(tangents[n_fixed:], primals[n_fixed:])]
        return out, tuple(elements(ctx, ctx.custom_vjp_lin(*primals[:n_fixed], *t, bwd=bwd, num_consts=num_consts)))
    # the residuals move too: differentiate the tangent map (bwd transposed) as ordinary operations
    fwd = forward_tangent_graph(bwd, num_consts, n_fixed - num_consts)
    nz = [t is not None for t in tangents]
    j = jvp(fwd, nz, for_transpose=getattr(ctx, "for_transpose", False))
    outs = inline(ctx, j.graph, [*primals, *[t for t in tangents if t is not None]])
    n = len(fwd.outputs)
    return pack(ctx, outs[:n]), tuple(None if z else t for z, t in zip(j.zero_outputs, outs[n:]))


def _lin_transpose(ctx, ct, operands, *, bwd, num_consts):
    n_t = len(bwd.out_types)
    fixed = operands[:len(operands) - n_t]
    if any(is_undefined(o) for o in fixed):
        raise AssertionError("custom_vjp_lin: residuals cannot be linear")
    types = bwd.in_types[len(fixed):]
    cts = [c if c is not None else ctx.const(0, t.shape, t.dtype) for c, t in zip(ct, types)]
    arg_cts = inline(ctx, bwd.graph, [*fixed, *cts])
    return [None] * len(fixed) + [c if is_undefined(o) else None for c, o in zip(arg_cts, operands[len(fixed):])]


def _lin_batch(ctx, values, dims, *, bwd, num_consts):
    """Every tangent and output tangent batched at axis 0: the transpose then sums the cotangents of
    unbatched arguments over the batch (through the broadcasts made here)."""
    values, dims = _moved_to_front(ctx, values, dims)
    n_in = len(values) - len(bwd.out_types)
    values = values[:n_in] + [_broadcast(ctx, v) if d is None else v for v, d in zip(values[n_in:], dims[n_in:])]
    n_ct = len(bwd.in_types) - n_in
    new_bwd = Region(batch_graph(bwd.graph, dims[:n_in] + [0] * n_ct, ctx.axis_size, 0))
    return ctx.custom_vjp_lin(*values, bwd=new_bwd, num_consts=num_consts), (0,) * n_ct


CUSTOM_VJP_LIN = register(Primitive(
    "custom_vjp_lin", _lin_type, _lin_impl, jvp=_lin_jvp, transpose=_lin_transpose, batch=_lin_batch,
    variadic=True, family="control",
    doc="the tangent map of a custom VJP rule: linear in its tangents, transposed by the bwd region"))


# --- checkpoint ----------------------------------------------------------------------------------
# Which intermediate values reverse mode saves instead of recomputing (JAX's names); the attribute
# is absent for the default, nothing_saveable (only the operands are saved).
NOTHING_SAVEABLE = "nothing_saveable"
CHECKPOINT_POLICIES = {
    NOTHING_SAVEABLE: lambda node: False,
    "everything_saveable": lambda node: True,
    "dots_saveable": lambda node: node.prim.name == "dot_general",
    "dots_with_no_batch_dims_saveable": lambda node: node.prim.name == "dot_general" and not any(node.attrs["batch"]),
}


def _policy(policy) -> dict:
    """The checkpoint attributes that carry `policy` (none for the default)."""
    return {} if policy == NOTHING_SAVEABLE else {"policy": policy}


def _checkpoint_type(*operands, body, policy=NOTHING_SAVEABLE):
    body = _region("checkpoint", "body", body)
    if policy not in CHECKPOINT_POLICIES:
        raise ValueError(f"checkpoint: unknown policy {policy!r} (one of {', '.join(sorted(CHECKPOINT_POLICIES))})")
    _expect("checkpoint", "the body takes", body.in_types, operands, TypeError)
    return _tuple_result(body.out_types)


def _checkpoint_impl(*operands, body, policy=NOTHING_SAVEABLE):
    return tuple(interpret(body.graph, list(operands)))


def _checkpoint_jvp(ctx, primals, tangents, *, body, policy=NOTHING_SAVEABLE):
    nz = [t is not None for t in tangents]
    flag = getattr(ctx, "for_transpose", False)
    out_nz = [not z for z in jvp(body.graph, nz, for_transpose=flag).zero_outputs]
    n = len(body.out_types)
    if not any(out_nz):
        return ctx.checkpoint(*primals, body=body, **_policy(policy)), None
    j = jvp(body.graph, nz, out_nz, for_transpose=flag)
    out = ctx.checkpoint(*primals, *[t for t in tangents if t is not None], body=Region(j.graph), **_policy(policy))
    vals = elements(ctx, out)
    tans = iter(vals[n:])
    return pack(ctx, vals[:n]), tuple(next(tans) if z else None for z in out_nz)


def _saved_values(g: Graph, unknowns, saveable) -> list[Value]:
    """The known values of `g` reverse mode saves under a policy: walking back from the known values
    that unknown nodes read, a saveable one is saved (and the walk stops there), another one is
    recomputed from its operands (and the walk goes on)."""
    known = {v for v, u in zip(g.inputs, unknowns) if not u}
    for n in g.nodes:
        if all(v in known for v in n.inputs):
            known.add(n.out)
    frontier = [v for n in g.nodes if n.out not in known for v in n.inputs if v in known]
    saved, seen = [], set()
    stack = list(reversed(frontier))
    while stack:
        v = stack.pop()
        if v in seen or v.node is None:
            continue
        seen.add(v)
        if saveable(v.node):
            saved.append(v)
        else:
            stack.extend(reversed(v.node.inputs))
    return saved


def _graph_with_inputs(g: Graph, extra: Sequence[Value], outs: Sequence[Value], name: str) -> Graph:
    """`g` computing `outs`, with the values `extra` taken as further inputs (after g's own) instead
    of computed: the nodes only they needed are gone."""
    b = GraphBuilder(name)
    env = {v: b.add_input(v.type) for v in g.inputs}
    env.update({v: b.add_input(v.type) for v in extra})
    needed, stack = set(), list(outs)
    while stack:
        v = stack.pop()
        if v in env or v in needed or v.node is None:
            continue
        needed.add(v)
        stack.extend(v.node.inputs)
    for n in g.nodes:
        if n.out in needed:
            env[n.out] = b.emit_copy(n, tuple([env[v] for v in n.inputs]))
    return b.build([env[v] for v in outs])


def _checkpoint_partial_eval(ctx, operands, unknowns, *, body, policy=NOTHING_SAVEABLE):
    g = body.graph
    pe = partial_eval(g, unknowns, [None] * len(g.outputs))
    out_uk = pe.unknown_outputs
    n_known = len(pe.known.outputs) - pe.num_residuals
    saved = [] if policy == NOTHING_SAVEABLE else _saved_values(g, unknowns, CHECKPOINT_POLICIES[policy])
    known_vals: list[Value] = []
    if n_known or saved:  # the known outputs (and the values the policy saves), from the known operands
        if saved:
            kouts = [v for v, u in zip(g.outputs, out_uk) if not u] + saved
            known_in = [v for v, u in zip(g.inputs, unknowns) if not u]
            kbody = Graph(known_in, live_nodes(g.nodes, kouts), kouts, g.name + "_known")
        else:
            kouts = pe.known.outputs[:n_known]
            kbody = Graph(pe.known.inputs, live_nodes(pe.known.nodes, kouts), kouts, g.name + "_known")
        known = ctx.known.checkpoint(*[v for v, u in zip(operands, unknowns) if not u], body=Region(kbody),
                                     **_policy(policy))
        known_vals = elements(ctx.known, known)
    # the unknown side recomputes the body from the operands and the saved values (the residuals)
    uouts = [v for v, u in zip(g.outputs, out_uk) if u]
    ubody = _graph_with_inputs(g, saved, uouts, g.name)
    saved_vals = [ctx.residual(v) for v in known_vals[n_known:]]
    unk = ctx.unknown.checkpoint(*[ctx.lift(i) for i in range(len(operands))], *saved_vals, body=Region(ubody),
                                 **_policy(policy))
    kit, uit = iter(known_vals[:n_known]), iter(elements(ctx.unknown, unk))
    return [(True, next(uit)) if u else (False, next(kit)) for u in out_uk]


def _checkpoint_transpose(ctx, ct, operands, *, body, policy=NOTHING_SAVEABLE):
    g = body.graph
    lin = [is_undefined(o) for o in operands]
    pe = partial_eval(g, lin, [None] * len(g.outputs))
    n_known = len(pe.known.outputs) - pe.num_residuals
    unknown_out = [k for k, u in enumerate(pe.unknown_outputs) if u]
    with_ct = [ct[k] is not None for k in unknown_out]
    res_ops = [o for o, li in zip(operands, lin) if not li]
    tb = GraphBuilder(g.name + "_T")
    res_in = [tb.add_input(o.type) for o in res_ops]
    ct_in = [tb.add_input(ct[k].type) for k, w in zip(unknown_out, with_ct) if w]
    residuals = inline(tb, pe.known, res_in)[n_known:]  # the forward recomputed here, in the backward pass
    lt = transpose(pe.unknown, [False] * pe.num_residuals + [True] * sum(lin), with_ct)
    tbody = tb.build(inline(tb, lt, residuals + ct_in))
    out = ctx.checkpoint(*res_ops, *[ct[k] for k, w in zip(unknown_out, with_ct) if w], body=Region(tbody),
                         **_policy(policy))
    cts = iter(elements(ctx, out))
    return [next(cts) if li else None for li in lin]


def _checkpoint_batch(ctx, values, dims, *, body, policy=NOTHING_SAVEABLE):
    values, dims = _moved_to_front(ctx, values, dims)
    out_b = batched_outputs(body.graph, [d is not None for d in dims])
    new = _batch_region(body, dims, ctx.axis_size, out_b, getattr(ctx, "randomness", "error"))
    return ctx.checkpoint(*values, body=new, **_policy(policy)), tuple(0 if b else None for b in out_b)


CHECKPOINT = register(Primitive(
    "checkpoint", _checkpoint_type, _checkpoint_impl, jvp=_checkpoint_jvp, transpose=_checkpoint_transpose,
    partial_eval=_checkpoint_partial_eval, batch=_checkpoint_batch, variadic=True, family="control",
    doc="the body region; reverse mode saves only its operands and recomputes the body backward"))


# === examples for the registry-driven tests =======================================================
# Small regions written with the builder; the rules are the true derivatives (so finite differences
# check them) and the expectations are numpy by hand.
def _region_of(name: str, in_types, body) -> Region:
    b = GraphBuilder(name)
    return Region(b.build(body(b, *[b.add_input(t) for t in in_types])))


def _f64(*shape) -> TensorType:
    return TensorType(tuple(shape), dt.float64)


def _sample(*shape, start=0.3) -> np.ndarray:
    n = int(np.prod(shape))
    return (start + 0.37 * np.arange(n) % 1.7).reshape(shape)


def _custom_jvp_examples():
    out = []
    for shape in ((3,), (), (1,), (0, 2)):
        t = _f64(*shape)
        fun = _region_of("fun", (t, t), lambda b, x, y: [b.mul(b.sin(x), y), b.exp(x)])
        rule = _region_of("jvp", (t, t, t, t), lambda b, x, y, tx, ty: [
            b.mul(b.sin(x), y), b.exp(x), b.add(b.mul(b.mul(b.cos(x), tx), y), b.mul(b.sin(x), ty)),
            b.mul(b.exp(x), tx)])
        out.append(([_sample(*shape), _sample(*shape, start=0.9)],
                    {"fun": fun, "jvp": rule, "num_fun_consts": 0, "num_jvp_consts": 0},
                    lambda x, y, **_: (np.sin(x) * y, np.exp(x))))
    return out


def _custom_vjp_examples():
    out = []
    for shape in ((3,), (1,), (), (0,)):
        t = _f64(*shape)
        fun = _region_of("fun", (t, t), lambda b, x, w: [b.mul(b.sin(x), w)])
        fwd = _region_of("fwd", (t, t), lambda b, x, w: [b.mul(b.sin(x), w), b.cos(x), b.sin(x), w])
        bwd = _region_of("bwd", (t, t, t, t), lambda b, c, s, w, g: [b.mul(b.mul(g, c), w), b.mul(g, s)])
        out.append(([_sample(*shape), _sample(*shape, start=1.1)],
                    {"fun": fun, "fwd": fwd, "bwd": bwd, "num_fun_consts": 0, "num_fwd_consts": 0,
                     "num_bwd_consts": 0}, lambda x, w, **_: (np.sin(x) * w,)))
    return out


def _lin_examples():
    out = []
    for shape in ((3,), (), (1,), (0,)):
        t = _f64(*shape)
        bwd = _region_of("bwd", (t, t), lambda b, r, g: [b.mul(g, r), b.neg(g)])  # two arguments, one output
        out.append(([_sample(*shape), _sample(*shape, start=0.5), _sample(*shape, start=1.3)],
                    {"bwd": bwd, "num_consts": 0}, lambda r, a, c, **_: (a * r - c,)))
    return out


def _checkpoint_examples():
    out = []
    for shape in ((3,), (), (1,), (0,)):
        t = _f64(*shape)
        body = _region_of("body", (t, t), lambda b, x, w: [b.sin(b.mul(x, w)), b.add(x, w)])
        out.append(([_sample(*shape), _sample(*shape, start=0.8)], {"body": body},
                    lambda x, w, **_: (np.sin(x * w), x + w)))
    # a policy: the (2, 3) @ (3, 2) product is saved, the tanh around it recomputed
    a, m = _f64(2, 3), _f64(3, 2)
    dots = _region_of("body", (a, m), lambda b, x, w: [
        b.tanh(b.dot_general(x, w, contract=((1,), (0,)), batch=((), ()))), b.mul(x, x)])
    for policy in ("dots_saveable", "everything_saveable"):
        out.append(([_sample(2, 3), _sample(3, 2, start=0.6)], {"body": dots, "policy": policy},
                    lambda x, w, **_: (np.tanh(x @ w), x * x)))
    return out


CUSTOM_JVP_CALL.examples = _custom_jvp_examples
CUSTOM_VJP_CALL.examples = _custom_vjp_examples
CUSTOM_VJP_LIN.examples = _lin_examples
CHECKPOINT.examples = _checkpoint_examples

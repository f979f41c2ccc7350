"""Structured control flow: `cond`, `while_loop`, `fori_loop` and `scan`.

Each function traces the user's functions once into closed regions (`ir.Region`)
and applies one control-flow primitive (`ir/prims/control.py`) to the operands:

- tensors a function reads from outside (captured tensors, parameters, Python
  scalars) become the node's leading "const" operands;
- under an enclosing transform (vmap, grad, `tp.compile`, ...) the node is
  emitted into that trace, so every pass sees it; in eager mode the primitive's
  impl runs the regions with the interpreter and, when an operand requires grad,
  the node is recorded on autograd's tape like any other op.

The functions take and return pytrees of tensors (nested tuples, lists, dicts);
Python numbers are turned into tensors. A region's arguments are its own: an
in-place write to one is local to the region (the caller's tensors are never
changed), and an in-place write to a captured tensor is threaded through the node (an extra output of
`cond`, an extra carry of a loop) and stored back into the tensor afterwards
(`tensorplay._region_writes`).

>>> import tensorplay as tp
>>> x = tp.tensor([1.0, 2.0, 3.0])
>>> tp.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, (x,))
tensor([2., 4., 6.])
>>> tp.scan(lambda c, x: (c + x, c * x), tp.tensor(0.0), x)
(tensor(6.), tensor([0., 2., 9.]))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tensorplay.ir import Graph, Region, TensorType, Value
from tensorplay.ir.core import result_type
from tensorplay.ir.passes.simplify import _live_nodes as live_nodes
from tensorplay.ir.prims.control import COND, SCAN, TUPLE_GET, WHILE_LOOP, types_text
from tensorplay.ir.types import TupleType

from . import _pytree, _region_writes, _views
from ._state import STATE
from ._tensor import Tensor
from ._trace import RandomKey, Trace, _under_stack, bind
from .autograd._record import ACTIVE as _AUTOGRAD_ACTIVE, Record, maybe_record, version
from .ops.creation import as_tensor

__all__ = ["cond", "while_loop", "fori_loop", "scan"]


# --- pytrees of tensors ----------------------------------------------------------------------------
def _paths(tree: _pytree.TreeDef, prefix: str) -> list[str]:
    """A readable path per leaf of `tree`: ``init[0]['h']``."""
    out: list[str] = []

    def go(td, path):
        if td.kind == "leaf":
            out.append(path)
        elif td.kind == "dict":
            for k, c in zip(td.meta, td.children):
                go(c, f"{path}[{k!r}]")
        elif td.kind == "namedtuple":
            for name, c in zip(td.meta._fields, td.children):
                go(c, f"{path}.{name}")
        else:
            for i, c in enumerate(td.children):
                go(c, f"{path}[{i}]")

    go(tree, prefix)
    return out


def _is_number(x) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


def _as_input(op: str, x, path: str) -> Tensor:
    """An operand leaf as a tensor: tensors as they are, Python numbers converted."""
    if isinstance(x, Tensor):
        return x
    if _is_number(x):
        return as_tensor(x)
    raise TypeError(f"{op}: {path} is a {type(x).__name__}; control-flow operands must be tensors (or numbers)")


def _flatten_inputs(op: str, tree: Any, prefix: str) -> tuple[list[Tensor], _pytree.TreeDef]:
    leaves, td = _pytree.tree_flatten(tree)
    return [_as_input(op, x, p) for x, p in zip(leaves, _paths(td, prefix))], td


def _as_output(op: str, x, path: str, like: TensorType | None = None) -> Tensor:
    """A function's output leaf as a tensor (a Python number takes the dtype of `like` if given)."""
    if isinstance(x, Tensor):
        return x
    if _is_number(x):
        return as_tensor(x, dtype=None if like is None else like.dtype)
    raise TypeError(f"{op}: {path} is a {type(x).__name__}; the functions of control flow must return tensors "
                    f"(or numbers)")


def _predicate(op: str, who: str, p) -> Tensor:
    """A bool tensor with one element (or a Python bool), as a 0-d bool tensor."""
    if isinstance(p, (bool, np.bool_)):
        return as_tensor(bool(p))
    if not isinstance(p, Tensor):
        raise TypeError(f"{op}: {who} must be a bool tensor with one element, got a {type(p).__name__}")
    if not p.dtype.is_bool or p.numel() != 1:
        raise TypeError(f"{op}: {who} must be a bool tensor with one element (tensor<i1>), got {p._type()}")
    return p if p.ndim == 0 else p.reshape(())


def _check_types(op: str, what: str, paths: Sequence[str], expected: Sequence[TensorType],
                 got: Sequence[TensorType], who: str) -> None:
    for path, e, g in zip(paths, expected, got):
        if e != g:
            raise TypeError(f"{op}: {what}: {path} is {e}, but {who} returns {g} for it")


# --- tracing a function into a closed region ---------------------------------------------------
@dataclass
class _Body:
    """A user function traced into a closed graph: inputs are the captured tensors, then the arguments.
    `written`: (const index, final value) per captured tensor the function wrote in place."""

    graph: Graph
    consts: list
    num_args: int
    written: list = field(default_factory=list)

    @property
    def out_types(self) -> list[TensorType]:
        return self.graph.out_types

    def region(self) -> Region:
        return Region(self.graph)


def _trace_body(op: str, label: str, call: Callable[[list[Tensor]], list[Tensor]], in_types: Sequence[TensorType],
                *, loop: bool) -> _Body:
    """Trace ``call(args) -> output tensors`` on symbolic arguments of `in_types` into a closed graph.

    Works under any enclosing trace: tensors of that trace (or concrete ones) read by `call`
    become captures, i.e. the consts of the region.
    """
    with Trace(op, label, concrete=False) as trace:
        args = [trace.new_arg(t) for t in in_types]
        outs = call(args)
        graph = trace.finish(outs)
    n_args, n_out = len(args), len(outs)
    written = _region_writes.written_consts(graph, n_args, n_out, trace.mutated)
    sources = trace.capture_sources
    if loop and any(isinstance(s, RandomKey) for s in sources):
        raise NotImplementedError(f"{op}: random draws inside a loop body are not supported (every iteration would "
                                  f"reuse one key); draw the values before the loop and pass them in as xs")
    consts = [s.materialize() if isinstance(s, RandomKey) else s for s in sources]
    outputs = graph.outputs[:n_out]  # writes into the arguments are local: their final values are dropped
    inputs = graph.inputs[n_args:] + graph.inputs[:n_args]
    nodes = live_nodes(graph.nodes, outputs + [v for _, v in written])
    return _Body(Graph(inputs, nodes, outputs, label), consts, n_args, written)


# --- binding a control-flow primitive ------------------------------------------------------------
def _apply(prim, operands: list[Tensor], attrs: dict) -> list[Tensor]:
    """`prim(*operands, **attrs)`, one tensor per element of its tuple result."""
    trace = _views.owning_trace(operands)
    if trace is None:
        return _run_eagerly(prim, operands, attrs)
    tup = bind(prim, *operands, **attrs)
    return [bind(TUPLE_GET, tup, index=i) for i in range(len(tup._value.type.elements))]


class _TupleResult:
    """Stands for an eager control-flow node's tuple result on autograd's tape (never seen by users)."""

    _base = None

    def __init__(self, record: Record):
        self.__dict__.update(_ag=record, _rg=True)


def _run_eagerly(prim, operands: list[Tensor], attrs: dict) -> list[Tensor]:
    try:
        out_type = result_type(prim, [t._type() for t in operands], attrs)
    except (TypeError, ValueError) as e:
        raise _under_stack(e) from None
    arrays = prim.impl(*[t._data for t in operands], **attrs)
    outs = [Tensor._wrap(np.array(a, dtype=t.dtype.np, order="C")) for a, t in zip(arrays, out_type.elements)]
    if _AUTOGRAD_ACTIVE[0]:
        _record(prim, attrs, operands, out_type, outs)
    return outs


def _record(prim, attrs: dict, operands: list[Tensor], out_type: TupleType, outs: list[Tensor]) -> None:
    """Put the node and one `tuple_get` per result on the tape (when grad mode is on and an operand requires grad)."""
    if not STATE.grad_enabled or not any(t.__dict__.get("_rg") for t in operands):
        return
    ops = tuple((t, t.__dict__.get("_ag"), version(t)) for t in operands)
    holder = _TupleResult(Record(prim, attrs, ops, out_type))
    for i, out in enumerate(outs):
        maybe_record(TUPLE_GET, {"index": i}, (holder,), out)


# --- cond ----------------------------------------------------------------------------------------
def _branch_call(op: str, fn: Callable, in_tree, label: str, trees: dict):
    def call(args):
        out = fn(*_pytree.tree_unflatten(in_tree, args))
        leaves, td = _pytree.tree_flatten(out)
        trees[label] = td
        return [_as_output(op, x, p) for x, p in zip(leaves, _paths(td, f"{label}_fn output"))]
    return call


def _with_consts(body: _Body, sources: list) -> Graph:
    """`body`'s graph taking the consts `sources` (a superset of its own, in that order) then its arguments."""
    own = {id(s): v for s, v in zip(body.consts, body.graph.inputs)}
    const_inputs = [own.get(id(s)) or Value(s._type()) for s in sources]
    args = body.graph.inputs[len(body.consts):]
    return Graph(const_inputs + args, body.graph.nodes, body.graph.outputs, body.graph.name)


def cond(pred, true_fn: Callable, false_fn: Callable, operands: Sequence = ()) -> Any:
    """``true_fn(*operands)`` if `pred` else ``false_fn(*operands)``, as one traced branch node.

    PyTorch's ``torch.cond``: `pred` is a bool tensor with one element (or a Python bool),
    `operands` a tuple or list of tensors (or pytrees of them). Both functions are traced and
    must return the same structure of tensors with the same shapes and dtypes. Under vmap with a
    batched `pred`, both branches run and each sample takes its own.

    >>> import tensorplay as tp
    >>> def f(x):
    ...     return tp.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))
    >>> f(tp.tensor([0.5, 1.0]))
    tensor([0.4794, 0.8415])
    >>> tp.func.vmap(f)(tp.tensor([[0.5, 1.0], [-2.0, 0.0]]))
    tensor([[ 0.4794,  0.8415],
            [-0.4161,  1.0000]])
    """
    op = "tp.cond"
    if not isinstance(operands, (tuple, list)):
        raise TypeError(f"{op}: operands must be a tuple or list of tensors, got a {type(operands).__name__}")
    for name, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise TypeError(f"{op}: {name} must be callable, got a {type(fn).__name__}")
    pred = _predicate(op, "pred", pred)
    args, in_tree = _flatten_inputs(op, tuple(operands), "operands")
    in_types = [t._type() for t in args]
    trees: dict = {}
    true = _trace_body(op, "true", _branch_call(op, true_fn, in_tree, "true", trees), in_types, loop=False)
    false = _trace_body(op, "false", _branch_call(op, false_fn, in_tree, "false", trees), in_types, loop=False)
    if trees["true"] != trees["false"]:
        raise TypeError(f"{op}: true_fn and false_fn return different structures: true_fn returns {trees['true']}, "
                        f"false_fn returns {trees['false']}")
    for path, a, b in zip(_paths(trees["true"], "output"), true.out_types, false.out_types):
        if a != b:
            raise TypeError(f"{op}: the branches return different types for {path}: true_fn returns {a}, "
                            f"false_fn returns {b}")
    consts = list({id(s): s for s in true.consts + false.consts}.values())
    targets = list({id(b.consts[i]): b.consts[i] for b in (true, false) for i, _ in b.written}.values())
    true_g, false_g = (_region_writes.branch_with_writes(_with_consts(b, consts), consts, b.consts, b.written, targets)
                       for b in (true, false))
    outs = _apply(COND, [pred, *consts, *args], {"true": Region(true_g), "false": Region(false_g)})
    n = len(outs) - len(targets)
    _region_writes.store_back(targets, outs[n:], op)
    return _pytree.tree_unflatten(trees["true"], outs[:n])


# --- while_loop ----------------------------------------------------------------------------------
def _while(op: str, cond_fn: Callable, body_fn: Callable, carry: list[Tensor], tree, paths: list[str],
           who: tuple[str, str] = ("cond_fn", "body_fn")) -> list[Tensor]:
    """The while loop over flat carry tensors `carry` (structure `tree`); both functions take the
    carry's top-level elements as positional arguments."""
    types = [t._type() for t in carry]

    def cond_call(args):
        return [_predicate(op, f"{who[0]}'s result", cond_fn(*_pytree.tree_unflatten(tree, args)))]

    def body_call(args):
        out = body_fn(*_pytree.tree_unflatten(tree, args))
        if len(tree.children) == 1 and not isinstance(out, (tuple, list)):
            out = (out,)  # one carried value may come back bare
        leaves, td = _pytree.tree_flatten(tuple(out) if isinstance(out, list) else out)
        if td != tree:
            raise TypeError(f"{op}: {who[1]} must return the structure of the carried values, {tree}; it returns {td}")
        return [_as_output(op, x, p, t) for x, p, t in zip(leaves, paths, types)]

    cond_body = _trace_body(op, "cond", cond_call, types, loop=True)
    if cond_body.written:
        raise RuntimeError(f"{op}: {who[0]} writes a captured tensor in place; only the body may")
    body = _trace_body(op, "body", body_call, types, loop=True)
    _check_types(op, f"{who[1]} changes the type of the carried values", paths, types, body.out_types, who[1])
    # captured tensors the body writes are carried (the cond reads them from the carry)
    body_g, keep, w_idx = _region_writes.loop_with_writes(body.graph, len(body.consts), len(carry), body.written)
    targets = [body.consts[i] for i in w_idx]
    cond_g, ckeep = _region_writes.cond_reading_carried(cond_body.graph, cond_body.consts, targets)
    cconsts, bconsts = [cond_body.consts[i] for i in ckeep], [body.consts[i] for i in keep]
    attrs = {"cond": Region(cond_g), "body": Region(body_g), "num_cond_consts": len(cconsts),
             "num_body_consts": len(bconsts)}
    outs = _apply(WHILE_LOOP, [*cconsts, *bconsts, *carry, *targets], attrs)
    _region_writes.store_back(targets, outs[len(carry):], op)
    return outs[:len(carry)]


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: Sequence) -> tuple:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` is true; return the final values.

    PyTorch's ``torch.while_loop``: `carried_inputs` is a tuple or list of tensors (or pytrees);
    `cond_fn` returns a bool tensor with one element, `body_fn` a tuple of the same structure,
    shapes and dtypes. The result is a tuple. Reverse-mode differentiation through a while loop
    is an error (its trip count is not known when tracing); use `fori_loop` with int bounds or
    `scan` for that.

    >>> import tensorplay as tp
    >>> tp.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * 2), (tp.tensor(0), tp.tensor(1.0)))
    (tensor(5), tensor(32.))
    """
    op = "tp.while_loop"
    if not isinstance(carried_inputs, (tuple, list)):
        raise TypeError(f"{op}: carried_inputs must be a tuple or list of tensors, got a "
                        f"{type(carried_inputs).__name__}")
    carry, tree = _flatten_inputs(op, tuple(carried_inputs), "carried_inputs")
    outs = _while(op, cond_fn, body_fn, carry, tree, _paths(tree, "carried_inputs"))
    return _pytree.tree_unflatten(tree, outs)


# --- scan ----------------------------------------------------------------------------------------
def _scan_length(op: str, xs: list[Tensor], paths: list[str], length) -> int:
    if length is not None and (isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0):
        raise ValueError(f"{op}: length must be a non-negative int, got {length!r}")
    for x, p in zip(xs, paths):
        if x.ndim == 0:
            raise ValueError(f"{op}: {p} is 0-d ({x._type()}); every xs leaf needs a leading axis to scan over")
    if not xs:
        if length is None:
            raise ValueError(f"{op}: length is required when xs is None or has no tensors")
        return int(length)
    first, first_path = xs[0].shape[0], paths[0]
    for x, p in zip(xs, paths):
        if x.shape[0] != first:
            raise ValueError(f"{op}: xs have different leading lengths: {first_path} is {xs[0]._type()}, {p} is "
                             f"{x._type()}")
    if length is not None and int(length) != first:
        raise ValueError(f"{op}: length = {length}, but the xs have leading length {first} ({first_path} is "
                         f"{xs[0]._type()})")
    return first


def _scan(op: str, f: Callable, init, xs, length, reverse: bool, who: str = "f", carry_paths=None):
    if not callable(f):
        raise TypeError(f"{op}: {who} must be callable, got a {type(f).__name__}")
    if not isinstance(reverse, (bool, np.bool_)):
        raise TypeError(f"{op}: reverse must be a bool, got {reverse!r}")
    carry, carry_tree = _flatten_inputs(op, init, "init")
    x_leaves, x_tree = _flatten_inputs(op, xs, "xs")
    carry_paths = carry_paths or _paths(carry_tree, "init")
    x_paths = _paths(x_tree, "xs")
    n = _scan_length(op, x_leaves, x_paths, length)
    carry_types = [t._type() for t in carry]
    slice_types = [TensorType(tuple(x.shape[1:]), x.dtype) for x in x_leaves]
    nc = len(carry)
    y_tree: list = []

    def call(args):
        out = f(_pytree.tree_unflatten(carry_tree, args[:nc]), _pytree.tree_unflatten(x_tree, args[nc:]))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{op}: {who} must return a pair (carry, y), got {_describe(out)}")
        new_carry, y = out
        leaves, td = _pytree.tree_flatten(new_carry)
        if td != carry_tree:
            raise TypeError(f"{op}: {who} must return a carry of the structure of init, {carry_tree}; it returns {td}")
        y_leaves, ytd = _pytree.tree_flatten(y)
        y_tree.append(ytd)
        return ([_as_output(op, x, p, t) for x, p, t in zip(leaves, carry_paths, carry_types)]
                + [_as_output(op, x, p) for x, p in zip(y_leaves, _paths(ytd, "y"))])

    body = _trace_body(op, "body", call, carry_types + slice_types, loop=True)
    _check_types(op, f"{who} changes the carry type", carry_paths, carry_types, body.out_types[:nc], who)
    # captured tensors the body writes are carried, then stored back
    body_g, keep, w_idx = _region_writes.loop_with_writes(body.graph, len(body.consts), nc, body.written)
    targets = [body.consts[i] for i in w_idx]
    attrs = {"body": Region(body_g), "num_consts": len(keep), "num_carry": nc + len(targets), "length": n,
             "reverse": bool(reverse)}
    outs = _apply(SCAN, [*[body.consts[i] for i in keep], *carry, *targets, *x_leaves], attrs)
    _region_writes.store_back(targets, outs[nc:nc + len(targets)], op)
    return (_pytree.tree_unflatten(carry_tree, outs[:nc]),
            _pytree.tree_unflatten(y_tree[0], outs[nc + len(targets):]))


def _describe(x) -> str:
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of `xs`; return ``(carry, ys)``.

    The semantics of ``jax.lax.scan``: `init` is a pytree of tensors, `xs` a pytree of tensors
    sharing one leading length (or None, with `length`), and `f` returns the new carry (the
    structure, shapes and dtypes of `init`) and a pytree `y`; `ys` stacks the ys along a new
    leading axis. With ``reverse=True`` the xs are visited from the end (``ys[i]`` still belongs
    to ``xs[i]``). The body is traced once: a 1000-step scan is one node, not 1000 copies.

    >>> import tensorplay as tp
    >>> xs = tp.tensor([1.0, 2.0, 3.0, 4.0])
    >>> tp.scan(lambda c, x: (c + x, c), tp.tensor(0.0), xs)        # running sum
    (tensor(10.), tensor([0., 1., 3., 6.]))
    >>> tp.scan(lambda c, x: (c * 2, None), tp.tensor(1.0), None, length=3)
    (tensor(8.), None)
    """
    return _scan("tp.scan", f, init, xs, length, reverse)


# --- fori_loop -----------------------------------------------------------------------------------
def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def fori_loop(lower, upper, body_fun: Callable, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; return the final `val`.

    The semantics of ``jax.lax.fori_loop``: with Python int bounds the trip count is static and
    the loop is a `scan` (so it can be differentiated in reverse mode); with tensor bounds it is
    a `while_loop`. `i` is an int64 tensor (the bounds' dtype for tensor bounds); `val` is a
    pytree of tensors whose structure, shapes and dtypes `body_fun` keeps.

    >>> import tensorplay as tp
    >>> tp.fori_loop(0, 4, lambda i, x: x + i, tp.tensor(0.5))
    tensor(6.5000)
    >>> tp.fori_loop(tp.tensor(1), tp.tensor(4), lambda i, x: x * i, tp.tensor(1.0))
    tensor(6.)
    """
    op = "tp.fori_loop"
    if not callable(body_fun):
        raise TypeError(f"{op}: body_fun must be callable, got a {type(body_fun).__name__}")
    if _is_int(lower) and _is_int(upper):
        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        i0 = as_tensor(int(lower))
        paths = ["the loop index"] + _paths(_pytree.tree_flatten(init_val)[1], "init_val")
        (_, val), _ = _scan(op, step, (i0, init_val), None, max(int(upper) - int(lower), 0), False, "body_fun",
                            paths)
        return val
    lo, hi = _bound(op, "lower", lower), _bound(op, "upper", upper)
    if lo.dtype is not hi.dtype:
        raise TypeError(f"{op}: lower and upper must have one dtype, got {lo._type()} and {hi._type()}")
    carry, tree = _flatten_inputs(op, (lo, init_val), "(lower, init_val)")
    paths = ["lower"] + _paths(tree.children[1], "init_val")
    outs = _while(op, lambda i, val: i < hi, lambda i, val: (i + 1, body_fun(i, val)), carry, tree, paths,
                  ("the bound check", "body_fun"))
    return _pytree.tree_unflatten(tree, outs)[1]


def _bound(op: str, name: str, b) -> Tensor:
    if _is_int(b):
        return as_tensor(int(b))
    if not isinstance(b, Tensor) or b.dtype.is_floating_point or b.dtype.is_bool or b.ndim != 0:
        what = b._type() if isinstance(b, Tensor) else type(b).__name__
        raise TypeError(f"{op}: {name} must be an int or a 0-d integer tensor, got {what}")
    return b

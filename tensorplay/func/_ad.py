"""Differentiation transforms: `grad`, `grad_and_value`, `vjp`, `jvp`, `linearize`, `jacrev`,
`jacfwd`, `hessian` (the contract is `shared/spec/`).

Each call traces the function into a graph (`trace_function`), runs a graph pass from
`ir.passes` (forward mode: `jvp`; reverse mode: `linearize` = JVP + partial evaluation, then
`transpose`), simplifies the result and hands it to `call_graph`, which executes it -- or, when
the arguments belong to an enclosing trace, inlines it there. That is how the transforms compose:
``grad(grad(f))``, ``jacfwd(jacrev(f))``, ``jvp(grad(f), ...)``, or a transform inside
``tp.compile``. Tensors the function closes over (captures) are constants to the transform.

`jacrev` and `jacfwd` are traced as one graph: the VJP (or linearized JVP) applied to a whole
basis of cotangents (tangents) at once, mapped with `vmap`; the one-hot basis is built inside
that graph (iota and compare), never passed in as a dense identity.

Every pass pipeline is cached (`_pipeline`): keyed by the traced graph's structure and the
transform's parameters, so a repeated call only traces and looks up. A call of a transform
chain (``jacrev(f)``, ``hessian(f)``, ``jacfwd(jacrev(f))``, ...) with concrete tensors traces
the user's function and runs one cached executable for the whole chain.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from sys import getrefcount
from typing import Any, Callable, Sequence

from tensorplay.ir import Graph, dtypes
from tensorplay.ir.passes.jvp import jvp as jvp_pass
from tensorplay.ir.passes.reverse import grad_graph, split
from tensorplay.ir.passes.simplify import simplify
from tensorplay.ir.primitive import get_primitive

import numpy as np

from .. import _pytree
from .._exec import backend, runner
from ._errors import FuncTypeError, FuncValueError
from .._tensor import Tensor
from .._state import STATE
from .._trace import ClosedGraph, bind, current_trace, trace_function
from ..autograd._record import ACTIVE, needs_tape
from . import _built, _chunks, _pipeline
from ._pipeline import run_graph

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]


# --- tracing a function for differentiation ------------------------------------------------------
def _argnums_tuple(argnums, num_args: int, transform: str) -> tuple[int, ...]:
    """`argnums` as a tuple of non-negative positions, validated against the call."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise ValueError(f"{transform}: argnums must be non-empty")
    out = []
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"{transform}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -num_args <= a < num_args:
            raise FuncValueError(f"{transform}: argnums {a} is out of range for a function called with "
                             f"{num_args} positional argument(s)")
        out.append(a % num_args)
    if len(set(out)) != len(out):
        raise FuncValueError(f"{transform}: argnums {argnums!r} contains a repeated argument")
    return tuple(out)


def _describe(x) -> str:
    if isinstance(x, Tensor):
        return f"a tensor of shape {tuple(x.shape)}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"


@dataclass
class _Traced:
    """A function traced for differentiation.

    Graph inputs are the flat tensor leaves of (args, kwargs), then the captures; graph outputs
    are the tensor leaves of the main output, then those of aux, then the final values of inputs
    written in place (never differentiated, like aux). `arg_inputs[i]` lists the graph inputs of
    positional argument `i` (its tensor leaves, in flatten order).
    """

    closed: ClosedGraph
    transform: str
    inputs: list[Tensor]
    arg_inputs: list[list[int]]
    arg_trees: list[Any]
    num_main: int                  # graph outputs of the main result
    main_tree: Any
    paired: bool = True            # traced as ``(output, aux)`` (`_trace`); False: the output alone

    @property
    def graph(self) -> Graph:
        return self.closed.graph

    def wrt(self, argnums: Sequence[int]) -> list[bool]:
        flags = [False] * len(self.graph.inputs)
        for a in argnums:
            for k in self.arg_inputs[a]:
                flags[k] = True
        return flags

    def split_outputs(self, tensors: Sequence[Tensor]) -> tuple[Any, Any]:
        """(main result, aux) from the tensors of *all* graph outputs, after storing the function's
        in-place writes (the outputs after its own, see `ClosedGraph.write_back`) into its inputs."""
        out = self.closed.unflatten_outputs(self.closed.write_back(self.inputs, list(tensors)))
        return out if self.paired else (out, None)

    def main_outputs(self) -> list:
        return self.graph.outputs[:self.num_main]

    def pipeline_key(self, argnums: Sequence[int]) -> tuple:
        """What a pass pipeline's result depends on: the graph's structure, the differentiated
        inputs and how many outputs are the main result."""
        return (self.closed.structural_key(), tuple(self.wrt(argnums)), self.num_main)


def _trace(func: Callable, args: tuple, kwargs: dict, transform: str, has_aux: bool,
           argnums: Sequence[int]) -> _Traced:
    """Trace `func(*args, **kwargs)`, checking that the arguments in `argnums` are float tensors."""
    arg_inputs, arg_trees, k = [], [], 0
    for i, arg in enumerate(args):
        leaves, tree = _pytree.tree_flatten(arg)
        arg_trees.append(tree)
        idx = []
        for leaf in leaves:
            if isinstance(leaf, Tensor):
                idx.append(k)
                k += 1
            elif i in argnums:
                raise TypeError(f"{transform}: argument {i} contains {_describe(leaf)}; only tensors can be "
                                f"differentiated (pass it as a different argument, or leave it out of argnums)")
        if i in argnums:
            for leaf in leaves:
                if not leaf.dtype.is_floating_point:
                    raise TypeError(f"{transform}: cannot differentiate with respect to argument {i}, a tensor "
                                    f"of dtype {leaf.dtype.name}: only floating point tensors have derivatives")
        arg_inputs.append(idx)

    def split_aux(*a, **kw):
        return _call_with_aux(func, a, kw, has_aux, transform)

    closed = trace_function(split_aux, tuple(args), kwargs, transform=transform,
                            name=getattr(func, "__name__", None))
    main_tree = closed.out_tree.children[0]
    main_static = closed.out_static[:main_tree.num_leaves]
    leaves = _pytree.tree_flatten((tuple(args), kwargs))[0]
    inputs = [leaf for leaf in leaves if isinstance(leaf, Tensor)] + closed.capture_tensors()
    return _Traced(closed, transform, inputs, arg_inputs, arg_trees, sum(s is None for s in main_static), main_tree)


def _check_tensor_output(tr: _Traced, what: str) -> None:
    """The main result must be made of tensors (no Python numbers) to be differentiated."""
    static = [s for s in tr.closed.out_static[:tr.main_tree.num_leaves] if s is not None]
    if static or tr.num_main == 0:
        raise FuncTypeError(f"{tr.transform}: {what}, but func returned "
                        f"{_describe(static[0].value) if static else 'no tensor'}")


def _unflatten_args(tr: _Traced, flat: Sequence[Tensor], argnums: Sequence[int]) -> list:
    """Per argument in `argnums`, its tree rebuilt from `flat`: one tensor per differentiated graph
    input, in graph-input order (the order passes return cotangents in)."""
    by_input = dict(zip(sorted(k for a in argnums for k in tr.arg_inputs[a]), flat))
    return [_pytree.tree_unflatten(tr.arg_trees[a], [by_input[k] for k in tr.arg_inputs[a]]) for a in argnums]


def _input_order(tr: _Traced, argnums: Sequence[int], flat: Sequence[Tensor]) -> list:
    """Leaves given per argument in `argnums` order, rearranged into graph-input order."""
    keyed = zip((k for a in argnums for k in tr.arg_inputs[a]), flat)
    return [t for _, t in sorted(keyed, key=lambda kt: kt[0])]


_GRAD = _pipeline.LRU("grad")
_VJP = _pipeline.LRU("vjp")
_LINEARIZE = _pipeline.LRU("linearize")
_JVP = _pipeline.LRU("jvp")
_ONE_GRAPH = _pipeline.LRU("jacobian")


def _run(graph: Graph, inputs: Sequence[Tensor]) -> list:
    """Simplify `graph` (once per structure) and execute it (or inline it into the trace owning an input)."""
    return run_graph(_pipeline.memo(_ONE_GRAPH, graph.structural_key(), lambda: simplify(graph)), list(inputs))


def _pick(results: list, argnums) -> Any:
    return tuple(results) if isinstance(argnums, tuple) else results[0]


def _argnums_str(argnums) -> str:
    return f"argnums={argnums!r}"


# --- grad ------------------------------------------------------------------------------------------
def _grad_and_value_call(func, argnums, has_aux, transform, args, kwargs):
    nums = _argnums_tuple(argnums, len(args), transform)
    tr = _trace(func, args, kwargs, transform, has_aux, nums)
    _check_tensor_output(tr, "func must return a single-element tensor")
    if tr.num_main != 1:
        raise FuncTypeError(f"{transform}: func must return a single tensor, but it returned {tr.num_main} "
                        f"tensors; use vjp or jacrev for several outputs")
    out = tr.graph.outputs[0]
    if out.type.size != 1:
        raise RuntimeError(f"{transform}: func must return a single-element tensor, got a tensor of shape "
                           f"{out.shape}; use vjp or jacrev for non-scalar outputs")
    if not out.dtype.is_floating_point:
        raise TypeError(f"{transform}: func returned a tensor of dtype {out.dtype.name}; only floating point "
                        f"outputs can be differentiated")
    n_out = len(tr.graph.outputs)
    seeds = [1.0] + [None] * (n_out - 1)
    graph = _pipeline.memo(_GRAD, tr.pipeline_key(nums), lambda: grad_graph(tr.graph, tr.wrt(nums), seeds, simplified=True))
    outs = run_graph(graph, tr.inputs)
    grads = _pick(_unflatten_args(tr, outs[n_out:], nums), argnums)
    value, aux = tr.split_outputs(outs[:n_out])
    return grads, value, aux


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """Returns a function computing both the gradient of `func` and its value, from one forward pass.

    The wrapper returns ``(gradient, value)``, or ``(gradient, (value, aux))`` with `has_aux`.

    >>> import tensorplay as tp
    >>> from tensorplay.func import grad_and_value
    >>> g, v = grad_and_value(lambda x: (x ** 2).sum())(tp.tensor([1.0, 2.0]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """
    key = ("grad_and_value", argnums, has_aux) if _built.int_argnums(argnums) and has_aux.__class__ is bool else None
    made = _built.lookup(func, key)
    if made is not None:
        return made
    transform = f"grad_and_value({_argnums_str(argnums)})"

    def call(*args, **kwargs):
        grads, value, aux = _grad_and_value_call(func, argnums, has_aux, transform, args, kwargs)
        return (grads, (value, aux)) if has_aux else (grads, value)

    made = _transform(call, func, "grad_and_value", _spec("grad_and_value", (argnums, bool(has_aux)), lambda: transform,
                                                          lambda: lambda g: grad_and_value(g, argnums, has_aux)))
    return _built.remember(func, key, made)


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """Returns a function computing the gradient of `func` with respect to the arguments `argnums`.

    `func` must return a single-element tensor (with `has_aux`, a pair ``(output, aux)``; the
    wrapper then returns ``(gradient, aux)``). With a tuple `argnums` the gradient is a tuple.
    Arguments may be pytrees (tuples, lists, dicts) of tensors; the gradient has the same
    structure. Because the result is again a function of the same inputs, ``grad(grad(f))`` is
    the second derivative.

    >>> import tensorplay as tp
    >>> from tensorplay.func import grad
    >>> grad(tp.sin)(tp.tensor(0.0))
    tensor(1.)
    >>> grad(grad(tp.sin))(tp.tensor(0.0))
    tensor(-0.)
    """
    key = ("grad", argnums, has_aux) if _built.int_argnums(argnums) and has_aux.__class__ is bool else None
    made = _built.lookup(func, key)
    if made is not None:
        return made
    spec = _spec("grad", (argnums, bool(has_aux)), lambda: f"grad({_argnums_str(argnums)})",
                 lambda: lambda g: grad(g, argnums, has_aux))

    def call(*args, **kwargs):
        grads, value, aux = _grad_and_value_call(func, argnums, has_aux, spec.name, args, kwargs)
        return (grads, aux) if has_aux else grads

    made = _transform(call, func, "grad", spec)
    return _built.remember(func, key, made)


def _wraps(wrapper, func, what: str):
    wrapper.__name__ = f"{what}_{getattr(func, '__name__', 'f')}"
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__doc__ = getattr(func, "__doc__", None)
    wrapper.__wrapped__ = func
    return wrapper


def _transform(call: Callable, func: Callable, what: str, spec: "_pipeline.Transform") -> Callable:
    """The public wrapper of a same-argument transform: `call` under an enclosing trace; at top
    level, the whole chain of such transforms through the pipeline cache (`_pipeline.call_outermost`)."""
    def wrapper(*args, **kwargs):
        if STATE.stack:
            return call(*args, **kwargs)
        return _pipeline.call_outermost(wrapper, args, kwargs, call)

    _wraps(wrapper, func, what)
    return _pipeline.link(wrapper, func, spec)


def _spec(kind: str, params: tuple, name: Callable[[], str], apply: Callable[[], Callable]) -> "_pipeline.Transform":
    """The shared Transform of ``kind`` with `params` (`name` and `apply` are made on its first use).
    Parameters other than ints, strings and None are keyed with their class: ``argnums=False`` is
    not ``argnums=0`` (it is an error), ``has_aux=1`` is ``has_aux=True`` (it behaves so)."""
    key = [kind]
    for p in params:
        c = p.__class__
        key.append(p if c is int or c is str or p is None else ("tuple",) + tuple((a.__class__, a) for a in p)
                   if c is tuple else (c, p))
    return _pipeline.spec(tuple(key), lambda: (name(), apply()))


# --- vjp -------------------------------------------------------------------------------------------
def _check_like(transform: str, what: str, given, expected_leaves: list, expected_tree, path_name: str) -> list:
    """The tensor leaves of `given`, checked against `expected_leaves` in structure, shape and dtype."""
    leaves, tree = _pytree.tree_flatten(given)
    if tree != expected_tree:
        raise FuncValueError(f"{transform}: {what} must have the same structure as {path_name} ({expected_tree}), "
                         f"got {tree}")
    for i, (g, e) in enumerate(zip(leaves, expected_leaves)):
        if not isinstance(g, Tensor):
            raise TypeError(f"{transform}: {what} leaf {i} is {_describe(g)}, expected a tensor")
        if tuple(g.shape) != tuple(e.shape):
            raise FuncValueError(f"{transform}: {what} leaf {i} has shape {tuple(g.shape)}, but the corresponding "
                             f"{path_name} leaf has shape {tuple(e.shape)}")
        if g.dtype is not e.dtype:
            raise FuncTypeError(f"{transform}: {what} leaf {i} has dtype {g.dtype.name}, but the corresponding "
                            f"{path_name} leaf has dtype {e.dtype.name}")
    return leaves


def _vjp_call(func, args, kwargs, argnums: tuple[int, ...], has_aux: bool, transform: str):
    """(output, vjp_fn, aux): the forward pass runs now, `vjp_fn(cotangents)` runs the backward graph."""
    tr = _trace(func, args, kwargs, transform, has_aux, argnums)
    _check_tensor_output(tr, "func must return tensors")
    parts = _split(tr, argnums, transposed=True)
    back = parts.second
    outs = run_graph(parts.forward, tr.inputs)
    n_out = len(tr.graph.outputs)
    residuals = outs[n_out:]
    output, aux = tr.split_outputs(outs[:n_out])
    main_leaves = outs[:tr.num_main]
    # a single tensor output takes a single tensor cotangent, checked without pytrees
    single = [main_leaves[0]._type()] if tr.main_tree.kind == "leaf" and tr.num_main == 1 else None

    def vjp_fn(cotangents):
        if single is not None and _match_types((cotangents,), single):
            cts = [cotangents]
        else:
            cts = _check_like(transform, "cotangents", cotangents, main_leaves, tr.main_tree, "output")
        return tuple(_unflatten_args(tr, run_graph(back, residuals + cts), argnums))

    return output, vjp_fn, aux


def vjp(func: Callable, *primals, has_aux: bool = False):
    """Evaluates `func` at `primals` and returns ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with `has_aux`).

    The forward pass runs once, here; ``vjp_fn(cotangents)`` (cotangents shaped like `output`)
    runs only the backward graph and returns a tuple with one gradient per primal.

    >>> import tensorplay as tp
    >>> from tensorplay.func import vjp
    >>> x = tp.tensor([0.0, 1.0])
    >>> out, vjp_fn = vjp(tp.sin, x)
    >>> (g,) = vjp_fn(tp.ones_like(out))
    >>> g
    tensor([1.0000, 0.5403])
    """
    output, vjp_fn, aux = _vjp_call(func, primals, {}, tuple(range(len(primals))), has_aux, "vjp")
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


# --- jvp and linearize -----------------------------------------------------------------------------
def _check_primals(transform: str, primals, what: str = "primals") -> tuple:
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"{transform}: {what} must be a tuple of arguments, got {_describe(primals)} "
                        f"(write ({what[:-1]},) for a single argument)")
    return tuple(primals)


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """Evaluates `func` at `primals` with its directional derivative along `tangents`.

    `tangents` must match `primals` in structure, shapes and dtypes. Returns
    ``(output, jvp_out)``, or ``(output, jvp_out, aux)`` with `has_aux`. With `strict`, an output
    that does not depend on the primals is an error instead of a zero tangent.

    >>> import tensorplay as tp
    >>> from tensorplay.func import jvp
    >>> out, t = jvp(lambda x: x * x, (tp.tensor([1.0, 2.0]),), (tp.tensor([1.0, 1.0]),))
    >>> out, t
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    transform = "jvp"
    primals = _check_primals(transform, primals)
    tangents = _check_primals(transform, tangents, "tangents")
    if len(tangents) != len(primals):
        raise FuncValueError(f"{transform}: got {len(primals)} primals but {len(tangents)} tangents")
    if not any(isinstance(leaf, Tensor) for leaf in _pytree.tree_flatten(primals)[0]):
        raise FuncValueError(f"{transform}: expected primals to contain at least one tensor, got {primals!r}")
    argnums = tuple(range(len(primals)))
    tr = _trace(func, primals, {}, transform, has_aux, argnums)
    _check_tensor_output(tr, "func must return tensors")
    p_leaves = [x for x in _pytree.tree_flatten(primals)[0]]
    t_flat = _check_like(transform, "tangents", tangents, p_leaves, _pytree.tree_flatten(primals)[1], "primals")
    n_main = tr.num_main

    def build():
        j = jvp_pass(tr.graph, tr.wrt(argnums), [k < n_main for k in range(len(tr.graph.outputs))])
        return simplify(j.graph), j.zero_outputs

    graph, zero_outputs = _pipeline.memo(_JVP, tr.pipeline_key(argnums), build)
    if strict and any(zero_outputs):
        k = zero_outputs.index(True)
        raise RuntimeError(f"{transform}(strict=True): output {k} does not depend on the primals, so its "
                           f"tangent is identically zero")
    outs = run_graph(graph, tr.inputs + t_flat)
    n_out = len(tr.graph.outputs)
    output, aux = tr.split_outputs(outs[:n_out])
    tangent_out = _pytree.tree_unflatten(tr.main_tree, _with_static(tr, outs[n_out:]))
    return (output, tangent_out, aux) if has_aux else (output, tangent_out)


def _match_types(tensors: tuple, types: list) -> bool:
    """`tensors` are tensors of exactly `types` (the fast check of `jvp_fn`'s tangents)."""
    if len(tensors) != len(types):
        return False
    for t, typ in zip(tensors, types):
        if t.__class__ is not Tensor or t._type() != typ:
            return False
    return True


def _with_static(tr: _Traced, main_tensors: Sequence) -> list:
    """Main-result leaves from its tensors (non-tensor leaves of the result are kept as they were)."""
    it = iter(main_tensors)
    return [next(it) if s is None else s.value for s in tr.closed.out_static[:tr.main_tree.num_leaves]]


def _linearize_call(func, args, kwargs, argnums: tuple[int, ...], has_aux: bool, transform: str,
                    allow_random: bool = True, tr: _Traced | None = None):
    """(output, jvp_fn, aux): the primal graph runs now; `jvp_fn(*tangents)` runs the linear graph.
    `tr` is the function already traced (by `_linearize_plain`), else it is traced here."""
    if tr is None:
        tr = _trace(func, args, kwargs, transform, has_aux, argnums)
    _check_tensor_output(tr, "func must return tensors")
    if not allow_random:
        _reject_random(tr)
    parts = _split(tr, argnums, transposed=False)
    linear = parts.second
    outs = run_graph(parts.forward, tr.inputs)
    n_out = len(tr.graph.outputs)
    residuals = outs[n_out:]
    output, aux = tr.split_outputs(outs[:n_out])
    diff_args = [args[a] for a in argnums]
    d_leaves, d_tree = _pytree.tree_flatten(tuple(diff_args))
    # tangents given as one tensor per (tensor) argument, in argument order, are checked without pytrees
    flat_types = [x._type() for x in diff_args] if all(isinstance(x, Tensor) for x in diff_args) else None
    ordered = list(argnums) == sorted(argnums)
    single = tr.main_tree.kind == "leaf" and tr.num_main == 1

    def jvp_fn(*tangents):
        if flat_types is not None and ordered and _match_types(tangents, flat_types):
            t_flat = list(tangents)
        else:
            t_flat = _input_order(tr, argnums, _check_like(transform, "tangents", tuple(tangents), d_leaves, d_tree,
                                                           "primals"))
        touts = run_graph(linear, residuals + t_flat)
        return touts[0] if single else _pytree.tree_unflatten(tr.main_tree, _with_static(tr, touts))

    return output, jvp_fn, aux


# --- linearize called at top level ---------------------------------------------------------------
class _PlanCache(_pipeline.LRU):
    """The LRU of `_LinearPlan`s; clearing it (`_pipeline.clear`, `tp.compiler.reset`) also forgets
    the latest plan (`_LAST_PLAN`)."""

    def clear(self) -> None:
        _LAST_PLAN[0] = None
        super().clear()


_LIN_PLANS = _PlanCache("linearize_plain")
_POOL_BYTES = 16 << 20   # per plan: at most this much of reusable residual copies (two per residual)
_UNKNOWN = object()      # a plan's linear call before its first use
_LAST_PLAN: list = [None]  # (key, plan) of the latest top-level linearize (a repeated call compares, not hashes)


def _bare(array) -> Tensor:
    """A concrete tensor of a fresh executable buffer (of a graph dtype: what `Tensor._wrap`
    checks holds), made without noting it as local to an active trace."""
    t = object.__new__(Tensor)
    t._data, t._trace, t._value = array, None, None
    return t


class _LinearPlan:
    """What a top-level `linearize` needs for one structure of the traced function (with all
    primals tensors, no static outputs, writes, output aliases or random draws), made at its
    first call and kept in `_LIN_PLANS`:

    - `forward`: the fast call of the forward executable, built without the residuals that are
      its own inputs (the weights a layer passes through: the graph would copy them into fresh
      buffers, which page-fault on every call). `take[k]` says where residual k comes from: an
      int j is forward output j, ``(i,)`` a copy of input i, made into a buffer of `pools`
      reused once no jvp_fn holds it (the spec: jvp_fn sees the values at linearize time, so a
      later in-place write to a weight or primal must not reach it);
    - `linear`, the linear graph, and `lin`, the fast call of its executable (looked up at the
      first jvp_fn call of any linearization of this structure; False for a backend whose
      runner may return its inputs, the interpreter, whose results the general path copies);
    - `sigs`, the (shape, numpy dtype) of each primal, the tangents' fast check;
      `types`, their TensorTypes (for the general check), `n_main` and `out_tree`, the result.
    """

    __slots__ = ("forward", "executable", "take", "pools", "lock", "linear", "lin", "sigs", "types", "tree",
                 "n_main", "out_tree")

    def __init__(self, tr: _Traced, parts, primals: tuple):
        fwd = parts.forward
        n_main = tr.num_main
        where = {v: i for i, v in enumerate(fwd.inputs)}
        kept, take, pools = list(fwd.outputs[:n_main]), [], []
        for v in fwd.outputs[n_main:]:
            i = where.get(v)
            if i is None:
                take.append(len(kept))
                kept.append(v)
            else:
                take.append((i,))
                pools.append([])
        reduced = fwd if len(kept) == len(fwd.outputs) else Graph(fwd.inputs, fwd.nodes, kept, fwd.name, fwd.arg_attrs)
        run, fresh = runner(reduced)
        self.forward = (getattr(run, "_fast", None) or (lambda xs: run(*xs))) if fresh else None
        self.executable = run  # (the fast call does not keep its executable, whose machine code it runs)
        copied = sum(fwd.outputs[n_main + k].type.size * fwd.outputs[n_main + k].dtype.itemsize
                     for k, t in enumerate(take) if t.__class__ is tuple)
        self.take = take
        self.pools = pools if 2 * copied <= _POOL_BYTES else None
        self.lock = threading.Lock()
        self.linear = parts.second
        self.lin = _UNKNOWN
        self.sigs = tuple((p._data.shape, p._data.dtype) for p in primals)
        self.types = [p._type() for p in primals]
        self.tree = _pytree.tree_flatten(tuple(primals))[1]
        self.n_main = n_main
        self.out_tree = tr.main_tree

    def residuals(self, outs: list, arrays: list) -> tuple:
        """The residual arrays of one linearization: forward outputs, and copies of inputs."""
        res, k = [], 0
        for t in self.take:
            if t.__class__ is int:
                res.append(outs[t])
            else:
                res.append(self._copy(k, arrays[t[0]]))
                k += 1
        return tuple(res)

    def _copy(self, k: int, src):
        """A C-contiguous copy of `src` in a buffer of pool `k` that nothing else references (a
        dropped jvp_fn's), else in a new one (kept in the pool while it has fewer than two)."""
        pool = self.pools[k] if self.pools is not None else None
        buf = None
        if pool is not None:
            with self.lock:  # (claiming is taking a reference: another thread then sees it in use)
                buf = _first_free(pool, _FREE_REFS)
                if buf is None:
                    buf = np.empty(src.shape, src.dtype)
                    if len(pool) < 2:
                        pool.append(buf)
        if buf is None:
            return src.copy(order="C")
        np.copyto(buf, src)
        return buf

    def bind(self, residuals: tuple):
        """A function of the tangent arrays running the linear executable over `residuals` (its
        `bound_call`: the residuals checked once), or False to take the general path."""
        run = self.lin
        if run is _UNKNOWN:
            with self.lock:  # (one executable per plan: calls bound to it must not see it replaced and freed)
                run = self.lin
                if run is _UNKNOWN:
                    run, fresh = runner(self.linear)
                    run = self.lin = run if fresh else False
        if run is False:
            return False
        bound = getattr(run, "bound_call", None)
        call = bound(residuals) if bound is not None else None
        if call is None:
            fast = getattr(run, "_fast", None) or (lambda xs: run(*xs))
            return lambda *tangents: fast(residuals + tangents)
        return call

    def bind_single(self, residuals: tuple):
        """For one primal and one output: a function of the tangent array returning the output
        array, or None when the array is not exactly of the primal's shape, dtype and C layout
        (the caller takes the general path); False for the general path always."""
        call = self.bind(residuals)
        if call is False:
            return False
        single = self.lin.bound_call(residuals, single=True) if hasattr(self.lin, "bound_call") else None
        if single is not None:
            return single
        ((shape, dt),) = self.sigs

        def checked(a):
            if a.__class__ is np.ndarray and a.shape == shape and a.dtype is dt:
                return call(a)[0]
            return None
        return checked


def _first_free(pool: list, free_refs: int | None):
    """The first array of `pool` nothing but the pool references (its reference count is
    `free_refs`), or None; with `free_refs` None, the count of the first array (the calibration:
    the same code, so the same count of references the loop itself holds)."""
    for b in pool:
        n = getrefcount(b)
        if free_refs is None:
            return n
        if n == free_refs:
            return b
    return None


_FREE_REFS = _first_free([np.empty(0)], None)


_LINEARIZE_SIGNATURES = _pipeline.standalone_plan("linearize")


def _linearize_plain(func: Callable, primals: tuple):
    """`linearize(func, *primals)` at top level with concrete tensor primals: the function is
    traced (every call: fresh Python semantics; a repeated structure replays its last trace, see
    `tensorplay._replay`), then everything else comes from its `_LinearPlan`, keyed by the
    argument signature and the trace's key. Calls the plan does not cover go the general way, with
    this trace (the function runs once per linearize)."""
    for p in primals:
        if p.__class__ is not Tensor or p._trace is not None or p._data.dtype.kind != "f":
            return None  # (the general path checks and reports them)
    got = _pipeline.trace_standalone(_LINEARIZE_SIGNATURES, func, primals)
    if got is None:
        return None
    sig, tensors, tkey, caps, user = got
    tensors = tensors + caps if caps else tensors
    closed = None
    key = None
    if tkey is not None:  # (a keyed trace or a replay: tensor outputs, no writes, aliases or draws)
        if tkey[1].num_leaves:  # (no output: the general path reports it)
            key = (sig, tkey, backend())
    else:
        closed = user
        static = closed.out_static
        if (not closed.mutated and not any(closed.output_aliases) and static and not any(static)
                and not any(c.__class__ is not Tensor for c in caps)):
            key = (closed.structural_key(), closed.num_args, closed.out_tree, backend())
    plan = None
    if key is not None and not (ACTIVE[0] and needs_tape(tensors)):
        last = _LAST_PLAN[0]
        if last is not None and last[0] == key:  # (the same structure again: no hashing, no lock)
            plan = last[1]
        else:
            try:
                plan = _LIN_PLANS.get(key)
            except TypeError:  # (an unhashable output tree node: not cached)
                key = None
        if plan is None:
            if closed is None:
                closed = user.closed()
            tr = _traced_from(closed, primals, tensors)  # (its output: tensors only, at least one)
            plan = _LinearPlan(tr, _split(tr, tuple(range(len(primals))), transposed=False), primals)
            if key is not None:
                _LIN_PLANS.put(key, plan)
        if key is not None:
            _LAST_PLAN[0] = (key, plan)
    if plan is None or plan.forward is None:
        if closed is None:
            closed = user.closed()
        tr = _traced_from(closed, primals, list(primals) + closed.capture_tensors())
        output, jvp_fn, _ = _linearize_call(func, primals, {}, tuple(range(len(primals))), False, "linearize", tr=tr)
        return output, jvp_fn
    if closed is None:
        _pipeline.release_hit(user, sig, tkey, func)
    arrays = [t._data for t in tensors]
    outs = plan.forward(tuple(arrays))
    n_main = plan.n_main
    if n_main == 1 and plan.out_tree.kind == "leaf":
        output = _bare(outs[0])
    else:
        output = _pytree.tree_unflatten(plan.out_tree, [_bare(a) for a in outs[:n_main]])
    return output, _plain_jvp_fn(plan, plan.residuals(outs, arrays))


def _traced_from(closed: ClosedGraph, primals: tuple, inputs: list) -> _Traced:
    """The `_Traced` of `closed`, `func` traced on tensor `primals` as they are (no aux pair)."""
    n_main = sum(s is None for s in closed.out_static)
    return _Traced(closed, "linearize", inputs, [[i] for i in range(len(primals))],
                   [_pytree.LEAF] * len(primals), n_main, closed.out_tree, paired=False)


def _plain_jvp_fn(plan: _LinearPlan, residuals: tuple) -> Callable:
    """jvp_fn of one top-level linearization: concrete tangents of the primals' shapes and dtypes
    go to the linear executable's fast call over the `residuals` arrays; anything else (traced
    tangents under a transform, other layouts, the errors) takes the general path."""
    sigs, n = plan.sigs, len(plan.sigs)
    single = plan.n_main == 1 and plan.out_tree.kind == "leaf"
    state = STATE
    held: list = []  # the residuals as tensors, made on the first general call

    def general(tangents):
        if _match_types(tangents, plan.types):
            t_flat = list(tangents)
        else:
            t_flat = _check_like("linearize", "tangents", tuple(tangents), plan.types, plan.tree, "primals")
        if not held:
            held.extend(_bare(r) for r in residuals)
        touts = run_graph(plan.linear, held + t_flat)
        return touts[0] if single else _pytree.tree_unflatten(plan.out_tree, touts)

    call = None  # the bound linear call, made at the first fast call

    if n == 1 and single:
        new = object.__new__

        def jvp_fn(*tangents):
            nonlocal call
            if len(tangents) == 1 and not state.stack:
                t = tangents[0]
                if t.__class__ is Tensor and t._trace is None and not (ACTIVE[0] and needs_tape(tangents)):
                    if call is None:
                        call = plan.bind_single(residuals)
                    if call is not False:
                        o = call(t._data)  # (None: not exactly the primal's shape, dtype and layout)
                        if o is not None:
                            r = new(Tensor)
                            r._data, r._trace, r._value = o, None, None
                            return r
            return general(tangents)

        return jvp_fn

    def jvp_fn(*tangents):
        nonlocal call
        if len(tangents) == n and not state.stack and not (ACTIVE[0] and needs_tape(tangents)):
            arrays = []
            for t, (shape, dt) in zip(tangents, sigs):
                if t.__class__ is not Tensor or t._trace is not None:
                    break
                a = t._data
                if a.shape != shape or a.dtype is not dt:
                    break
                arrays.append(a)
            else:
                if call is None:
                    call = plan.bind(residuals)
                if call is not False:
                    outs = call(*arrays)
                    if single:
                        return _bare(outs[0])
                    return _pytree.tree_unflatten(plan.out_tree, [_bare(a) for a in outs])
        return general(tangents)

    return jvp_fn


def _split(tr: _Traced, argnums: Sequence[int], transposed: bool):
    """The reverse-mode split of the traced graph (`ir.passes.reverse.split`), once per structure."""
    n_main = tr.num_main
    return _pipeline.memo(_VJP if transposed else _LINEARIZE, tr.pipeline_key(argnums),
                          lambda: split(tr.graph, tr.wrt(argnums), [k < n_main for k in range(len(tr.graph.outputs))],
                                        transposed=transposed))


def linearize(func: Callable, *primals):
    """Evaluates `func` at `primals` and returns ``(output, jvp_fn)``, its linear approximation there.

    The primal computation runs once, here, and its residuals are kept; each
    ``jvp_fn(*tangents)`` (tangents shaped like `primals`) runs only the linear tangent graph,
    one executable compiled once per structure of the linearized function.

    >>> import tensorplay as tp
    >>> from tensorplay.func import linearize
    >>> out, jvp_fn = linearize(lambda x: x * x, tp.tensor([1.0, 2.0]))
    >>> jvp_fn(tp.tensor([1.0, 0.0]))
    tensor([2., 0.])
    """
    if primals and not STATE.stack:
        got = _linearize_plain(func, primals)
        if got is not None:
            return got
    output, jvp_fn, _ = _linearize_call(func, primals, {}, tuple(range(len(primals))), False, "linearize")
    return output, jvp_fn


# --- Jacobians -------------------------------------------------------------------------------------
def _map_basis(fn: Callable, basis: list, chunk_size, randomness: str = "same", executor=None) -> Any:
    """``fn`` applied to every row of the stacked `basis` (tensors with a common leading size), results
    stacked along a new leading axis (`vmap`)."""
    from ._vmap import vmap

    return vmap(fn, in_dims=0, out_dims=0, randomness=randomness, chunk_size=chunk_size, executor=executor)(*basis)


def _basis(n: int, start: int, like_shape, dtype) -> Tensor:
    """Rows of the n x n identity restricted to columns [start, start + size), shaped (n, *like_shape),
    computed inside the active trace from iotas (never a dense constant input)."""
    size = math.prod(like_shape)
    trace = current_trace()

    def emit(name, *operands, **attrs):
        if trace is None:  # jacrev with an executor runs at top level: a concrete basis
            return bind(name, *operands, **attrs)
        return trace.emit(get_primitive(name), operands, attrs)

    rows = emit("iota", shape=(n, size), dtype=dtypes.int64, dimension=0)
    cols = emit("iota", shape=(n, size), dtype=dtypes.int64, dimension=1)
    if start:
        cols = emit("add", cols, emit("full", shape=(n, size), dtype=dtypes.int64, value=start))
    hot = emit("convert_element_type", emit("eq", rows, cols), dtype=dtype)
    return hot.reshape((n,) + tuple(like_shape))


def _offsets(shapes) -> list[int]:
    out, k = [], 0
    for s in shapes:
        out.append(k)
        size = 1
        for d in s:
            size *= d
        k += size
    return out + [k]


def _check_randomness(randomness: str, transform: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"{transform}: randomness must be 'error', 'different' or 'same', got {randomness!r}")


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           executor=None) -> Callable:
    """Returns a function computing the Jacobian of `func` by reverse mode.

    For an output leaf of shape ``out`` and an input leaf of shape ``in`` the Jacobian leaf has
    shape ``out + in``; results are nested as the output structure, then the argument structure
    (a tuple of those with a tuple `argnums`). The whole Jacobian is one graph: the VJP applied
    to the basis of output cotangents; `chunk_size` bounds how many rows are mapped at a time.
    With an `executor` (any `concurrent.futures.Executor`, see `vmap`) and concrete arguments, the
    forward pass runs here and the chunks of rows run on the executor; under an enclosing
    transform the whole Jacobian is one graph as without it.

    >>> import tensorplay as tp
    >>> from tensorplay.func import jacrev
    >>> jacrev(lambda x: x ** 2)(tp.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    key = (("jacrev", argnums, has_aux, chunk_size) if executor is None and _built.int_argnums(argnums)
           and has_aux.__class__ is bool and (chunk_size is None or chunk_size.__class__ is int) else None)
    made = _built.lookup(func, key)
    if made is not None:
        return made
    transform = f"jacrev({_argnums_str(argnums)})"
    _chunks.check_options(transform, chunk_size, executor, None, allow_auto=False)

    def jac_fn(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), transform)
        output, vjp_fn, aux = _vjp_call(func, args, kwargs, nums, has_aux, transform)
        out_leaves, out_tree = _pytree.tree_flatten(output)
        tensors = [o for o in out_leaves if isinstance(o, Tensor)]
        offs = _offsets([o.shape for o in tensors])
        m = offs[-1]
        in_trees = [_pytree.tree_flatten(args[a]) for a in nums]
        if m == 0:
            rows = [[_zeros((0,) + tuple(x.shape), x.dtype) for x in leaves] for leaves, _ in in_trees]
        else:
            basis = [_basis(m, offs[k], o.shape, o.dtype) for k, o in enumerate(tensors)]

            def pull(*cts):
                ct_tree = _with_tensors(out_tree, out_leaves, cts)
                return [_pytree.tree_flatten(g)[0] for g in vjp_fn(ct_tree)]

            rows = _map_basis(pull, basis, chunk_size, executor=executor)
        jac_leaves = []
        for k, o in enumerate(tensors):
            per_arg = []
            for (leaves, tree), arg_rows in zip(in_trees, rows):
                blocks = [r[offs[k]:offs[k + 1]].reshape(tuple(o.shape) + tuple(x.shape))
                          for r, x in zip(arg_rows, leaves)]
                per_arg.append(_pytree.tree_unflatten(tree, blocks))
            jac_leaves.append(_pick(per_arg, argnums))
        jac = _with_tensors(out_tree, out_leaves, jac_leaves)
        return (jac, aux) if has_aux else jac

    one_graph = _traced_as_one_graph(jac_fn, func, transform)
    if executor is not None:  # not a cacheable chain: at top level the rows run on the executor
        return _wraps(lambda *args, **kwargs: (one_graph if STATE.stack else jac_fn)(*args, **kwargs), func, "jacrev")
    made = _transform(one_graph, func, "jacrev",
                      _spec("jacrev", (argnums, bool(has_aux), chunk_size), lambda: transform,
                            lambda: lambda g: jacrev(g, argnums, has_aux=has_aux, chunk_size=chunk_size)))
    return _built.remember(func, key, made)


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """Returns a function computing the Jacobian of `func` by forward mode.

    Same result layout as `jacrev` (leaf shape ``out + in``). The primal computation is
    linearized once and the linear map is applied to the basis of input tangents in one graph.
    `randomness` says how random operations in `func` behave: ``"error"`` (the default) raises,
    ``"same"`` draws once for all basis directions, ``"different"`` draws per direction.

    >>> import tensorplay as tp
    >>> from tensorplay.func import jacfwd
    >>> jacfwd(lambda x: x.sum() * x)(tp.tensor([1.0, 2.0]))
    tensor([[4., 1.],
            [2., 5.]])
    """
    key = (("jacfwd", argnums, has_aux, randomness) if _built.int_argnums(argnums) and has_aux.__class__ is bool
           and randomness.__class__ is str else None)
    made = _built.lookup(func, key)
    if made is not None:
        return made
    transform = f"jacfwd({_argnums_str(argnums)})"
    _check_randomness(randomness, transform)

    def jac_fn(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), transform)
        in_trees = [_pytree.tree_flatten(args[a]) for a in nums]
        x_leaves = [x for leaves, _ in in_trees for x in leaves]
        offs = _offsets([x.shape for x in x_leaves])
        n = offs[-1]
        if randomness == "different":
            output, aux = _call_with_aux(func, args, kwargs, has_aux, transform)

            def push(*ts):
                return _directional(func, args, kwargs, nums, in_trees, ts, has_aux, transform)
        else:
            output, jvp_fn, aux = _linearize_call(func, args, kwargs, nums, has_aux, transform,
                                                  allow_random=randomness != "error")

            def push(*ts):
                return _pytree.tree_flatten(jvp_fn(*_regroup(in_trees, ts)))[0]
        out_leaves, out_tree = _pytree.tree_flatten(output)
        tensors = [o for o in out_leaves if isinstance(o, Tensor)]
        if n == 0:
            cols = [_zeros((0,) + tuple(o.shape), o.dtype) for o in tensors]
        else:
            basis = [_basis(n, offs[j], x.shape, x.dtype) for j, x in enumerate(x_leaves)]
            cols = [c for c in _map_basis(push, basis, None, randomness) if isinstance(c, Tensor)]
        jac_leaves = []
        for o, col in zip(tensors, cols):
            per_arg, j = [], 0
            for leaves, tree in in_trees:
                blocks = []
                for x in leaves:
                    nx, no = x.ndim, o.ndim
                    if not o.dtype.is_floating_point:  # as in jacrev: zeros in the input's dtype
                        blocks.append(_zeros(tuple(o.shape) + tuple(x.shape), x.dtype))
                    else:
                        block = col[offs[j]:offs[j + 1]].reshape(tuple(x.shape) + tuple(o.shape))
                        blocks.append(block.permute(*range(nx, nx + no), *range(nx)) if nx and no else block)
                    j += 1
                per_arg.append(_pytree.tree_unflatten(tree, blocks))
            jac_leaves.append(_pick(per_arg, argnums))
        jac = _with_tensors(out_tree, out_leaves, jac_leaves)
        return (jac, aux) if has_aux else jac

    made = _transform(_traced_as_one_graph(jac_fn, func, transform), func, "jacfwd",
                      _spec("jacfwd", (argnums, bool(has_aux), randomness), lambda: transform,
                            lambda: lambda g: jacfwd(g, argnums, has_aux, randomness=randomness)))
    return _built.remember(func, key, made)


def hessian(func: Callable, argnums=0) -> Callable:
    """Returns a function computing the Hessian of `func`, the Jacobian of its Jacobian.

    The values are those of ``jacrev(jacrev(func, argnums), argnums)`` (the spec's definition);
    it is computed forward-over-reverse, ``jacfwd(jacrev(func))``, as torch.func does: the outer
    basis then has one row per input element instead of one per element of the inner Jacobian.

    >>> import tensorplay as tp
    >>> from tensorplay.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(tp.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    key = ("hessian", argnums) if _built.int_argnums(argnums) else None
    made = _built.lookup(func, key)
    if made is not None:
        return made
    name = f"hessian({_argnums_str(argnums)})"

    def call(*args, **kwargs):
        # `func` runs once; both nestings are built from the replay of its graph
        closed = trace_function(func, args, kwargs, transform=name, name=getattr(func, "__name__", None))
        g = _pipeline.replay(closed, getattr(func, "__name__", None))
        key = (closed.structural_key(), argnums, closed.out_tree, tuple(closed.out_static))
        try:
            inner = _pipeline.memo(_NESTING, key, lambda: [_cheaper_nesting(g, argnums, args, kwargs, name)])[0]
        except TypeError:  # a non-hashable non-tensor output: no memo
            inner = _cheaper_nesting(g, argnums, args, kwargs, name)
        return jacfwd(inner(g, argnums), argnums, randomness="same")(*args, **kwargs)

    made = _transform(call, func, "hessian", _spec("hessian", (argnums,), lambda: name, lambda: lambda g: hessian(g, argnums)))
    return _built.remember(func, key, made)


_NESTING = _pipeline.LRU("hessian_nesting")


def _cheaper_nesting(g: Callable, argnums, args, kwargs, name: str) -> Callable:
    """`jacrev` or `jacfwd`: the inner Jacobian of the Hessian whose whole graph costs fewer
    multiply-adds. Forward-over-reverse needs one VJP per output element and wins for a scalar
    loss; for a vector output its cotangent basis meets the weights as a dense one-hot product
    (R^512 -> R^32, tanh(W x): ~270 M multiply-adds against ~8 M forward-over-forward)."""
    costs = []
    for inner in (jacrev, jacfwd):
        whole = trace_function(jacfwd(inner(g, argnums), argnums, randomness="same"), args, kwargs, transform=name)
        costs.append(_graph_cost(simplify(whole.graph)))
    return jacrev if costs[0] <= costs[1] else jacfwd


def _graph_cost(graph: Graph) -> int:
    """Elements a graph's nodes produce, a contraction counted once per multiply-add (the static
    estimate the Hessian's nesting is chosen by)."""
    total = 0
    for node in graph.nodes:
        t = node.out.type
        size = math.prod(t.shape) if hasattr(t, "shape") else 1
        if node.prim.name == "dot_general":
            lhs = node.inputs[0].type.shape
            size *= math.prod(lhs[a] for a in node.attrs["contract"][0])
        total += size
    return total


# --- helpers of the Jacobians ----------------------------------------------------------------------
def _with_tensors(tree, leaves, tensors):
    """The pytree `tree` with its tensor leaves replaced, in order, by `tensors` (other leaves kept)."""
    it = iter(tensors)
    return _pytree.tree_unflatten(tree, [next(it) if isinstance(leaf, Tensor) else leaf for leaf in leaves])


def _traced_as_one_graph(jac_fn: Callable, func: Callable, transform: str) -> Callable:
    """`jac_fn` traced into one graph, simplified, and executed (or inlined into an outer trace)."""
    def call(*args, **kwargs):
        closed = trace_function(jac_fn, args, kwargs, transform=transform, name=getattr(func, "__name__", None))
        leaves = _pytree.tree_flatten((tuple(args), kwargs))[0]
        inputs = [leaf for leaf in leaves if isinstance(leaf, Tensor)] + closed.capture_tensors()
        return closed.unflatten_outputs(closed.write_back(inputs, _run(closed.graph, inputs)))

    return call


def _zeros(shape, dtype) -> Tensor:
    from .. import ops

    return ops.creation.zeros(tuple(shape), dtype=dtype)


def _regroup(in_trees, flat) -> list:
    """Flat tangent leaves back into one tree per differentiated argument."""
    it = iter(flat)
    return [_pytree.tree_unflatten(tree, [next(it) for _ in leaves]) for leaves, tree in in_trees]


def _call_with_aux(func, args, kwargs, has_aux: bool, transform: str):
    """``(output, aux)`` of `func` (aux None without `has_aux`), checking the pair `has_aux` promises."""
    out = func(*args, **kwargs)
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{transform}: has_aux=True requires func to return a pair (output, aux), "
                        f"but it returned {_describe(out)}")
    return out[0], out[1]


def _directional(func, args, kwargs, nums, in_trees, ts, has_aux: bool, transform: str) -> list:
    """The tangent outputs of `func` along `ts` (flat leaves of the differentiated args), traced afresh."""
    tangents = _regroup(in_trees, ts)

    def along(*diff):
        full = list(args)
        for a, d in zip(nums, diff):
            full[a] = d
        return _call_with_aux(func, full, kwargs, has_aux, transform)[0]

    _, t_out = jvp(along, tuple(args[a] for a in nums), tuple(tangents))
    return _pytree.tree_flatten(t_out)[0]


def _reject_random(tr: _Traced) -> None:
    names = sorted({n.prim.name for n in tr.graph.nodes if n.prim.random})
    if names:
        raise RuntimeError(f"{tr.transform}: func draws random numbers ({', '.join(names)}), and with "
                           f"randomness='error' that is ambiguous; pass randomness='same' (one draw for every "
                           f"direction) or 'different' (a fresh draw per direction)")

"""Custom derivative rules and rematerialisation: `custom_jvp`, `custom_vjp`, `checkpoint`.

Each call traces the user's functions into regions (`ir.Region`) and applies one primitive
(`custom_jvp_call`, `custom_vjp_call`, `checkpoint`, declared in `ir/prims/custom.py`), so the rule
travels with the graph through every transform: grad, vjp, jvp, jacrev, jacfwd, hessian, vmap,
`tp.compile` and eager `backward()` all see it.

Tensors a function closes over are passed to its region as extra leading operands ("consts"); a
custom rule gives derivatives only for its arguments, so differentiating with respect to a
closed-over tensor is an error (pass it as an argument). Non-tensor leaves of the arguments are
static: they are handed to the functions unchanged and get no tangent (``None``) or cotangent.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Sequence

import numpy as np

from tensorplay.ir import Region, get_primitive
from tensorplay.ir.prims.control import types_text
from tensorplay.ir.prims.custom import CustomRuleError

from .. import _pytree
from .._tensor import Tensor
from .._trace import ClosedGraph, bind, trace_function

__all__ = ["custom_jvp", "custom_vjp", "checkpoint", "checkpoint_policies", "CustomRuleError"]


# --- tracing functions into regions --------------------------------------------------------------
class _Traced:
    """A function traced into a region: `graph` takes (*flat tensor args, *consts), `consts` are the
    tensors it closes over, `out_tree` / `out_types` describe its tensor results."""

    def __init__(self, closed: ClosedGraph, op: str, what: str):
        if closed.mutated:
            raise ValueError(f"{op}: {what} writes into its arguments or into a tensor it closes over, in place; "
                             f"functions given to {op} must not mutate tensors (clone() first)")
        static = [s for s in closed.out_static if s is not None]
        if static:
            raise TypeError(f"{op}: {what} returned {type(static[0].value).__name__} {static[0].value!r} in its "
                            f"result; only tensors can be returned")
        self.closed = closed
        self.graph = closed.graph
        self.consts = closed.capture_tensors()
        self.num_args = closed.num_args
        self.out_tree = closed.out_tree
        self.out_types = list(closed.graph.out_types)

    def region(self, consts_first: bool = True) -> Region:
        """The region, taking ``(*consts, *args)`` (or ``(*args, *consts)``)."""
        g = self.graph
        if not consts_first:
            return Region(g)
        n = self.num_args
        from tensorplay.ir import Graph

        return Region(Graph(g.inputs[n:] + g.inputs[:n], g.nodes, g.outputs, g.name))


def _trace(fn: Callable, args: tuple, op: str, what: str) -> _Traced:
    # traced with symbolic inputs: a region runs for many values (no concrete values while tracing)
    return _Traced(trace_function(fn, args, transform=f"trace({op})", name=getattr(fn, "__name__", None)), op, what)


def _placeholder(t) -> Tensor:
    """A read-only tensor of type `t` whose values are never read (an input stand-in for tracing)."""
    return Tensor._wrap(np.broadcast_to(np.zeros((), t.dtype.np), t.shape))


def _call(prim: str, operands: Sequence[Tensor], out_tree, **attrs):
    """Apply the tuple-valued primitive `prim` and rebuild its results into `out_tree`."""
    outs = _bind_tuple(prim, operands, attrs)
    return _pytree.tree_unflatten(out_tree, outs)


def _bind_tuple(prim: str, operands: Sequence[Tensor], attrs: dict) -> list:
    from .._control import _apply

    return _apply(get_primitive(prim), list(operands), attrs)


def _name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _split_args(args: tuple, nondiff_argnums: tuple[int, ...], op: str):
    """(diff args, nondiff args) of a call, checking `nondiff_argnums` against it."""
    for i in nondiff_argnums:
        if not -len(args) <= i < len(args):
            raise ValueError(f"{op}: nondiff_argnums {nondiff_argnums} out of range for {len(args)} arguments")
    nd = {i % len(args) for i in nondiff_argnums}
    for i in sorted(nd):
        if any(isinstance(leaf, Tensor) for leaf in _pytree.tree_flatten(args[i])[0]):
            raise TypeError(f"{op}: argument {i} is in nondiff_argnums but holds a tensor; nondiff arguments must "
                            f"be static Python values (pass tensors as ordinary arguments)")
    return [a for i, a in enumerate(args) if i not in nd], sorted(nd)


def _merge_args(diff: Sequence, nondiff_pos: Sequence[int], nondiff_vals: Sequence) -> list:
    out, d, n = [], iter(diff), dict(zip(nondiff_pos, nondiff_vals))
    for i in range(len(diff) + len(nondiff_pos)):
        out.append(n[i] if i in n else next(d))
    return out


def _flat_args(diff_args: Sequence):
    """Tensor leaves of the differentiated arguments, and a function rebuilding the arguments from
    new tensor leaves (static leaves kept)."""
    leaves, tree = _pytree.tree_flatten(tuple(diff_args))
    pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]

    def rebuild(tensors):
        new = list(leaves)
        for i, t in zip(pos, tensors):
            new[i] = t
        return list(_pytree.tree_unflatten(tree, new))

    return [leaves[i] for i in pos], rebuild


class _Call:
    """One call of a custom function: the tensor leaves of its differentiated arguments, its
    static (nondiff) arguments, and the argument lists rebuilt on other tensor leaves."""

    def __init__(self, args: tuple, static_argnums: tuple[int, ...], op: str):
        self.diff, self.static_pos = _split_args(args, static_argnums, op)
        self.static = [args[i] for i in self.static_pos]
        self.tensors, self.diff_args = _flat_args(self.diff)

    def args(self, tensors) -> list:
        """Every argument (static ones in their places), with these tensor leaves."""
        return _merge_args(self.diff_args(tensors), self.static_pos, self.static)

    def trace(self, fn: Callable, op: str, what: str) -> "_Traced":
        """`fn` called with this call's arguments, traced on its tensor leaves."""
        return _trace(lambda *ts: fn(*self.args(ts)), tuple(self.tensors), op, what)


def _check_types(op: str, what: str, got: Sequence, expected: Sequence) -> None:
    if list(got) != list(expected):
        raise CustomRuleError(f"{op}: {what} has types {types_text(got)}, expected {types_text(expected)}")


def _check_tree(op: str, what: str, got, expected) -> None:
    if got != expected:
        raise CustomRuleError(f"{op}: {what} has structure {got}, expected {expected}")


class _RuleDepth(threading.local):
    """Set while a function's own rule is traced: a call of the function inside its rule (as in
    ``return f(x), ...``) is then the plain function, not a second custom call (which would trace
    the rule again, forever). Derivatives of that inner call are the plain function's."""

    depth = 0

    @property
    def active(self) -> bool:
        return self.depth > 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1


class _CustomFunction:
    """What `custom_jvp` and `custom_vjp` share: the wrapped function, its static arguments, the
    guard against a function calling itself inside its own rule, and the call's checks."""

    kind = "custom"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        if not callable(fun):
            raise TypeError(f"{self.kind}: fun must be callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self._tracing_rule = _RuleDepth()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _op(self, kwargs: dict, has_rule: bool, how: str) -> str:
        """The op's name for messages, after checking the call can be made (`how`: how to set the rule)."""
        op = f"{self.kind}({_name(self.fun)})"
        if kwargs:
            raise TypeError(f"{op}: pass arguments positionally (keyword arguments are not supported)")
        if not has_rule:
            raise AttributeError(f"{op}: no {'JVP' if self.kind == 'custom_jvp' else 'VJP'} rule defined; {how}")
        return op


# --- custom_jvp ----------------------------------------------------------------------------------
class custom_jvp(_CustomFunction):
    """A function with a forward-mode derivative rule of your own, as `jax.custom_jvp`.

    Decorate the function, then give the rule with ``@f.defjvp``: ``rule(primals, tangents) ->
    (primal_out, tangent_out)``, where `primals` and `tangents` are tuples of the arguments and
    their tangents (zeros where an argument is not differentiated). The rule must be linear in the
    tangents; reverse mode (grad, vjp, jacrev) is derived from it by transposition, and the rule
    is differentiated again for higher derivatives. `nondiff_argnums` marks static (non-tensor)
    arguments, passed to the rule first: ``rule(*nondiff, primals, tangents)``.

    >>> import tensorplay as tp
    >>> from tensorplay.func import custom_jvp, grad
    >>> @custom_jvp
    ... def safe_log1p(x):
    ...     return tp.log(1 + x)
    >>> @safe_log1p.defjvp
    ... def _(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return safe_log1p(x), t / (1 + x)
    >>> grad(safe_log1p)(tp.tensor(1.0))
    tensor(0.5000)
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the JVP rule (usable as a decorator); returns the rule."""
        if not callable(jvp):
            raise TypeError(f"custom_jvp({_name(self.fun)}).defjvp: the rule must be callable")
        self.jvp = jvp
        return jvp

    def __call__(self, *args, **kwargs):
        op = self._op(kwargs, self.jvp is not None, f"decorate one with @{_name(self.fun)}.defjvp")
        if self._tracing_rule.active:  # called by its own rule (``return f(x), ...``): the plain function
            return self.fun(*args)
        call = _Call(args, self.nondiff_argnums, op)
        tensors, rebuild, nd_vals = call.tensors, call.diff_args, call.static
        fun = call.trace(self.fun, op, "the function")
        arg_types = [t._type() for t in tensors]

        def rule(*flat):
            primals, tangents = rebuild(flat[:len(tensors)]), rebuild(flat[len(tensors):])
            res = self.jvp(*nd_vals, tuple(primals), tuple(tangents))
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise CustomRuleError(f"{op}: the JVP rule must return a pair (primal_out, tangent_out), got "
                                      f"{type(res).__name__}")
            p_leaves, p_tree = _pytree.tree_flatten(res[0])
            _check_tree(op, "the JVP rule's primal output", p_tree, fun.out_tree)
            t_leaves = _tangent_leaves(op, res[1], fun.out_tree, p_leaves)
            return tuple(p_leaves) + tuple(t_leaves)

        with self._tracing_rule:
            jvp = _trace(rule, tuple(tensors) + tuple(_placeholder(t) for t in arg_types), op, "the JVP rule")
        n = len(fun.out_types)
        _check_types(op, "the JVP rule's primal output", jvp.out_types[:n], fun.out_types)
        _check_types(op, "the JVP rule's tangent output", jvp.out_types[n:], fun.out_types)
        return _call("custom_jvp_call", jvp.consts + fun.consts + tensors, fun.out_tree,
                     fun=fun.region(), jvp=jvp.region(), num_fun_consts=len(fun.consts),
                     num_jvp_consts=len(jvp.consts))


def _tangent_leaves(op: str, tangent, tree, primal_leaves) -> list:
    """The tangent output's leaves (None leaves become zeros of the primal's type)."""
    from .. import ops

    if tangent is None:
        return [ops.creation.zeros_like(p) for p in primal_leaves]
    leaves, t_tree = _pytree.tree_flatten(tangent, is_leaf=lambda x: x is None)
    if len(leaves) != len(primal_leaves):
        raise CustomRuleError(f"{op}: the JVP rule's tangent output has structure {t_tree}, expected {tree} "
                              f"(the primal output's)")
    return [ops.creation.zeros_like(p) if t is None else t for t, p in zip(leaves, primal_leaves)]


# --- custom_vjp ----------------------------------------------------------------------------------
class custom_vjp(_CustomFunction):
    """A function with a reverse-mode derivative rule of your own, as `jax.custom_vjp`.

    Decorate the function, then give the rule with ``f.defvjp(fwd, bwd)``: ``fwd(*args) ->
    (output, residuals)`` runs forward and saves what the backward pass needs (any pytree of
    tensors); ``bwd(residuals, output_cotangent) -> tuple`` returns one cotangent per argument
    (``None`` for a zero one). Reverse mode (grad, vjp, jacrev, ``backward()``) uses the rule;
    forward mode (jvp, jacfwd) uses `bwd` transposed, so `bwd` must be linear in the cotangent.
    `nondiff_argnums` marks static arguments, passed to `bwd` first: ``bwd(*nondiff, res, g)``.

    >>> import tensorplay as tp
    >>> from tensorplay.func import custom_vjp, grad
    >>> @custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(res, g):
    ...     return (tp.clamp(g, -1.0, 1.0),)
    >>> clip_gradient.defvjp(fwd, bwd)
    >>> grad(lambda x: (3.0 * clip_gradient(x)).sum())(tp.tensor([1.0, 2.0]))
    tensor([1., 1.])
    """

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the rule: `fwd` (args -> (output, residuals)) and `bwd` ((residuals, cotangent) -> cotangents)."""
        if not callable(fwd) or not callable(bwd):
            raise TypeError(f"custom_vjp({_name(self.fun)}).defvjp: fwd and bwd must be callable")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        op = self._op(kwargs, self.fwd is not None, f"call {_name(self.fun)}.defvjp(fwd, bwd)")
        if self._tracing_rule.active:  # called by its own fwd or bwd: the plain function
            return self.fun(*args)
        call = _Call(args, self.nondiff_argnums, op)
        tensors, nd_vals = call.tensors, call.static
        fun = call.trace(self.fun, op, "the function")
        res_box: list = []

        def fwd_flat(*ts):
            res = self.fwd(*call.args(ts))
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise CustomRuleError(f"{op}: fwd must return a pair (output, residuals), got {type(res).__name__}")
            out_leaves, out_tree = _pytree.tree_flatten(res[0])
            _check_tree(op, "fwd's output", out_tree, fun.out_tree)
            r_leaves, r_tree = _pytree.tree_flatten(res[1])
            # static residuals (Python values) are handed to bwd as they are
            res_box[:] = [r_tree, [None if isinstance(r, Tensor) else r for r in r_leaves]]
            return tuple(out_leaves) + tuple(r for r in r_leaves if isinstance(r, Tensor))

        with self._tracing_rule:
            fwd = _trace(fwd_flat, tuple(tensors), op, "fwd")
        n = len(fun.out_types)
        _check_types(op, "fwd's output", fwd.out_types[:n], fun.out_types)
        r_tree, r_static = res_box
        res_types = fwd.out_types[n:]
        arg_types = [t._type() for t in tensors]

        def bwd_flat(*flat):
            it = iter(flat[:len(res_types)])
            res = _pytree.tree_unflatten(r_tree, [next(it) if s is None else s for s in r_static])
            ct = _pytree.tree_unflatten(fun.out_tree, list(flat[len(res_types):]))
            cts = self.bwd(*nd_vals, res, ct)
            return tuple(_arg_cotangents(op, cts, call.diff))

        with self._tracing_rule:
            bwd = _trace(bwd_flat, tuple(_placeholder(t) for t in list(res_types) + fun.out_types), op, "bwd")
        _check_types(op, "bwd's cotangents", bwd.out_types, arg_types)
        return _call("custom_vjp_call", fwd.consts + bwd.consts + fun.consts + tensors, fun.out_tree,
                     fun=fun.region(), fwd=fwd.region(), bwd=bwd.region(), num_fun_consts=len(fun.consts),
                     num_fwd_consts=len(fwd.consts), num_bwd_consts=len(bwd.consts))


def _arg_cotangents(op: str, cts, diff_args: Sequence) -> list:
    """The tensor leaves of bwd's result, one per tensor leaf of the arguments (None -> zeros)."""
    from .. import ops

    if not isinstance(cts, (tuple, list)):
        raise CustomRuleError(f"{op}: bwd must return a tuple with one cotangent per argument "
                              f"({len(diff_args)}), got {type(cts).__name__}")
    if len(cts) != len(diff_args):
        raise CustomRuleError(f"{op}: bwd returned {len(cts)} cotangents, expected one per argument "
                              f"({len(diff_args)})")
    out = []
    for i, (c, a) in enumerate(zip(cts, diff_args)):
        a_leaves, a_tree = _pytree.tree_flatten(a)
        if c is None:
            c_leaves = [None] * len(a_leaves)
        else:
            c_leaves, c_tree = _pytree.tree_flatten(c)
            if c_tree != a_tree:
                raise CustomRuleError(f"{op}: bwd's cotangent for argument {i} has structure {c_tree}, expected "
                                      f"{a_tree} (the argument's)")
        for c_leaf, a_leaf in zip(c_leaves, a_leaves):
            if not isinstance(a_leaf, Tensor):
                continue
            if c_leaf is None:
                out.append(ops.creation.zeros_like(a_leaf))
                continue
            if not isinstance(c_leaf, Tensor):
                raise CustomRuleError(f"{op}: bwd's cotangent for argument {i} is {type(c_leaf).__name__}, expected "
                                      f"a tensor of type {a_leaf._type()}")
            if c_leaf._type() != a_leaf._type():
                raise CustomRuleError(f"{op}: bwd's cotangent for argument {i} has type {c_leaf._type()}, expected "
                                      f"{a_leaf._type()} (the argument's)")
            out.append(c_leaf)
    return out


# --- checkpoint ----------------------------------------------------------------------------------
class checkpoint_policies:
    """The `policy` values of `checkpoint`, as JAX's ``jax.checkpoint_policies``: which intermediate
    values of the function reverse mode saves instead of recomputing.

    - ``nothing_saveable`` (the default): only the arguments; everything else is recomputed;
    - ``everything_saveable``: every intermediate value the backward pass reads (no recomputation:
      the same residuals as without `checkpoint`);
    - ``dots_saveable``: the results of matrix products (``@``, `matmul`, `einsum` contractions);
      the cheap elementwise work around them is recomputed;
    - ``dots_with_no_batch_dims_saveable``: the same, for products without batch dimensions.

    >>> import tensorplay as tp
    >>> from tensorplay.func import checkpoint, checkpoint_policies, grad
    >>> w = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> f = checkpoint(lambda x: tp.tanh(x @ w), policy=checkpoint_policies.dots_saveable)
    >>> grad(lambda x: f(x).sum())(tp.tensor([[0.0, 0.0]]))
    tensor([[3., 7.]])
    """

    nothing_saveable = "nothing_saveable"
    everything_saveable = "everything_saveable"
    dots_saveable = "dots_saveable"
    dots_with_no_batch_dims_saveable = "dots_with_no_batch_dims_saveable"


def _policy_name(policy) -> str:
    from tensorplay.ir.prims.custom import CHECKPOINT_POLICIES

    if policy is None:
        return checkpoint_policies.nothing_saveable
    name = policy if isinstance(policy, str) else getattr(policy, "__name__", None)
    if name not in CHECKPOINT_POLICIES:
        raise ValueError(f"checkpoint: unknown policy {policy!r}; use one of "
                         f"{', '.join('checkpoint_policies.' + p for p in sorted(CHECKPOINT_POLICIES))}")
    return name


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy=None, static_argnums: Sequence[int] = ()):
    """`fun` made rematerialising, as `jax.checkpoint`: reverse mode saves only its arguments and
    recomputes its intermediate values in the backward pass (less memory, more compute).

    The result is the same function for every other purpose. `static_argnums` marks arguments
    that are static Python values; `policy` (a `checkpoint_policies` member or its name) saves
    some intermediate values anyway, e.g. ``checkpoint_policies.dots_saveable`` keeps the matrix
    products and recomputes only the elementwise work around them. The recomputation is kept
    apart from the forward pass, so `prevent_cse` is always in effect.

    >>> import tensorplay as tp
    >>> from tensorplay.func import checkpoint, grad
    >>> f = checkpoint(lambda x: tp.sin(tp.sin(x)))
    >>> grad(lambda x: f(x).sum())(tp.tensor([0.0]))
    tensor([1.])
    """
    if not callable(fun):
        raise TypeError(f"checkpoint: fun must be callable, got {type(fun).__name__}")
    attrs = {} if policy is None else {"policy": _policy_name(policy)}
    if attrs.get("policy") == checkpoint_policies.nothing_saveable:
        attrs = {}
    static = tuple(static_argnums)

    @functools.wraps(fun)
    def remat(*args, **kwargs):
        op = f"checkpoint({_name(fun)})"
        if kwargs:
            raise TypeError(f"{op}: pass arguments positionally (keyword arguments are not supported)")
        call = _Call(args, static, op)
        body = call.trace(fun, op, "the function")
        return _call("checkpoint", call.tensors + body.consts, body.out_tree, body=body.region(consts_first=False),
                     **attrs)

    return remat

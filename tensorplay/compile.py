"""`tp.compile`: trace once per input signature, compile, and call native code.

The `jax.jit` of tensorplay. The cache key is the argument structure, every
tensor's shape and dtype, and the values of non-tensor arguments (which must
be hashable). Captured tensors (module parameters, globals) are graph inputs
read at every call, so in-place updates to them are seen.

The cached call is the hot path: the key is built in one walk over the arguments
(`call_signature`, no `TreeDef`s), and a graph that writes no input and returns no
view of one runs its `Executable` and wraps the fresh output buffers directly. A
call whose arguments are C-contiguous concrete tensors, possibly in tuples, lists and
dicts (the common case: `f(x)`, `grad(loss)(params, x, y)`, a dict of parameters), is
keyed by their structure, shapes and dtypes alone (`_fast_walk`), skips even that walk,
and rebuilds its result with one generated expression (`_finisher`): about 1 us over the
bare `Executable` for `x + 1`, 4 us for a tiny MLP's gradient of 8 leaves.

The first call of a signature traces under a per-function lock, so two threads
making it at once trace the function once.
"""
from __future__ import annotations

import functools
import inspect
import threading
import weakref
from typing import Any, Callable

from . import _pytree, compiler
from ._exec import runner
from ._lowered import Lowered
from ._tensor import Tensor
from ._state import STATE
from ._trace import ClosedGraph, RandomKey, call_graph, trace_function
from ._views import layout_key

_wrap = Tensor._wrap
_new = object.__new__


class _Entry:
    """One traced signature: the closed graph, how to run it, and what the call path may skip."""

    __slots__ = ("closed", "run", "call", "captures", "fast", "finish")

    def __init__(self, closed: ClosedGraph):
        self.closed = closed
        run, fresh = runner(closed.graph)
        self.run = run
        # the executable's generated call of a tuple of arrays when it has one (no `__call__` frame)
        fast_call = getattr(run, "_fast", None)
        self.call = fast_call if fast_call is not None else (lambda arrays, run=run: run(*arrays))
        # captures that are tensors are passed as they are; a RandomKey draws a fresh key per call
        self.captures = None if any(isinstance(s, RandomKey) for s in closed.captures) else list(closed.captures)
        # outputs are new buffers, nothing is written back, no output is an input or a view of one:
        # `write_back` (and its output/input aliasing check) has nothing to do
        self.fast = fresh and not closed.mutated and all(a is None for a in closed.output_aliases)
        self.finish = _finisher(closed) if self.fast else None


def _fresh(array) -> Tensor:
    """A concrete Tensor around an executable's output buffer: `Tensor._wrap` without its checks
    (the buffer has a graph dtype, so a supported one, and the fast path never runs under a trace)."""
    t = _new(Tensor)
    t._data = array
    t._trace = t._value = None
    return t


def _finisher(closed: ClosedGraph) -> Callable[[list], Any]:
    """The function turning the executable's output arrays into the result of a fast call.

    Output trees of tuples, lists and None with tensor or static leaves (the common results: a
    tensor, a tuple of them, the gradient of a list of (weight, bias) pairs) are rebuilt by one
    generated expression, e.g. ``lambda a: [(W(a[0]), W(a[1])), (W(a[2]), W(a[3]))]``; other
    trees go through `ClosedGraph.unflatten_outputs`.

    >>> import tensorplay as tp
    >>> f = tp.compile(lambda x: (x + 1, [x * 2, None], 3))
    >>> _ = f(tp.ones(2))
    >>> f(tp.ones(2))
    (tensor([2., 2.]), [tensor([2., 2.]), None], 3)
    """
    statics = iter(closed.out_static)
    consts: list = []
    slot = [0]

    def expr(td) -> str | None:
        kind = td.kind
        if kind == "leaf":
            s = next(statics)
            if s is None:
                slot[0] += 1
                return f"W(a[{slot[0] - 1}])"
            consts.append(s.value)
            return f"K[{len(consts) - 1}]"
        if kind == "none":
            return "None"
        if kind not in ("tuple", "list"):
            return None
        parts = [expr(c) for c in td.children]
        if any(p is None for p in parts):
            return None
        body = ", ".join(parts)
        if kind == "list":
            return f"[{body}]"
        return f"({body},)" if len(parts) == 1 else f"({body})"

    code = expr(closed.out_tree) if len(closed.out_static) <= 256 else None  # huge trees: no deep eval
    if code is None:
        unflatten = closed.unflatten_outputs
        return lambda arrays: unflatten([_fresh(a) for a in arrays])
    return eval(f"lambda a: {code}", {"W": _fresh, "K": consts})  # noqa: S307 - the text is built above


def _fast_walk(items, push, keep, arrays: bool = True) -> bool:
    """Append the fast key of `items` (the positional arguments, or a tuple / list inside them) to
    `push` and their arrays (or, with ``arrays=False``, the tensors themselves) to `keep`; False
    unless every leaf is a concrete C-contiguous Tensor, inside plain tuples, lists and dicts only.
    The key -- (type, arity) per sequence, (dict, keys) per dict, each tensor's shape and dtype --
    determines `call_signature`'s key on that domain, so it can stand for it."""
    for a in items:
        cls = a.__class__
        if cls is Tensor:
            if a._trace is not None:
                return False
            d = a._data
            if not d.flags.c_contiguous:
                return False
            push(d.shape)
            push(d.dtype)
            keep(d if arrays else a)
        elif cls is tuple or cls is list:
            push((cls, len(a)))
            if not _fast_walk(a, push, keep, arrays):
                return False
        elif cls is dict:  # keys in insertion order, as `call_signature`: {a, b} and {b, a} differ
            push((dict, tuple(a)))
            if not _fast_walk(a.values(), push, keep, arrays):
                return False
        else:
            return False
    return True


def _fast_key(args) -> tuple | None:
    """The key of a call whose positional arguments are concrete C-contiguous tensors, possibly in
    tuples, lists and dicts (None for any other call)."""
    key: list = []
    return tuple(key) if _fast_walk(args, key.append, [].append) else None


def call_signature(args, kwargs, where: str) -> tuple[tuple, list, bool]:
    """(key, tensor leaves, all concrete): the cache key of a call, in one walk over the arguments.

    The key is the preorder sequence of the argument tree -- containers as (type, arity) or
    (dict type, keys in insertion order), tensors as (shape, dtype, layout), other leaves as (type, value) --
    which determines the tree structure and every leaf's signature, as `tree_flatten` would.
    A non-hashable non-tensor leaf is a TypeError naming `where`.

    >>> import tensorplay as tp
    >>> key, tensors, concrete = call_signature((tp.ones(2), 3), {}, "f")
    >>> len(tensors), concrete, key[-1]
    (1, True, ('S', <class 'int'>, 3))
    """
    key: list = []
    tensors: list = []
    concrete = True
    push, keep = key.append, tensors.append

    def go(x):
        nonlocal concrete
        cls = x.__class__
        if cls is Tensor:
            keep(x)
            if x._trace is None:
                a = x._data
                push((a.shape, a.dtype, None if a.flags.c_contiguous else layout_key(x)))
            else:
                concrete = False
                push((tuple(x.shape), x.dtype.np, layout_key(x)))
        elif cls is tuple or cls is list:
            push((cls, len(x)))
            for c in x:
                go(c)
        elif cls is dict:
            push((dict, tuple(x)))  # insertion order, as `tree_flatten`: {a, b} and {b, a} are two entries
            for c in x.values():
                go(c)
        elif x is None:
            push(None)
        elif isinstance(x, Tensor):
            keep(x)
            concrete = concrete and x._trace is None
            push((tuple(x.shape), x.dtype.np, layout_key(x)))
        elif isinstance(x, tuple):  # namedtuples keep their class; other subclasses (tp.Size) are tuples
            push((cls if hasattr(cls, "_fields") else tuple, len(x)))
            for c in x:
                go(c)
        elif isinstance(x, list):
            push((list, len(x)))
            for c in x:
                go(c)
        elif isinstance(x, dict):  # OrderedDict, defaultdict, ...: their container, as `tree_flatten` has it
            push((_pytree.dict_container(x), tuple(x)))
            for k in x:
                go(x[k])
        else:
            try:
                hash(x)
            except TypeError:
                raise TypeError(f"{where}: non-tensor argument of type {cls.__name__} "
                                f"is not hashable, so it cannot be part of the compile cache key") from None
            push(("S", cls, x))

    go(args)
    if kwargs:
        go(kwargs)
    return tuple(key), tensors, concrete


def _check_static_argnums(static_argnums, fn) -> tuple[int, ...]:
    """`static_argnums` as a tuple of ints, checked against `fn`'s positional parameters when known."""
    nums = (static_argnums,) if isinstance(static_argnums, int) and not isinstance(static_argnums, bool) \
        else static_argnums
    if not isinstance(nums, (tuple, list)) or any(isinstance(a, bool) or not isinstance(a, int) for a in nums):
        raise TypeError(f"compile: static_argnums must be an int or a tuple of ints, got {static_argnums!r}")
    nums = tuple(nums)
    if fn is not None:
        limit = _positional_limit(fn)
        for a in nums:
            if limit is not None and not -limit <= a < limit:
                raise ValueError(f"compile({getattr(fn, '__name__', 'f')}): static_argnums {a} is out of range for "
                                 f"a function of {limit} positional parameter(s)")
    return nums


def _positional_limit(fn) -> int | None:
    """How many positional parameters `fn` takes (None if unknown or unbounded, as with ``*args``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    return sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)


_LIVE: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()


@compiler.register_reset
def _forget_traces() -> None:
    for f in list(_LIVE):
        f._cache.clear()
        f._fast.clear()


class CompiledFunction:
    """A function compiled per input signature; see `tensorplay.compile`."""

    def __init__(self, fn: Callable, static_argnums: tuple[int, ...] = ()):
        self.fn = fn
        self.static_argnums = _check_static_argnums(static_argnums, fn)
        self._cache: dict[Any, _Entry] = {}
        self._fast: dict[tuple, _Entry] = {}  # `_fast_key` -> entry, for fast entries without RandomKeys
        self._lock = threading.Lock()
        _LIVE.add(self)
        self.trace_count = 0
        self._where = f"compile({getattr(fn, '__name__', type(fn).__name__)})"
        functools.update_wrapper(self, fn)

    def _check_static(self, args) -> None:
        """A static argument is a hashable Python value, never a tensor; its position exists in the call."""
        n = len(args)
        for a in self.static_argnums:
            if not -n <= a < n:
                raise ValueError(f"{self._where}: static_argnums {a} is out of range for a call with "
                                 f"{n} positional argument(s)")
            if isinstance(args[a], Tensor):
                raise TypeError(f"{self._where}: argument {a % n} is in static_argnums but is a tensor; "
                                f"static arguments must be hashable Python values (pass tensors as ordinary "
                                f"arguments)")

    def get_graph(self, *args, **kwargs) -> ClosedGraph:
        """The traced graph for these arguments (tracing on first use)."""
        return self._entry(args, kwargs)[0].closed

    def lower(self, *args, **kwargs) -> Lowered:
        """The stages for these arguments, as ``jax.jit(f).lower(...)``: ``.graph``, ``.as_text()``,
        ``.llvm_ir``, ``.asm`` and ``.kernels`` (see `Lowered`).

        >>> import tensorplay as tp
        >>> tp.compile(lambda x: x + 1).lower(tp.ones(3)).graph.nodes[-1].prim.name
        'add'
        """
        return Lowered(self._entry(args, kwargs)[0].closed, self._where)

    def _entry(self, args, kwargs) -> tuple[_Entry, list, bool]:
        if self.static_argnums:
            self._check_static(args)
        key, tensors, concrete = call_signature(args, kwargs, self._where)
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:  # one trace per signature, however many threads make the first call
                entry = self._cache.get(key)
                if entry is None:
                    closed = trace_function(self.fn, args, kwargs, transform="compile")
                    self.trace_count += 1
                    entry = self._cache[key] = _Entry(closed)
        if not kwargs and entry.finish is not None and entry.captures is not None and concrete:
            fast = _fast_key(args)
            if fast is not None:
                self._fast[fast] = entry
        return entry, tensors, concrete

    def __call__(self, *args, **kwargs):
        if kwargs or STATE.stack:
            return self._call(args, kwargs)
        key: list = []  # `_fast_key`, keeping the arrays: this is the hot path
        arrays: list = []
        if not _fast_walk(args, key.append, arrays.append):
            return self._call(args, kwargs)
        entry = self._fast.get(tuple(key))
        if entry is None:
            return self._call(args, kwargs)
        caps = entry.captures
        if caps:
            for c in caps:
                if c._trace is not None:
                    return self._call(args, kwargs)
                arrays.append(c._data)
        return entry.finish(entry.call(tuple(arrays)))  # (a tuple: a refused array goes to the general call)

    def _call(self, args, kwargs):
        entry, tensors, concrete = self._entry(args, kwargs)
        closed = entry.closed
        captures = entry.captures
        if captures is None:
            captures = closed.capture_tensors()
        inputs = tensors + captures if captures else tensors
        if STATE.stack or not concrete or any(t._trace is not None for t in captures):  # under a trace: inline
            outs = call_graph(closed.graph, inputs)
        else:
            outs = [_wrap(a) for a in entry.run(*[t._data for t in inputs])]
            if entry.fast:
                return closed.unflatten_outputs(outs)
        return closed.unflatten_outputs(closed.write_back(inputs, outs, alias_outputs=True))


def compile(fn: Callable | None = None, *, static_argnums=(), **options):
    """Compile `fn` to native code, specialised per input signature (like `jax.jit`).

    >>> import tensorplay as tp
    >>> f = tp.compile(lambda x: tp.sin(x) * 2)
    >>> f(tp.zeros(3))
    tensor([0., 0., 0.])

    `static_argnums` names positional arguments that are Python values (they are part of the
    cache key, as every non-tensor argument is); any other keyword is an error.
    """
    if options:
        raise TypeError(f"compile: unknown option(s) {', '.join(map(repr, sorted(options)))}; the supported "
                        f"option is static_argnums")
    if fn is not None and not callable(fn):
        raise TypeError(f"compile: expected a function, got {type(fn).__name__}")
    nums = _check_static_argnums(static_argnums, fn)
    if fn is None:
        return lambda f: CompiledFunction(f, nums)
    return CompiledFunction(fn, nums)

"""`tp.compile`: trace once per input signature, compile, and call native code.

The `jax.jit` of tensorplay. The cache key is the argument structure, every
tensor's shape and dtype, and the values of non-tensor arguments (which must
be hashable). Captured tensors (module parameters, globals) are graph inputs
read at every call, so in-place updates to them are seen.

The cached call is the hot path: the key is built in one walk over the arguments
(`_signature`, no `TreeDef`s), and a graph that writes no input and returns no
view of one runs its `Executable` and wraps the fresh output buffers directly.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable

from . import _pytree, compiler
from ._exec import backend, executor
from ._tensor import Tensor
from ._trace import _STACK, ClosedGraph, RandomKey, call_graph, trace_function
from ._views import layout_key

_wrap = Tensor._wrap


class _Entry:
    """One traced signature: the closed graph, how to run it, and what the call path may skip."""

    __slots__ = ("closed", "run", "captures", "fast")

    def __init__(self, closed: ClosedGraph):
        self.closed = closed
        run, fresh = _runner(closed.graph)
        self.run = run
        # captures that are tensors are passed as they are; a RandomKey draws a fresh key per call
        self.captures = None if any(isinstance(s, RandomKey) for s in closed.captures) else list(closed.captures)
        # outputs are new buffers, nothing is written back, no output is an input or a view of one:
        # `write_back` (and its output/input aliasing check) has nothing to do
        self.fast = fresh and not closed.mutated and all(a is None for a in closed.output_aliases)


def _runner(graph) -> tuple[Callable, bool]:
    """(run(*arrays) -> arrays, fresh): `fresh` when the outputs are always new buffers (a codegen
    `Executable` never returns its inputs or views of them; the interpreter may)."""
    if backend() == "compiled":
        from tensorplay.codegen import compile_graph  # a broken backend is an error, never a silent fallback

        return compile_graph(graph), True
    run = executor(graph)
    return (lambda *arrays: run(arrays)), False


_LIVE: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()


@compiler.register_reset
def _forget_traces() -> None:
    for f in list(_LIVE):
        f._cache.clear()


class CompiledFunction:
    """A function compiled per input signature; see `tensorplay.compile`."""

    def __init__(self, fn: Callable, static_argnums: tuple[int, ...] = ()):
        self.fn = fn
        self.static_argnums = static_argnums
        self._cache: dict[Any, _Entry] = {}
        _LIVE.add(self)
        self.trace_count = 0
        functools.update_wrapper(self, fn)

    def _signature(self, args, kwargs) -> tuple[tuple, list, bool]:
        """(key, tensor leaves, all concrete): the cache key of a call, in one walk over the arguments.

        The key is the preorder sequence of the argument tree -- containers as (type, arity) or
        (dict type, keys in insertion order), tensors as (shape, dtype, layout), other leaves as (type, value) --
        which determines the tree structure and every leaf's signature, as `tree_flatten` would.
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
                    raise TypeError(f"compile({self.__name__}): non-tensor argument of type {cls.__name__} "
                                    f"is not hashable, so it cannot be part of the compile cache key") from None
                push(("S", cls, x))

        go(args)
        if kwargs:
            go(kwargs)
        return tuple(key), tensors, concrete

    def get_graph(self, *args, **kwargs) -> ClosedGraph:
        """The traced graph for these arguments (tracing on first use)."""
        return self._entry(args, kwargs)[0].closed

    def _entry(self, args, kwargs) -> tuple[_Entry, list, bool]:
        key, tensors, concrete = self._signature(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            closed = trace_function(self.fn, args, kwargs, transform="compile")
            self.trace_count += 1
            entry = self._cache[key] = _Entry(closed)
        return entry, tensors, concrete

    def __call__(self, *args, **kwargs):
        entry, tensors, concrete = self._entry(args, kwargs)
        closed = entry.closed
        captures = entry.captures
        if captures is None:
            captures = closed.capture_tensors()
        inputs = tensors + captures if captures else tensors
        if _STACK or not concrete or any(t._trace is not None for t in captures):  # under a trace: inline
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
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if fn is None:
        return lambda f: CompiledFunction(f, tuple(static_argnums))
    return CompiledFunction(fn, tuple(static_argnums))

"""`tp.compile`: trace once per input signature, compile, and call native code.

The `jax.jit` of tensorplay. The cache key is the argument structure, every
tensor's shape and dtype, and the values of non-tensor arguments (which must
be hashable). Captured tensors (module parameters, globals) are graph inputs
read at every call, so in-place updates to them are seen.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from . import _pytree
from ._exec import executor
from ._tensor import Tensor
from ._trace import _STACK, ClosedGraph, RandomKey, call_graph, trace_function
from ._views import layout_key


class CompiledFunction:
    """A function compiled per input signature; see `tensorplay.compile`."""

    def __init__(self, fn: Callable, static_argnums: tuple[int, ...] = ()):
        self.fn = fn
        self.static_argnums = static_argnums
        self._cache: dict[Any, tuple[ClosedGraph, Callable]] = {}
        self.trace_count = 0
        functools.update_wrapper(self, fn)

    def _key(self, args, kwargs):
        leaves, tree = _pytree.tree_flatten((args, kwargs))
        sig = []
        for leaf in leaves:
            if isinstance(leaf, Tensor):
                sig.append(("T", tuple(leaf.shape), leaf.dtype.name, layout_key(leaf)))
            else:
                try:
                    hash(leaf)
                except TypeError:
                    raise TypeError(f"compile({self.__name__}): non-tensor argument of type {type(leaf).__name__} "
                                    f"is not hashable, so it cannot be part of the compile cache key") from None
                sig.append(("S", type(leaf), leaf))
        return tree, tuple(sig), leaves

    def get_graph(self, *args, **kwargs) -> ClosedGraph:
        """The traced graph for these arguments (tracing on first use)."""
        return self._entry(*args, **kwargs)[0]

    def _entry(self, *args, **kwargs):
        tree, sig, leaves = self._key(args, kwargs)
        key = (tree, sig)
        entry = self._cache.get(key)
        if entry is None:
            closed = trace_function(self.fn, args, kwargs, transform="compile")
            self.trace_count += 1
            entry = (closed, executor(closed.graph))
            self._cache[key] = entry
        return entry + (leaves,)

    def __call__(self, *args, **kwargs):
        closed, run, leaves = self._entry(*args, **kwargs)
        tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
        captures = closed.capture_tensors()
        inputs = tensors + captures
        if _STACK or any(t._trace is not None for t in inputs):  # under a trace: inline (see call_graph)
            outs = call_graph(closed.graph, inputs)
        else:
            outs = [Tensor._wrap(a) for a in run([t._data for t in inputs])]
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

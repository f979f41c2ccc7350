"""Executing graphs: the compiled backend by default, the reference interpreter on request.

``TENSORPLAY_BACKEND=interpreter`` routes every graph through `ir.interpret`.

A graph's runner is made once and kept on the graph object (`runner`), so a graph held by a
cache (the pipeline cache of the plain transforms, `tp.compile`) runs without re-hashing its
structure on every call.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

from tensorplay.ir import Graph, interpret

_RUNNER_ATTR = {"compiled": "_tp_runner_compiled", "interpreter": "_tp_runner_interpreter"}


_parsed: tuple[object, str] = (None, "compiled")  # (raw TENSORPLAY_BACKEND value, backend name)
# Every plain call asks for the backend. `os.environ.get` of an unset variable raises and catches a
# KeyError inside (~1 us), so the variable is read from the environment's own encoded mapping,
# which `os.environ` and `monkeypatch.setenv` keep current.
_ENVIRON_DATA = getattr(os.environ, "_data", None)
_ENVIRON_KEY = os.environ.encodekey("TENSORPLAY_BACKEND") if _ENVIRON_DATA is not None else None


def backend() -> str:
    """The active backend name: 'compiled' (default) or 'interpreter'.

    >>> backend() in ("compiled", "interpreter")
    True
    """
    global _parsed
    if _ENVIRON_DATA is not None:
        raw = _ENVIRON_DATA.get(_ENVIRON_KEY)
        if raw == _parsed[0]:
            return _parsed[1]
        raw_text = None if raw is None else os.environ.decodevalue(raw)
    else:
        raw = raw_text = os.environ.get("TENSORPLAY_BACKEND")
        if raw == _parsed[0]:
            return _parsed[1]
    name = (raw_text or "compiled").strip().lower() or "compiled"
    if name not in ("compiled", "interpreter", "llvm"):
        raise ValueError(f"TENSORPLAY_BACKEND={name!r}: expected 'compiled' or 'interpreter'")
    _parsed = (raw, "interpreter" if name == "interpreter" else "compiled")
    return _parsed[1]


def runner(graph: Graph) -> tuple[Callable[..., list], bool]:
    """``(run, fresh)`` for `graph` with the active backend: ``run(*arrays) -> arrays``.

    `fresh` is True when the outputs are always new buffers (a codegen `Executable` never
    returns its inputs or views of them; the interpreter may). Made on first use and kept on
    the graph, so later calls of the same graph object skip the executable cache's lookup.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> import numpy as np
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32)); g = b.build([b.neg(x)])
    >>> run, fresh = runner(g)
    >>> run(np.ones(2, np.float32))[0].tolist()
    [-1.0, -1.0]
    """
    name = backend()
    attr = _RUNNER_ATTR[name]
    made = graph.__dict__.get(attr)
    if made is not None:
        return made
    if name == "compiled":
        from tensorplay.codegen import compile_graph  # a broken backend is an error, never a silent fallback

        made = (compile_graph(graph), True)
    else:
        made = ((lambda *arrays: interpret(graph, arrays)), False)
    setattr(graph, attr, made)
    return made


def executor(graph: Graph) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
    """A callable running `graph` on a list of arrays with the active backend (compiling once)."""
    run = runner(graph)[0]
    return lambda arrays: run(*arrays)


def execute(graph: Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run `graph` on concrete arrays with the active backend."""
    return runner(graph)[0](*arrays)


def forget_runners(graph: Graph) -> None:
    """Drop the runners kept on `graph` (after the executable cache was cleared)."""
    for attr in _RUNNER_ATTR.values():
        graph.__dict__.pop(attr, None)

"""Executing graphs: the compiled backend by default, the reference interpreter on request.

``TENSORPLAY_BACKEND=interpreter`` routes every graph through `ir.interpret`.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

from tensorplay.ir import Graph, interpret


def backend() -> str:
    """The active backend name: 'compiled' (default) or 'interpreter'."""
    name = os.environ.get("TENSORPLAY_BACKEND", "compiled").strip().lower() or "compiled"
    if name not in ("compiled", "interpreter", "llvm"):
        raise ValueError(f"TENSORPLAY_BACKEND={name!r}: expected 'compiled' or 'interpreter'")
    return "interpreter" if name == "interpreter" else "compiled"


def executor(graph: Graph) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
    """A callable running `graph` on a list of arrays with the active backend (compiling once)."""
    if backend() == "interpreter":
        return lambda arrays: interpret(graph, arrays)
    from tensorplay.codegen import compile_graph  # a broken backend is an error, never a silent fallback

    exe = compile_graph(graph)
    return lambda arrays: exe(*arrays)


def execute(graph: Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run `graph` on concrete arrays with the active backend."""
    return executor(graph)(arrays)

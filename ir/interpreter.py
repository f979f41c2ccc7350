"""The reference interpreter: runs a graph node by node with each primitive's numpy `impl`.

It is the oracle that compiled code is tested against, and the execution
engine under ``TENSORPLAY_BACKEND=interpreter``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .core import Graph, Value


def check_arguments(graph: Graph, args: Sequence[np.ndarray]) -> None:
    """Raise a clear error when `args` do not match the graph's input types."""
    if len(args) != len(graph.inputs):
        raise TypeError(f"@{graph.name} takes {len(graph.inputs)} inputs, got {len(args)}")
    for i, (v, a) in enumerate(zip(graph.inputs, args)):
        if tuple(a.shape) != v.type.shape or a.dtype != v.type.dtype.np:
            raise TypeError(f"@{graph.name} input {i}: expected {v.type}, got array of shape "
                            f"{tuple(a.shape)} and dtype {a.dtype}")


def interpret(graph: Graph, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Evaluate `graph` on numpy arrays; returns one array per graph output."""
    args = [np.asarray(a) for a in args]
    check_arguments(graph, args)
    env: dict[Value, np.ndarray] = dict(zip(graph.inputs, args))
    for node in graph.nodes:
        env[node.out] = node.prim.impl(*(env[v] for v in node.inputs), **node.attrs)
    return [env[v] for v in graph.outputs]

"""The printer of the IR text format (see `ir.text` for the format and the parser).

It reads graphs through their attributes only and imports nothing but the
value classes, so `Graph.__str__` can use it without an import cycle.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes as dt
from .constants import DenseElements, dense_text
from .types import TensorType
from .values import Node, Value

if TYPE_CHECKING:
    from .core import Graph

__all__ = ["OP_PREFIX", "print_graph", "print_node", "value_names", "format_attr", "format_type", "graph_lines"]

OP_PREFIX = "tp."
_BARE_NAME = re.compile(r"[A-Za-z_][\w.$-]*\Z")


def format_type(t: TensorType) -> str:
    """``tensor<2x3xf32>``; ``tensor<f32>`` for a 0-d type."""
    return str(t)


def format_attr(v: Any) -> str:
    """The text of one attribute value (see the module docstring for the table)."""
    if v is None:
        return "none"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, dt.DType):
        return v.short
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # shortest exact repr; 'inf', '-inf', 'nan' included
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, TensorType):
        return format_type(v)
    if isinstance(v, DenseElements):
        return dense_text(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    raise TypeError(f"attribute value {v!r} of type {type(v).__name__} has no text form")


def _format_attr_lenient(v: Any) -> str:
    try:
        return format_attr(v)
    except TypeError:
        return f"#<{type(v).__name__}>"  # shown for debugging; the parser rejects it


def value_names(graph: Graph) -> dict[Value, str]:
    """The printer's SSA names: ``%argI`` for input I, ``%I`` for the result of node I."""
    names: dict[Value, str] = {}
    for i, v in enumerate(graph.inputs):
        names.setdefault(v, f"%arg{i}")
    for i, n in enumerate(graph.nodes):
        names.setdefault(n.out, f"%{i}")
    return names


class _Names(dict):
    """Value names that never fail: a value not in the graph prints as ``%undefN``, a non-value as ``<type>``."""

    def __getitem__(self, v: Any) -> str:
        if not isinstance(v, Value):
            return f"<{type(v).__name__}>"
        return super().__getitem__(v)

    def __missing__(self, v: Value) -> str:
        name = f"%undef{sum(1 for n in self.values() if n.startswith('%undef'))}"
        self[v] = name
        return name


def print_node(node: Node, names: dict[Value, str]) -> str:
    """One node line without indentation: ``%2 = tp.add %0, %1 {k = v} : tensor<3xf32>``."""
    text = f"{names[node.out]} = {OP_PREFIX}{node.prim.name}"
    if node.inputs:
        text += " " + ", ".join(names[v] for v in node.inputs)
    if node.attrs:
        text += " {" + ", ".join(f"{k} = {_format_attr_lenient(node.attrs[k])}" for k in sorted(node.attrs)) + "}"
    return f"{text} : {format_type(node.out.type)}"


def _func_name(name: str) -> str:
    return "@" + (name if _BARE_NAME.match(name) else json.dumps(name))


def _type_text(v: Any) -> str:
    return format_type(v.type) if isinstance(v, Value) else "?"


def graph_lines(graph: Graph) -> list[str]:
    """The printed lines of `graph`: the header is line 0 and node I is line I + 1.

    Never fails, even on a malformed graph (the verifier prints those).
    """
    names = _Names(value_names(graph))
    args = ", ".join(f"{names[v]}: {_type_text(v)}" for v in graph.inputs)
    outs = [_type_text(v) for v in graph.outputs]
    result = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    lines = [f"func {_func_name(graph.name)}({args}) -> {result} {{"]
    lines += ["  " + (print_node(n, names) if isinstance(n, Node) else f"<{type(n).__name__}>") for n in graph.nodes]
    lines.append("  return" + ("" if not graph.outputs else " " + ", ".join(names[v] for v in graph.outputs)))
    lines.append("}")
    return lines


def print_graph(graph: Graph) -> str:
    """The canonical text of `graph` (no trailing newline); `parse_graph` reads it back."""
    return "\n".join(graph_lines(graph))


# ---------------------------------------------------------------------------------------------
# Lexer
# ---------------------------------------------------------------------------------------------

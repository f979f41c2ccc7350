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
from .regions import Region, region_attrs
from .types import TensorType, TupleType
from .values import Node, Value

if TYPE_CHECKING:
    from .core import Graph

__all__ = ["OP_PREFIX", "print_graph", "print_node", "node_lines", "value_names", "format_attr", "format_type",
           "graph_lines"]

OP_PREFIX = "tp."
_BARE_NAME = re.compile(r"[A-Za-z_][\w.$-]*\Z")


def format_type(t: TensorType | TupleType) -> str:
    """``tensor<2x3xf32>``; ``tensor<f32>`` for a 0-d type; ``tuple<2x3xf32, i32>`` for a tuple."""
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


def value_names(graph: Graph, prefix: str = "") -> dict[Value, str]:
    """The printer's SSA names: ``%argI`` for input I, ``%I`` for the result of node I.

    Inside a region the names carry its label (``%body.arg0``, ``%body.3``): regions are closed,
    so a region's names never refer to the enclosing graph's values."""
    names: dict[Value, str] = {}
    for i, v in enumerate(graph.inputs):
        names.setdefault(v, f"%{prefix}arg{i}")
    for i, n in enumerate(graph.nodes):
        names.setdefault(n.out, f"%{prefix}{i}")
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
    """One node line without indentation: ``%2 = tp.add %0, %1 {k = v} : tensor<3xf32>``.

    Region attributes are left out (`node_lines` prints them as nested blocks)."""
    text = f"{names[node.out]} = {OP_PREFIX}{node.prim.name}"
    if node.inputs:
        text += " " + ", ".join(names[v] for v in node.inputs)
    keys = [k for k in sorted(node.attrs) if node.attrs[k].__class__ is not Region]
    if keys:
        text += " {" + ", ".join(f"{k} = {_format_attr_lenient(node.attrs[k])}" for k in keys) + "}"
    return f"{text} : {_type_text(node.out)}"


def node_lines(node: Node, names: dict[Value, str]) -> list[str]:
    """The lines of one node without indentation: its `print_node` line, then its regions nested
    in MLIR's style, each ``^label(%label.arg0: type, ...) -> types:`` with its body and return::

        %3 = tp.cond %0, %arg1 : tuple<3xf32> {
          ^false(%false.arg0: tensor<3xf32>) -> tensor<3xf32>:
            return %false.arg0
          ^true(%true.arg0: tensor<3xf32>) -> tensor<3xf32>:
            %true.0 = tp.sin %true.arg0 : tensor<3xf32>
            return %true.0
        }
    """
    regions = region_attrs(node.attrs)
    first = print_node(node, names)
    if not regions:
        return [first]
    lines = [first + " {"]
    for label, region in regions:
        lines += ["  " + line for line in region_lines(label, region.graph)]
    lines.append("}")
    return lines


def region_lines(label: str, graph: Graph) -> list[str]:
    """The block of one region: its ``^label(...) -> ...:`` header, its nodes and its return."""
    names = _Names(value_names(graph, f"{label}."))
    args = ", ".join(f"{names[v]}: {_type_text(v)}" for v in graph.inputs)
    lines = [f"^{label}({args}) -> {_result_text(graph)}:"]
    for n in graph.nodes:
        lines += ["  " + line for line in _lines_of(n, names)]
    lines.append("  " + _return_text(graph, names))
    return lines


def _lines_of(n: Any, names: dict[Value, str]) -> list[str]:
    return node_lines(n, names) if isinstance(n, Node) else [f"<{type(n).__name__}>"]


def _result_text(graph: Graph) -> str:
    outs = [_type_text(v) for v in graph.outputs]
    return outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"


def _return_text(graph: Graph, names: dict[Value, str]) -> str:
    return "return" + ("" if not graph.outputs else " " + ", ".join(names[v] for v in graph.outputs))


def _func_name(name: str) -> str:
    return "@" + (name if _BARE_NAME.match(name) else json.dumps(name))


def _type_text(v: Any) -> str:
    return format_type(v.type) if isinstance(v, Value) else "?"


def graph_lines(graph: Graph) -> list[str]:
    """The printed lines of `graph`: the header is line 0 and node I is line I + 1 (a node that
    carries regions is one entry of several text lines, joined by newlines).

    Never fails, even on a malformed graph (the verifier prints those).
    """
    names = _Names(value_names(graph))
    args = ", ".join(f"{names[v]}: {_type_text(v)}{_arg_attrs_text(graph, v)}" for v in graph.inputs)
    lines = [f"func {_func_name(graph.name)}({args}) -> {_result_text(graph)} {{"]
    lines += ["  " + "\n  ".join(_lines_of(n, names)) for n in graph.nodes]
    lines.append("  " + _return_text(graph, names))
    lines.append("}")
    return lines


def _arg_attrs_text(graph: Graph, v: Value) -> str:
    attrs = getattr(graph, "arg_attrs", {}).get(v)
    if not attrs:
        return ""
    return " {" + ", ".join(f"{k} = {_format_attr_lenient(attrs[k])}" for k in sorted(attrs)) + "}"


def print_graph(graph: Graph) -> str:
    """The canonical text of `graph` (no trailing newline); `parse_graph` reads it back."""
    return "\n".join(graph_lines(graph))


# ---------------------------------------------------------------------------------------------
# Lexer
# ---------------------------------------------------------------------------------------------

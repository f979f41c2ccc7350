"""The IR verifier: SSA order and re-derived types, checked after every pass.

`verify(graph)` raises `VerificationError` on the first problem, naming the
node and showing the IR around it (as JAX's ``check_jaxpr`` does)::

    ir.verify: in @f, node 1 (%1 = tp.add): operand 1 (%2) is used before it is defined (by node 2)

        func @f(%arg0: tensor<3xf32>) -> tensor<3xf32> {
          %0 = tp.sin %arg0 : tensor<3xf32>
    -->   %1 = tp.add %0, %2 : tensor<3xf32>
          %2 = tp.cos %0 : tensor<3xf32>
          return %1
        }

`verify_text(text)` checks IR text instead and returns every error with its
line and column (for the ``tensorplay-ir`` CLI).
"""
from __future__ import annotations

from typing import Any

from .core import Graph, Node, Value
from .regions import Region, region_attrs
from .types import TensorType
from .text import OP_PREFIX, ParseError, graph_lines, parse_errors, value_names

__all__ = ["VerificationError", "verify", "verify_text"]

CONTEXT_LINES = 3


class VerificationError(ValueError):
    """A malformed graph. `reason` is the bare complaint, `node_index` the bad node (None: not a node)."""

    def __init__(self, message: str, reason: str, node: Node | None = None, node_index: int | None = None):
        super().__init__(message)
        self.reason = reason
        self.node = node
        self.node_index = node_index


def _excerpt(lines: list[str], focus: int, context: int = CONTEXT_LINES) -> str:
    """`lines` around line `focus`, which is marked with ``-->``; elided lines become ``...``."""
    lo, hi = max(0, focus - context), min(len(lines), focus + context + 1)
    out = ["    ..."] if lo > 0 else []
    for i in range(lo, hi):
        first, *rest = lines[i].split("\n")  # a node with regions is one entry of several lines
        out.append(("--> " if i == focus else "    ") + first)
        out += ["    " + line for line in rest]
    if hi < len(lines):
        out.append("    ...")
    return "\n".join(out)


class _Checker:
    def __init__(self, graph: Graph):
        self.graph = graph
        self._lines: list[str] | None = None
        self._names: dict[Value, str] | None = None

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = graph_lines(self.graph)
        return self._lines

    def name(self, v: Any) -> str:
        if self._names is None:
            self._names = value_names(self.graph)
        return self._names.get(v, "an unnamed value") if isinstance(v, Value) else repr(v)

    def fail(self, reason: str, line: int, node: Node | None = None, index: int | None = None,
             excerpt: str | None = None):
        where = f"in @{self.graph.name}"
        if node is not None:
            where += f", node {index} ({self.name(node.out)} = {OP_PREFIX}{node.prim.name})"
        message = f"ir.verify: {where}: {reason}\n\n{excerpt or _excerpt(self.lines, line)}"
        raise VerificationError(message, reason, node, index)

    def run(self) -> None:
        g = self.graph
        producer = {n.out: i for i, n in enumerate(g.nodes) if isinstance(n, Node)}
        defined: dict[Value, str] = {}
        for i, v in enumerate(g.inputs):
            if not isinstance(v, Value):
                self.fail(f"input {i} is a {type(v).__name__}, not an IR Value", 0)
            if v in defined:
                self.fail(f"input {i} is the same value as {defined[v]}: an input listed twice", 0)
            if not isinstance(v.type, TensorType):
                self.fail(f"input {i} has type {v.type}; graph inputs are tensors, never tuples", 0)
            defined[v] = f"input {i}"
        for i, node in enumerate(g.nodes):
            if not isinstance(node, Node):
                self.fail(f"node {i} is a {type(node).__name__}, not a Node", 0)
            self.check_node(i, node, defined, producer)
            defined[node.out] = f"node {i}"
        last = len(g.nodes) + 1  # the `return` line
        for k, v in enumerate(g.outputs):
            if not isinstance(v, Value):
                self.fail(f"output {k} is a {type(v).__name__}, not an IR Value", last)
            if v not in defined:
                self.fail(f"output {k} ({self.name(v)}: {v.type}) is not defined in the graph", last)
            if not isinstance(v.type, TensorType):
                self.fail(f"output {k} ({self.name(v)}) has type {v.type}; graph outputs are tensors, never tuples "
                          f"(project them with tuple_get)", last)

    def check_node(self, i: int, node: Node, defined: dict[Value, str], producer: dict[Value, int]) -> None:
        line = i + 1
        prim = node.prim
        for j, v in enumerate(node.inputs):
            if not isinstance(v, Value):
                self.fail(f"operand {j} is a {type(v).__name__}, not an IR Value", line, node, i)
            if v in defined:
                continue
            if v in producer:
                self.fail(f"operand {j} ({self.name(v)}) is used before it is defined (by node {producer[v]})",
                          line, node, i)
            self.fail(f"operand {j} ({v.type}) is not defined in the graph", line, node, i)
        if node.out in defined:
            self.fail(f"result {self.name(node.out)} is defined twice (already by {defined[node.out]})", line, node, i)
        if node.out.node is not node:
            self.fail("result value does not point back to its node", line, node, i)
        if not prim.variadic and prim.num_operands is not None and len(node.inputs) != prim.num_operands:
            self.fail(f"{OP_PREFIX}{prim.name} takes {prim.num_operands} operand(s), got {len(node.inputs)}",
                      line, node, i)
        for label, region in region_attrs(node.attrs):
            self.check_region(label, region, line, node, i)
        for k, a in node.attrs.items():
            if a.__class__ is Region:
                continue  # hashed by its graph's structure: verified above instead
            try:
                hash(a)
            except TypeError:
                self.fail(f"attribute {k} = {a!r} is not hashable (use tuples, not lists)", line, node, i)
        try:
            derived = prim.abstract_eval(*(v.type for v in node.inputs), **node.attrs)
        except Exception as e:  # noqa: BLE001 - the shape rule's own complaint is the message
            self.fail(f"the shape rule of {OP_PREFIX}{prim.name} rejects the operands: {type(e).__name__}: {e}",
                      line, node, i)
        if derived != node.out.type:
            self.fail(f"result type {node.out.type} is recorded, but {OP_PREFIX}{prim.name} derives {derived}",
                      line, node, i)

    def check_region(self, label: str, region: Region, line: int, node: Node, i: int) -> None:
        """A region's own graph is verified too (the shape rule checks its signature against the operands)."""
        try:
            _Checker(region.graph).run()
        except VerificationError as e:
            inner = str(e).removeprefix("ir.verify: ")
            self.fail(f"in its region ^{label}: {e.reason}", line, node, i,
                      excerpt=f"{inner}\n\n  in the region ^{label} of:\n--> {self.lines[line].split(chr(10))[0]}")


def verify(graph: Graph) -> None:
    """Raise `VerificationError` if `graph` is malformed; return None if it is well formed.

    Checks: inputs are distinct; every operand is defined (as an input or by
    an earlier node) before use; no value is defined twice; fixed-arity
    primitives get their number of operands; attributes are hashable; each
    node's recorded type equals its primitive's `abstract_eval` on the operand
    types (which must not raise; for control flow it checks the regions'
    signatures against the operands and results); every output is defined;
    graph inputs and outputs are tensors, never tuples. Regions are verified
    recursively, with the same checks.
    """
    _Checker(graph).run()


def verify_text(text: str) -> list[ParseError]:
    """Check IR text; return every error found (empty when the text is a well-formed graph).

    Each error carries `line`, `column` (1-based) and `message`. Type-level
    errors (shape rules, annotated types, arity, attributes) are all reported;
    parsing stops at the first syntax error or undefined value.
    """
    graph, errors = parse_errors(text)
    if errors or graph is None:
        return errors
    try:
        verify(graph)
    except VerificationError as e:  # cannot happen for a cleanly parsed graph; kept as a safety net
        return [ParseError(e.reason, 1, 1, text.split("\n")[0])]
    return []

"""The MLIR-flavoured text format of the IR: a printer and a parser that round-trip.

::

    func @f(%arg0: tensor<3xf32>, %arg1: tensor<3x3xf32>) -> tensor<f32> {
      %0 = tp.dot_general %arg1, %arg0 {batch = [[], []], contract = [[1], [0]]} : tensor<3xf32>
      %1 = tp.sin %0 : tensor<3xf32>
      %2 = tp.reduce_sum %1 {axes = [0]} : tensor<f32>
      return %2
    }

The printer picks the SSA names: graph inputs are ``%arg0, %arg1, ...`` and the
result of node *i* is ``%i``. Several results print as ``-> (t0, t1)`` and
``return %a, %b``; no result as ``-> ()`` and a bare ``return``. Attributes are
sorted by key; their values print as

========================  =========================================
Python value              text
========================  =========================================
``True`` / ``False``      ``true`` / ``false``
int                       ``-3``
float                     ``repr``: ``1.0``, ``1e-05``, ``inf``, ``-inf``, ``nan``
str                       JSON string: ``"a\\"b"``
tuple (nested)            ``[1, [2, 3]]``
`DType`                   its short name: ``f32``, ``i64``, ``i1``
`TensorType`              ``tensor<2x3xf32>``
`Region`                  a nested block after the type (see below)
``None``                  ``none``
`DenseElements`           ``dense<[1.0, 2.0]> : tensor<2xf32>``; large: ``dense_resource<c_...> : ...``
========================  =========================================

A control-flow node (``cond``, ``while_loop``, ``scan``) has a tuple result,
printed ``tuple<4xf32, i32>``, and carries its regions after its type, nested
in MLIR's style: ``^label(%label.arg0: type, ...) -> types:`` then the region's
statements and its ``return``, every region of the node inside one pair of
braces, sorted by label. Regions are closed: their names (``%body.0``) never
refer to the enclosing graph::

    %0 = tp.scan %arg0, %arg1 {length = 4, num_carry = 1, num_consts = 0, reverse = false} : tuple<f32, 4xf32> {
      ^body(%body.arg0: tensor<f32>, %body.arg1: tensor<f32>) -> (tensor<f32>, tensor<f32>):
        %body.0 = tp.add %body.arg0, %body.arg1 : tensor<f32>
        return %body.0, %body.arg0
    }

An input may carry notes after its type, as MLIR's argument attributes do; they change nothing
the graph computes. A traced function's dump marks its captured random keys this way (its captured
tensors become constants)::

    func @f(%arg0: tensor<3xf32>, %arg1: tensor<2xi64> {tp.capture = "random_key"}) -> tensor<3xf32> {

The parser accepts any ``%name`` and ``//`` comments, rebuilds the graph
through `GraphBuilder.emit` (so every shape rule runs again) and checks each
annotated result type against the derived one. Errors are `ParseError`s with a
1-based line and column, quoting the offending line.
"""
from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping

from . import dtypes as dt
from .constants import DenseElements, parse_dense
from .core import Graph, GraphBuilder, Node, Value
from .primitive import REGISTRY
from .printer import (OP_PREFIX, format_attr, format_type, graph_lines, node_lines, print_graph,  # noqa: F401
                      print_node, value_names)
from .regions import Region
from .types import TensorType, TupleType

__all__ = ["ParseError", "print_graph", "parse_graph", "print_node", "value_names", "format_attr",
           "format_type", "parse_type", "parse_attr", "parse_errors", "graph_lines"]



class ParseError(ValueError):
    """A syntax or type error in IR text, at a 1-based `line` and `column`.

    ``str(error)`` names the position and quotes the offending line with a caret;
    `message` is the bare reason.
    """

    def __init__(self, message: str, line: int, column: int, source_line: str | None = None):
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        text = f"line {line}, column {column}: {message}"
        if source_line is not None:
            text += f"\n  {source_line}\n  {' ' * (column - 1)}^"
        super().__init__(text)


# ---------------------------------------------------------------------------------------------
# Printer
# ---------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n]+)
  | (?P<comment>//[^\n]*)
  | (?P<type>(?:tensor|tuple)<[^>\n]*>?)
  | (?P<dense>dense(?:_resource)?<[^<>]*>)
  | (?P<block>\^[A-Za-z_][\w.]*)
  | (?P<value>%[\w.$]+)
  | (?P<func>@(?:[A-Za-z_][\w.$-]*|"(?:[^"\\\n]|\\.)*"))
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<arrow>->)
  | (?P<number>[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+|inf\b|nan\b))
  | (?P<ident>[A-Za-z_][\w.]*)
  | (?P<punct>[(){}\[\],:=])
""", re.VERBOSE)


@dataclass(frozen=True)
class _Token:
    kind: str  # value, func, type, string, arrow, number, ident, punct, eof
    text: str
    line: int
    column: int
    offset: int


def _tokenize(text: str, lines: list[str]) -> Iterator[_Token]:
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        column = pos - line_start + 1
        if m is None:
            raise ParseError(f"unexpected character {text[pos]!r}", line, column, lines[line - 1])
        kind = m.lastgroup
        if kind not in ("space", "comment"):
            yield _Token(kind, m.group(), line, column, pos)
        newlines = m.group().count("\n")
        if newlines:
            line += newlines
            line_start = m.start() + m.group().rindex("\n") + 1
        pos = m.end()
    yield _Token("eof", "", line, pos - line_start + 1, pos)


# ---------------------------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------------------------
class _TypeTextError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset  # where in the type text the problem is


def _parse_type(text: str) -> TensorType | TupleType:
    if text.startswith("tuple"):
        return _parse_tuple_type(text)
    m = re.fullmatch(r"tensor<((?:\d+x)*)([A-Za-z]\w*)>", text)
    if m is None:
        raise _TypeTextError(f"malformed tensor type {text!r} (expected e.g. tensor<2x3xf32> or tensor<f32>)", 0)
    shape = tuple(int(d) for d in m.group(1).split("x")[:-1])
    try:
        return TensorType(shape, dt.from_short(m.group(2)))
    except ValueError as e:
        raise _TypeTextError(str(e), m.start(2)) from None


def _parse_tuple_type(text: str) -> TupleType:
    m = re.fullmatch(r"tuple<(.*)>", text)
    if m is None:
        raise _TypeTextError(f"malformed tuple type {text!r} (expected e.g. tuple<2x3xf32, i32>)", 0)
    elements, offset = [], m.start(1)
    for part in m.group(1).split(",") if m.group(1).strip() else []:
        lead = len(part) - len(part.lstrip())
        try:
            elements.append(_parse_type(f"tensor<{part.strip()}>"))
        except _TypeTextError as e:
            raise _TypeTextError(str(e).replace("tensor type", "tuple element"), offset + lead) from None
        offset += len(part) + 1
    return TupleType(elements)


def parse_type(text: str) -> TensorType | TupleType:
    """``tensor<2x3xf32>`` -> TensorType((2, 3), float32); raises ValueError on bad text.

    ``tuple<2x3xf32, i32>`` is a `TupleType` of tensor types (a control-flow node's result)."""
    return _parse_type(text.strip())


def _attr_mismatch(prim, attrs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Attributes the shape rule requires but `attrs` lacks, and ones it does not take."""
    try:
        params = inspect.signature(prim.abstract_eval).parameters.values()
    except (TypeError, ValueError):
        return [], []
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return [], []
    keywords = {p.name: p for p in params if p.kind is p.KEYWORD_ONLY}
    missing = [k for k, p in keywords.items() if p.default is p.empty and k not in attrs]
    unknown = [k for k in attrs if k not in keywords]
    return missing, unknown


_KEYWORD_ATTRS = {"true": True, "false": False, "none": None}


class _Parser:
    resources = None  # resource name -> elements of elided constants (`parse_graph(..., resources=)`)
    """Recursive descent over the token stream; `collect` records recoverable errors and goes on."""

    def __init__(self, text: str, collect: bool = False):
        self.text = text
        self.lines = text.split("\n")
        self.collect = collect
        self.errors: list[ParseError] = []
        self.tokens = list(_tokenize(text, self.lines))
        self.pos = 0

    # --- token helpers ----------------------------------------------------------------------
    def error(self, message: str, tok: _Token) -> ParseError:
        source = self.lines[tok.line - 1] if tok.line - 1 < len(self.lines) else None
        return ParseError(message, tok.line, tok.column, source)

    def soft_error(self, message: str, tok: _Token) -> None:
        """A type-level error: fatal unless collecting (then recorded, and parsing goes on)."""
        err = self.error(message, tok)
        if not self.collect:
            raise err
        self.errors.append(err)

    @property
    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def next(self) -> _Token:
        tok = self.tokens[self.pos]
        if tok.kind != "eof":
            self.pos += 1
        return tok

    def at(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek
        return tok.kind == kind and (text is None or tok.text == text)

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> _Token:
        tok = self.peek
        if not self.at(kind, text):
            wanted = what or (repr(text) if text is not None else kind)
            found = "end of input" if tok.kind == "eof" else repr(tok.text)
            raise self.error(f"expected {wanted}, found {found}", tok)
        return self.next()

    def accept(self, kind: str, text: str | None = None) -> _Token | None:
        return self.next() if self.at(kind, text) else None

    # --- grammar ----------------------------------------------------------------------------
    def type(self) -> TensorType | TupleType:
        tok = self.expect("type", what="a tensor type like tensor<2x3xf32>")
        try:
            return _parse_type(tok.text)
        except _TypeTextError as e:
            raise self.error(str(e), replace(tok, column=tok.column + e.offset)) from None

    def func_name(self) -> str:
        tok = self.expect("func", what="a function name like @f")
        name = tok.text[1:]
        return json.loads(name) if name.startswith('"') else name

    def parse(self) -> Graph:
        self.expect("ident", "func")
        builder = GraphBuilder(self.func_name())
        env: dict[str, Value] = {}
        self.arguments(builder, env)
        self.expect("arrow", what="'->'")
        result_types = self.result_types()
        self.expect("punct", "{")
        graph = self.block(builder, env, result_types)
        self.expect("punct", "}", what="'}' after return")
        self.expect("eof", what="end of input after '}'")
        return graph

    def arguments(self, builder: GraphBuilder, env: dict[str, Value]) -> None:
        """``(%a: type, ...)``: the inputs of a function or a region (tensors, never tuples)."""
        self.expect("punct", "(")
        while not self.at("punct", ")"):
            if builder.inputs:
                self.expect("punct", ",", what="',' or ')'")
            tok = self.expect("value", what="an argument like %arg0")
            if tok.text in env:
                raise self.error(f"argument {tok.text} is declared twice", tok)
            self.expect("punct", ":")
            type_tok = self.peek
            t = self.type()
            if not isinstance(t, TensorType):
                raise self.error(f"argument {tok.text} has type {t}; arguments are tensors, never tuples", type_tok)
            attrs = self.attr_dict() if self.at("punct", "{") else None
            env[tok.text] = builder.add_input(t, attrs)
        self.expect("punct", ")")

    def block(self, builder: GraphBuilder, env: dict[str, Value], result_types: list) -> Graph:
        """Statements up to and including ``return ...``: the body of a function or a region."""
        while not self.at("ident", "return"):
            self.statement(builder, env)
        return_tok = self.next()
        outputs: list[Value] = []
        operand_toks: list[_Token] = []
        while self.at("value") or (outputs and self.at("punct", ",")):
            if outputs:
                self.expect("punct", ",")
            tok = self.peek
            outputs.append(self.operand(env))
            operand_toks.append(tok)
        self.check_results(result_types, outputs, operand_toks, return_tok)
        for v, tok in zip(outputs, operand_toks):
            if isinstance(v.type, TupleType):
                raise self.error(f"return of {tok.text}, a tuple ({v.type}); project it with tp.tuple_get", tok)
        return builder.build(outputs)

    def regions(self) -> dict[str, Region]:
        """``{ ^label(%x: type, ...) -> types: ... return ... ^label2 ... }``: a node's regions."""
        self.expect("punct", "{")
        regions: dict[str, Region] = {}
        while not self.at("punct", "}"):
            label_tok = self.expect("block", what="a region like ^body(%x: tensor<f32>) -> tensor<f32>:")
            label = label_tok.text[1:]
            if label in regions:
                raise self.error(f"region ^{label} is given twice", label_tok)
            builder, env = GraphBuilder(label), {}
            self.arguments(builder, env)
            self.expect("arrow", what="'->' and the region's result types")
            result_types = self.result_types()
            self.expect("punct", ":", what="':' after the region's signature")
            regions[label] = Region(self.block(builder, env, result_types))
        self.next()
        return regions

    def result_types(self) -> list[TensorType]:
        if not self.accept("punct", "("):
            return [self.type()]
        types: list[TensorType] = []
        while not self.at("punct", ")"):
            if types:
                self.expect("punct", ",", what="',' or ')'")
            types.append(self.type())
        self.next()
        return types

    def check_results(self, declared: list[TensorType], outputs: list[Value], toks: list[_Token],
                      return_tok: _Token) -> None:
        if len(declared) != len(outputs):
            self.soft_error(f"return has {len(outputs)} values but the signature declares {len(declared)} results",
                            return_tok)
            return
        for i, (t, v, tok) in enumerate(zip(declared, outputs, toks)):
            if v.type != t:
                self.soft_error(f"result {i} {tok.text} has type {v.type}, but the signature declares {t}", tok)

    def operand(self, env: dict[str, Value]) -> Value:
        tok = self.expect("value", what="an SSA value like %0")
        if tok.text not in env:
            raise self.error(f"use of undefined value {tok.text}", tok)
        return env[tok.text]

    def statement(self, builder: GraphBuilder, env: dict[str, Value]) -> None:
        name_tok = self.expect("value", what="a statement '%name = tp.op ...' or 'return'")
        if name_tok.text in env:
            raise self.error(f"value {name_tok.text} is defined twice", name_tok)
        self.expect("punct", "=")
        op_tok = self.expect("ident", what="an operation like tp.add")
        if not op_tok.text.startswith(OP_PREFIX):
            raise self.error(f"operation names start with '{OP_PREFIX}', got {op_tok.text!r}", op_tok)
        prim_name = op_tok.text[len(OP_PREFIX):]
        prim = REGISTRY.get(prim_name)
        if prim is None:
            raise self.error(f"unknown primitive {prim_name!r}", op_tok)
        operands: list[Value] = []
        while self.at("value") or (operands and self.at("punct", ",")):
            if operands:
                self.expect("punct", ",")
            operands.append(self.operand(env))
        attrs = self.attr_dict() if self.at("punct", "{") else {}
        self.expect("punct", ":", what="':' and the result type")
        type_tok = self.peek
        annotated = self.type()
        if self.at("punct", "{"):
            for label, region in self.regions().items():
                if label in attrs:
                    raise self.error(f"attribute {label!r} is given twice (as an attribute and a region)", op_tok)
                attrs[label] = region
        env[name_tok.text] = self.emit(builder, prim, operands, attrs, annotated, op_tok, type_tok)

    def emit(self, builder: GraphBuilder, prim, operands: list[Value], attrs: dict[str, Any],
             annotated: TensorType, op_tok: _Token, type_tok: _Token) -> Value:
        """Emit through the shape rule; on a soft error keep the annotated type and go on."""
        missing, unknown = _attr_mismatch(prim, attrs)
        if missing or unknown:
            parts = ([f"missing attribute(s) {', '.join(missing)}"] if missing else []) + \
                    ([f"unknown attribute(s) {', '.join(unknown)}"] if unknown else [])
            self.soft_error(f"{OP_PREFIX}{prim.name}: {'; '.join(parts)}", op_tok)
            return self.raw_node(builder, prim, operands, attrs, annotated)
        if not prim.variadic and prim.num_operands is not None and len(operands) != prim.num_operands:
            self.soft_error(f"{OP_PREFIX}{prim.name} takes {prim.num_operands} operand(s), got {len(operands)}",
                            op_tok)
            return self.raw_node(builder, prim, operands, attrs, annotated)
        try:
            out = builder.emit(prim, *operands, **attrs)
        except Exception as e:  # the shape rule's complaint, positioned at the op
            self.soft_error(f"{OP_PREFIX}{prim.name}: {e}" if not str(e).startswith(prim.name) else str(e), op_tok)
            return self.raw_node(builder, prim, operands, attrs, annotated)
        if out.type != annotated:
            self.soft_error(f"result type {annotated} does not match the type {out.type} derived by "
                            f"{OP_PREFIX}{prim.name}", type_tok)
            builder.nodes.pop()
            return self.raw_node(builder, prim, operands, attrs, annotated)
        return out

    @staticmethod
    def raw_node(builder: GraphBuilder, prim, operands, attrs, out_type: TensorType) -> Value:
        node = Node(prim, tuple(operands), attrs, out_type)
        builder.nodes.append(node)
        return node.out

    def attr_dict(self) -> dict[str, Any]:
        self.expect("punct", "{")
        attrs: dict[str, Any] = {}
        while not self.at("punct", "}"):
            if attrs:
                self.expect("punct", ",", what="',' or '}'")
            key = self.expect("ident", what="an attribute name")
            if key.text in attrs:
                raise self.error(f"attribute {key.text!r} is given twice", key)
            self.expect("punct", "=")
            attrs[key.text] = self.attr_value()
        self.next()
        return attrs

    def dense(self) -> DenseElements:
        """``dense<elements> : type`` or ``dense_resource<name> : type`` (see `ir.constants`)."""
        tok = self.next()
        self.expect("punct", ":", what="':' and the constant's type")
        t = self.type()
        head, body = tok.text.split("<", 1)
        body = body[:-1]
        try:
            if head == "dense_resource":
                return parse_dense("", t, resource=body.strip(), resource_table=self.resources)
            return parse_dense(body, t)
        except ValueError as e:
            raise self.error(str(e), tok) from None

    def attr_value(self) -> Any:
        tok = self.peek
        if tok.kind == "number":
            self.next()
            return int(tok.text) if re.fullmatch(r"[-+]?\d+", tok.text) else float(tok.text)
        if tok.kind == "string":
            self.next()
            return json.loads(tok.text)
        if tok.kind == "type":
            return self.type()
        if tok.kind == "dense":
            return self.dense()
        if tok.kind == "punct" and tok.text == "[":
            self.next()
            items: list[Any] = []
            while not self.at("punct", "]"):
                if items:
                    self.expect("punct", ",", what="',' or ']'")
                items.append(self.attr_value())
            self.next()
            return tuple(items)
        if tok.kind == "ident":
            self.next()
            if tok.text in _KEYWORD_ATTRS:
                return _KEYWORD_ATTRS[tok.text]
            try:
                return dt.from_short(tok.text)
            except ValueError:
                raise self.error(f"unknown attribute value {tok.text!r} (expected a number, string, list, "
                                 f"true/false/none or an element type like f32)", tok) from None
        found = "end of input" if tok.kind == "eof" else repr(tok.text)
        raise self.error(f"expected an attribute value, found {found}", tok)


def parse_graph(text: str, resources: Mapping[str, Any] | None = None) -> Graph:
    """Parse the text of one ``func`` into a `Graph`, re-running every shape rule.

    `resources` maps the names of elided constants (``dense_resource<name>``) to their
    elements (the side file written with the IR; see `ir.constants`).

    Raises `ParseError` (a ValueError) with line and column on the first
    syntax error, undefined or redefined value, unknown primitive, failing
    shape rule, or result type that differs from the derived one.
    """
    parser = _Parser(text)
    parser.resources = resources
    return parser.parse()


def parse_attr(text: str) -> Any:
    """Parse one attribute value as `format_attr` prints it (``[1, 2]`` -> ``(1, 2)``, ``f32`` -> float32)."""
    parser = _Parser(text)
    value = parser.attr_value()
    parser.expect("eof", what="end of the attribute value")
    return value


def parse_errors(text: str, resources: Mapping[str, Any] | None = None) -> tuple[Graph | None, list[ParseError]]:
    """Parse leniently: every type-level error (not only the first), then any fatal syntax error.

    Returns the graph (None after a fatal error) and the errors in text order.
    """
    try:
        parser = _Parser(text, collect=True)
    except ParseError as e:  # the lexer failed
        return None, [e]
    parser.resources = resources
    try:
        graph = parser.parse()
    except ParseError as e:
        return None, [*parser.errors, e]
    return graph, parser.errors

"""The text format: print -> parse -> print is the identity; parse errors point at the right place."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.constants import resources
from tensorplay.ir.text import ParseError, format_attr, parse_attr, parse_graph, print_graph
from tensorplay.ir.types import TensorType
from tensorplay.ir.verify import verify
from tests.ir.strategies import graphs, single_node_graph
from tests.prim_samples import ALL_SAMPLES, Sample, sample_id

F32 = dt.float32


def assert_round_trip(g: ir.Graph) -> ir.Graph:
    text = print_graph(g)
    g2 = parse_graph(text, resources([g]))  # the elements of elided constants, as the CLI's side file
    assert print_graph(g2) == text
    assert g2.structural_key() == g.structural_key()
    assert g2.name == g.name
    verify(g2)
    return g2


# --- round trips ---------------------------------------------------------------------------------
@pytest.mark.parametrize("s", ALL_SAMPLES, ids=sample_id)
def test_round_trip_every_sample(s: Sample):
    g = single_node_graph(s)
    g2 = assert_round_trip(g)
    for a, b in zip(ir.interpret(g2, s.args), ir.interpret(g, s.args), strict=True):
        np.testing.assert_array_equal(a, b)


def test_design_example_parses_and_prints_canonically():
    src = """
    // the example of DESIGN.md, with the batch attribute dot_general needs
    func @f(%x: tensor<3xf32>, %w: tensor<3x3xf32>) -> tensor<f32> {
      %0 = tp.dot_general %w, %x {contract = [[1], [0]], batch = [[], []]} : tensor<3xf32>
      %1 = tp.sin %0 : tensor<3xf32>   // elementwise
      %2 = tp.reduce_sum %1 {axes = [0]} : tensor<f32>
      return %2
    }
    """
    g = parse_graph(src)
    assert print_graph(g) == (
        "func @f(%arg0: tensor<3xf32>, %arg1: tensor<3x3xf32>) -> tensor<f32> {\n"
        "  %0 = tp.dot_general %arg1, %arg0 {batch = [[], []], contract = [[1], [0]]} : tensor<3xf32>\n"
        "  %1 = tp.sin %0 : tensor<3xf32>\n"
        "  %2 = tp.reduce_sum %1 {axes = [0]} : tensor<f32>\n"
        "  return %2\n"
        "}")
    assert str(g) == print_graph(g)
    x = np.arange(3, dtype=np.float32)
    w = np.ones((3, 3), np.float32)
    np.testing.assert_allclose(ir.interpret(g, [x, w])[0], np.sum(np.sin(w @ x)), rtol=1e-6)


def test_several_outputs_input_outputs_and_no_inputs():
    b = ir.GraphBuilder("multi")
    x = b.add_input(TensorType((0, 3), F32))
    y = b.add_input(TensorType((), dt.int64))
    s = b.reduce_sum(x, axes=(0,))
    g = b.build([s, x, s, y])
    text = print_graph(g)
    assert "-> (tensor<3xf32>, tensor<0x3xf32>, tensor<3xf32>, tensor<i64>)" in text
    assert text.splitlines()[-2] == "  return %0, %arg0, %0, %arg1"
    assert_round_trip(g)

    b = ir.GraphBuilder("consts")
    c = b.iota(shape=(2, 3), dtype=dt.int32, dimension=1)
    assert_round_trip(b.build([c]))
    assert_round_trip(ir.GraphBuilder("empty").build([]))
    assert print_graph(ir.GraphBuilder("empty").build([])) == "func @empty() -> () {\n  return\n}"


def test_odd_function_names_are_quoted():
    for name in ["f", "grad_f.1", "vmap(grad(f))", 'a "quoted" name', "ünï"]:
        b = ir.GraphBuilder(name)
        x = b.add_input(TensorType((2,), F32))
        assert_round_trip(b.build([b.neg(x)]))


def test_node_attrs_are_sorted_and_formatted():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((3,), dt.int32))
    y = b.pad(x, value=-7, interior=(1,), low=(0,), high=(2,))
    line = print_graph(b.build([y])).splitlines()[1]
    assert line == "  %0 = tp.pad %arg0 {high = [2], interior = [1], low = [0], value = -7} : tensor<7xi32>"


# --- attribute values ------------------------------------------------------------------------------
@pytest.mark.parametrize("value,text", [
    (True, "true"), (False, "false"), (None, "none"), (0, "0"), (-3, "-3"), (2 ** 70, str(2 ** 70)),
    (1.0, "1.0"), (0.1, "0.1"), (-0.0, "-0.0"), (1e-05, "1e-05"), (1e300, "1e+300"), (5e-324, "5e-324"),
    (math.inf, "inf"), (-math.inf, "-inf"), ("a\"b\\c\n", '"a\\"b\\\\c\\n"'),
    ((), "[]"), ((1, (2, 3), ()), "[1, [2, 3], []]"), (dt.float32, "f32"), (dt.bool_, "i1"), (dt.int64, "i64"),
    (TensorType((2, 0), dt.float64), "tensor<2x0xf64>"),
])
def test_attr_format_and_parse(value, text):
    assert format_attr(value) == text
    back = parse_attr(text)
    assert back == value and type(back) is type(value)


def test_nan_attr_round_trips():
    assert format_attr(math.nan) == "nan"
    assert math.isnan(parse_attr("nan"))


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_every_float_attr_round_trips_exactly(x):
    y = parse_attr(format_attr(x))
    assert type(y) is float
    assert (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))


@given(st.integers())
def test_every_int_attr_round_trips(n):
    assert parse_attr(format_attr(n)) == n


@given(st.text())
def test_every_string_attr_round_trips(s):
    assert parse_attr(format_attr(s)) == s


# --- random graphs ------------------------------------------------------------------------------
@given(graphs())
def test_random_graphs_round_trip(g):
    verify(g)
    assert_round_trip(g)


# --- parse errors ----------------------------------------------------------------------------------
GOOD = """func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tp.add %a, %b : tensor<3xf32>
  %1 = tp.sin %0 : tensor<3xf32>
  return %1
}"""


def _edit(line: int, old: str, new: str) -> str:
    lines = GOOD.split("\n")
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    return "\n".join(lines)


@pytest.mark.parametrize("text,line,at,fragment", [
    # `at` is the text the caret must point at (its first occurrence on that line), or a 1-based column
    (_edit(3, "tp.sin", "tp.frobnicate"), 3, "tp.frob", "unknown primitive 'frobnicate'"),
    (_edit(3, "%0 :", "%7 :"), 3, "%7", "undefined value %7"),
    (_edit(2, "%b :", "%1 :"), 2, "%1 :", "undefined value %1"),  # use before definition
    (_edit(3, ": tensor<3xf32>", ": tensor<4xf32>"), 3, "tensor<4", "does not match the type tensor<3xf32>"),
    (_edit(3, ": tensor<3xf32>", ": tensor<3xf33>"), 3, "f33", "unknown element type 'f33'"),
    (_edit(1, "tensor<3xf32>)", "tensor<3xq>)"), 1, "q>", "unknown element type 'q'"),
    (_edit(1, "tensor<3xf32>)", "tensor<3x>)"), 1, "tensor<3x>", "malformed tensor type"),
    (_edit(2, "%0 = ", "%0 "), 2, "tp.add", "expected '='"),
    (_edit(3, "%1 =", "%0 ="), 3, "%0 =", "%0 is defined twice"),
    (_edit(1, "%b:", "%a:"), 1, "%a: tensor<3xf32>)", "argument %a is declared twice"),
    (_edit(2, "%a, %b", "%a"), 2, "tp.add", "takes 2 operand(s), got 1"),
    (_edit(2, "%b :", "%b {axes = [0]} :"), 2, "tp.add", "unknown attribute(s) axes"),
    (_edit(2, "%b :", "%b {axes = [0}"), 2, "}", "expected ',' or ']'"),
    (_edit(2, "%b :", "%b {axes = foo} :"), 2, "foo", "unknown attribute value 'foo'"),
    (_edit(3, "tp.sin", "sin"), 3, "sin", "operation names start with 'tp.'"),
    (_edit(3, "tp.sin %0", "tp.sin %0 #"), 3, "#", "unexpected character '#'"),
    (_edit(4, "return %1", "return %1, %0"), 4, "return", "return has 2 values but the signature declares 1"),
    (_edit(1, "-> tensor<3xf32>", "-> tensor<f32>"), 4, "%1", "result 0 %1 has type tensor<3xf32>"),
    (_edit(1, "@f(", "f("), 1, "f(", "expected a function name like @f"),
    (GOOD.replace("\n}", ""), 4, 12, "expected '}' after return"),
    (GOOD + "\nfunc", 6, 1, "expected end of input after '}'"),
    ("", 1, 1, "expected 'func'"),
])
def test_parse_error_positions(text, line, at, fragment):
    source = text.split("\n")[line - 1]
    column = at if isinstance(at, int) else source.index(at) + 1
    with pytest.raises(ParseError) as info:
        parse_graph(text)
    e = info.value
    assert isinstance(e, ValueError)
    assert fragment in e.message, e.message
    assert (e.line, e.column) == (line, column), str(e)
    assert f"line {line}, column {column}" in str(e)
    assert source in str(e) and str(e).endswith(" " * (column - 1) + "^")


def test_shape_rule_errors_point_at_the_op():
    text = GOOD.replace("%b: tensor<3xf32>", "%b: tensor<4xf32>")
    with pytest.raises(ParseError) as info:
        parse_graph(text)
    assert (info.value.line, info.value.column) == (2, 8)
    assert "add" in info.value.message and "(3,)" in info.value.message and "(4,)" in info.value.message


def test_missing_attribute_is_named():
    text = GOOD.replace("tp.sin %0 :", "tp.reduce_sum %0 :").replace("%1 : tensor<3xf32>", "%1 : tensor<f32>")
    with pytest.raises(ParseError, match="missing attribute.*axes"):
        parse_graph(text)


def test_argument_notes_round_trip_and_survive_bind_constants():
    from tensorplay.ir.core import bind_constants

    text = ('func @f(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xi64> {tp.capture = "random_key"})'
            ' -> tensor<2xf32> {\n'
            '  %0 = tp.add %arg0, %arg1 : tensor<2xf32>\n'
            '  return %0\n'
            '}')
    g = parse_graph(text)
    assert print_graph(g) == text
    assert g.arg_attrs == {g.inputs[2]: {"tp.capture": "random_key"}}
    bound = bind_constants(g, {1: np.array([1.0, 2.0], np.float32)})
    assert print_graph(bound).splitlines()[0] == (
        'func @f(%arg0: tensor<2xf32>, %arg1: tensor<2xi64> {tp.capture = "random_key"}) -> tensor<2xf32> {')


def test_argument_notes_syntax_errors_point_at_the_note():
    with pytest.raises(ParseError, match="line 1"):
        parse_graph('func @f(%arg0: tensor<2xf32> {tp.capture}) -> tensor<2xf32> {\n  return %arg0\n}')

"""Shape rules reject bad input with ValueError/TypeError naming the op, the shapes and dtypes."""
import pytest

from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

F32, F64, I32, I64, B = dt.float32, dt.float64, dt.int32, dt.int64, dt.bool_


def T(*shape, dtype=F32):
    return TensorType(tuple(shape), dtype)


CASES = [
    # (primitive, operand types, attrs, exception, fragments the message must contain)
    ("add", [T(3), T(4)], {}, ValueError, ["add", "(3,)", "(4,)"]),
    ("add", [T(3), T(3, dtype=I32)], {}, TypeError, ["add", "float32", "int32"]),
    ("mul", [T(2, 3), T(3, 2)], {}, ValueError, ["mul", "(2, 3)", "(3, 2)"]),
    ("sin", [T(3, dtype=I32)], {}, TypeError, ["sin", "int32", "tensor<3xi32>"]),
    ("log", [T(dtype=B)], {}, TypeError, ["log", "bool"]),
    ("and", [T(2), T(2)], {}, TypeError, ["and", "float32"]),
    ("reduce_sum", [T(2, 3)], {"axes": (2,)}, ValueError, ["reduce_sum", "axis 2", "(2, 3)"]),
    ("reduce_sum", [T(2, 3)], {"axes": (1, 1)}, ValueError, ["reduce_sum", "repeated axis"]),
    ("reduce_max", [T(0, 3)], {"axes": (0,)}, ValueError, ["reduce_max", "(0, 3)", "empty axis"]),
    ("argmax", [T(2, 3)], {"axis": -1, "index_dtype": I64}, ValueError, ["argmax", "axis -1", "(2, 3)"]),
    ("dot_general", [T(2, 3), T(4, 5)], {"contract": ((1,), (0,)), "batch": ((), ())}, ValueError,
     ["dot_general", "(2, 3)", "(4, 5)", "contract"]),
    ("dot_general", [T(2, 3), T(3, dtype=F64)], {"contract": ((1,), (0,)), "batch": ((), ())}, TypeError,
     ["dot_general", "float32", "float64"]),
    ("dot_general", [T(2, 3), T(3)], {"contract": ((1,), ()), "batch": ((), ())}, ValueError,
     ["dot_general", "pair"]),
    ("reshape", [T(2, 3)], {"shape": (4,)}, ValueError, ["reshape", "(2, 3)", "(4,)"]),
    ("reshape", [T(2, 3)], {"shape": [6]}, TypeError, ["reshape", "shape"]),
    ("transpose", [T(2, 3)], {"permutation": (0, 0)}, ValueError, ["transpose", "permutation"]),
    ("broadcast_in_dim", [T(2)], {"shape": (3,), "broadcast_dimensions": (0,)}, ValueError,
     ["broadcast_in_dim", "(2,)", "(3,)"]),
    ("slice", [T(4)], {"start_indices": (3,), "limit_indices": (5,), "strides": (1,)}, ValueError,
     ["slice", "(4,)"]),
    ("pad", [T(2)], {"low": (-1,), "high": (0,), "interior": (0,), "value": 0.0}, ValueError, ["pad", "negative"]),
    ("concatenate", [T(2, 3), T(2, 4)], {"axis": 0}, ValueError, ["concatenate", "(2, 3)", "(2, 4)"]),
    ("select", [T(3), T(3), T(3)], {}, TypeError, ["select", "predicate", "float32"]),
    ("select", [T(3, dtype=B), T(3), T(4)], {}, ValueError, ["select", "(3,)", "(4,)"]),
    ("convert_element_type", [T(3)], {"dtype": "float64"}, TypeError, ["convert_element_type", "DType"]),
    ("take", [T(3), T(2)], {"axis": 0}, TypeError, ["take", "index", "float32"]),
    ("index_add", [T(5), T(2, dtype=I64), T(3)], {"axis": 0}, ValueError,
     ["index_add", "tensor<3xf32>", "tensor<2xf32>"]),
    ("iota", [], {"shape": (3,), "dtype": B, "dimension": 0}, TypeError, ["iota", "dtype"]),
    ("full", [], {"shape": (3,), "dtype": F32, "value": "one"}, TypeError, ["full", "value"]),
    ("random_uniform", [T(3, dtype=I64)], {"shape": (2,), "dtype": F32}, ValueError, ["random_uniform", "(3,)"]),
    ("random_normal", [T(2, dtype=I64)], {"shape": (2,), "dtype": I32}, TypeError, ["random_normal", "dtype"]),
]


@pytest.mark.parametrize("prim,types,attrs,exc,fragments", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_abstract_eval_errors_name_op_and_shapes(prim, types, attrs, exc, fragments):
    assert issubclass(exc, (ValueError, TypeError))
    with pytest.raises(exc) as info:
        ir.get_primitive(prim).abstract_eval(*types, **attrs)
    for f in fragments:
        assert f in str(info.value), str(info.value)


def test_builder_raises_the_same_errors_and_emits_nothing():
    b = ir.GraphBuilder()
    x, y = b.add_input(T(3)), b.add_input(T(4))
    with pytest.raises(ValueError, match=r"add: .*\(3,\).*\(4,\)"):
        b.add(x, y)
    assert b.nodes == []
    with pytest.raises(TypeError, match="operands must be IR values"):
        b.sin(1.0)

"""tensorplay's graph IR: types, SSA graphs, primitives and their rules, text
format, verifier, interpreter and graph-to-graph passes."""
from .dtypes import DType, bool_, float32, float64, int32, int64
from .types import TensorType, TupleType
from .regions import Region
from .core import Graph, GraphBuilder, Node, Value, bind_constants, inline
from .constants import DenseElements
from .primitive import Primitive, REGISTRY, UndefinedPrimal, all_primitives, get_primitive
from . import prims  # noqa: F401  (fills the registry)
from .interpreter import interpret

__all__ = ["DType", "bool_", "float32", "float64", "int32", "int64", "TensorType", "TupleType", "Region", "Graph", "GraphBuilder",
           "Node", "Value", "inline", "Primitive", "REGISTRY", "UndefinedPrimal", "all_primitives",
           "get_primitive", "interpret"]

"""Helpers of the differentiation tests: single-primitive graphs from the sample corpus, run in
float64, and central finite differences."""
from __future__ import annotations

import numpy as np

from tensorplay import ir
from tensorplay.ir import Graph, GraphBuilder, TensorType, dtypes as dt, interpret
from tests.prim_samples import ALL_SAMPLES, Sample, node_graph

EPS = 1e-6


def _up_attr(v):
    if v is dt.float32:
        return dt.float64
    if isinstance(v, tuple):
        return tuple(_up_attr(x) for x in v)
    return v


def upcast(s: Sample) -> tuple[list[np.ndarray], dict]:
    """The sample's arguments and attributes with float32 replaced by float64."""
    args = [a.astype(np.float64) if a.dtype == np.float32 else np.array(a) for a in s.args]
    return args, {k: _up_attr(v) for k, v in s.attrs.items()}


def single_node_graph(prim: str, args: list[np.ndarray], attrs: dict) -> Graph | None:
    """``prim(*inputs, **attrs)`` as a graph, or None when the shape rule rejects the operands."""
    try:
        return node_graph(prim, args, attrs)
    except (TypeError, ValueError, IndexError):
        return None


def _one_float_output(g: Graph) -> Graph | None:
    """A graph of several outputs (a tuple result, projected) as one: its float outputs flattened and
    concatenated (None when it has no float output), so the single-output checks see all of them."""
    b = GraphBuilder(g.name)
    outs = ir.inline(b, g, [b.add_input(v.type) for v in g.inputs])
    flat = [b.reshape(v, shape=(v.type.size,)) for v in outs if v.dtype.is_floating_point]
    if not flat or len({v.dtype for v in flat}) > 1:
        return None
    return b.build([flat[0] if len(flat) == 1 else b.concatenate(*flat, axis=0)])


def diff_case(s: Sample):
    """(graph, args, wrt) in float64 for a sample with a float input and a float output, else None."""
    if not ir.get_primitive(s.prim).differentiable:
        return None
    args, attrs = upcast(s)
    g = single_node_graph(s.prim, args, attrs)
    if g is not None and len(g.outputs) > 1:
        g = _one_float_output(g)
    if g is None or not g.outputs[0].dtype.is_floating_point:
        return None
    wrt = [a.dtype.kind == "f" for a in args]
    return (g, args, wrt) if any(wrt) else None


DIFF_SAMPLES = [s for s in ALL_SAMPLES if diff_case(s) is not None]


def central_difference(graph: Graph, args: list[np.ndarray], wrt: list[bool], tangents: list[np.ndarray],
                       eps: float = EPS) -> list[np.ndarray]:
    """d/de graph(args + e * tangents) at e = 0 for each output (entries that do not move give 0)."""
    def at(e):
        it = iter(tangents)
        return interpret(graph, [a + e * next(it) if w else a for a, w in zip(args, wrt)])

    plus, minus = at(eps), at(-eps)
    with np.errstate(invalid="ignore"):
        return [np.where(p == m, 0.0, (p - m) / (2 * eps)) for p, m in zip(plus, minus)]


def random_like(rng: np.random.Generator, args: list[np.ndarray], wrt: list[bool]) -> list[np.ndarray]:
    return [rng.standard_normal(a.shape) for a, w in zip(args, wrt) if w]


def vdot(xs, ys) -> float:
    return float(sum(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)) for x, y in zip(xs, ys)))

"""Hypothesis strategies for IR tests: random well-formed graphs over random shapes.

`graphs()` draws chains of elementwise (every attribute-free unary/binary
primitive in the registry), reshape, transpose, reduce, convert, broadcast,
slice, pad and `full` nodes over shapes of rank 0-3 with dims 0-3, so 0-d,
size-1 and empty tensors all appear, and float attributes include inf/nan.
"""
from hypothesis import strategies as st

from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def _no_attr_ops(arity):
    """Registry primitives of this arity whose shape rule takes no attributes (elementwise families)."""
    out = []
    for p in ir.all_primitives():
        if p.num_operands != arity or p.random:
            continue
        for d in dt.ALL:
            try:
                p.abstract_eval(*[TensorType((2,), d)] * arity)
            except (TypeError, ValueError):
                continue
            out.append(p.name)
            break
    return sorted(out)


UNARY, BINARY = _no_attr_ops(1), _no_attr_ops(2)
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
dtypes = st.sampled_from(dt.ALL)


@st.composite
def graphs(draw):
    b = ir.GraphBuilder(draw(st.sampled_from(["f", "g", "body"])))
    pool = [b.add_input(TensorType(draw(shapes), draw(dtypes))) for _ in range(draw(st.integers(0, 3)))]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "reshape", "transpose", "reduce", "convert", "full",
                                     "broadcast", "slice", "pad"]))
        if kind == "full" or not pool:
            shape = draw(shapes)
            d = draw(dtypes)
            value = draw(st.booleans() if d.is_bool else st.integers(-5, 5) if d.is_integer
                         else st.floats(allow_nan=True, allow_infinity=True))
            pool.append(b.full(shape=shape, dtype=d, value=value))
            continue
        x = draw(st.sampled_from(pool))
        try:
            if kind == "unary":
                v = b.emit(draw(st.sampled_from(UNARY)), x)
            elif kind == "binary":
                same = [y for y in pool if y.type == x.type]
                v = b.emit(draw(st.sampled_from(BINARY)), x, draw(st.sampled_from(same)))
            elif kind == "reshape":
                options = [(x.type.size,), tuple(reversed(x.shape)), (1,) + x.shape,
                           tuple(d for d in x.shape if d != 1)]
                v = b.reshape(x, shape=draw(st.sampled_from(options)))
            elif kind == "transpose":
                v = b.transpose(x, permutation=tuple(draw(st.permutations(range(x.ndim)))))
            elif kind == "reduce":
                axes = tuple(i for i in range(x.ndim) if draw(st.booleans()))
                v = b.emit(draw(st.sampled_from(["reduce_sum", "reduce_max", "reduce_min"])), x, axes=axes)
            elif kind == "convert":
                v = b.convert_element_type(x, dtype=draw(dtypes))
            elif kind == "broadcast":
                v = b.broadcast_in_dim(x, shape=(draw(st.integers(0, 2)),) + x.shape,
                                       broadcast_dimensions=tuple(range(1, x.ndim + 1)))
            elif kind == "slice":
                starts = tuple(draw(st.integers(0, n)) for n in x.shape)
                limits = tuple(draw(st.integers(s, n)) for s, n in zip(starts, x.shape))
                strides = tuple(draw(st.integers(1, 3)) for _ in x.shape)
                v = b.slice(x, start_indices=starts, limit_indices=limits, strides=strides)
            else:
                pads = [tuple(draw(st.integers(0, 2)) for _ in x.shape) for _ in range(3)]
                value = False if x.dtype.is_bool else 0 if x.dtype.is_integer else draw(st.floats())
                v = b.pad(x, low=pads[0], high=pads[1], interior=pads[2], value=value)
        except (TypeError, ValueError):  # the rule rejects this dtype or attribute: draw again
            continue
        pool.append(v)
    outputs = draw(st.lists(st.sampled_from(pool), min_size=0, max_size=3)) if pool else []
    return b.build(outputs)


def single_node_graph(s) -> ir.Graph:
    """The graph ``@<prim>(args...) -> prim(args..., **attrs)`` of a `tests.prim_samples.Sample`."""
    from tests.prim_samples import node_graph

    return node_graph(s.prim, s.args, s.attrs)

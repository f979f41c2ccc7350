"""IR graphs with control flow for the codegen tests, built with `GraphBuilder` (independent of
the tracing API), and the check that compiled code agrees with the interpreter on them."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from tensorplay import codegen, ir
from tensorplay.ir import GraphBuilder, Region, TensorType
from tensorplay.ir import dtypes as dt

T = TensorType
F32 = dt.float32


def region(name: str, types: Sequence[TensorType], fn: Callable) -> Region:
    """A region taking `types`, whose outputs are `fn(builder, *inputs)` (a list of values)."""
    b = GraphBuilder(name)
    ins = [b.add_input(t) for t in types]
    return Region(b.build(fn(b, *ins)))


def graph(name: str, types: Sequence[TensorType], fn: Callable) -> ir.Graph:
    """A graph taking `types` whose outputs are `fn(builder, *inputs)`: a control node's tuple
    (every element is projected) or a list of values."""
    b = GraphBuilder(name)
    ins = [b.add_input(t) for t in types]
    outs = fn(b, *ins)
    if not isinstance(outs, (list, tuple)):
        outs = [b.tuple_get(outs, index=i) for i in range(len(outs.type.elements))]
    return b.build(outs)


def scan_graph(body: Callable, consts: Sequence[TensorType], carry: Sequence[TensorType],
               xs: Sequence[TensorType], length: int, reverse: bool = False) -> ir.Graph:
    """`scan(*consts, *carry, *xs)` with the body `body(builder, *consts, *carry, *x slices)`."""
    slices = [T(x.shape[1:], x.dtype) for x in xs]
    r = region("body", [*consts, *carry, *slices], body)
    return graph("scan", [*consts, *carry, *xs],
                 lambda b, *ins: b.scan(*ins, body=r, num_consts=len(consts), num_carry=len(carry),
                                        length=length, reverse=reverse))


def random_args(g: ir.Graph, seed: int = 0, scale: float = 1.0) -> list[np.ndarray]:
    """One array per graph input: floats standard normal times `scale`, ints in [0, 4), bools random."""
    rng = np.random.default_rng(seed)
    out = []
    for v in g.inputs:
        shape, d = v.type.shape, v.type.dtype
        if d.is_floating_point:
            out.append((rng.standard_normal(shape) * scale).astype(d.np))
        elif d.is_bool:
            out.append(rng.random(shape) < 0.5)
        else:
            out.append(rng.integers(0, 4, size=shape).astype(d.np))
    return [np.asarray(a) for a in out]


def assert_compiled_matches(g: ir.Graph, args: Sequence[np.ndarray], rtol: float = 2e-6) -> list[np.ndarray]:
    """Compiled == interpreted: same shapes and dtypes, ints and bools exact, floats to `rtol`."""
    want = ir.interpret(g, args)
    got = codegen.compile_graph(g)(*args)
    assert len(got) == len(want)
    for i, (o, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert o.shape == w.shape and o.dtype == w.dtype, f"output {i}: {o.shape} {o.dtype} vs {w.shape} {w.dtype}"
        if o.dtype.kind == "f":
            np.testing.assert_allclose(o, w, rtol=rtol, atol=rtol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(o, w, err_msg=f"output {i}")
    return got

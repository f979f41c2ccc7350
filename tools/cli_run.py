"""`tensorplay-ir run`: random inputs for a graph, and the compiled-vs-interpreter comparison."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tensorplay.ir.core import Graph, Value

__all__ = ["random_inputs", "positive_inputs", "compare_outputs", "OutputDiff", "default_tolerance", "RunResult",
           "graph_run", "function_run"]

# operand positions whose values must stay in a domain: log(x), sqrt(x), pow(x, .), div(., y), rem(., y)
_DOMAIN_OPERANDS = {"log": (0,), "log1p": (0,), "sqrt": (0,), "rsqrt": (0,), "pow": (0,), "div": (1,),
                    "rem": (1,)}


def positive_inputs(graph: Graph) -> set[int]:
    """Indices of the inputs that flow into an operand needing positive values (a log, a divisor, ...)."""
    sensitive: set[Value] = set()
    for n in graph.nodes:
        for pos in _DOMAIN_OPERANDS.get(n.prim.name, ()):
            if pos < len(n.inputs):
                sensitive.add(n.inputs[pos])
    # walk producers backwards (nodes are in topological order)
    for n in reversed(graph.nodes):
        if n.out in sensitive:
            sensitive.update(n.inputs)
    return {i for i, v in enumerate(graph.inputs) if v in sensitive}


def random_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """One random array per input of `graph`, respecting its dtype.

    Floats are standard normal, or uniform in [0.5, 2) for inputs that reach a
    log/sqrt/pow base/divisor; integers are in [-5, 5] (or [1, 5] for divisors);
    random keys (inputs marked ``{tp.capture = "random_key"}``, or unmarked int64 tensors with
    last dimension 2) get arbitrary non-negative values; booleans are fair coin flips.
    """
    rng = np.random.default_rng(seed)
    positive = positive_inputs(graph)
    arrays = []
    for i, v in enumerate(graph.inputs):
        shape, dtype = v.type.shape, v.type.dtype
        if dtype.is_floating_point:
            a = rng.uniform(0.5, 2.0, shape) if i in positive else rng.standard_normal(shape)
        elif dtype.is_integer:
            marked_key = graph.arg_attrs.get(v, {}).get("tp.capture") == "random_key"
            if marked_key or (dtype.itemsize == 8 and shape and shape[-1] == 2):
                a = rng.integers(0, 2**31, shape)
            else:
                a = rng.integers(1, 6, shape) if i in positive else rng.integers(-5, 6, shape)
        else:
            a = rng.random(shape) < 0.5
        arrays.append(np.array(a, dtype=dtype.np, order="C"))  # not ascontiguousarray: it turns 0-d into 1-d
    return arrays


def default_tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing compiled and interpreted results of this element type."""
    if not dtype.is_floating_point:
        return 0.0, 0.0
    if dtype.itemsize == 2:  # float16 / bfloat16: a few units in the last place of the 16-bit type
        return (4e-3, 2e-3) if dtype.name == "float16" else (3e-2, 1.6e-2)
    if dtype.itemsize == 4:
        return 1e-4, 1e-5
    return 1e-9, 1e-12


@dataclass
class OutputDiff:
    """How far one compiled output is from the interpreter's."""

    index: int
    type: str
    max_abs: float
    max_rel: float
    ok: bool


def compare_outputs(graph: Graph, compiled: list[np.ndarray], reference: list[np.ndarray],
                    rtol: float | None = None, atol: float | None = None) -> list[OutputDiff]:
    """Elementwise comparison of each output: ``|a - b| <= atol + rtol * |b|``; NaN only matches NaN."""
    diffs = []
    for k, (v, a, b) in enumerate(zip(graph.outputs, compiled, reference)):
        r, t = default_tolerance(v.type.dtype)
        r = r if rtol is None else rtol
        t = t if atol is None else atol
        a = np.asarray(a)
        b = np.asarray(b)
        if a.shape != b.shape:
            diffs.append(OutputDiff(k, str(v.type), float("inf"), float("inf"), False))
            continue
        if a.size == 0:
            diffs.append(OutputDiff(k, str(v.type), 0.0, 0.0, True))
            continue
        a64 = a.astype(np.float64)
        b64 = b.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
            err = np.where(same, 0.0, np.abs(a64 - b64))
            err = np.where(np.isnan(err), np.inf, err)
            rel = err / np.maximum(np.abs(b64), np.finfo(np.float64).tiny)
        ok = bool(np.all(err <= t + r * np.abs(np.nan_to_num(b64, nan=0.0, posinf=0.0, neginf=0.0))))
        diffs.append(OutputDiff(k, str(v.type), float(err.max()), float(np.where(same, 0.0, rel).max()), ok))
    return diffs


@dataclass
class RunResult:
    """One `run`: the graph, its outputs compiled and interpreted (and eager, for a function), timings."""

    graph: Graph
    compiled: list[np.ndarray]
    reference: list[np.ndarray]
    eager: list[np.ndarray] | None
    interpret_s: float
    compile_s: float
    run_s: float


def _execute(graph: Graph, arrays: Sequence[np.ndarray], compile_graph: Callable, eager=None) -> RunResult:
    from tensorplay import ir

    t0 = time.perf_counter()
    reference = ir.interpret(graph, list(arrays))
    t1 = time.perf_counter()
    exe = compile_graph(graph)
    t2 = time.perf_counter()
    compiled = exe(*arrays)
    t3 = time.perf_counter()
    return RunResult(graph, compiled, reference, eager, t1 - t0, t2 - t1, t3 - t2)


def graph_run(graph: Graph, seed: int, compile_graph: Callable) -> RunResult:
    """Run `graph` on `random_inputs`, interpreted and compiled by `compile_graph`."""
    return _execute(graph, random_inputs(graph, seed), compile_graph)


def function_run(fn: Callable, specs: Sequence, seed: int, compile_graph: Callable) -> RunResult:
    """Trace `fn` on example tensors for `specs`, then run its graph interpreted and compiled on those
    tensors and the function's captures (their current values); `eager` is `fn` called directly.

    Nothing here runs on made-up values: captured tensors are passed as they are (a dumped IR
    file carries them as constants), so all three results must agree.
    """
    import tensorplay as tp
    from tensorplay._pytree import tree_flatten

    from .cli_specs import example_tensor

    rng = np.random.default_rng(seed)
    args = [example_tensor(s, rng) for s in specs]
    closed = tp.make_graph(fn, *args)
    arrays = [np.array(a.numpy()) for a in args] + [np.array(c.numpy()) for c in closed.capture_tensors()]
    eager = [np.array(t.numpy()) for t in tree_flatten(fn(*args))[0] if isinstance(t, tp.Tensor)]
    result = _execute(closed.graph, arrays, compile_graph, eager)
    result.compiled = result.compiled[:closed.num_outputs]
    result.reference = result.reference[:closed.num_outputs]
    return result

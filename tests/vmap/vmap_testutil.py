"""Shared helpers of the vmap tests: per-sample variations of sample arguments and the loop-and-stack oracle."""
from __future__ import annotations

import numpy as np

from tensorplay import ir
from tensorplay.ir.types import TensorType

try:
    from tensorplay.ir.verify import verify
except ImportError:  # pragma: no cover - the verifier is being written concurrently
    def verify(graph):
        return None


def vary(a: np.ndarray, b: int) -> np.ndarray:
    """Sample `b`'s version of argument `a`: same shape, dtype and (roughly) domain, different values."""
    a = np.asarray(a)
    if a.size == 0 or b == 0:
        return np.array(a, copy=True)
    flat = np.roll(a.reshape(-1), b)
    if a.dtype.kind == "f":
        flat = flat * a.dtype.type(1 + 0.125 * b)
    return flat.reshape(a.shape).astype(a.dtype)


def stack_at(arrays: list[np.ndarray], dim: int | None, like: np.ndarray) -> np.ndarray:
    """The batched argument: per-sample arrays stacked along `dim` (None: `like`, unbatched)."""
    if dim is None:
        return like
    return np.stack(arrays, axis=dim) if arrays else np.zeros(like.shape[:dim] + (0,) + like.shape[dim:], like.dtype)


def per_sample_graph(prim: str, args: list[np.ndarray], attrs: dict) -> ir.Graph:
    from prim_samples import node_graph

    return node_graph(prim, args, attrs, name=prim.replace("-", "_"))


def assert_same(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Equal shapes and dtypes; exact for integers and booleans, tight tolerance for floats (BLAS and
    reduction order may differ between the batched and the per-sample computation)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if actual.dtype.kind == "f":
        tol = 2e-6 if actual.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def loop_and_stack(graph: ir.Graph, args: list[np.ndarray], in_dims, size: int, out_dim: int = 0):
    """The oracle: run `graph` per sample (slicing batched args) and stack the results at `out_dim`
    (negative: counted from the end of each batched output)."""
    outs = []
    for i in range(size):
        sample = [a if d is None else np.take(a, i, axis=d) for a, d in zip(args, in_dims)]
        outs.append(ir.interpret(graph, sample))
    result = []
    for k, t in enumerate(graph.out_types):
        od = out_dim % (len(t.shape) + 1)
        per = [o[k] for o in outs]
        result.append(np.stack(per, axis=od) if per else np.zeros(t.shape[:od] + (0,) + t.shape[od:], t.dtype.np))
    return result

"""The tracing core's fast paths give the same results and the same errors as the general path."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _trace
from tensorplay.ir import TensorType, float32, get_primitive
from tensorplay.ir.core import result_type
from tensorplay.ir.values import Value


def test_memoised_shape_rule_matches_the_rule_and_never_caches_an_error():
    add = get_primitive("add")
    a, b = Value(TensorType((2, 3), float32)), Value(TensorType((2, 3), float32))
    first = _trace.typed_result(add, (a, b), {})
    assert first == result_type(add, [a.type, b.type], {}) and _trace.typed_result(add, (a, b), {}) is first
    bad = Value(TensorType((4,), float32))
    for _ in range(2):  # the failing signature raises every time (it is not stored)
        with pytest.raises((TypeError, ValueError)):
            _trace.typed_result(add, (a, bad), {})


def test_traced_errors_and_values_through_the_fast_bind():
    x = tp.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    g = tp.func.grad(lambda x: (x * x + 1).sum())
    np.testing.assert_allclose(g(x).numpy(), 2 * x.numpy())
    for _ in range(2):
        with pytest.raises((TypeError, ValueError), match="add"):  # raised on every call
            tp.func.grad(lambda x: (x + x[:1].reshape(3, 1)).sum())(x)


def test_tensor_only_and_pytree_calls_trace_alike():
    x, y = tp.ones(3), tp.full((3,), 2.0)
    flat = _trace.trace_function(lambda a, b: a * b, (x, y))
    tree = _trace.trace_function(lambda ab: ab[0] * ab[1], ((x, y),))
    assert flat.graph.structural_key() == tree.graph.structural_key()
    assert flat.in_tree.num_leaves == 2 and flat.static_leaves == [None, None]


def test_bench_harness_pins_openblas_at_run_time():
    from tensorplay.tools.bench import _harness as H

    if H.THREADS == 0 or H.openblas_threads() is None:
        pytest.skip("no bundled OpenBLAS, or threads left at the library default")
    H.apply_threads()
    assert H.openblas_threads() == H.THREADS

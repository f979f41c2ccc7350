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


_BASIC_KEYS = [0, -1, 2, slice(None), slice(1, None), slice(None, None, 2), slice(-2, None), slice(3, 1),
               slice(5, 9), (1, 2), (-1, slice(None, 2)), (slice(1, 3), 0), (slice(None), slice(None, None, 3), 1),
               (0, 0, 0), ()]


@pytest.mark.parametrize("key", _BASIC_KEYS, ids=repr)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "size-1", "empty"])
def test_basic_index_fast_path_matches_numpy_eager_traced_and_as_a_view(key, layout):
    base = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)
    arr = {"contiguous": base, "transposed": base.transpose(2, 1, 0)[:4, :5, :6],
           "size-1": base[:1, :1, :], "empty": base[:0]}[layout]
    try:
        want = arr[key]
    except IndexError:
        for x in (tp.from_numpy(arr.copy()),):
            with pytest.raises(IndexError, match="out of bounds"):
                x[key]
            with pytest.raises(IndexError, match="out of bounds"):
                tp.func.grad(lambda x: x[key].sum())(x)
        return
    x = tp.tensor(base).permute(2, 1, 0)[:4, :5, :6] if layout == "transposed" else tp.tensor(arr)
    np.testing.assert_array_equal(x[key].numpy(), want)
    # traced: the gradient of sum(x[key] * 2) is 2 where the key selects, else 0
    g = tp.func.grad(lambda x: (x[key] * 2).sum())(x).numpy()
    mask = np.zeros(arr.shape)
    mask[key] = 2.0
    np.testing.assert_array_equal(g, mask)
    compiled = tp.compile(lambda x: x[key] + 0)(x).numpy()
    np.testing.assert_array_equal(compiled, want)
    # a view: writes through it reach the base, eagerly and under a transform
    y = tp.tensor(arr.copy())
    y[key].add_(1.0)
    expect = arr.copy()
    expect[key] += 1.0
    np.testing.assert_array_equal(y.numpy(), expect)


def test_basic_index_errors_match_the_general_path():
    x = tp.ones(3, 4)
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        tp.tensor(1.0)[0]
    with pytest.raises(ValueError, match="step"):
        x[::0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        tp.func.grad(lambda x: x[3].sum())(x)
    assert tuple(x[None, 0].shape) == (1, 4)
    with pytest.raises(IndexError, match="bool"):
        x[0, True]


def _corpus_traces():
    import sys, os
    sys.path.insert(0, os.path.dirname(__file__))
    from corpus import CORPUS

    rng = np.random.default_rng(0)
    out = []
    for name, fn, make_args in CORPUS:
        args = make_args(rng)
        for transform in ("grad", "compile"):
            try:
                out.append((f"{name}/{transform}", _trace.trace_function(fn, args, transform=transform)))
            except Exception:  # an entry that needs concrete values: not a structure to compare
                pass
    return out


def test_signature_key_agrees_with_the_structural_key_over_the_corpus():
    """The trace's tape key, and its flat signature key, are equal for two graphs exactly when
    Graph.structural_key is (a wrong equality would let two different graphs share an executable)."""
    traces = _corpus_traces()
    # the same functions traced again (fresh values, same structure), and graphs with exact-attribute twins
    traces += [(n + "/again", c) for n, c in _corpus_traces()]
    assert sum(c.sigs is not None for _, c in traces) > len(traces) // 2
    assert sum(c.key is not None for _, c in traces) > len(traces) // 2
    keys = [(c.structural_key(), c.graph.structural_key()) for _, c in traces]
    for c in [c for _, c in traces]:  # then the signature keys, without the tape keys
        c.key = None
    keys_sig = [(c.structural_key(), c.graph.structural_key()) for _, c in traces]
    for kind in (keys, keys_sig):
        for i, (ka, sa) in enumerate(kind):
            for kb, sb in kind:
                assert (ka == kb) == (sa == sb), traces[i][0]


@pytest.mark.parametrize("a, b", [(0.0, -0.0), (1, 1.0), (1, True), (0, False), (float("nan"), 0.0), (2.0, 3.0)])
def test_signature_key_tells_exact_attribute_values_apart(a, b):
    """Attributes equal under Python's == but different in meaning (0.0 / -0.0, 1 / 1.0 / True) give
    different signatures; a NaN attribute equals itself."""
    from tensorplay.ir import float32

    def traced(value):
        with _trace.Trace("grad", concrete=True) as tr:
            x = tr.new_arg(TensorType((3,), float32))
            out = tr.emit(get_primitive("full"), (), {"shape": (3,), "dtype": float32, "value": value})
            graph = tr.finish([x * out])
        return _trace.ClosedGraph(graph, 1, [], sigs=(graph, tr.graph_sigs))

    ka, kb = traced(a).structural_key(), traced(b).structural_key()
    assert ka[0] == "sig" and ka != kb
    assert traced(a).structural_key() == ka


def test_signature_key_is_dropped_when_a_pass_replaces_the_graph():
    from tensorplay.ir.passes.simplify import simplify

    c = _trace.trace_function(lambda x: x * 1.0 + 0.0, (tp.ones(3),), transform="grad")
    assert c.structural_key()[0].__class__ is int  # the tape key
    c.key = None
    assert c.structural_key()[0] == "sig"
    c.graph = simplify(c.graph)
    assert c.structural_key() == ("struct", c.graph.structural_key())

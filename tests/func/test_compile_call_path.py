"""`tp.compile`: the fast cached call path, one trace under concurrent first calls, and the
checks of its options."""
import threading
import time

import numpy as np
import pytest

import tensorplay as tp


def test_concurrent_first_calls_trace_once():
    entered = []

    def slow(x):
        entered.append(threading.get_ident())
        time.sleep(0.05)  # widen the window in which a second thread could start its own trace
        return x * 2 + 1

    f = tp.compile(slow)
    x = tp.arange(4.0)
    barrier = threading.Barrier(4)
    results, errors = [], []

    def call():
        try:
            barrier.wait()
            results.append(f(x).numpy())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert f.trace_count == 1 and len(entered) == 1
    for r in results:
        np.testing.assert_array_equal(r, np.arange(4.0, dtype=np.float32) * 2 + 1)


def test_fast_path_reads_captures_and_distinguishes_signatures():
    w = tp.ones(3)
    f = tp.compile(lambda x: x * w)
    np.testing.assert_array_equal(f(tp.arange(3.0)).numpy(), [0, 1, 2])
    w.mul_(2.0)
    np.testing.assert_array_equal(f(tp.arange(3.0)).numpy(), [0, 2, 4])
    np.testing.assert_array_equal(f(tp.arange(3.0, dtype=tp.float64)).numpy(), [0, 2, 4])
    assert f.trace_count == 2
    strided = tp.arange(6.0)[::2]  # not C-contiguous: the general path, its own signature
    np.testing.assert_array_equal(f(strided).numpy(), [0, 4, 8])


def test_fast_path_returns_the_output_structure():
    f = tp.compile(lambda x, y: {"s": x + y, "p": (x * y, 3)})
    out = f(tp.ones(2), tp.full((2,), 2.0))
    out = f(tp.ones(2), tp.full((2,), 2.0))
    np.testing.assert_array_equal(out["s"].numpy(), [3, 3])
    np.testing.assert_array_equal(out["p"][0].numpy(), [2, 2])
    assert out["p"][1] == 3


def test_unknown_options_are_rejected():
    with pytest.raises(TypeError, match="unknown option.*'fullgraph'"):
        tp.compile(lambda x: x, fullgraph=True)
    with pytest.raises(TypeError, match="unknown option"):
        tp.compile(mode="max-autotune")


@pytest.mark.parametrize("bad", ["0", 1.0, (0, "1"), True, [None]])
def test_static_argnums_must_be_ints(bad):
    with pytest.raises(TypeError, match="static_argnums must be an int or a tuple of ints"):
        tp.compile(lambda x, n: x * n, static_argnums=bad)


def test_static_argnums_out_of_range():
    with pytest.raises(ValueError, match="static_argnums 2 is out of range .* 2 positional"):
        tp.compile(lambda x, n: x * n, static_argnums=2)
    f = tp.compile(lambda *a: a[0] * a[1], static_argnums=(1,))  # unknown arity: checked per call
    np.testing.assert_array_equal(f(tp.ones(2), 3).numpy(), [3, 3])
    with pytest.raises(ValueError, match="static_argnums 1 is out of range for a call with 1"):
        f(tp.ones(2))


def test_a_tensor_at_a_static_position_is_an_error():
    f = tp.compile(lambda x, n: x * n, static_argnums=1)
    np.testing.assert_array_equal(f(tp.ones(2), 2).numpy(), [2, 2])
    with pytest.raises(TypeError, match="argument 1 is in static_argnums but is a tensor"):
        f(tp.ones(2), tp.ones(2))


def test_nested_arguments_take_the_fast_path_with_their_structure():
    w = tp.full((2,), 3.0)
    calls = []

    def f(ps, x):
        calls.append(type(ps))
        (a, b), c = ps
        return [(a * x, b + w), None, c.sum() * 2, "tag"]

    g = tp.compile(f)
    ps = ((tp.ones(2), tp.arange(2.0)), tp.full((3,), 2.0))
    x = tp.tensor([1.0, -1.0])
    first = g(ps, x)
    assert len(g._fast) == 1  # the nested signature is registered for the fast path
    for _ in range(3):
        out = g(ps, x)
    assert g.trace_count == 1 and len(calls) == 1
    assert isinstance(out, list) and isinstance(out[0], tuple) and out[1] is None and out[3] == "tag"
    np.testing.assert_array_equal(out[0][0].numpy(), [1.0, -1.0])
    np.testing.assert_array_equal(out[0][1].numpy(), [3.0, 4.0])
    assert out[2].item() == 12.0
    out[0][0].add_(100.0)  # outputs are fresh buffers: writing one changes no later result
    np.testing.assert_array_equal(first[0][0].numpy(), [1.0, -1.0])
    np.testing.assert_array_equal(g(ps, x)[0][0].numpy(), [1.0, -1.0])
    w.mul_(0.0)  # a captured tensor updated in place is read by the fast path
    np.testing.assert_array_equal(g(ps, x)[0][1].numpy(), [0.0, 1.0])
    as_lists = [[tp.ones(2), tp.arange(2.0)], tp.full((3,), 2.0)]  # lists, not tuples: its own signature
    np.testing.assert_array_equal(g(as_lists, x)[0][1].numpy(), [0.0, 1.0])
    assert g.trace_count == 2 and calls[-1] is list
    strided = ((tp.ones(4)[::2], tp.arange(2.0)), tp.full((3,), 2.0))  # not contiguous: the general path
    np.testing.assert_array_equal(g(strided, x)[0][0].numpy(), [1.0, -1.0])


def test_fast_path_rebuilds_dict_and_namedtuple_outputs():
    import collections

    Pair = collections.namedtuple("Pair", "lo hi")
    g = tp.compile(lambda xs: {"p": Pair(xs[0] - 1, xs[0] + 1), "n": (xs[0] * 0,)})
    for _ in range(2):
        out = g([tp.tensor([1.0, 2.0])])  # a list argument: the fast path
    assert isinstance(out["p"], Pair) and isinstance(out["n"], tuple) and len(out["n"]) == 1
    np.testing.assert_array_equal(out["p"].hi.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(out["n"][0].numpy(), [0.0, 0.0])


# --- the Executable's generated call ---------------------------------------------------------------
def _executable(fn, *example):
    from tensorplay import codegen

    return codegen.compile_graph(tp.compile(fn).get_graph(*example).graph)


def test_executable_fast_call_checks_every_input_and_falls_back():
    exe = _executable(lambda x, y: (x * y + 1.0, x.sum()), tp.ones(2, 3), tp.ones(2, 3))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 2.0, np.float32)
    prod, total = exe(x, y)
    np.testing.assert_array_equal(prod, x * y + 1)
    assert total == 15.0
    again = exe(x, y)[0]
    assert again is not prod and not np.shares_memory(again, prod)  # fresh outputs on every call
    strided = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]  # not contiguous: copied first
    np.testing.assert_array_equal(exe(strided, y)[0], strided * y + 1)
    np.testing.assert_array_equal(exe(np.asmatrix(x), y)[0], x * y + 1)  # a subclass: copied to a base array
    with pytest.raises(TypeError, match=r"input 1: expected tensor<2x3xf32>.*dtype float64"):
        exe(x, y.astype(np.float64))
    with pytest.raises(TypeError, match=r"input 0: expected .*shape \(2, 3\)"):
        exe(x.reshape(3, 2), y)
    with pytest.raises(TypeError):
        exe(x)


def test_executable_status_error_from_the_fast_call_leaves_it_usable():
    exe = _executable(lambda x, i: tp.take(x, i) * 2.0, tp.ones(4), tp.tensor([0, 1]))
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(IndexError, match="index out of range"):
        exe(x, np.array([0, 9]))
    np.testing.assert_array_equal(exe(x, np.array([3, 1]))[0], [6.0, 2.0])


def test_executable_calls_from_threads_get_their_own_scratch():
    exe = _executable(lambda x: (tp.tanh(x @ x) @ x).sum(1), tp.ones(16, 16))
    assert exe.arena_bytes > 0  # the intermediates live in the pooled arena
    inputs = [np.random.default_rng(s).standard_normal((16, 16)).astype(np.float32) for s in range(4)]
    expected = [exe(a)[0] for a in inputs]
    errors = []

    def run(k):
        try:
            for _ in range(200):
                np.testing.assert_array_equal(exe(inputs[k])[0], expected[k])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_executable_is_freed_without_the_cycle_collector():
    import gc
    import weakref

    from tensorplay.codegen import Executable
    from tensorplay.ir import GraphBuilder, TensorType, float32

    b = GraphBuilder()
    x = b.add_input(TensorType((3,), float32))
    exe = Executable(b.build([b.neg(x)]))
    np.testing.assert_array_equal(exe(np.ones(3, np.float32))[0], [-1, -1, -1])
    ref = weakref.ref(exe)
    gc.disable()
    try:
        del exe
        assert ref() is None  # the generated call holds no strong reference back to it
    finally:
        gc.enable()


def test_dict_arguments_take_the_fast_path_keyed_by_key_order():
    seen = []

    def f(params, x):
        seen.append(tuple(params))
        return params["w"] * x + params["b"]

    g = tp.compile(f)
    x = tp.tensor([1.0, 2.0])
    wb = {"w": tp.full((2,), 3.0), "b": tp.ones(2)}
    for _ in range(3):
        out = g(wb, x)
    assert len(g._fast) == 1 and g.trace_count == 1
    np.testing.assert_array_equal(out.numpy(), [4.0, 7.0])
    bw = {"b": tp.ones(2), "w": tp.full((2,), 3.0)}  # other key order: its own signature, same values
    np.testing.assert_array_equal(g(bw, x).numpy(), [4.0, 7.0])
    assert g.trace_count == 2 and seen[-1] == ("b", "w")
    np.testing.assert_array_equal(g({"w": tp.zeros(2), "b": tp.ones(2)}, x).numpy(), [1.0, 1.0])
    assert g.trace_count == 2

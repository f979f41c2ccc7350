"""Trace state is per thread: eager ops in other threads are never captured by a trace, and
traces in several threads at once each build their own graph."""
import threading

import numpy as np

import tensorplay as tp
from tensorplay._trace import transform_stack
from tensorplay.func import grad

TIMEOUT = 60.0


def _run_threads(targets):
    errors = []

    def guard(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # reported to the test thread below
                errors.append(e)
        return run

    threads = [threading.Thread(target=guard(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish in time"
    if errors:
        raise errors[0]


def test_eager_ops_in_other_threads_while_a_trace_is_active():
    tracing = threading.Event()
    eager_done = threading.Barrier(3, timeout=TIMEOUT)
    results = {}
    a, b = tp.arange(5.0), tp.ones(5)

    def traced(x):
        y = x * 2
        tracing.set()
        eager_done.wait()          # the other threads run their eager ops while this trace is open
        return (y + 1).sum()

    def tracer():
        f = tp.compile(traced)
        results["compile"] = f(tp.arange(3.0)).item()
        results["compile_graph_inputs"] = len(f.get_graph(tp.arange(3.0)).graph.inputs)

    def eager(name):
        def run():
            assert tracing.wait(TIMEOUT)
            out = a * 3 + b
            results[name] = (out.is_traced, out.tolist())
            eager_done.wait()
        return run

    _run_threads([tracer, eager("e1"), eager("e2")])
    assert results["compile"] == 9.0
    assert results["compile_graph_inputs"] == 1  # nothing from the other threads was captured
    for name in ("e1", "e2"):
        assert results[name] == (False, [1.0, 4.0, 7.0, 10.0, 13.0])


def test_grad_traces_in_several_threads_at_once():
    start = threading.Barrier(3, timeout=TIMEOUT)
    results = {}

    def worker(k):
        def run():
            start.wait()
            for i in range(20):
                x = tp.tensor(np.arange(4.0) + k + i, dtype=tp.float64)
                g = grad(lambda t: (t * t * (k + 1)).sum() if t.sum() > 0 else t.sum())(x)
                np.testing.assert_allclose(g.numpy(), 2 * (k + 1) * x.numpy())
            results[k] = True
        return run

    _run_threads([worker(k) for k in range(3)])
    assert results == {0: True, 1: True, 2: True}


def test_state_is_empty_in_a_new_thread_during_a_trace():
    seen = []

    def inner(x):
        t = threading.Thread(target=lambda: seen.append(transform_stack()))
        t.start()
        t.join(TIMEOUT)
        seen.append(transform_stack())
        return x.sum()

    grad(inner)(tp.ones(2))
    assert seen == ["", "grad(argnums=0)"]

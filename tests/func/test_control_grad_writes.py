"""In-place writes inside branches and loop bodies: functionalized, threaded through the node, stored back.

Oracle: the same Python loop / branch run eagerly without control-flow primitives.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import functionalize, grad, vmap

from test_control_grad import fd_grad, on_the_interpreter, npy, t64  # noqa: F401  (the backend fixture)


def accumulate_scan(buf, xs):
    """A scan whose body adds each x into a captured buffer (and into a view of it)."""
    head = buf[:2]

    def body(c, x):
        buf.add_(x)
        head.mul_(0.5)
        return c + x.sum(), c
    return tp.scan(body, tp.zeros((), dtype=xs.dtype), xs)


def accumulate_python(buf, xs):
    c, ys = np.zeros(()), []
    for x in xs:
        buf += x
        buf[:2] *= 0.5
        ys.append(c.copy())
        c = c + x.sum()
    return c, np.stack(ys)


XS = np.random.default_rng(0).normal(size=(4, 3))


@pytest.mark.parametrize("mode", ["eager", "compile", "functionalize"])
def test_scan_body_writes_a_captured_buffer(mode):
    buf = t64(np.ones(3))
    want_buf = np.ones(3)
    want_c, want_ys = accumulate_python(want_buf, XS)
    fn = {"eager": accumulate_scan, "compile": tp.compile(accumulate_scan),
          "functionalize": functionalize(accumulate_scan)}[mode]
    c, ys = fn(buf, t64(XS))
    np.testing.assert_allclose(npy(c), want_c, rtol=1e-12)
    np.testing.assert_allclose(npy(ys), want_ys, rtol=1e-12)
    np.testing.assert_allclose(npy(buf), np.ones(3) if mode == "functionalize" else want_buf, rtol=1e-12)


def test_cond_branch_writes_a_captured_tensor_only_when_taken():
    state = t64(np.zeros(3))

    def f(x):
        return tp.cond(x.sum() > 0, lambda x: (state.copy_(x * 2), x + 1)[1], lambda x: x - 1, (x,))

    x = t64([1.0, 2.0, 3.0])
    np.testing.assert_allclose(npy(f(-x)), npy(-x) - 1)
    np.testing.assert_allclose(npy(state), np.zeros(3))
    np.testing.assert_allclose(npy(f(x)), npy(x) + 1)
    np.testing.assert_allclose(npy(state), 2 * npy(x))
    np.testing.assert_allclose(npy(tp.compile(f)(x * 3)), 3 * npy(x) + 1)
    np.testing.assert_allclose(npy(state), 6 * npy(x))


def test_while_loop_body_writes_and_cond_reads_the_written_tensor():
    """The cond reads the counter the body increments in place: it must see each step's write."""
    count = tp.zeros((), dtype=tp.int64)

    def f(x):
        def body(x):
            count.add_(1)
            return (x * 2,)
        return tp.while_loop(lambda x: count < 3, body, (x,))[0]

    np.testing.assert_allclose(npy(f(t64([1.0, 2.0]))), [8.0, 16.0])
    assert int(count) == 3


def test_fori_loop_write_with_traced_bounds():
    acc = t64(0.0)
    out = tp.fori_loop(tp.tensor(0), tp.tensor(3), lambda i, v: (acc.add_(v.sum()), v * 2)[1], t64([1.0, 1.0]))
    np.testing.assert_allclose(npy(out), [8.0, 8.0])
    assert float(acc) == pytest.approx(2 + 4 + 8)


def test_grad_through_writes_into_a_buffer_inside_a_scan():
    def loss(w):
        state = tp.zeros(3, dtype=w.dtype)

        def body(c, x):
            state.add_(tp.sin(w * x))
            return c, None
        tp.scan(body, t64(0.0), t64(np.arange(3.0)))
        return (state * state).sum()

    w = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(npy(grad(loss)(t64(w))), fd_grad(loss, w), atol=1e-6)


def test_writing_a_shared_buffer_with_batched_values_under_vmap_is_an_error():
    buf = t64(np.zeros(3))

    def f(x):
        tp.fori_loop(0, 2, lambda i, v: (buf.add_(v), v)[1], x)
        return x.sum()

    with pytest.raises(RuntimeError, match="not batched"):
        vmap(f)(t64(np.ones((4, 3))))
    np.testing.assert_allclose(npy(buf), np.zeros(3))


def test_a_cond_function_of_while_loop_may_not_write():
    flag = tp.zeros(())
    with pytest.raises(RuntimeError, match="cond_fn writes a captured tensor"):
        tp.while_loop(lambda x: (flag.add_(1), x < 3)[1], lambda x: (x + 1,), (t64(0.0),))

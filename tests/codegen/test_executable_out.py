"""`Executable(out=)`: the compiled code writes each output slot straight into the caller's array,
whatever order the graph returns its slots in (inputs and repeats among them); arrays it cannot
write into (non-contiguous, read-only, overlapping another) receive a copy. Values are checked
against the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.ir import TensorType, dtypes as dt, interpret


def _shuffled():
    """Outputs out of slot order: a 0-d sum (slot 2), exp (slot 1), the input, neg (slot 0), exp again."""
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((3,), dt.float32))
    y1 = b.neg(x)
    y2 = b.exp(y1)
    return b.build([b.reduce_sum(y2, axes=(0,)), y2, x, y1, y2])


def _fresh_out(g):
    return [np.full(t.shape, np.nan, t.dtype.np) for t in g.out_types]


def _check(got, g, args):
    for o, w in zip(got, interpret(g, args)):
        np.testing.assert_allclose(o, w, rtol=1e-6)


def test_slots_out_of_order_are_written_into_out_directly():
    g = _shuffled()
    exe = codegen.compile_graph(g)
    assert [k for k, _ in exe._recipe] == ["slot", "slot", "input", "slot", "repeat"]
    x = np.array([0.5, -1.0, 2.0], np.float32)
    out = _fresh_out(g)
    assert exe._direct_out(out) == [out[3], out[1], out[0]]  # slot j -> the array it is written into
    got = exe(x, out=out)
    assert all(r is o for r, o in zip(got, out))
    _check(got, g, [x])
    assert out[4] is not out[1] and np.array_equal(out[4], out[1])


def test_out_arrays_that_cannot_be_written_into_receive_copies():
    g = _shuffled()
    exe = codegen.compile_graph(g)
    x = np.array([0.25, 3.0, -2.0], np.float32)
    big = np.full((3, 2), np.nan, np.float32)
    strided = big[:, 0]  # not contiguous
    readonly = np.zeros(3, np.float32)
    readonly.flags.writeable = False
    out = _fresh_out(g)
    out[1], out[3] = strided, readonly
    taken = exe._direct_out(out)
    assert taken[0] is None and taken[1] is None and taken[2] is out[0]
    with pytest.raises(ValueError):  # numpy refuses the copy into a read-only array
        exe(x, out=out)
    out[3] = np.zeros(3, np.float32)
    got = exe(x, out=out)
    assert got[1] is strided and np.isnan(big[:, 1]).all()
    _check(got, g, [x])


def test_overlapping_out_arrays_are_not_both_written_by_the_compiled_code():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((4,), dt.float64))
    g = b.build([b.sin(x), b.cos(x)])
    exe = codegen.compile_graph(g)
    shared = np.zeros(4)
    taken = exe._direct_out([shared, shared[:]])
    assert taken[0] is shared and taken[1] is None
    x0 = np.linspace(-1, 1, 4)
    got = exe(x0, out=[shared, shared[:]])
    np.testing.assert_allclose(got[1], np.cos(x0), rtol=1e-15)  # the copy lands last


def test_zero_d_and_empty_outputs_in_any_order():
    b = ir.GraphBuilder()
    e = b.add_input(TensorType((0, 3), dt.float32))
    s = b.add_input(TensorType((), dt.float64))
    g = b.build([b.reduce_sum(e, axes=(0,)), b.exp(s), b.sin(e)][::-1])
    exe = codegen.compile_graph(g)
    args = [np.zeros((0, 3), np.float32), np.array(0.5)]
    out = _fresh_out(g)
    got = exe(*args, out=out)
    assert all(r is o for r, o in zip(got, out))
    _check(got, g, args)


def test_out_of_the_wrong_shape_or_count_is_a_type_error():
    g = _shuffled()
    exe = codegen.compile_graph(g)
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="out must be one array per output"):
        exe(x, out=_fresh_out(g)[:-1])
    bad = _fresh_out(g)
    bad[1] = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="out must be one array per output"):
        exe(x, out=bad)

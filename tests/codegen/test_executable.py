"""The Executable API and the compile cache."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def _sin_plus(shape, dtype=dt.float32, name="f"):
    b = ir.GraphBuilder(name)
    x = b.add_input(TensorType(shape, dtype))
    y = b.add_input(TensorType(shape, dtype))
    return b.build([b.add(b.sin(x), y)])


def test_structurally_equal_graphs_compile_once():
    codegen.compile_graph(_sin_plus((3, 4)))
    n = codegen.compile_count()
    for name in ("f", "g", "h"):
        exe = codegen.compile_graph(_sin_plus((3, 4), name=name))
        x = np.ones((3, 4), np.float32)
        for _ in range(3):
            exe(x, x)
    assert codegen.compile_count() == n


def test_new_shapes_and_dtypes_compile_again():
    codegen.compile_graph(_sin_plus((5,)))
    n = codegen.compile_count()
    codegen.compile_graph(_sin_plus((6,)))
    codegen.compile_graph(_sin_plus((5,), dt.float64))
    assert codegen.compile_count() == n + 2


def test_clear_cache_forces_recompilation():
    g = _sin_plus((7,))
    old = codegen.compile_graph(g)
    codegen.clear_cache()
    n = codegen.compile_count()
    codegen.compile_graph(g)
    assert codegen.compile_count() == n + 1
    x = np.ones(7, np.float32)
    np.testing.assert_allclose(old(x, x)[0], np.sin(x) + x, rtol=1e-6)  # still usable


def test_bad_inputs_raise_type_error():
    exe = codegen.compile_graph(_sin_plus((2, 3)))
    good = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="input 1"):
        exe(good, np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError, match="float32"):
        exe(good, np.zeros((2, 3), np.float64))
    with pytest.raises(TypeError, match="2 inputs"):
        exe(good)
    with pytest.raises(TypeError, match="numpy array"):
        exe(good, [[0.0] * 3] * 2)


def test_non_contiguous_inputs_and_fresh_outputs():
    exe = codegen.compile_graph(_sin_plus((4, 3)))
    base = np.arange(24, dtype=np.float32).reshape(3, 8)
    x = base[:, ::2].T  # (4, 3), not contiguous
    y = np.ones((4, 3), np.float32)
    out = exe(x, y)[0]
    np.testing.assert_allclose(out, np.sin(x) + 1, rtol=1e-6)
    assert exe(x, y)[0] is not out


def test_outputs_that_are_inputs_or_repeated():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((3,), dt.int64))
    y = b.neg(x)
    exe = codegen.compile_graph(b.build([x, y, y, x]))
    a = np.array([1, 2, 3], np.int64)
    o = exe(a)
    assert [v.tolist() for v in o] == [[1, 2, 3], [-1, -2, -3], [-1, -2, -3], [1, 2, 3]]
    assert o[0] is not a and o[1] is not o[2]


def test_zero_d_empty_and_no_input_graphs():
    b = ir.GraphBuilder()
    s = b.add_input(TensorType((), dt.float64))
    e = b.add_input(TensorType((0, 3), dt.float32))
    out = [b.exp(s), b.sin(e), b.reduce_sum(e, axes=(0,)), b.emit("iota", shape=(2, 2), dtype=dt.int32, dimension=1)]
    exe = codegen.compile_graph(b.build(out))
    r = exe(np.array(0.5), np.zeros((0, 3), np.float32))
    assert r[0].shape == () and abs(r[0] - np.exp(0.5)) < 1e-15
    assert r[1].shape == (0, 3) and r[2].tolist() == [0, 0, 0] and r[3].tolist() == [[0, 1], [0, 1]]


def test_bool_storage_is_one_byte():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((5,), dt.bool_))
    y = b.add_input(TensorType((5,), dt.int32))
    exe = codegen.compile_graph(b.build([b.logical_not(x), b.gt(y, b.const(0, (5,), dt.int32)),
                                         b.convert_element_type(x, dtype=dt.float32)]))
    xs = np.array([True, False, True, True, False])
    n, p, f = exe(xs, np.array([-1, 0, 1, 2, -3], np.int32))
    assert n.dtype == np.bool_ and n.tolist() == [False, True, False, False, True]
    assert p.view(np.uint8).tolist() == [0, 0, 1, 1, 0]
    assert f.tolist() == [1, 0, 1, 1, 0]


def test_introspection_for_the_cli():
    exe = codegen.compile_graph(_sin_plus((64,), name="intro"))
    assert "define" in exe.llvm_ir
    lanes = {int(n) for n in re.findall(r"<(\d+) x float>", exe.llvm_ir)}
    assert lanes and min(lanes) >= 2, "the sin+add loop was not vectorised"  # the width is the host's choice
    assert "ret" in exe.asm
    assert exe.kernels == [{"name": "k0_add", "kind": "loop", "domain": (64,), "nodes": ["sin", "add"],
                            "node_indices": [0, 1], "flat": True}]
    for key in ("schedule_s", "lower_s", "llvm_opt_s", "codegen_s", "total_s"):
        assert exe.stats[key] >= 0


def test_intermediates_share_one_arena():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((1000,), dt.float32))
    e = b.exp(x)  # materialised: read by two kernels
    s1 = b.reduce_sum(e, axes=(0,))
    s2 = b.reduce_max(e, axes=(0,))
    exe = codegen.compile_graph(b.build([b.add(s1, s2)]))
    assert exe.stats["arena_bytes"] >= 4000
    v = np.linspace(-1, 1, 1000, dtype=np.float32)
    np.testing.assert_allclose(exe(v)[0], np.exp(v).sum() + np.exp(v).max(), rtol=1e-5)


def test_large_elementwise_graphs_split_across_threads():
    from tensorplay.codegen import executable

    n = 3 * executable.PARALLEL_MIN_ELEMENTS + 17
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((n,), dt.float32))
    y = b.add_input(TensorType((n,), dt.float32))
    s = b.add(b.sin(x), y)
    g = b.build([s, b.mul(b.exp(b.neg(b.mul(x, x))), s)])
    exe = codegen.compile_graph(g)
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    for got, want in zip(exe(xs, ys), ir.interpret(g, [xs, ys])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if executable._THREADS > 1:
        assert exe.stats["threads"] > 1

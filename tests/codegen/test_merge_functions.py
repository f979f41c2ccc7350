"""Kernels with identical code in one graph are compiled once (`jit.merge_identical_functions`):
the results stay those of the interpreter, and the optimised module has one function fewer."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import jit
from tensorplay.ir import dtypes as dt
from tensorplay.ir.interpreter import interpret
from tensorplay.ir.types import TensorType


def _two_layers(n: int) -> ir.Graph:
    # sum(tanh(x)) and sum(tanh(y)) over the same shape: the two fused reduction kernels
    # have the same code (their operands are arguments)
    b = ir.GraphBuilder("twins")
    x = b.add_input(TensorType((n, 5), dt.float32))
    y = b.add_input(TensorType((n, 5), dt.float32))
    s1 = b.emit("reduce_sum", b.tanh(x), axes=(1,))
    s2 = b.emit("reduce_sum", b.tanh(y), axes=(1,))
    return b.build([s1, s2, b.add(s1, s2)])


@pytest.mark.parametrize("n", [0, 1, 7])
def test_identical_kernels_merge_and_agree_with_the_interpreter(n, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    g = _two_layers(n)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 5)).astype(np.float32)
    y = np.asfortranarray(rng.standard_normal((n, 5)).astype(np.float32))  # non-contiguous input: coerced
    exe = codegen.Executable(g)
    want = interpret(g, [x, np.ascontiguousarray(y)])
    for got, w in zip(exe(x, y), want):
        np.testing.assert_allclose(got, w, rtol=2e-6, atol=2e-6)
    merge = jit.merge_identical_functions
    seen = []

    def no_merge(text):
        seen.append(text)
        return text, 0
    monkeypatch.setattr(jit, "merge_identical_functions", no_merge)
    plain = codegen.Executable(g)
    for got, w in zip(plain(x, y), exe(x, y)):
        np.testing.assert_array_equal(got, w)  # the same code runs either way
    assert plain.stats["merged_functions"] == 0
    merged_text, merged = merge(seen[0])
    assert merged == exe.stats["merged_functions"] >= 1
    assert seen[0].count("define internal") - merged_text.count("define internal") == merged


def test_functions_that_differ_are_kept():
    f = 'define internal void @"a"(ptr %".1")\n{\nentry:\n  ret void\n}\n'
    g = f.replace('@"a"', '@"b"').replace("ret void", "call void @\"a\"(ptr null)\n  ret void")
    text = f + g + 'define void @"e"()\n{\n  call void @"b"(ptr null)\n  ret void\n}\n'
    assert jit.merge_identical_functions(text) == (text, 0)


def test_loop_metadata_is_compared_by_content_not_by_number():
    """Each loop carries a distinct metadata node: copies that differ only in those node numbers
    merge, and copies whose loop hints differ do not."""
    def fn(name, md):
        return (f'define internal void @"{name}"(ptr %".1")\n{{\nentry:\n  br label %"h", !llvm.loop !{md}\n'
                f'h:\n  ret void\n}}\n')
    tail = ('!0 = !{ !"llvm.loop.vectorize.width", i32 16 }\n!1 = distinct !{!1, !0}\n!2 = distinct !{!2, !0}\n'
            '!3 = !{ !"llvm.loop.vectorize.width", i32 8 }\n!4 = distinct !{!4, !3}\n')
    same, n_same = jit.merge_identical_functions(fn("a", 1) + fn("b", 2) + tail)
    assert n_same == 1 and '@"b"' not in same
    differ, n_differ = jit.merge_identical_functions(fn("a", 1) + fn("c", 4) + tail)
    assert n_differ == 0 and '@"c"' in differ

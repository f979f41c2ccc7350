"""Pad and concatenate kernels settle per box at compile time what they would test per element
(`context.Index.ranges`), and loop nests keep their outer loops rolled (`irutil.loop_nest`'s
``unroll_outer``): both only shrink the code LLVM optimises, so every result is checked against the
interpreter, with size-1, empty and non-contiguous (transposed) operands."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay.codegen.module import build_module, plan_buffers
from tensorplay.codegen.schedule import normalize, schedule
from tensorplay.ir import GraphBuilder, TensorType, float32, interpret


def T(*shape):
    return TensorType(shape, float32)


def _kernel_text(g) -> str:
    """LLVM text of the one kernel of `g`."""
    steps = schedule(normalize(g))
    (k,) = steps
    text = build_module(g, steps, plan_buffers(g, steps), "t", "x86_64-unknown-linux-gnu", "")[0]
    m = re.search(r'^define internal [^\n]*@"t_' + k.name + r'"\(.*?^}$', text, re.M | re.S)
    assert m, f"no function for kernel {k.name} in the module"
    return m.group(0)


def _check(g, seed=0):
    rng = np.random.default_rng(seed)
    a = [rng.standard_normal(t.shape).astype(np.float32) for t in g.in_types]
    for got, want in zip(codegen.compile_graph(g)(*a), interpret(g, a)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _pad(shape, low, high, interior=None, transposed=False, value=0.0):
    b = GraphBuilder("pad")
    x = b.add_input(T(*shape))
    if transposed:
        x = b.transpose(x, permutation=tuple(reversed(range(len(shape)))))
    p = b.pad(b.neg(x), low=low, high=high, interior=interior or (0,) * len(low), value=value)
    return b.build([b.mul(p, p)])


def test_a_padded_box_reads_its_operand_without_tests_and_a_fill_box_reads_nothing():
    g = _pad((4, 6), low=(0, 2), high=(0, 3))  # boxes along axis 1: fill [0, 2), x [2, 8), fill [8, 11)
    (k,) = schedule(normalize(g))
    assert len(k.boxes) == 3
    text = _kernel_text(g)
    assert text.count("load float") == 1  # the middle box only
    assert " select " not in text  # no per-element range test left
    _check(g)


@pytest.mark.parametrize("shape, low, high, interior, transposed", [
    ((4, 6), (1, 2), (2, 3), None, False),      # two padded axes: the middle box still tests axis 0
    ((3, 5), (0, 0), (0, 2), None, False),      # padded on one side only
    ((3, 5), (2, 0), (1, 0), None, False),      # padded on an outer axis only: no boxes
    ((1, 1), (0, 3), (0, 0), None, False),      # size-1 operand
    ((2, 0), (0, 2), (0, 1), None, False),      # empty operand: every element is the fill
    ((5, 3), (1, 1), (0, 2), None, True),       # a transposed (non-contiguous) operand
    ((4, 6), (1, 2), (0, 3), (1, 0), False),    # interior padding on axis 0 (not split there)
    ((2, 3, 4), (0, 0, 1), (0, 0, 1), (0, 0, 1), False),  # interior on the split axis: no boxes
])
def test_pad_kernels_match_the_interpreter(shape, low, high, interior, transposed):
    _check(_pad(shape, low, high, interior, transposed, value=1.5))


def test_a_concatenate_box_reads_one_operand_only():
    b = GraphBuilder("cat")
    x, y, z = b.add_input(T(2, 3)), b.add_input(T(2, 4)), b.add_input(T(2, 5))
    c = b.concatenate(b.neg(x), y, b.mul(z, z), axis=1)
    g = b.build([b.mul(c, c)])  # no sin (its kernels are emitted twice), no exp (it has a select)
    (k,) = schedule(normalize(g))
    assert len(k.boxes) == 3
    text = _kernel_text(g)
    assert text.count("load float") == 3 and " select " not in text  # one read per box, nothing chosen
    _check(g)


@pytest.mark.parametrize("shapes, axis", [
    (((2, 3), (2, 0), (2, 5)), 1),   # an empty operand
    (((1, 1), (1, 1), (1, 1)), 0),   # size-1 pieces
    (((3, 1, 2), (3, 4, 2)), 1),     # split on a middle axis
])
def test_concatenate_kernels_match_the_interpreter(shapes, axis):
    b = GraphBuilder("cat")
    xs = [b.add_input(T(*s)) for s in shapes]
    g = b.build([b.add(b.concatenate(*[b.sin(x) for x in xs], axis=axis), b.concatenate(*xs, axis=axis))])
    _check(g, seed=3)


def test_only_the_innermost_loop_of_a_fused_loop_nest_may_be_unrolled():
    b = GraphBuilder("nest")
    x, y = b.add_input(T(3, 5, 7)), b.add_input(T(3, 7, 5))
    g = b.build([b.add(b.exp(x), b.transpose(y, permutation=(0, 2, 1)))])
    text = _kernel_text(g)
    # d0 and d1 are marked; the innermost d2 is not (LLVM may vectorise and interleave it)
    assert text.count("!llvm.loop") == 2
    assert re.search(r'br label %"d2\.head", !llvm\.loop', text) is None
    steps = schedule(normalize(g))
    full = build_module(g, steps, plan_buffers(g, steps), "t", "x86_64-unknown-linux-gnu", "")[0]
    assert '!"llvm.loop.unroll.disable"' in full and "tp.loop.id" not in full  # real loop ids
    _check(g)

"""Small loop and reduction kernels compiled apart at the cheap level (`module.compiled_cheaply`,
`jit.split_levels`): which kernels are marked (both outcomes of each rule), the module split, and the
results against the interpreter and against the same graph compiled with nothing marked (size 1,
empty, non-contiguous inputs). Nothing depends on the host's vector width or on timing."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import jit, module
from tensorplay.codegen.schedule import schedule
from tensorplay.ir import dtypes as dt
from tensorplay.ir.interpreter import interpret
from tensorplay.ir.types import TensorType

from .control_graphs import scan_graph

T = TensorType
F32 = dt.float32


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    codegen.clear_cache()
    yield
    codegen.clear_cache()


def _loss_grad(n: int, d: int = 10) -> ir.Graph:
    # the MLP loss tail: a row max, exp, row sums, a divide, a masked select; and a product
    b = ir.GraphBuilder("tail")
    z = b.add_input(T((n, d), F32))
    w = b.add_input(T((d, 3), F32))
    m = b.emit("reduce_max", z, axes=(1,))
    e = b.exp(b.sub(z, b.broadcast_in_dim(m, broadcast_dimensions=(0,), shape=(n, d))))
    s = b.emit("reduce_sum", e, axes=(1,))
    p = b.div(e, b.broadcast_in_dim(s, broadcast_dimensions=(0,), shape=(n, d)))
    r = b.select(b.gt(z, b.const(0.0, (n, d))), p, b.mul(p, b.const(0.5, (n, d))))
    y = b.dot_general(r, w, batch=((), ()), contract=((1,), (0,)))
    return b.build([r, b.emit("reduce_sum", r, axes=(0,)), y, b.emit("reduce_sum", z, axes=(0, 1))])


def _kernels(g: ir.Graph):
    from tensorplay.codegen.schedule import normalize

    return schedule(normalize(g))


def _one(shape, fn):
    b = ir.GraphBuilder("one")
    x = b.add_input(T(shape, F32))
    return _kernels(b.build([fn(b, x)]))


@pytest.mark.parametrize("shape, fn, want", [
    ((8, 16), lambda b, x: b.add(x, x), True),  # 128 elements
    ((1,), lambda b, x: b.add(x, x), True),
    ((0, 5), lambda b, x: b.add(x, x), True),
    ((32, 32), lambda b, x: b.add(x, x), True),  # exactly CHEAP_KERNEL_ELEMENTS
    ((32, 33), lambda b, x: b.add(x, x), False),
    ((8, 16), lambda b, x: b.emit("reduce_sum", x, axes=(0,)), True),
    ((64, 32), lambda b, x: b.emit("reduce_max", x, axes=(1,)), False),  # its input has 2048 elements
    ((2, 16), lambda b, x: b.exp(x), True),  # 32 * (1 + 16) = 544
    ((8, 16), lambda b, x: b.exp(x), False),  # 128 * 17 > 1024
    ((4, 4), lambda b, x: b.dot_general(x, x, batch=((), ()), contract=((1,), (0,))), False),  # its own code
])
def test_which_kernels_are_cheap(shape, fn, want):
    ks = [k for k in _one(shape, fn)]
    assert ks and all(module.compiled_cheaply(k) is want for k in ks), [k.describe() for k in ks]


def test_a_region_kernel_is_never_cheap(no_disk_cache):
    # a scan body's kernels run once per step: they keep the full optimisation
    g = scan_graph(lambda b, w, h, x: [b.add(b.mul(h, w), x), b.mul(h, h)],
                   [T((3,), F32)], [T((3,), F32)], [T((5, 3), F32)], length=5)
    from tensorplay.codegen.module import build_module, plan_buffers
    from tensorplay.codegen.schedule import normalize

    g2 = normalize(g)
    kernels = schedule(g2)
    triple, layout = jit.host_triple_and_layout()
    text, _ = build_module(g2, kernels, plan_buffers(g2, kernels), "tp_r", triple, layout)
    for line in text.splitlines():
        if line.startswith("define") and "scan_body" in line:
            assert jit.CHEAP_ATTRIBUTE not in line
    exe = codegen.Executable(g)
    args = [np.full((3,), 0.5, np.float32), np.ones(3, np.float32), np.arange(15, dtype=np.float32).reshape(5, 3)]
    for a, want in zip(exe(*args), interpret(g, args)):
        np.testing.assert_allclose(a, want, rtol=1e-6)


def test_split_levels_puts_the_cheap_functions_in_one_more_module():
    from tensorplay.codegen.module import build_module, plan_buffers
    from tensorplay.codegen.schedule import normalize

    g = normalize(_loss_grad(4))
    kernels = schedule(g)
    triple, layout = jit.host_triple_and_layout()
    text, _ = build_module(g, kernels, plan_buffers(g, kernels), "tp_l", triple, layout)
    text, _ = jit.merge_identical_functions(text)
    defined = re.findall(r'^define [^\n]*?@"([^"]+)"\(', text, re.M)
    cheap = {n for n in defined if re.search(rf'^define [^\n]*@"{n}"\([^\n]*{jit.CHEAP_ATTRIBUTE}', text, re.M)}
    assert cheap and cheap != set(defined)
    for parts in (1, 2, 3):
        split = jit.split_levels(text, parts)
        assert len(split) == min(parts, len(defined) - len(cheap)) + 1
        names = [re.findall(r'^define [^\n]*?@"([^"]+)"\(', p, re.M) for p, _, _ in split]
        assert sorted(sum(names, [])) == sorted(defined)
        assert set(names[-1]) == cheap and split[-1][1:] == (jit.CHEAP_SPEED_LEVEL, jit.CHEAP_CODEGEN_OPT)
        assert all(s is None and c is None for _, s, c in split[:-1])
        for p, _, _ in split:
            mine = set(re.findall(r'^define [^\n]*?@"([^"]+)"\(', p, re.M))
            called = set(re.findall(r'call [^\n]*?@"([^"]+)"\(', p))
            declared = set(re.findall(r'^declare [^\n]*?@"([^"]+)"\(', p, re.M))
            assert called <= mine | declared
    unmarked = text.replace(" " + jit.CHEAP_ATTRIBUTE, "")
    assert [s for _, s, _ in jit.split_levels(unmarked, 1)] == [None]  # nothing marked: no extra module


def _args(g: ir.Graph, seed: int, fortran: bool):
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(v.type.shape).astype(np.float32) for v in g.inputs]
    if fortran:
        out = [np.asfortranarray(a) if a.ndim == 2 else a for a in out]
    return out


@pytest.mark.parametrize("n", [0, 1, 7, 64])
@pytest.mark.parametrize("fortran", [False, True])
def test_cheap_kernels_match_the_interpreter_and_the_full_level(n, fortran, monkeypatch, no_disk_cache):
    g = _loss_grad(n)
    args = _args(g, n, fortran)
    cheap = codegen.Executable(g)
    assert jit.CHEAP_ATTRIBUTE in cheap.llvm_ir
    monkeypatch.setattr(module, "CHEAP_KERNEL_ELEMENTS", -1)  # the guard's other outcome: nothing marked
    full = codegen.Executable(g)
    assert jit.CHEAP_ATTRIBUTE not in full.llvm_ir and full.stats["llvm_parts"] < cheap.stats["llvm_parts"]
    want = interpret(g, [np.ascontiguousarray(a) for a in args])
    got_cheap, got_full = cheap(*args), full(*args)
    for c, f, w in zip(got_cheap, got_full, want):
        assert c.shape == w.shape and c.dtype == w.dtype
        np.testing.assert_allclose(c, w, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(c, f, rtol=2e-5, atol=1e-6)
    # elementwise kernels do the same operations per element at either level: the same bits
    np.testing.assert_array_equal(got_cheap[0], got_full[0])

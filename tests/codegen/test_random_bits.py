"""random_normal is bit-identical in every execution mode, and a good standard normal.

Box-Muller is computed from IEEE basic operations only (`ir/prims/random.py`,
`box_muller`), run on numpy float64 arrays by the primitive's impl (eager mode,
the reference interpreter) and emitted as flag-free LLVM IR by
`codegen/philox.py`. These tests check the bits across modes, the distribution,
the accuracy of the log and cos pieces against the exact values, and that the
compiled kernel contains no FMA (which would round differently).

Accuracy bounds against the exact value (50-digit `decimal` arithmetic): log(u1)
< 1 ulp and cos(2 pi u2) < 1 ulp (measured maxima over 145k words: 0.77 and
0.88), z = sqrt(-2 log u1) cos(2 pi u2) in float64 < 3 ulp (measured 2.3);
against math.log: at most 1 ulp apart.
"""
from __future__ import annotations

import math
import platform
import re
from decimal import Decimal, localcontext

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
import tensorplay as tp
from codegen_testutil import single_node_graph
from tensorplay.ir import dtypes as dt
from tensorplay.ir.prims import random as R
from tensorplay.ir.types import TensorType

DTYPES = [dt.float32, dt.float64]
KEYS = np.array([[0, 0], [42, 7], [-1, 2 ** 62], [2 ** 40 + 3, -5], [5, 2 ** 64 - 2 - 2 ** 63]], np.int64)
# (key, draw shape): 0-d, size-1 and large draws for one key; batched keys (K, 2) and (2, 3, 2)
CASES = [
    (KEYS[1], ()), (KEYS[2], (1,)), (KEYS[3], (100_000,)), (KEYS[4], (3, 4)),
    (KEYS, ()), (KEYS, (1,)), (KEYS, (2, 7)), (KEYS[:2], (60_001,)),
    (np.arange(12, dtype=np.int64).reshape(2, 3, 2), (5,)), (KEYS[:0], (4,)),
]


def _graph(prim: str, key: np.ndarray, shape, dtype) -> ir.Graph:
    b = ir.GraphBuilder(prim)
    k = b.add_input(TensorType(key.shape, dt.int64))
    return b.build([b.emit(prim, k, shape=shape, dtype=dtype)])


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


# --- bit identity ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("key,shape", CASES, ids=lambda c: str(getattr(c, "shape", c)))
def test_compiled_equals_interpreter_equals_impl(key, shape, dtype):
    g = _graph("random_normal", key, shape, dtype)
    compiled = codegen.compile_graph(g)(key)[0]
    interpreted = ir.interpret(g, [key])[0]
    impl = ir.get_primitive("random_normal").impl(key, shape=shape, dtype=dtype)  # what eager mode runs
    assert compiled.shape == key.shape[:-1] + shape and compiled.dtype == dtype.np
    _same_bits(compiled, interpreted)
    _same_bits(compiled, impl)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("shape", [(), (1,), (100_000,), (4, 5)], ids=str)
def test_eager_traced_and_compiled_randn_agree(shape, dtype, monkeypatch):
    tdtype = tp.float32 if dtype is dt.float32 else tp.float64
    tp.manual_seed(2024)
    eager = tp.randn(*shape, dtype=tdtype).numpy()
    tp.manual_seed(2024)
    key = tp.random.default_generator.take_key(math.prod(shape))  # the key eager mode drew with
    compiled_node = codegen.compile_graph(_graph("random_normal", key, shape, dtype))(key)[0]
    tp.manual_seed(2024)
    compiled = tp.compile(lambda: tp.randn(*shape, dtype=tdtype))()
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")  # traced, then run by ir.interpret
    tp.manual_seed(2024)
    traced = tp.compile(lambda: tp.randn(*shape, dtype=tdtype))()
    for other in (compiled_node, compiled.numpy(), traced.numpy()):
        _same_bits(eager, other)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64], ids=str)
def test_fused_consumers_keep_the_bits(dtype):
    """Fused into a kernel with elementwise consumers, the draw is still the eager one."""
    def f():
        z = tp.randn(5000, dtype=dtype)
        return z * 3.0 - 1.0, tp.sqrt(tp.abs(z)) + z

    tp.manual_seed(7)
    eager = f()
    tp.manual_seed(7)
    compiled = tp.compile(f)()
    for e, c in zip(eager, compiled):
        _same_bits(e.numpy(), c.numpy())


def test_chunked_draw_equals_one_pass():
    """The chunked impl draws exactly what one unchunked pass over all counters draws."""
    key = KEYS[2]
    n = 3 * R.CHUNK + 17
    w0, w1 = R.philox(key[:1].astype(np.uint64), key[1].astype(np.uint64) + np.arange(n, dtype=np.uint64))
    for dtype in DTYPES:
        _same_bits(R.draw(key, (n,), dtype, R.uniform_from_bits), R.uniform_from_bits(w0, w1, dtype))
        _same_bits(R.draw(key, (n,), dtype, R.normal_from_bits), R.normal_from_bits(w0, w1, dtype))


# --- no FMA, no fast-math in the compiled kernel --------------------------------------------
_FMA_ASM = re.compile(r"\bvf(n)?m(add|sub|addsub|subadd)\d*[ps][sd]\b|\bfn?m(add|sub|la|ls)\b", re.I)
_FAST_FLAGS = re.compile(r"= (fadd|fsub|fmul|fdiv|fneg|call)\b[^\n]*\b(fast|contract|reassoc|arcp|afn|nnan|ninf|nsz)\b")


def _host_has_fma() -> bool:
    if platform.machine().lower() in ("aarch64", "arm64"):
        return True
    import llvmlite.binding as llvm
    features = llvm.get_host_cpu_features()
    return bool(features.get("fma", False))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
def test_normal_kernel_has_no_fma(dtype):
    exe = codegen.compile_graph(_graph("random_normal", KEYS[:2], (4096,), dtype))
    text = exe.llvm_ir
    assert "llvm.fma" not in text and "llvm.fmuladd" not in text
    assert not _FAST_FLAGS.search(text), _FAST_FLAGS.search(text).group(0)
    assert not _FMA_ASM.search(exe.asm), _FMA_ASM.search(exe.asm).group(0)
    if _host_has_fma():  # control: the pattern does find the FMAs of a vecmath kernel on this host
        control = codegen.compile_graph(single_node_graph("exp", [np.ones(4096)], {}))
        assert _FMA_ASM.search(control.asm)


# --- distribution -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
def test_standard_normal_distribution(dtype):
    n = 100_000
    z = np.sort(ir.get_primitive("random_normal").impl(KEYS[1], shape=(n,), dtype=dtype).astype(np.float64))
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02  # 6 sigma for n = 1e5
    assert abs(np.mean(z ** 3)) < 0.05 and abs(np.mean(z ** 4) - 3) < 0.15
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in z])
    i = np.arange(1, n + 1)
    ks = max(np.max(i / n - cdf), np.max(cdf - (i - 1) / n))
    assert ks < 0.01  # Kolmogorov-Smirnov: the 1% critical value is 0.0052
    assert 0.002 < np.mean(np.abs(z) > 3) < 0.0036  # P(|Z| > 3) = 0.0027
    assert np.abs(z).max() <= math.sqrt(64 * math.log(2))  # u1 >= 2^-32


# --- accuracy of the pieces ---------------------------------------------------------------------
def _words(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    edges = [0, 1, 2, 3, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32 - 1, 2 ** 32 - 2, 3037000499, 3037000500,
             2 ** 30 - 1, 2 ** 30, 2 ** 30 + 1, 3 * 2 ** 30 - 1, 3 * 2 ** 30, 3 * 2 ** 30 + 1, 2 ** 29, 3 * 2 ** 29]
    near = [c + d for c in (0, 2 ** 29, 2 ** 30, 3 * 2 ** 29, 2 ** 31, 5 * 2 ** 29, 3 * 2 ** 30, 7 * 2 ** 29, 2 ** 32)
            for d in rng.integers(-2 ** 12, 2 ** 12, n // 20)]
    w = np.concatenate([np.array(edges), np.array(near), rng.integers(0, 2 ** 32, n, dtype=np.int64)])
    return (w % 2 ** 32).astype(np.uint64)


def _ulp_error(got: float, exact: Decimal) -> float:
    """|got - exact| in units of the float64 ulp at `exact` (0 when both are 0)."""
    if exact == 0:
        return 0.0 if got == 0 else math.inf
    ulp = Decimal(2) ** (math.frexp(float(exact))[1] - 53)
    return float(abs(Decimal(got) - exact) / ulp)


def _cos_2pi(w1: int) -> Decimal:
    """cos(2 pi w1 / 2^32) to ~45 digits: the angle reduced to [-pi, pi] exactly, then Taylor."""
    frac = Decimal(w1) / Decimal(2 ** 32)
    if frac > Decimal("0.5"):
        frac -= 1
    theta = 2 * _PI * frac
    if frac in (Decimal("0.25"), Decimal("-0.25")):
        return Decimal(0)
    term, total, k = Decimal(1), Decimal(1), 0
    while abs(term) > Decimal(10) ** -48:
        term *= -theta * theta / ((2 * k + 1) * (2 * k + 2))
        total += term
        k += 1
    return total


_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def test_log_u1_accuracy():
    w0 = _words(100_000, 1)
    got = R.log_u1(w0)
    want = np.array([math.log((int(w) + 1) / 2 ** 32) for w in w0])  # the argument is exact in float64
    ulps = np.abs(got.view(np.int64) - want.view(np.int64))  # same sign (<= 0): bit patterns are ordered
    assert ulps.max() <= 1  # ours < 1 ulp and glibc's < 0.55 ulp from the exact value
    one = R.log_u1(np.array([2 ** 32 - 1], np.uint64))[0]  # u1 = 1
    assert one == 0 and not np.signbit(one)
    with localcontext() as ctx:
        ctx.prec = 50
        errs = [_ulp_error(float(g), (Decimal(int(w) + 1) / Decimal(2 ** 32)).ln()) for w, g in zip(w0[:4000], got[:4000])]
    assert max(errs) < 1.0


def test_cos_2pi_u2_accuracy():
    w1 = _words(100_000, 2)
    got = R.cos_2pi_u2(w1)
    want = np.cos(2 * np.pi * (w1.astype(np.float64) * 2.0 ** -32))  # has the rounding error of 2 pi u2
    assert np.abs(got - want).max() < 1e-15
    assert not np.signbit(got[got == 0]).any()
    with localcontext() as ctx:
        ctx.prec = 50
        errs = [_ulp_error(float(g), _cos_2pi(int(w))) for w, g in zip(w1[:4000], got[:4000])]
    assert max(errs) < 1.0


def test_normal_float64_accuracy():
    w0, w1 = _words(3000, 3), _words(3000, 4)
    w0, w1 = w0[:3000], np.random.default_rng(5).permutation(w1)[:3000]
    got = R.normal_from_bits(w0, w1, dt.float64)
    with localcontext() as ctx:
        ctx.prec = 50
        errs = [_ulp_error(float(g), (-2 * (Decimal(int(a) + 1) / Decimal(2 ** 32)).ln()).sqrt() * _cos_2pi(int(b)))
                for a, b, g in zip(w0, w1, got)]
    assert max(errs) < 3

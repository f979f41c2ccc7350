"""sin/cos/tan over the whole float range: huge arguments (Payne-Hanek), subnormals, signed
zeros, inf and nan, within the stated ULP bounds against numpy in higher precision (float64 for
float32 inputs, long double for float64 inputs; both use a full-range reduction).

Also the kernel-level mechanism: a kernel first runs with the fast reduction and re-runs when it
sees a huge argument, so the other lanes' results must not depend on whether a huge one is
present, in fused loops, reductions, and threaded (ranged) executables alike."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import vecmath
from tensorplay.codegen.trig_reduce import TWO_OVER_PI_WORDS, _two_over_pi_bits, payne_hanek  # noqa: F401
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

LD = np.longdouble
HAVE_LONG_DOUBLE = np.finfo(LD).nmant >= 63
NAMES = ["sin", "cos", "tan"]
DTYPES = [dt.float32, dt.float64]
REF = {"sin": np.sin, "cos": np.cos, "tan": np.tan}


def _arguments(dtype: dt.DType) -> np.ndarray:
    rng = np.random.default_rng(7)
    fi = np.finfo(dtype.np)
    max_exp = fi.maxexp - 1
    parts = [
        2.0 ** rng.uniform(-8, max_exp + 0.9, 4000) * rng.choice([-1, 1], 4000),  # every binade
        2.0 ** rng.uniform(49, 54, 1000),  # both sides of the fast/exact switch at 2^50
        np.array([2.0 ** 50, np.nextafter(2.0 ** 50, 0), 2.0 ** 53, 1e22, float(fi.max), -float(fi.max),
                  float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 0.0, -0.0,
                  np.inf, -np.inf, np.nan]),
        rng.uniform(-10, 10, 500),
    ]
    if dtype is dt.float64:
        # the double closest to a multiple of pi/2 (r ~ 2^-61): worst case of the reduction
        parts.append(np.array([6381956970095103 * 2.0 ** 797, -6381956970095103 * 2.0 ** 797,
                               5.319372648326541e+255]))
    return np.concatenate(parts).astype(dtype.np)


def _compile(name: str, dtype: dt.DType, shape) -> codegen.Executable:
    b = ir.GraphBuilder(name)
    x = b.add_input(TensorType(tuple(shape), dtype))
    return codegen.compile_graph(b.build([b.emit(name, x)]))


def _ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        rounded = want.astype(got.dtype)
        err = np.abs(got.astype(want.dtype) - want) / np.spacing(np.abs(rounded)).astype(want.dtype)
    same = (np.isnan(got) & np.isnan(want)) | (got.astype(want.dtype) == want)
    return np.where(same, 0.0, np.where(np.isnan(err), np.inf, err)).astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("name", NAMES)
def test_whole_range_within_the_stated_bound(name, dtype):
    if dtype is dt.float64 and not HAVE_LONG_DOUBLE:
        pytest.skip("needs an 80-bit long double reference")
    x = _arguments(dtype)
    got = _compile(name, dtype, x.shape)(x)[0]
    with np.errstate(all="ignore"):
        want = REF[name](x.astype(np.float64 if dtype is dt.float32 else LD))
        eager = REF[name](x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(eager))
    zero = x == 0
    np.testing.assert_array_equal(got[zero], eager[zero])
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(eager[zero]))
    err = _ulp_error(got, want)
    bound = vecmath.ULP_BOUNDS[name][dtype is dt.float64]
    i = int(np.argmax(err))
    assert err[i] <= bound, f"{name} {dtype.name}: {err[i]:.3g} ulp > {bound} at x={x[i]!r}: got {got[i]!r}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("name", NAMES)
def test_a_huge_lane_does_not_change_the_others(name, dtype):
    """The re-run with the exact reduction gives every ordinary lane the same bits."""
    x = np.linspace(-20, 20, 203).astype(dtype.np)
    exe = _compile(name, dtype, x.shape)
    plain = exe(x)[0]
    for pos in (0, 101, 202):
        y = x.copy()
        y[pos] = 1e30
        mixed = exe(y)[0]
        keep = np.arange(x.size) != pos
        np.testing.assert_array_equal(mixed[keep], plain[keep])
        with np.errstate(all="ignore"):
            assert abs(float(mixed[pos]) - float(REF[name](np.float64(y[pos])))) < 1e-6 * max(1.0, abs(mixed[pos]))


def test_reduction_and_fused_consumers_of_huge_arguments():
    """sin fused into a reduction, and into further elementwise ops, with huge arguments."""
    b = ir.GraphBuilder("fused")
    xv = b.add_input(TensorType((4, 6), dt.float64))
    s = b.sin(xv)
    total = b.emit("reduce_sum", b.mul(s, s), axes=(1,))
    g = b.build([total, b.add(b.cos(xv), s)])
    x = np.array([[1e300, 2.0, 3.0, 1e17, -1e200, 0.5]] * 4) * np.arange(1, 5)[:, None]
    got = codegen.compile_graph(g)(x)
    want = ir.interpret(g, [x])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-14, atol=1e-15)


def test_threaded_executable_with_a_huge_argument():
    n = 1 << 18  # large enough for the ranged (multi-threaded when threads are available) entry
    x = np.linspace(-100, 100, n)
    x[n - 3] = 1e250
    b = ir.GraphBuilder("big")
    v = b.add_input(TensorType((n,), dt.float64))
    exe = codegen.compile_graph(b.build([b.sin(v)]))
    got = exe(x)[0]
    np.testing.assert_allclose(got, np.sin(x), rtol=0, atol=2e-16)


def test_the_table_holds_two_over_pi():
    value = _two_over_pi_bits(128)
    assert abs(value / 2.0 ** 128 - 2 / np.pi) < 1e-16
    # word 1 holds the first 32 fraction bits (word 0 is padding for small exponents)
    assert TWO_OVER_PI_WORDS[0] == 0
    assert TWO_OVER_PI_WORDS[1] == value >> 96

"""The host-dependent and range-dependent paths of `vecmath`, each forced and compared with the other.

- `_M.scale` as one `llvm.ldexp` (AVX-512 vscalef; `vecmath.SCALEF`) against the integer exponent
  arithmetic every other host uses: the same bits, for exp and pow (float64's `_exp_dd`), across
  results that overflow, underflow into subnormals, and NaN/inf.
- float32 sin/cos/tan reduce |x| < `CODY_WAITE_LIMIT_F32` (2^30) with a 2-part pi/2 and an i32
  quadrant, and larger |x| with Payne-Hanek: both sides of the switch and the float32 values closest
  to multiples of pi/2 keep the stated bound, and a huge lane (the kernel's re-run) changes no other
  lane's bits.
"""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import jit, vecmath
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

AVX512 = jit.host_has_feature("avx512f")


def _exe(name: str, dtype: dt.DType, n: int, arity: int = 1) -> codegen.Executable:
    """A fresh executable (no in-memory or disk cache: the generated code depends on `SCALEF`)."""
    b = ir.GraphBuilder(name)
    xs = [b.add_input(TensorType((n,), dtype)) for _ in range(arity)]
    return codegen.Executable(b.build([b.emit(name, *xs)]))


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")


def _exp_arguments(dtype) -> np.ndarray:
    rng = np.random.default_rng(3)
    lo, hi = (-746.0, 710.0) if dtype is dt.float64 else (-104.0, 89.0)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, lo, hi, lo - 1, hi + 1, -87.3, -88.0, -103.2, 88.7, 88.72, 709.78,
             -708.4, -744.5, 1e-30, -1e-30]
    x = np.concatenate([rng.uniform(lo - 5, hi + 5, 6000), rng.uniform(-1, 1, 1000), np.array(edges)])
    return x.astype(dtype.np)


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
def test_scalef_and_integer_scaling_give_the_same_bits(dtype, monkeypatch, no_disk_cache):
    if not AVX512:
        pytest.skip("llvm.ldexp is a libm call per lane without AVX-512F")
    x = _exp_arguments(dtype)
    got = {}
    for forced in (True, False):
        monkeypatch.setattr(vecmath, "SCALEF", forced)
        exe = _exe("exp", dtype, x.size)
        asm = exe.asm
        assert ("vscalef" in asm) is forced
        got[forced] = exe(x)[0]
    assert got[True].view(np.uint8).tobytes() == got[False].view(np.uint8).tobytes()
    # and both are exp: subnormal results and overflow included
    with np.errstate(all="ignore"):
        want = np.exp(x.astype(np.float64))
    finite = np.isfinite(want) & (np.abs(want) < np.finfo(dtype.np).max)
    np.testing.assert_allclose(got[True][finite], want[finite], rtol=4 * np.finfo(dtype.np).eps,
                               atol=float(np.finfo(dtype.np).smallest_subnormal))
    assert np.isnan(got[True][np.isnan(x)]).all()


def test_scalef_pow_float64_same_bits(monkeypatch, no_disk_cache):
    if not AVX512:
        pytest.skip("llvm.ldexp is a libm call per lane without AVX-512F")
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.uniform(0, 5, 3000), 2.0 ** rng.uniform(-30, 30, 3000), [0.5, 2.0, 0.0, np.inf]])
    y = np.concatenate([rng.uniform(-10, 10, 3000), rng.uniform(-50, 50, 3000), [1074.5, -1075.0, 2.0, -1.0]])
    got = {}
    for forced in (True, False):
        monkeypatch.setattr(vecmath, "SCALEF", forced)
        got[forced] = _exe("pow", dt.float64, a.size, arity=2)(a, y)[0]
    assert got[True].tobytes() == got[False].tobytes()


def test_scalef_follows_the_host_feature(monkeypatch):
    """SCALEF = None asks the host; the feature query decides (patched both ways)."""
    monkeypatch.setattr(vecmath, "SCALEF", None)
    for has in (True, False):
        monkeypatch.setattr(jit, "host_has_feature", lambda name, has=has: has and name == "avx512f")
        assert vecmath.use_scalef() is has


def _f32_near_multiples_of_pio2() -> np.ndarray:
    """float32 values next to k*pi/2 for k up to 2^30 / (pi/2): the hardest arguments to reduce."""
    rng = np.random.default_rng(5)
    k = np.unique(np.concatenate([np.arange(1, 4000), rng.integers(1, int(2 ** 30 / (np.pi / 2)), 20000)]))
    c = (k * (np.pi / 2)).astype(np.float32)
    return np.concatenate([c, np.nextafter(c, np.float32(0)), np.nextafter(c, np.float32(np.inf))])


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_float32_trig_both_sides_of_the_2_30_switch(name, no_disk_cache):
    rng = np.random.default_rng(6)
    lim = vecmath.CODY_WAITE_LIMIT_F32
    x = np.concatenate([2.0 ** rng.uniform(28, 32, 4000) * rng.choice([-1, 1], 4000),
                        [lim, -lim, np.nextafter(np.float32(lim), np.float32(0)), 2.0 ** 31, 2.0 ** 50],
                        _f32_near_multiples_of_pio2()]).astype(np.float32)
    got = _exe(name, dt.float32, x.size)(x)[0]
    want = getattr(np, name)(x.astype(np.float64))
    rounded = want.astype(np.float32)
    err = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(rounded)).astype(np.float64)
    assert err.max() <= vecmath.ULP_BOUNDS[name][0], (name, x[np.argmax(err)], err.max())


def test_float32_huge_lane_changes_no_other_lane(no_disk_cache):
    """A lane >= 2^30 sends the kernel to its exact re-run: every other lane keeps its bits."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(4099) * 3e4).astype(np.float32)
    assert np.abs(x).max() < vecmath.CODY_WAITE_LIMIT_F32
    y = x.copy()
    y[1234] = np.float32(3.0e9)
    exe = _exe("sin", dt.float32, x.size)
    gx, gy = exe(x)[0], exe(y)[0]
    keep = np.arange(x.size) != 1234
    assert gx[keep].tobytes() == gy[keep].tobytes()
    assert abs(float(gy[1234]) - np.sin(3.0e9)) < 1e-6

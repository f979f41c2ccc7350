"""The range-dependent paths of float32 sin/cos/tan in `vecmath`.

- float32 sin/cos/tan reduce |x| < `CODY_WAITE_LIMIT_F32` (2^30) with a 2-part pi/2 and an i32
  quadrant, and larger |x| with Payne-Hanek: both sides of the switch and the float32 values closest
  to multiples of pi/2 keep the stated bound, and a huge lane (the kernel's re-run) changes no other
  lane's bits.
"""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import vecmath
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def _exe(name: str, dtype: dt.DType, n: int, arity: int = 1) -> codegen.Executable:
    """A fresh executable (no in-memory cache)."""
    b = ir.GraphBuilder(name)
    xs = [b.add_input(TensorType((n,), dtype)) for _ in range(arity)]
    return codegen.Executable(b.build([b.emit(name, *xs)]))


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")


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

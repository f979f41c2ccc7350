"""Per-kernel optimisation choices (`codegen.jit.SPEED_LEVEL`, `module.optimised_for_size`) change
LLVM's time, never the values: small elementwise kernels compiled with `optsize` agree with the
reference interpreter (shapes with size-1 and empty dims, non-contiguous inputs), and with the
same graph compiled with every kernel at full speed, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import jit, module
from tensorplay.codegen.schedule import schedule
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def elementwise_graph(shape, dtype=dt.float32) -> ir.Graph:
    b = ir.GraphBuilder("small_elementwise")
    x = b.add_input(TensorType(shape, dtype))
    y = b.add_input(TensorType(shape, dtype))
    t = b.tanh(b.mul(x, y))
    e = b.exp(b.sub(x, t))
    return b.build([b.add(e, b.log(b.add(b.mul(y, y), b.const(1.0, shape, dtype)))), t])


SHAPES = [(), (1,), (0,), (3, 0, 2), (1, 7), (5, 1, 3), (64, 33), (128, 128)]


def _inputs(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, shape).astype(dtype.np) for _ in range(2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.name)
def test_small_kernels_match_the_interpreter(shape, dtype, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    g = elementwise_graph(shape, dtype)
    size = int(np.prod(shape))
    assert all(module.optimised_for_size(k) == (size <= module.SMALL_KERNEL_ELEMENTS)
               for k in schedule(g) if k.kind == "loop")
    exe = codegen.Executable(g)
    assert (" optsize " in exe.llvm_ir) == (size <= module.SMALL_KERNEL_ELEMENTS and size > 0) or size == 0
    xs = _inputs(shape, dtype, 0)
    tol = 1e-5 if dtype is dt.float32 else 1e-12
    for got, want in zip(exe(*xs), ir.interpret(g, xs)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_non_contiguous_inputs(monkeypatch):
    import tensorplay as tp

    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (9, 6)).astype(np.float32)
    f = tp.compile(lambda u, v: tp.exp(u * v) - tp.tanh(u))
    u, v = tp.tensor(a).T, tp.tensor(a[::2, ::2])[:, :3].T  # transposed and strided views
    got = f(u[:3, ::2], v).numpy()
    uu, vv = a.T[:3, ::2], a[::2, ::2][:, :3].T
    np.testing.assert_allclose(got, np.exp(uu * vv) - np.tanh(uu), rtol=2e-6, atol=2e-6)


def test_optsize_and_full_speed_give_the_same_bits(monkeypatch):
    """Elementwise kernels: each element runs the same instructions whatever LLVM does to the loop."""
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    g = elementwise_graph((37, 29))
    xs = _inputs((37, 29), dt.float32, 2)
    small = codegen.Executable(g)
    assert " optsize " in small.llvm_ir
    monkeypatch.setattr(module, "SMALL_KERNEL_ELEMENTS", 0)
    full = codegen.Executable(g)
    assert " optsize " not in full.llvm_ir
    for a, b in zip(small(*xs), full(*xs)):
        np.testing.assert_array_equal(a, b)


def test_the_pipeline_level_is_o2_and_reported():
    assert jit.SPEED_LEVEL == 2
    assert f"opt=O{jit.SPEED_LEVEL}" in jit.host_fingerprint()  # part of the disk-cache key

"""The FMA roofline kernel (`gemm_kernel.fma_peak_kernel`, the reference row of `bench_mlp`'s
ensemble part): its values against closed forms (each chain is `iters` exact fmas)."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay.codegen import gemm_kernel


@pytest.mark.parametrize("iters,accs", [(0, 12), (1, 1), (7, 3), (1000, 12), (4096, 14)])
def test_fma_peak_values(iters, accs):
    run, flops, code = gemm_kernel.fma_peak_kernel(iters, accs)
    assert flops == 2 * 8 * accs * iters
    buf = np.concatenate([np.arange(1, 9, dtype=np.float32), np.full(8, 0.5, np.float32)])
    want = accs * iters * (buf[:8].astype(np.float64) * 0.5)  # exact in float32 for these sizes
    run(buf.ctypes.data)
    np.testing.assert_array_equal(buf[:8], want.astype(np.float32))
    assert (buf[8:] == 0.5).all()  # y is only read
    del code

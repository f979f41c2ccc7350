"""random_uniform / random_normal: compiled bits vs the numpy Philox reference."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

KEYS = np.array([[0, 0], [42, 7], [-1, 2 ** 62], [2 ** 40 + 3, -5]], np.int64)


def _run(prim, key, shape, dtype):
    b = ir.GraphBuilder(prim)
    k = b.add_input(TensorType(key.shape, dt.int64))
    g = b.build([b.emit(prim, k, shape=shape, dtype=dtype)])
    return codegen.compile_graph(g)(key)[0], ir.interpret(g, [key])[0]


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
@pytest.mark.parametrize("key,shape", [(KEYS, (3, 5)), (KEYS[1], (100_003,)), (KEYS[2:].reshape(2, 1, 2), (7,))])
def test_uniform_bits_are_identical(key, shape, dtype):
    got, want = _run("random_uniform", key, shape, dtype)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
def test_normal_bits_are_identical(dtype):
    """Box-Muller from basic IEEE operations only: compiled == reference, bit for bit (more in test_random_bits.py)."""
    got, want = _run("random_normal", KEYS, (50_000,), dtype)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))

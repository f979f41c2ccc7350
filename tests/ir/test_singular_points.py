"""Derivatives at singular points, signed zeros through max/min, and impossible sizes.

Derivatives are compared with torch where it is installed, and with the analytic values PyTorch
documents otherwise: the composites std and norm have derivative 0 where their value is 0 (a
constant vector, the zero vector), while sqrt itself keeps its infinite slope at 0.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen, ir
from tensorplay.func import grad, jacfwd, jacrev
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

try:
    import torch
    from torch import func as torch_func
except ImportError:  # pragma: no cover - torch is an optional oracle
    torch = None

CASES = [  # (name, tensorplay fn, torch fn or None, input, analytic derivative)
    ("std of a constant vector", tp.std, "std", [2.0, 2.0, 2.0], [0.0, 0.0, 0.0]),
    ("norm at 0", tp.norm, "norm", [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
    ("3-norm at 0", lambda x: tp.norm(x, 3), "norm3", [0.0, 0.0], [0.0, 0.0]),
    ("1-norm at 0", lambda x: tp.norm(x, 1), "norm1", [0.0, 0.0], [0.0, 0.0]),
    ("abs at 0", lambda x: tp.abs(x).sum(), "abs", [0.0, -1.0], [0.0, -1.0]),
    ("pow(x, 2) at 0", lambda x: tp.pow(x, 2.0).sum(), "square", [0.0, 3.0], [0.0, 6.0]),
    ("pow(0, y) for y > 0", lambda y: tp.pow(tp.zeros(2), y).sum(), "pow0", [2.0, 0.5], [0.0, 0.0]),
    ("sqrt at 0", lambda x: tp.sqrt(x).sum(), "sqrt", [0.0, 4.0], [math.inf, 0.25]),
]
# Forward mode pushes a zero tangent through sqrt's infinite slope at 0: 0 * inf (torch agrees).
FORWARD = {"sqrt": [math.inf, math.nan]}


def _torch_fn(key):
    return {
        "std": torch.std, "norm": torch.linalg.norm, "norm3": lambda x: torch.linalg.vector_norm(x, 3),
        "norm1": lambda x: torch.linalg.vector_norm(x, 1), "abs": lambda x: torch.abs(x).sum(),
        "square": lambda x: torch.pow(x, 2.0).sum(), "pow0": lambda y: torch.pow(torch.zeros(2), y).sum(),
        "sqrt": lambda x: torch.sqrt(x).sum(),
    }[key]


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev"])
@pytest.mark.parametrize("name,fn,key,x,want", CASES, ids=[c[0] for c in CASES])
def test_derivative_at_a_singular_point(name, fn, key, x, want, transform):
    f = {"grad": grad, "jacfwd": jacfwd, "jacrev": jacrev}[transform](fn)
    got = f(tp.tensor(x)).numpy()
    if transform == "jacfwd":
        want = FORWARD.get(key, want)
    if torch is not None:
        tf = {"grad": torch_func.grad, "jacfwd": torch_func.jacfwd, "jacrev": torch_func.jacrev}[transform]
        want = tf(_torch_fn(key))(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(got, np.asarray(want, np.float32))


def test_std_and_norm_values_are_unchanged():
    x = tp.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(tp.std(x, 1).numpy(), np.std(x.numpy(), 1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(tp.norm(x, dim=1).numpy(), np.linalg.norm(x.numpy(), axis=1), rtol=1e-6)
    np.testing.assert_allclose(tp.norm(x, 3, dim=1).numpy(), np.sum(np.abs(x.numpy()) ** 3, 1) ** (1 / 3),
                               rtol=1e-6)


# --- signed zeros: one semantics in eager, interpreter and compiled code ---------------------------
ZEROS_AND_NANS = [(-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (0.0, 0.0), (np.nan, 1.0), (1.0, np.nan),
                  (np.nan, -0.0), (-1.0, -0.0), (2.0, 2.0)]


def _pairs(dtype):
    x, y = (np.array(col, dtype) for col in zip(*ZEROS_AND_NANS))
    return np.tile(x, 9), np.tile(y, 9)  # long enough for the vector loop, with a remainder


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_order_signed_zeros_everywhere(op, dtype):
    """IEEE 754-2019 maximum/minimum: NaN propagates, and +0 is larger than -0."""
    x, y = _pairs(dtype)
    want = np.where(np.isnan(x) | np.isnan(y), np.nan,
                    (np.maximum if op == "max" else np.minimum)(x, y))
    zero = (x == 0) & (y == 0)
    signs = np.signbit(x) & np.signbit(y) if op == "max" else np.signbit(x) | np.signbit(y)
    want = np.where(zero, np.where(signs, -0.0, 0.0), want).astype(dtype)
    b = ir.GraphBuilder()
    vx, vy = (b.add_input(TensorType(x.shape, dt.from_numpy(np.dtype(dtype)))) for _ in range(2))
    g = b.build([b.emit(op, vx, vy)])
    eager = (tp.maximum if op == "max" else tp.minimum)(tp.tensor(x), tp.tensor(y)).numpy()
    interp = ir.interpret(g, [x, y])[0]
    compiled = codegen.compile_graph(g)(x, y)[0]
    for got in (eager, interp, compiled):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_atan2_downstream_of_max_agrees():
    """atan2(max(-0, +0), -1) is +pi in every mode (a sign flip of the zero would give -pi)."""
    x, y = tp.tensor([-0.0, 0.0, -0.0]), tp.tensor([0.0, -0.0, -0.0])

    def f(a, b):
        return tp.atan2(tp.maximum(a, b), -tp.ones(3))
    want = np.array([math.pi, math.pi, -math.pi], np.float32)
    np.testing.assert_array_equal(f(x, y).numpy(), want)
    np.testing.assert_array_equal(tp.compile(f)(x, y).numpy(), want)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_max_min_values_match_torch():
    x, y = _pairs(np.float32)
    for ours, theirs in ((tp.maximum, torch.maximum), (tp.minimum, torch.minimum)):
        got = ours(tp.tensor(x), tp.tensor(y)).numpy()
        np.testing.assert_array_equal(got, theirs(torch.tensor(x), torch.tensor(y)).numpy())  # -0 == +0 here


# --- impossible sizes ---------------------------------------------------------------------------
def test_impossible_size_is_an_error_at_trace_time():
    f = tp.compile(lambda x: x.expand(2 ** 31, 2 ** 31).sum())
    with pytest.raises(ValueError, match=r"broadcast_in_dim.*4611686018427387904 elements"):
        f(tp.ones(1))


def test_impossible_size_in_the_builder_names_the_op():
    b = ir.GraphBuilder()
    x = b.add_input(TensorType((1,), dt.float64))
    with pytest.raises(ValueError, match=r"broadcast_in_dim: result tensor<4294967296x4294967296xf64>"):
        b.broadcast_in_dim(x, shape=(2 ** 32, 2 ** 32), broadcast_dimensions=(1,))
    b.broadcast_in_dim(x, shape=(2 ** 20, 2 ** 20), broadcast_dimensions=(1,))  # large but possible: fine

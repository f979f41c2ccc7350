"""The torch.func tutorials run with tensorplay imported as torch and give torch's numbers (float32).

Each tutorial (tests/tutorials/_tutorials.py) runs twice from the same initial weights: with
PyTorch and with tensorplay; every result is compared. Skipped when torch is not installed.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay

from . import _tutorials as T

torch = pytest.importorskip("torch")

RTOL, ATOL = 2e-4, 2e-5


def compare(ours: dict, theirs: dict, rtol=RTOL, atol=ATOL):
    assert set(ours) == set(theirs)
    for k in theirs:
        assert ours[k].shape == theirs[k].shape, k
        np.testing.assert_allclose(ours[k], theirs[k], rtol=rtol, atol=atol, err_msg=k)


def rng(seed=0):
    return np.random.default_rng(seed)


def test_per_sample_grads():
    w = T.weights_for(T.CNN_SHAPES, 0)
    data = rng(1).normal(size=(6, 1, 12, 12)).astype(np.float32)
    targets = rng(2).integers(0, 10, size=6)
    ours, theirs = T.per_sample_grads(tensorplay, w, data, targets), T.per_sample_grads(torch, w, data, targets)
    compare(ours, theirs)
    for k in T.CNN_SHAPES:  # the loop and vmap agree too
        np.testing.assert_allclose(ours[f"vmap.{k}"], ours[f"loop.{k}"], rtol=RTOL, atol=ATOL)


def test_model_ensembling():
    ws = [T.weights_for(T.MLP_SHAPES, s) for s in range(3)]
    minibatches = rng(3).normal(size=(3, 5, 8)).astype(np.float32)
    ours, theirs = T.ensembling(tensorplay, ws, minibatches), T.ensembling(torch, ws, minibatches)
    compare(ours, theirs)
    np.testing.assert_allclose(ours["vmap_same"], ours["loop_same"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ours["vmap_distinct"], ours["loop_distinct"], rtol=RTOL, atol=ATOL)


def test_jacobians_hessians_hvp():
    r = rng(4)
    weight, bias = r.normal(size=(5, 4)).astype(np.float32), r.normal(size=(5,)).astype(np.float32)
    x, xs = r.normal(size=(4,)).astype(np.float32), r.normal(size=(3, 4)).astype(np.float32)
    compare(T.jacobians_hessians(tensorplay, weight, bias, x, xs), T.jacobians_hessians(torch, weight, bias, x, xs))


def test_neural_tangent_kernels():
    w = T.weights_for(T.NTK_SHAPES, 5)
    x_train = rng(6).normal(size=(3, 1, 6, 6)).astype(np.float32)
    x_test = rng(7).normal(size=(2, 1, 6, 6)).astype(np.float32)
    ours = T.neural_tangent_kernels(tensorplay, w, x_train, x_test)
    compare(ours, T.neural_tangent_kernels(torch, w, x_train, x_test), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours["ntk_vps"], ours["full"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(np.trace(ours["full"], axis1=2, axis2=3), ours["trace"], rtol=1e-3, atol=1e-4)


def test_maml_regression():
    r = rng(8)
    ws = [(r.normal(size=s) * 0.5).astype(np.float32) for s in T.MAML_SHAPES]
    amp, phase = r.uniform(0.5, 2, size=(4, 1, 1)), r.uniform(0, np.pi, size=(4, 1, 1))
    xs, xq = r.uniform(-5, 5, size=(4, 5, 1)), r.uniform(-5, 5, size=(4, 5, 1))
    tasks = [a.astype(np.float32) for a in (xs, amp * np.sin(xs + phase), xq, amp * np.sin(xq + phase))]
    ours, theirs = T.maml_regression(tensorplay, ws, tasks), T.maml_regression(torch, ws, tasks)
    compare(ours, theirs, rtol=1e-3, atol=1e-4)


def test_training_loop_dataloader_clipping_steplr():
    w = T.weights_for(T.TRAIN_SHAPES, 9)
    r = rng(10)
    x = r.normal(size=(48, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0).astype(np.int64)
    ours, theirs = T.training_loop(tensorplay, w, x, y), T.training_loop(torch, w, x, y)
    compare(ours, theirs, rtol=1e-3, atol=1e-4)
    assert ours["losses"][-1] < ours["losses"][0]

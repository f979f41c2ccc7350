"""Helpers shared by the torch-oracle tests of tests/nn and tests/optim (imported after ``pytest.importorskip("torch")``)."""
import numpy as np
import pytest
import torch

import tensorplay as tp


@pytest.fixture(autouse=True)
def torch_float64():
    """Run with torch's default dtype float64 (test modules import this autouse fixture by name)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def copy_from_torch(tp_module, torch_module):
    """Load torch's state into the tensorplay module (same state-dict keys required)."""
    sd = {k: tp.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    assert list(sd) == list(tp_module.state_dict())
    tp_module.load_state_dict(sd)
    return tp_module


def check(a, b, tol=1e-9):
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)

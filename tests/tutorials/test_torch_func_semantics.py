"""torch.func semantics that ported code relies on: misuse errors are RuntimeError (as torch.func raises),
jvp without primals is a clear error, masked_fill_/index_fill_ on expanded tensors warn and write as torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import FuncTypeError, FuncValueError, grad, jvp, vjp


MISUSES = [
    ("argnums out of range", lambda: grad(lambda x: x, argnums=3)(tp.ones(()))),
    ("repeated argnums", lambda: grad(lambda x: x, argnums=(0, 0))(tp.ones(()))),
    ("grad of a tuple", lambda: grad(lambda x: (x, x))(tp.ones(()))),
    ("grad of a float", lambda: grad(lambda x: 3.0)(tp.ones(()))),
    ("grad of a vector", lambda: grad(lambda x: x)(tp.ones(2))),
    ("vjp cotangent structure", lambda: vjp(lambda x: x, tp.ones(2))[1]((tp.ones(2), tp.ones(2)))),
    ("vjp cotangent shape", lambda: vjp(lambda x: x, tp.ones(2))[1](tp.ones(3))),
    ("jvp tangent shape", lambda: jvp(lambda x: x, (tp.ones(2),), (tp.ones(3),))),
    ("jvp without primals", lambda: jvp(lambda: tp.ones(2), (), ())),
]


@pytest.mark.parametrize("what, call", MISUSES, ids=[m[0] for m in MISUSES])
def test_misuse_is_a_runtime_error_as_in_torch_func(what, call):
    with pytest.raises(RuntimeError):
        call()


@pytest.mark.parametrize("what, call", MISUSES, ids=[m[0] for m in MISUSES])
def test_torch_func_raises_runtime_error_too(what, call):
    torch = pytest.importorskip("torch")
    import tensorplay.func as ours

    fn = {"argnums out of range": lambda: torch.func.grad(lambda x: x, argnums=3)(torch.ones(())),
          "repeated argnums": lambda: torch.func.grad(lambda x: x, argnums=(0, 0))(torch.ones(())),
          "grad of a tuple": lambda: torch.func.grad(lambda x: (x, x))(torch.ones(())),
          "grad of a float": lambda: torch.func.grad(lambda x: 3.0)(torch.ones(())),
          "grad of a vector": lambda: torch.func.grad(lambda x: x)(torch.ones(2)),
          "vjp cotangent structure": lambda: torch.func.vjp(lambda x: x, torch.ones(2))[1](
              (torch.ones(2), torch.ones(2))),
          "vjp cotangent shape": lambda: torch.func.vjp(lambda x: x, torch.ones(2))[1](torch.ones(3)),
          "jvp tangent shape": lambda: torch.func.jvp(lambda x: x, (torch.ones(2),), (torch.ones(3),)),
          "jvp without primals": lambda: torch.func.jvp(lambda: torch.ones(2), (), ())}[what]
    with pytest.raises(RuntimeError):
        fn()
    assert ours.FuncValueError is FuncValueError


def test_func_errors_are_also_value_and_type_errors():
    assert issubclass(FuncValueError, ValueError) and issubclass(FuncValueError, RuntimeError)
    assert issubclass(FuncTypeError, TypeError) and issubclass(FuncTypeError, RuntimeError)
    with pytest.raises(FuncValueError, match="at least one tensor"):
        jvp(lambda: tp.ones(2), (), ())
    with pytest.raises(FuncTypeError, match="single tensor"):
        grad(lambda x: (x, x))(tp.ones(()))


def _expanded_fills(lib):
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = lib.zeros(3).expand(2, 3)
        x.masked_fill_(lib.tensor([[True, False, False], [False, False, True]]), 1.5)
        out.append(x.numpy().copy())
        y = lib.zeros(3).expand(2, 3)
        y.index_fill_(1, lib.tensor([1]), 2.0)
        out.append(y.numpy().copy())
        z = lib.tensor([float("nan"), 0.0, 0.0]).expand(2, 3)
        z.masked_fill_(lib.tensor([[True, False, False], [False, False, False]]), 4.0)
        out.append(z.numpy().copy())
    return out, [str(w.message).split(" on ")[0] for w in caught if "expanded" in str(w.message)]


def test_fills_of_expanded_tensors_warn_and_write_through():
    ours, warned = _expanded_fills(tp)
    np.testing.assert_array_equal(ours[0], [[1.5, 0, 1.5], [1.5, 0, 1.5]])
    np.testing.assert_array_equal(ours[1], [[0, 2, 0], [0, 2, 0]])
    np.testing.assert_array_equal(ours[2], [[4, 0, 0], [4, 0, 0]])
    assert warned == ["Use of masked_fill_", "Use of index_fill_", "Use of masked_fill_"]
    with pytest.raises(RuntimeError, match="single memory location"):
        tp.zeros(3).expand(2, 3).add_(1.0)  # other in-place ops stay errors, as in torch


def test_fills_of_expanded_tensors_match_torch():
    torch = pytest.importorskip("torch")
    ours, warned = _expanded_fills(tp)
    theirs, twarned = _expanded_fills(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    assert warned == twarned

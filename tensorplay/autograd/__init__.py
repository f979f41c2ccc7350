"""PyTorch's autograd on the tensorplay engine: the tape is an IR graph.

Eager ops on tensors that require grad are recorded (`_record`); `backward` / `grad` turn the
records into a graph and run the vjp pass on it, compiled and cached by the graph's structure
(`_engine`), so a training loop compiles its backward once.

>>> import tensorplay as tp
>>> w = tp.tensor([1.0, -2.0], requires_grad=True)
>>> loss = (w * w).sum()
>>> loss.grad_fn.name()
'ReduceSumBackward0'
>>> loss.backward()
>>> w.grad
tensor([ 2., -4.])
"""
from ._tensor_api import backward, clear_grad, grad
from . import functional  # noqa: F401  (torch.autograd.functional)
from .._legacy import Variable
from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)

__all__ = ["Variable", "Function", "FunctionCtx", "backward", "grad", "clear_grad", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled",
           "is_grad_enabled", "is_inference_mode_enabled"]

"""``torch.autograd.Function``: a custom backward written as a class, on top of `tensorplay.func.custom_vjp`.

Subclass it with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``; call it with
``MyFn.apply(*args)``. ``ctx.save_for_backward(*tensors)`` keeps tensors for the backward pass
(``ctx.saved_tensors``); other attributes set on ``ctx`` in `forward` are seen by `backward`.
`backward` returns one gradient per argument of `forward` (None for non-tensors and for
arguments without one). Because the rule is a `custom_vjp`, it holds for ``loss.backward()``,
``autograd.grad`` and the transforms (``grad``, ``vjp``, ``vmap`` of them) alike.

>>> import tensorplay as tp
>>> class Exp(Function):
...     @staticmethod
...     def forward(ctx, x):
...         y = x.exp()
...         ctx.save_for_backward(y)
...         return y
...     @staticmethod
...     def backward(ctx, g):
...         (y,) = ctx.saved_tensors
...         return g * y
>>> x = tp.tensor([0.0, 1.0], requires_grad=True)
>>> Exp.apply(x).sum().backward()
>>> [round(v, 4) for v in x.grad.tolist()]
[1.0, 2.7183]
"""
from __future__ import annotations

from .._tensor import Tensor

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """What `forward` and `backward` share: saved tensors and any attributes `forward` sets."""

    def __init__(self):
        self.saved_tensors: tuple = ()
        self.needs_input_grad: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors (or None), but argument {i} is a "
                                f"{type(t).__name__}")
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors) -> None:
        """Accepted for compatibility: integer outputs are never differentiated anyway."""

    def set_materialize_grads(self, value: bool) -> None:
        """Accepted for compatibility: gradients reach `backward` as tensors (zeros when unused)."""


class Function:
    """Base class of custom autograd functions (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args):
        from ..func import custom_vjp

        if any(k in cls.__dict__ for k in ("setup_context",)):
            raise NotImplementedError(f"{cls.__name__}: the setup_context style of autograd.Function is not "
                                      f"supported; compute in forward(ctx, *args)")
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not tensor_pos:
            return cls.forward(FunctionCtx(), *args)
        shared = {}

        def call_args(tensors):
            full = list(args)
            for i, t in zip(tensor_pos, tensors):
                full[i] = t
            return full

        def run_forward(*tensors):
            ctx = FunctionCtx()
            ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.dtype.is_floating_point for a in args)
            out = cls.forward(ctx, *call_args(tensors))
            shared["ctx"] = ctx
            return out, ctx

        def primal(*tensors):
            return run_forward(*tensors)[0]

        def fwd(*tensors):
            out, ctx = run_forward(*tensors)
            saved = tuple(t for t in ctx.saved_tensors)
            return out, saved

        def bwd(saved, g):
            ctx = FunctionCtx()
            ctx.__dict__.update({k: v for k, v in shared["ctx"].__dict__.items() if k != "saved_tensors"})
            ctx.saved_tensors = tuple(saved)
            grads = cls.backward(ctx, *(g if isinstance(g, tuple) else (g,)))
            grads = grads if isinstance(grads, tuple) else (grads,)
            if len(grads) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(grads)})")
            return tuple(grads[i] for i in tensor_pos)

        f = custom_vjp(primal)
        f.defvjp(fwd, bwd)
        return f(*[args[i] for i in tensor_pos])

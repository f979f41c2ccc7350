"""Tensor hooks: ``t.register_hook(fn)`` on a leaf that requires grad.

Each time a gradient for the tensor is computed (``backward``, ``autograd.grad``), the hooks
run in registration order; a hook returning a tensor replaces the gradient (before it
accumulates into ``.grad``), one returning None only observes it. ``handle.remove()`` takes a
hook off. Hooks on non-leaf tensors are not supported (the backward graph runs as one
compiled unit, with no point to intercept an intermediate gradient): that is a clear error.

>>> import tensorplay as tp
>>> w = tp.tensor([1.0, 2.0], requires_grad=True)
>>> h = w.register_hook(lambda g: g * 10)
>>> (w * w).sum().backward()
>>> w.grad
tensor([20., 40.])
>>> h.remove()
"""
from __future__ import annotations

import itertools

__all__ = ["RemovableHandle", "register_hook", "apply_hooks"]

_ids = itertools.count()


class RemovableHandle:
    """What `register_hook` returns: ``remove()`` unregisters the hook (again: a no-op)."""

    def __init__(self, hooks: dict, key: int):
        self._hooks, self.id = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_hook(self, hook):
    """Run `hook(grad)` whenever this leaf's gradient is computed; a returned tensor replaces the gradient."""
    d = self.__dict__
    if not d.get("_rg"):
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not callable(hook):
        raise TypeError(f"register_hook: expected a callable, got {type(hook).__name__}")
    if d.get("_ag") is not None:
        raise NotImplementedError(f"register_hook: hooks on non-leaf tensors (this one comes from "
                                  f"{d['_ag'].name()}) are not supported; register it on a leaf, or use "
                                  f"autograd.grad on this tensor")
    hooks = d.setdefault("_hooks", {})
    key = next(_ids)
    hooks[key] = hook
    return RemovableHandle(hooks, key)


def apply_hooks(t, grad):
    """`grad` after `t`'s hooks (each may replace it)."""
    hooks = t.__dict__.get("_hooks")
    if not hooks:
        return grad
    from .._tensor import Tensor

    for hook in list(hooks.values()):
        out = hook(grad)
        if out is not None:
            if not isinstance(out, Tensor) or tuple(out.shape) != tuple(grad.shape):
                raise RuntimeError(f"hook returned {type(out).__name__} "
                                   f"{tuple(out.shape) if isinstance(out, Tensor) else ''}; expected a tensor of "
                                   f"shape {tuple(grad.shape)} or None")
            grad = out
    return grad

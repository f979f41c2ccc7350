"""Gradient clipping over the ``.grad`` of parameters, with torch's formulas.

tensorplay has no autograd tape, so ``.grad`` holds whatever the training loop put there
(for example the values of ``tensorplay.func.grad``); parameters without one are skipped.
`get_total_norm` takes gradient tensors directly, for gradients kept in a dict.

>>> import tensorplay as tp
>>> from tensorplay import nn
>>> w = tp.zeros(2)
>>> w.grad = tp.tensor([3.0, 4.0])
>>> nn.utils.clip_grad_norm_([w], max_norm=1.0)
tensor(5.)
>>> w.grad
tensor([0.6000, 0.8000])
"""
from __future__ import annotations

import math

from ..._tensor import Tensor
from ...ops import elementwise as ew
from ...ops import reduction as _red
from ...ops import shape as _sh
from ...ops._common import convert


def _tensors(tensors, what: str) -> list[Tensor]:
    items = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    for t in items:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected tensors, got {type(t).__name__}")
    return [t for t in items if t is not None]


def _grads(parameters, what: str) -> list[Tensor]:
    return [g for g in (p.__dict__.get("grad") for p in _tensors(parameters, what)) if g is not None]


def _vector_norm(t: Tensor, p: float) -> Tensor:
    a = ew.abs(t)
    if p == math.inf:
        return _red.amax(a) if t.numel() else convert(_red.sum(a), a.dtype)
    if p == -math.inf:
        return _red.amin(a)
    if p == 0:
        return _red.sum(convert(ew.ne(t, 0), t.dtype))
    if p == 1:
        return _red.sum(a)
    if p == 2:
        return ew.sqrt(_red.sum(ew.mul(a, a)))
    return ew.pow(_red.sum(ew.pow(a, float(p))), 1.0 / p)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The `norm_type`-norm of all `tensors` together (as if concatenated into one vector).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.utils.get_total_norm([tp.tensor([3.0]), tp.tensor([4.0])])
    tensor(5.)
    """
    items = _tensors(tensors, "get_total_norm")
    norm_type = float(norm_type)
    if not items:
        from ...ops.creation import tensor

        return tensor(0.0)
    norms = [_vector_norm(t, norm_type) for t in items]
    total = _vector_norm(_sh.stack([convert(n, norms[0].dtype) for n in norms]), norm_type)
    if error_if_nonfinite and not total.is_traced and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale every ``.grad`` by ``min(1, max_norm / (total_norm + 1e-6))`` in place.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> w = tp.zeros(2)
    >>> w.grad = tp.tensor([3.0, 4.0])
    >>> nn.utils.clip_grads_with_norm_([w], 2.5, nn.utils.get_total_norm([w.grad]))
    >>> w.grad
    tensor([1.5000, 2.0000])
    """
    grads = _grads(parameters, "clip_grads_with_norm_")
    if not grads:
        return
    coef = ew.clamp(ew.div(float(max_norm), ew.add(total_norm, 1e-6)), max=1.0)
    for g in grads:
        g.mul_(convert(coef, g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Rescale the ``.grad`` of `parameters` in place so that their total norm is at most `max_norm`.

    Returns the total norm before clipping (torch's formula: the scale is
    ``min(1, max_norm / (total_norm + 1e-6))``).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> a, b = tp.zeros(1), tp.zeros(1)
    >>> a.grad, b.grad = tp.tensor([6.0]), tp.tensor([8.0])
    >>> nn.utils.clip_grad_norm_([a, b], max_norm=5.0), a.grad, b.grad
    (tensor(10.), tensor([3.0000]), tensor([4.0000]))
    """
    params = _tensors(parameters, "clip_grad_norm_")
    total = get_total_norm(_grads(params, "clip_grad_norm_"), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every ``.grad`` of `parameters` to ``[-clip_value, clip_value]`` in place.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> w = tp.zeros(3)
    >>> w.grad = tp.tensor([-2.0, 0.5, 3.0])
    >>> nn.utils.clip_grad_value_(w, 1.0)
    >>> w.grad
    tensor([-1.0000,  0.5000,  1.0000])
    """
    clip_value = float(clip_value)
    for g in _grads(parameters, "clip_grad_value_"):
        g.clamp_(min=-clip_value, max=clip_value)

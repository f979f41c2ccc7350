"""`Adam` and `AdamW`."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .functional import _check_adam, adam_update
from ._fused import adam_step
from .optimizer import Optimizer, _write


class Adam(Optimizer):
    """Adam (Kingma & Ba) with PyTorch's update rule, updating the parameters in place.

    `weight_decay` adds ``weight_decay * param`` to the gradient (L2); see `AdamW` for the
    decoupled form. Gradients come from `step` as for `SGD`.

    By default every parameter of a group is updated by one compiled executable (torch's
    ``foreach``/``fused`` paths; the learning rate and step counts are inputs, so schedulers
    never recompile it); ``foreach=False`` or ``fused=False`` updates one tensor at a time.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([1.0, -1.0])
    >>> opt = optim.Adam({"w": w}, lr=0.1)
    >>> opt.step({"w": tp.tensor([2.0, -3.0])})
    >>> w
    tensor([ 0.9000, -0.9000])
    """

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 amsgrad: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 fused: bool | None = None):
        _check_adam(lr, betas, eps, weight_decay)
        if foreach is False and fused:
            raise ValueError(f"{type(self).__name__}: fused=True and foreach=False contradict each other")
        multi = False if (foreach is False or fused is False) else None
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=multi))

    def _update_group(self, params, grads, states, group) -> None:
        adam_step(params, grads, states, group, self._decoupled)

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        beta1, beta2 = group["betas"]
        new, m, v, mx = adam_update(param, grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"),
                                    state["step"], lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                                    weight_decay=group["weight_decay"], amsgrad=group["amsgrad"],
                                    maximize=group["maximize"], decoupled=self._decoupled)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = mx
        _write(param, new)


class AdamW(Adam):
    """Adam with decoupled weight decay: ``param *= 1 - lr * weight_decay`` before the Adam step."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize, fused=fused)

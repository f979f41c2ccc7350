"""`Adagrad`."""
from __future__ import annotations

from ..ops.creation import full_like
from .functional import _check_adagrad, adagrad_update
from .optimizer import Optimizer, _write


class Adagrad(Optimizer):
    """Adagrad with PyTorch's update rule and defaults, updating the parameters in place.

    Gradients come from `step` as for `SGD`.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([1.0, -1.0])
    >>> opt = optim.Adagrad([w], lr=0.5)
    >>> opt.step([tp.tensor([2.0, -3.0])])
    >>> w  # 1 - 0.5 * g / sqrt(g^2)
    tensor([ 0.5000, -0.5000])
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None):
        _check_adagrad(lr, lr_decay, weight_decay, initial_accumulator_value, eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
        for group in self.param_groups:  # torch creates the state up front
            for p in group["params"]:
                self.state[p] = {"step": 0, "sum": full_like(p, group["initial_accumulator_value"])}

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state.update(step=0, sum=full_like(param, group["initial_accumulator_value"]))
        state["step"] += 1
        new, state["sum"] = adagrad_update(param, grad, state["sum"], state["step"], lr=group["lr"],
                                           lr_decay=group["lr_decay"], weight_decay=group["weight_decay"],
                                           eps=group["eps"], maximize=group["maximize"])
        _write(param, new)

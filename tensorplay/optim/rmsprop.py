"""`RMSprop`."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .functional import _check_rmsprop, rmsprop_update
from .optimizer import Optimizer, _write


class RMSprop(Optimizer):
    """RMSprop with PyTorch's update rule and defaults, updating the parameters in place.

    Gradients come from `step` as for `SGD`.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([1.0, -1.0])
    >>> opt = optim.RMSprop([w], lr=0.01)
    >>> opt.step([tp.tensor([2.0, -3.0])])
    >>> w  # 1 - 0.01 * g / (sqrt(0.01 * g^2) + eps) = 1 - 0.1 * sign(g)
    tensor([ 0.9000, -0.9000])
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum: float = 0.0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        _check_rmsprop(lr, alpha, eps, weight_decay, momentum)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros_like(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        state["step"] += 1
        new, sq, ga, buf = rmsprop_update(param, grad, state["square_avg"], state.get("grad_avg"),
                                          state.get("momentum_buffer"), lr=group["lr"], alpha=group["alpha"],
                                          eps=group["eps"], weight_decay=group["weight_decay"],
                                          momentum=group["momentum"], centered=group["centered"],
                                          maximize=group["maximize"])
        state["square_avg"] = sq
        if group["centered"]:
            state["grad_avg"] = ga
        if group["momentum"] > 0:
            state["momentum_buffer"] = buf
        _write(param, new)

"""`SGD` with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from .functional import _check_sgd, sgd_update
from .optimizer import Optimizer, _write


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's update rule), updating the parameters in place.

    Gradients come from `step`: a dict keyed like ``named_parameters()`` (build the
    optimizer from ``model.named_parameters()``), a sequence aligned with the parameters,
    or each parameter's ``.grad`` when called without arguments.

    >>> import tensorplay as tp
    >>> from tensorplay import nn, optim
    >>> from tensorplay.func import functional_call, grad
    >>> model = nn.Linear(3, 1)
    >>> opt = optim.SGD(model.named_parameters(), lr=0.1, momentum=0.9)
    >>> x, y = tp.randn(8, 3), tp.randn(8, 1)
    >>> def loss(params):
    ...     return ((functional_call(model, params, x) - y) ** 2).mean()
    >>> params = dict(model.named_parameters())
    >>> before = loss(params).item()
    >>> for _ in range(20):
    ...     opt.step(grad(loss)(params))
    >>> loss(params).item() < before
    True
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False):
        _check_sgd(lr, momentum, dampening, weight_decay, nesterov)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _update(self, param, grad, group, state) -> None:
        new, buf = sgd_update(param, grad, state.get("momentum_buffer"), lr=group["lr"], momentum=group["momentum"],
                              dampening=group["dampening"], weight_decay=group["weight_decay"],
                              nesterov=group["nesterov"], maximize=group["maximize"])
        if group["momentum"]:
            state["momentum_buffer"] = buf.clone() if buf is grad else buf
        _write(param, new)

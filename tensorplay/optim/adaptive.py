"""`Adadelta`, `Adamax`, `NAdam`, `RAdam`: torch.optim's other adaptive-rate optimizers, with its update
rules, defaults and state names, updating the parameters in place (gradients from `step` as for `SGD`).

>>> import tensorplay as tp
>>> from tensorplay import optim
>>> w = tp.tensor([1.0, -1.0])
>>> opt = optim.Adamax([w], lr=0.1)
>>> opt.step([tp.tensor([2.0, -3.0])])
>>> w  # the first Adamax step moves each weight by lr against the gradient's sign
tensor([ 0.9000, -0.9000])
"""
from __future__ import annotations

import math

from ..ops import elementwise as ew
from ..ops.creation import zeros_like
from .optimizer import Optimizer, _write

__all__ = ["Adadelta", "Adamax", "NAdam", "RAdam"]


def _check(name: str, lr, eps, weight_decay, betas=None, **extra) -> None:
    if lr < 0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps < 0:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if weight_decay < 0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if betas is not None:
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    for key, (value, lo, hi) in extra.items():
        if not lo <= value <= hi:
            raise ValueError(f"Invalid {key} value: {value}")


def _grad(param, grad, group):
    g = ew.neg(grad) if group.get("maximize") else grad
    return g


class Adadelta(Optimizer):
    """Adadelta: steps of ``sqrt(u + eps) / sqrt(v + eps) * g`` with running averages of squared gradients
    (v) and squared steps (u), scaled by `lr`.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([1.0])
    >>> optim.Adadelta([w]).step([tp.tensor([1.0])])
    >>> round(w.item(), 6)  # 1 - sqrt(1e-6) / sqrt(0.1 + 1e-6)
    0.996838
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        _check("Adadelta", lr, eps, weight_decay, rho=(rho, 0.0, 1.0))
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize, differentiable=differentiable))

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros_like(param)
            state["acc_delta"] = zeros_like(param)
        state["step"] += 1
        rho, eps, g = group["rho"], group["eps"], _grad(param, grad, group)
        if group["weight_decay"]:
            g = ew.add(g, ew.mul(param, group["weight_decay"]))
        v = ew.add(ew.mul(state["square_avg"], rho), ew.mul(ew.mul(g, g), 1 - rho))
        delta = ew.mul(ew.div(ew.sqrt(ew.add(state["acc_delta"], eps)), ew.sqrt(ew.add(v, eps))), g)
        state["acc_delta"] = ew.add(ew.mul(state["acc_delta"], rho), ew.mul(ew.mul(delta, delta), 1 - rho))
        state["square_avg"] = v
        _write(param, ew.sub(param, ew.mul(delta, group["lr"])))


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm, ``u = max(beta2 * u, |g| + eps)``, and bias-corrected steps.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([0.0])
    >>> optim.Adamax([w], lr=0.5).step([tp.tensor([-4.0])])
    >>> w
    tensor([0.5000])
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False, capturable: bool = False):
        _check("Adamax", lr, eps, weight_decay, betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_inf"] = zeros_like(param)
        state["step"] += 1
        (b1, b2), g = group["betas"], _grad(param, grad, group)
        if group["weight_decay"]:
            g = ew.add(g, ew.mul(param, group["weight_decay"]))
        m = ew.add(ew.mul(state["exp_avg"], b1), ew.mul(g, 1 - b1))
        u = ew.maximum(ew.mul(state["exp_inf"], b2), ew.add(ew.abs(g), group["eps"]))
        state["exp_avg"], state["exp_inf"] = m, u
        clr = group["lr"] / (1 - b1 ** state["step"])
        _write(param, ew.sub(param, ew.mul(ew.div(m, u), clr)))


def _weight_decay(param, g, group):
    """(param, grad) after weight decay: decoupled (AdamW-style) shrinks the parameter, else L2 on the grad."""
    wd = group["weight_decay"]
    if not wd:
        return param, g
    if group["decoupled_weight_decay"]:
        return ew.mul(param, 1 - group["lr"] * wd), g
    return param, ew.add(g, ew.mul(param, wd))


class NAdam(Optimizer):
    """Adam with Nesterov momentum and torch's momentum-decay schedule ``mu_t = beta1 (1 - 0.5 * 0.96^(t psi))``.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([1.0])
    >>> optim.NAdam([w], lr=0.1).step([tp.tensor([1.0])])
    >>> w.item() < 1.0
    True
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        _check("NAdam", lr, eps, weight_decay, betas, momentum_decay=(momentum_decay, 0.0, math.inf))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state["step"] = 0
            state["mu_product"] = 1.0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        t, lr, (b1, b2), psi = state["step"], group["lr"], group["betas"], group["momentum_decay"]
        p, g = _weight_decay(param, _grad(param, grad, group), group)
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
        state["mu_product"] *= mu
        mu_product = state["mu_product"]
        m = ew.add(ew.mul(state["exp_avg"], b1), ew.mul(g, 1 - b1))
        v = ew.add(ew.mul(state["exp_avg_sq"], b2), ew.mul(ew.mul(g, g), 1 - b2))
        state["exp_avg"], state["exp_avg_sq"] = m, v
        denom = ew.add(ew.sqrt(ew.div(v, 1 - b2 ** t)), group["eps"])
        p = ew.sub(p, ew.mul(ew.div(g, denom), lr * (1 - mu) / (1 - mu_product)))
        p = ew.sub(p, ew.mul(ew.div(m, denom), lr * mu_next / (1 - mu_product * mu_next)))
        _write(param, p)


class RAdam(Optimizer):
    """Rectified Adam: plain bias-corrected momentum steps while the variance estimate is unreliable
    (``rho_t <= 5``), then Adam steps scaled by the rectification term.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> w = tp.tensor([1.0])
    >>> optim.RAdam([w], lr=0.1).step([tp.tensor([3.0])])
    >>> round(w.item(), 4)  # the first steps are SGD with momentum: 1 - 0.1 * 3
    0.7
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        _check("RAdam", lr, eps, weight_decay, betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def _update(self, param, grad, group, state) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        t, lr, (b1, b2) = state["step"], group["lr"], group["betas"]
        p, g = _weight_decay(param, _grad(param, grad, group), group)
        m = ew.add(ew.mul(state["exp_avg"], b1), ew.mul(g, 1 - b1))
        v = ew.add(ew.mul(state["exp_avg_sq"], b2), ew.mul(ew.mul(g, g), 1 - b2))
        state["exp_avg"], state["exp_avg_sq"] = m, v
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        corrected = ew.div(m, bc1)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * (b2 ** t) / bc2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = ew.div(math.sqrt(bc2), ew.add(ew.sqrt(v), group["eps"]))
            p = ew.sub(p, ew.mul(ew.mul(corrected, adaptive), lr * rect))
        else:
            p = ew.sub(p, ew.mul(corrected, lr))
        _write(param, p)

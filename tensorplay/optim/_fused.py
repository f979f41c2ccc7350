"""The multi-tensor ("foreach"/"fused") optimizer step: every parameter of a group updated by
one compiled executable, as torch's foreach and fused paths do.

The update rules are the per-tensor ones of `optim.functional`, traced once over lists of
tensors and compiled with `tp.compile` as a pure function; its results are stored into the
parameters in place, and become the optimizer's new state tensors. Values that change from step to
step -- the learning rate and betas (schedulers change them) and the step counts -- are tensor
inputs, so they never force a new compile; the other hyper-parameters are part of the compile key.
"""
from __future__ import annotations

import numpy as np

from .._state import STATE
from .._tensor import Tensor
from .._views import _eager_store
from ..autograd._record import bump_version
from ..compile import compile as tp_compile
from ..ops import creation
from .functional import adam_update

__all__ = ["fusable", "adam_step", "write_params"]


def fusable(params: list[Tensor], grads: list[Tensor]) -> bool:
    """The compiled path applies: concrete (untraced) tensors, outside any transform."""
    if STATE.stack:
        return False
    return all(t._trace is None for t in params) and all(g._trace is None for g in grads)


def _adam_all(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, rates, hyper):
    """Pure: the new parameters and moments of every tensor (compiled once per `hyper` and shapes).

    `rates` holds (lr, beta1, beta2): schedulers change them (OneCycleLR cycles beta1), so they
    are inputs; `hyper` holds the settings that shape the code."""
    lr, beta1, beta2 = rates[0], rates[1], rates[2]
    eps, weight_decay, amsgrad, maximize, decoupled = hyper
    outs = []
    for i, (p, g, m, v) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        new, m, v, mx = adam_update(p, g, m, v, max_sqs[i] if amsgrad else None, steps[i], lr=lr, beta1=beta1,
                                    beta2=beta2, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                    maximize=maximize, decoupled=decoupled)
        outs.append((new, m, v, mx if amsgrad else None))
    return outs


_adam_compiled = tp_compile(_adam_all)


def write_params(params: list[Tensor], values: list[Tensor]) -> None:
    """Store each new value into its parameter in place (an eager in-place write: the storage version
    is bumped, so autograd sees the change as torch's does)."""
    for p, new in zip(params, values):
        _eager_store(p, new._data, "Adam.step")  # raises torch's errors for what cannot be written
        bump_version(p)


def adam_step(params: list[Tensor], grads: list[Tensor], states: list[dict], group: dict, decoupled: bool) -> None:
    """One Adam/AdamW step of `params` (in place), their `states` updated as the per-tensor path does."""
    amsgrad = bool(group["amsgrad"])
    for p, s in zip(params, states):
        if not s:
            s["step"] = 0
            s["exp_avg"] = creation.zeros_like(p)
            s["exp_avg_sq"] = creation.zeros_like(p)
            if amsgrad:
                s["max_exp_avg_sq"] = creation.zeros_like(p)
        s["step"] += 1
    beta1, beta2 = group["betas"]
    hyper = (float(group["eps"]), float(group["weight_decay"]), amsgrad, bool(group["maximize"]), decoupled)
    steps = Tensor._wrap(np.array([s["step"] for s in states], dtype=np.float64))
    rates = Tensor._wrap(np.array([group["lr"], beta1, beta2], dtype=np.float64))
    outs = _adam_compiled(list(params), list(grads), [s["exp_avg"] for s in states],
                          [s["exp_avg_sq"] for s in states],
                          [s["max_exp_avg_sq"] for s in states] if amsgrad else [], steps, rates, hyper)
    write_params(params, [o[0] for o in outs])
    for s, (_, m, v, mx) in zip(states, outs):
        s["exp_avg"], s["exp_avg_sq"] = m, v  # the optimizer owns its state: new tensors, no copy
        if amsgrad:
            s["max_exp_avg_sq"] = mx

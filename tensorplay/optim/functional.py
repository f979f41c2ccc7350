"""Pure optimizer updates: ``new_params, new_state = sgd(params, grads, state, lr=...)``.

`params` and `grads` are dicts (or any pytree of the same structure) of
tensors, e.g. ``dict(model.named_parameters())`` and the gradient that
`tensorplay.func.grad` returns for it. Nothing is modified in place, so a
whole training step can run under `tensorplay.compile` or a transform. A
missing (``None``) gradient leaves its parameter unchanged. The optimizer
classes (`SGD`, `Adam`, `AdamW`) use the same per-tensor update rules.

>>> import tensorplay as tp
>>> from tensorplay.optim import functional as optf
>>> params = {"w": tp.tensor([1.0, 2.0])}
>>> grads = {"w": tp.tensor([0.5, -0.5])}
>>> new_params, state = optf.sgd(params, grads, None, lr=0.1)
>>> new_params["w"]
tensor([0.9500, 2.0500])
>>> new_params, state = optf.adam(params, grads, None, lr=0.1)
>>> new_params["w"], int(state["step"])
(tensor([0.9000, 2.1000]), 1)
"""
from __future__ import annotations

import math

from tensorplay.ir import dtypes

from .. import _pytree
from .._tensor import Tensor
from ..ops import elementwise as ew
from ..ops.creation import tensor as _tensor, zeros_like

__all__ = ["sgd", "adam", "adamw", "sgd_update", "adam_update", "rmsprop_update", "adagrad_update"]


def _sqrt(x):
    return ew.sqrt(x) if isinstance(x, Tensor) else math.sqrt(x)


# --- per-tensor rules ---------------------------------------------------------------------------
def sgd_update(param: Tensor, grad: Tensor, momentum_buffer: Tensor | None, *, lr: float, momentum: float = 0.0,
               dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
               maximize: bool = False) -> tuple[Tensor, Tensor | None]:
    """One SGD step for one tensor (PyTorch's rule); returns (new_param, new_momentum_buffer)."""
    d_p = ew.neg(grad) if maximize else grad
    if weight_decay:
        d_p = ew.add(d_p, ew.mul(param, weight_decay))
    buf = momentum_buffer
    if momentum:
        if buf is None:
            buf = d_p
        else:
            buf = ew.add(ew.mul(buf, momentum), ew.mul(d_p, 1.0 - dampening))
        d_p = ew.add(d_p, ew.mul(buf, momentum)) if nesterov else buf
    return ew.sub(param, ew.mul(d_p, lr)), buf


def adam_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, max_exp_avg_sq, step, *,
                lr: float, beta1: float, beta2: float, eps: float, weight_decay: float = 0.0,
                amsgrad: bool = False, maximize: bool = False, decoupled: bool = False):
    """One Adam (or, with `decoupled`, AdamW) step for one tensor, `step` counting from 1.

    Returns ``(new_param, exp_avg, exp_avg_sq, max_exp_avg_sq)``; `step` may be a number or a 0-d tensor.
    """
    g = ew.neg(grad) if maximize else grad
    if weight_decay:
        if decoupled:
            param = ew.mul(param, 1.0 - lr * weight_decay)
        else:
            g = ew.add(g, ew.mul(param, weight_decay))
    exp_avg = ew.add(ew.mul(exp_avg, beta1), ew.mul(g, 1.0 - beta1))
    exp_avg_sq = ew.add(ew.mul(exp_avg_sq, beta2), ew.mul(ew.mul(g, g), 1.0 - beta2))
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = _sqrt(1 - beta2 ** step)
    second = exp_avg_sq
    if amsgrad:
        max_exp_avg_sq = exp_avg_sq if max_exp_avg_sq is None else ew.maximum(max_exp_avg_sq, exp_avg_sq)
        second = max_exp_avg_sq
    denom = ew.add(ew.div(ew.sqrt(second), bias_correction2_sqrt), eps)
    step_size = ew.div(lr, bias_correction1) if isinstance(bias_correction1, Tensor) else lr / bias_correction1
    new_param = ew.sub(param, ew.mul(ew.div(exp_avg, denom), step_size))
    return new_param, exp_avg, exp_avg_sq, max_exp_avg_sq


def rmsprop_update(param: Tensor, grad: Tensor, square_avg: Tensor, grad_avg, momentum_buffer, *, lr: float,
                   alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                   centered: bool = False, maximize: bool = False):
    """One RMSprop step for one tensor (PyTorch's rule).

    Returns ``(new_param, square_avg, grad_avg, momentum_buffer)``; `grad_avg` is used when
    `centered`, `momentum_buffer` when `momentum` > 0 (pass zeros on the first step).
    """
    g = ew.neg(grad) if maximize else grad
    if weight_decay:
        g = ew.add(g, ew.mul(param, weight_decay))
    square_avg = ew.add(ew.mul(square_avg, alpha), ew.mul(ew.mul(g, g), 1.0 - alpha))
    if centered:
        grad_avg = ew.add(grad_avg, ew.mul(ew.sub(g, grad_avg), 1.0 - alpha))  # lerp(grad_avg, g, 1 - alpha)
        avg = ew.sqrt(ew.sub(square_avg, ew.mul(grad_avg, grad_avg)))
    else:
        avg = ew.sqrt(square_avg)
    avg = ew.add(avg, eps)
    if momentum > 0:
        momentum_buffer = ew.add(ew.mul(momentum_buffer, momentum), ew.div(g, avg))
        return ew.sub(param, ew.mul(momentum_buffer, lr)), square_avg, grad_avg, momentum_buffer
    return ew.sub(param, ew.mul(ew.div(g, avg), lr)), square_avg, grad_avg, momentum_buffer


def adagrad_update(param: Tensor, grad: Tensor, state_sum: Tensor, step, *, lr: float, lr_decay: float = 0.0,
                   weight_decay: float = 0.0, eps: float = 1e-10, maximize: bool = False):
    """One Adagrad step for one tensor (PyTorch's rule), `step` counting from 1; returns (new_param, state_sum)."""
    g = ew.neg(grad) if maximize else grad
    if weight_decay:
        g = ew.add(g, ew.mul(param, weight_decay))
    clr = lr / (1 + (step - 1) * lr_decay)
    state_sum = ew.add(state_sum, ew.mul(g, g))
    std = ew.add(ew.sqrt(state_sum), eps)
    return ew.sub(param, ew.mul(ew.div(g, std), clr)), state_sum


# --- pytree forms -------------------------------------------------------------------------------
def _leaves(params, grads, op: str):
    p_leaves, tree = _pytree.tree_flatten(params)
    g_leaves = _match(grads, params, tree, op)
    return p_leaves, g_leaves, tree


def _match(grads, params, tree, op: str):
    """Gradient leaves aligned with the parameter leaves (None where a dict gradient lacks a key)."""
    if isinstance(params, dict) and isinstance(grads, dict):
        unknown = sorted(set(grads) - set(params), key=str)
        if unknown:
            raise KeyError(f"{op}: gradients given for unknown parameter names {unknown}")
        grads = {k: grads.get(k) for k in params}
    g_leaves, gtree = _pytree.tree_flatten(grads, is_leaf=lambda x: x is None)
    if len(g_leaves) != tree.num_leaves:
        raise ValueError(f"{op}: gradient structure {gtree} does not match the parameters {tree}")
    return g_leaves


def _state_leaves(state_tree, tree, key, op: str):
    if state_tree is None:
        return [None] * tree.num_leaves
    leaves, stree = _pytree.tree_flatten(state_tree, is_leaf=lambda x: x is None)
    if len(leaves) != tree.num_leaves:
        raise ValueError(f"{op}: state[{key!r}] structure {stree} does not match the parameters {tree}")
    return leaves


def sgd(params, grads, state=None, *, lr: float, momentum: float = 0.0, dampening: float = 0.0,
        weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
    """SGD on a pytree of parameters; returns ``(new_params, new_state)``.

    `state` is None on the first call, then the returned state (``{"momentum_buffer": ...}``).
    """
    _check_sgd(lr, momentum, dampening, weight_decay, nesterov)
    p_leaves, g_leaves, tree = _leaves(params, grads, "sgd")
    bufs = _state_leaves((state or {}).get("momentum_buffer"), tree, "momentum_buffer", "sgd")
    new_p, new_b = [], []
    for p, g, b in zip(p_leaves, g_leaves, bufs):
        if g is None:
            new_p.append(p)
            new_b.append(b)
            continue
        np_, nb = sgd_update(p, g, b, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                             nesterov=nesterov, maximize=maximize)
        new_p.append(np_)
        new_b.append(nb)
    new_state = {"momentum_buffer": _pytree.tree_unflatten(tree, new_b)} if momentum else {}
    return _pytree.tree_unflatten(tree, new_p), new_state


def _adam_like(params, grads, state, op: str, decoupled: bool, *, lr, betas, eps, weight_decay, amsgrad,
               maximize):
    _check_adam(lr, betas, eps, weight_decay)
    p_leaves, g_leaves, tree = _leaves(params, grads, op)
    state = state or {}
    step = state.get("step")
    step = _tensor(1.0, dtype=dtypes.float64) if step is None else ew.add(step, 1.0)
    ms = _state_leaves(state.get("exp_avg"), tree, "exp_avg", op)
    vs = _state_leaves(state.get("exp_avg_sq"), tree, "exp_avg_sq", op)
    maxs = _state_leaves(state.get("max_exp_avg_sq"), tree, "max_exp_avg_sq", op)
    out_p, out_m, out_v, out_max = [], [], [], []
    for p, g, m, v, mx in zip(p_leaves, g_leaves, ms, vs, maxs):
        m = zeros_like(p) if m is None else m
        v = zeros_like(p) if v is None else v
        if g is None:
            out_p.append(p), out_m.append(m), out_v.append(v), out_max.append(mx)
            continue
        np_, m, v, mx = adam_update(p, g, m, v, mx, step, lr=lr, beta1=betas[0], beta2=betas[1], eps=eps,
                                    weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                                    decoupled=decoupled)
        out_p.append(np_), out_m.append(m), out_v.append(v), out_max.append(mx)
    new_state = {"step": step, "exp_avg": _pytree.tree_unflatten(tree, out_m),
                 "exp_avg_sq": _pytree.tree_unflatten(tree, out_v)}
    if amsgrad:
        new_state["max_exp_avg_sq"] = _pytree.tree_unflatten(tree, out_max)
    return _pytree.tree_unflatten(tree, out_p), new_state


def adam(params, grads, state=None, *, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
         weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False):
    """Adam on a pytree of parameters; returns ``(new_params, new_state)``.

    `state` is None on the first call, then the returned state
    (``{"step", "exp_avg", "exp_avg_sq"[, "max_exp_avg_sq"]}``; ``step`` is a 0-d float64 tensor).
    """
    return _adam_like(params, grads, state, "adam", False, lr=lr, betas=betas, eps=eps,
                      weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)


def adamw(params, grads, state=None, *, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
          weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False):
    """AdamW (decoupled weight decay) on a pytree of parameters; returns ``(new_params, new_state)``."""
    return _adam_like(params, grads, state, "adamw", True, lr=lr, betas=betas, eps=eps,
                      weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)


# --- argument checks (shared with the classes) -------------------------------------------------------
_LABELS = {"lr": "learning rate:", "eps": "epsilon value:"}  # torch's wording; other names read "<name> value:"


def _check_non_negative(**values) -> None:
    """torch's "Invalid <what>: <value>" ValueError for the first negative hyper-parameter."""
    for name, v in values.items():
        if v < 0.0:
            raise ValueError(f"Invalid {_LABELS.get(name, name + ' value:')} {v}")


def _check_sgd(lr, momentum, dampening, weight_decay, nesterov) -> None:
    _check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("Nesterov momentum requires a momentum and zero dampening")


def _check_adam(lr, betas, eps, weight_decay) -> None:
    _check_non_negative(lr=lr, eps=eps)
    for i, b in enumerate(betas[:2]):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    _check_non_negative(weight_decay=weight_decay)


def _check_rmsprop(lr, alpha, eps, weight_decay, momentum) -> None:
    _check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)


def _check_adagrad(lr, lr_decay, weight_decay, initial_accumulator_value, eps) -> None:
    _check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, eps=eps)

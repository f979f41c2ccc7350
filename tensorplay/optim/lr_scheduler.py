"""`tensorplay.optim.lr_scheduler`: learning-rate schedules with torch's names, arguments and sequences.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups on every
``step()``; it sets the epoch-0 rate when it is built. The rates follow torch's
recursive ("chainable") formulas, so the sequences match torch's value for value.

>>> import tensorplay as tp
>>> from tensorplay import optim
>>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
>>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for epoch in range(5):
...     lrs.append(sched.get_last_lr()[0])
...     sched.step()
>>> lrs
[1.0, 1.0, 0.5, 0.5, 0.25]
"""
from __future__ import annotations

import math
import types
import warnings
from collections import Counter
from typing import Callable

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "OneCycleLR",
           "ReduceLROnPlateau", "ConstantLR", "LinearLR", "MultiplicativeLR", "CosineAnnealingWarmRestarts",
           "SequentialLR"]


def _check_optimizer(optimizer, name: str) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class: subclasses compute the next rates in ``get_lr()`` from ``last_epoch`` and the current rates."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        _check_optimizer(optimizer, type(self).__name__)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an "
                                   f"optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates set by the last `step` (one per parameter group)."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to `epoch`, deprecated in torch) and write the new rates."""
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
                          "where possible.", UserWarning, stacklevel=2)
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything but the optimizer, as torch."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply the rate by `gamma` every `step_size` epochs.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> s = optim.lr_scheduler.StepLR(optim.SGD([tp.zeros(1)], lr=0.1), step_size=1, gamma=0.1)
    >>> s.step(); s.get_last_lr()
    [0.010000000000000002]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by `gamma` at each milestone epoch (a repeated milestone multiplies repeatedly).

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> s = optim.lr_scheduler.MultiStepLR(optim.SGD([tp.zeros(1)], lr=1.0), milestones=[1, 3], gamma=0.5)
    >>> [s.get_last_lr()[0] for _ in range(4) if s.step() is None]
    [0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        passed = sum(c for m, c in self.milestones.items() if m <= self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by `gamma` every epoch.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> s = optim.lr_scheduler.ExponentialLR(optim.SGD([tp.zeros(1)], lr=1.0), gamma=0.5)
    >>> s.step(); s.step(); s.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base rate down to `eta_min` over `T_max` epochs (and back up after, as torch).

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> s = optim.lr_scheduler.CosineAnnealingLR(optim.SGD([tp.zeros(1)], lr=1.0), T_max=2)
    >>> s.step(); round(s.get_last_lr()[0], 6), s.step(), s.get_last_lr()[0]
    (0.5, None, 0.0)
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):  # noqa: N803
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """The base rate times ``lr_lambda(epoch)`` (one function, or one per parameter group).

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> s = optim.lr_scheduler.LambdaLR(optim.SGD([tp.zeros(1)], lr=2.0), lr_lambda=lambda e: 1 / (e + 1))
    >>> s.step(); s.get_last_lr()
    [1.0]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        _check_optimizer(optimizer, "LambdaLR")
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas: list[Callable] = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, got {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict:
        """As torch: functions and lambdas are not saved; callable objects save their ``__dict__``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else f.__dict__.copy()
                               for f in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


def _anneal_cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _anneal_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up to `max_lr`, then anneal far below the start; momentum cycles the other way.

    Step it after every batch (``total_steps`` or ``epochs * steps_per_epoch`` times in all).

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=0.1, momentum=0.9)
    >>> s = optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> round(s.get_last_lr()[0], 12), opt.param_groups[0]["momentum"]  # max_lr / div_factor
    (0.04, 0.95)
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1):
        _check_optimizer(optimizer, "OneCycleLR")
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not 0 <= pct_start <= 1 or not isinstance(pct_start, (int, float)):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy  # a name, not the function, so that state_dict() is plain data
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * n) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * n) - 2, "start_lr": "max_lr", "end_lr": "initial_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": n - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * n) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": n - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            maxs = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m, b, group in zip(maxs, bases, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m, *group["betas"][1:])
                    else:
                        group["momentum"] = m
                    group["max_momentum"] = m
                    group["base_momentum"] = b
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        return (_anneal_cos if self._anneal_func_type == "cos" else _anneal_linear)(start, end, pct)

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]],
                                                     pct)
                    break
                start = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


class ReduceLROnPlateau:
    """Multiply the rate by `factor` once a metric has stopped improving for `patience` epochs.

    ``step(metric)`` takes the metric (a number or a one-element tensor) each epoch.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
    >>> s = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
    >>> for loss in [3.0, 2.0, 2.0, 2.0]:
    ...     s.step(loss)
    >>> s.get_last_lr()
    [0.1]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0, eps: float = 1e-8):
        _check_optimizer(optimizer, "ReduceLROnPlateau")
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = optimizer
        self.factor = factor
        self.min_lrs = _per_group("min_lr", optimizer, min_lr)
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record this epoch's metric and reduce the rates when it has plateaued."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
                          "where possible.", UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new

    def get_last_lr(self) -> list[float]:
        return self._last_lr

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class ConstantLR(LRScheduler):
    """The rate times `factor` until epoch `total_iters`, then the base rate.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
    >>> s = ConstantLR(opt, factor=0.5, total_iters=2)
    >>> [(s.get_last_lr()[0], s.step())[0] for _ in range(4)]
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The rate scaled linearly from `start_factor` to `end_factor` over `total_iters` epochs.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
    >>> s = LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> [(s.get_last_lr()[0], s.step())[0] for _ in range(4)]
    [0.5, 0.75, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        s, e = self.start_factor, self.end_factor
        return [g["lr"] * (1.0 + (e - s) / (self.total_iters * s + (self.last_epoch - 1) * (e - s))) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        s, e = self.start_factor, self.end_factor
        return [base * (s + (e - s) * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Each epoch multiplies the rate by ``lr_lambda(epoch)`` (one function, or one per group).

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
    >>> s = MultiplicativeLR(opt, lambda epoch: 0.5)
    >>> [(s.get_last_lr()[0], s.step())[0] for _ in range(3)]
    [1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        _check_optimizer(optimizer, "MultiplicativeLR")
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch > 0:
            return [g["lr"] * f(self.last_epoch) for f, g in zip(self.lr_lambdas, groups)]
        return [g["lr"] for g in groups]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base rate to `eta_min` over `T_0` epochs, restarting, each period `T_mult`
    times longer than the last (SGDR).

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
    >>> s = CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> [(s.get_last_lr()[0], s.step())[0] for _ in range(4)]
    [1.0, 0.5, 1.0, 0.5]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or jump to a (fractional) `epoch`, restarting the cosine where a period ends."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class SequentialLR(LRScheduler):
    """Run `schedulers` one after another, switching at the epochs in `milestones`.

    >>> import tensorplay as tp
    >>> from tensorplay import optim
    >>> opt = optim.SGD([tp.zeros(1)], lr=1.0)
    >>> warm = LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> decay = ExponentialLR(opt, gamma=0.5)
    >>> s = SequentialLR(opt, [warm, decay], milestones=[2])
    >>> [(s.get_last_lr()[0], s.step())[0] for _ in range(5)]
    [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        _check_optimizer(optimizer, "SequentialLR")
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(s).__name__} at index {i} with a different optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got {len(schedulers)} schedulers and "
                             f"{len(milestones)} milestones")
        self._schedulers, self._milestones = schedulers, list(milestones)
        self.optimizer = optimizer
        self.last_epoch = last_epoch + 1
        for group in optimizer.param_groups:  # undo the first step each scheduler took when it was built
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        schedulers[0].step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self, epoch=None) -> None:
        """Advance one epoch with the scheduler whose stretch this is (a new one starts from its epoch 0)."""
        import bisect

        self.last_epoch += 1
        idx = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

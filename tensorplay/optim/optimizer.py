"""`Optimizer`: parameter groups, per-parameter state, and where gradients come from.

tensorplay has no autograd tape, so gradients are values: `step` takes them
as a dict keyed like ``named_parameters()`` (the optimizer must then be built
from named parameters: ``model.named_parameters()`` or a dict), as a
sequence aligned with the parameters, or reads each parameter's ``.grad``
attribute when called without arguments. Parameters are updated in place.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Callable

from .._tensor import Tensor
from ..autograd import clear_grad, no_grad
from ._fused import fusable

class Optimizer:
    """Base class: holds ``param_groups`` (dicts with ``"params"`` and hyper-parameters) and ``state``."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = {}
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got a Tensor")
        if isinstance(params, Mapping):
            groups = [{"params": params}]
        else:
            params = list(params)
            if not params:
                raise ValueError("optimizer got an empty parameter list")
            groups = params if isinstance(params[0], Mapping) and "params" in params[0] else [{"params": params}]
        for g in groups:
            self.add_param_group(dict(g))

    # --- groups -----------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group: ``{"params": tensors | (name, tensor) pairs | {name: tensor}, **hyper-parameters}``."""
        params = param_group["params"]
        names = None
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, Mapping):
            names, params = list(params.keys()), list(params.values())
        else:
            params = list(params)
            if params and isinstance(params[0], tuple) and len(params[0]) == 2 and isinstance(params[0][0], str):
                names, params = [n for n, _ in params], [p for _, p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_floating_point():
                raise TypeError(f"optimizer can only optimize floating-point tensors, got {p.dtype.name}")
        group = dict(param_group)
        group["params"] = params
        if names is not None:
            group["param_names"] = names
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("a parameter group contains the same parameter more than once")
        if self.param_groups and (("param_names" in group) != ("param_names" in self.param_groups[0])):
            raise ValueError("all optimizer param groups must be named, or none of them")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the ``.grad`` of every parameter: None (`set_to_none`, torch 2.x's default) or zeros."""
        for g in self.param_groups:
            for p in g["params"]:
                clear_grad(p, set_to_none)

    # --- gradients --------------------------------------------------------------------------------
    def _gradients(self, grads) -> list[list]:
        """Per group, per parameter: the gradient to use (None = skip this parameter)."""
        if grads is None:
            return [[p.__dict__.get("grad") for p in g["params"]] for g in self.param_groups]
        if isinstance(grads, Mapping):
            if "param_names" not in self.param_groups[0]:
                raise ValueError(f"{type(self).__name__}.step(grads): a dict of gradients is keyed by parameter "
                                 f"name, so build the optimizer from named parameters "
                                 f"(model.named_parameters() or a dict of tensors)")
            names = [n for g in self.param_groups for n in g["param_names"]]
            unknown = sorted(set(grads) - set(names), key=str)
            if unknown:
                raise KeyError(f"{type(self).__name__}.step(grads): no parameter named {unknown} "
                               f"(known: {names})")
            return [[grads.get(n) for n in g["param_names"]] for g in self.param_groups]
        grads = list(grads)
        total = sum(len(g["params"]) for g in self.param_groups)
        if len(grads) != total:
            raise ValueError(f"{type(self).__name__}.step(grads): got {len(grads)} gradients for {total} parameters")
        out, i = [], 0
        for g in self.param_groups:
            out.append(grads[i:i + len(g["params"])])
            i += len(g["params"])
        return out

    def step(self, grads=None, closure: Callable | None = None):
        """Update the parameters in place from `grads` (dict by name, sequence, or None for ``.grad``).

        If `closure` is given it is called first and its result returned (PyTorch's protocol).
        """
        loss = closure() if closure is not None else None
        with no_grad():  # parameter updates are not recorded by autograd (as torch's optimizers)
            for group, gs in zip(self.param_groups, self._gradients(grads)):
                pairs = [(p, g) for p, g in zip(group["params"], gs) if g is not None]
                for p, g in pairs:
                    if tuple(g.shape) != tuple(p.shape):
                        raise ValueError(f"{type(self).__name__}.step: gradient of shape {tuple(g.shape)} for a "
                                         f"parameter of shape {tuple(p.shape)}")
                if not pairs:
                    continue
                params, gs = [p for p, _ in pairs], [g for _, g in pairs]
                if group.get("foreach") is not False and self._update_group is not None and fusable(params, gs):
                    self._update_group(params, gs, [self.state.setdefault(p, {}) for p in params], group)
                    continue
                for p, g in pairs:
                    self._update(p, g, group, self.state.setdefault(p, {}))
        return loss

    # The multi-tensor path (`optim._fused`): all parameters of a group in one compiled call, or
    # None where an optimizer has only the per-tensor rule. Groups with ``foreach=False`` (and
    # traced parameters) take the per-tensor path.
    _update_group = None

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        raise NotImplementedError

    # --- checkpointing ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: per-param state}, "param_groups": [... "params": [indices]]}``."""
        index: dict = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and per-parameter state saved by `state_dict`."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params = []
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            params.extend(zip(saved["params"], mine["params"]))
        by_index = dict(params)
        self.state = {}
        for i, s in state_dict["state"].items():
            p = by_index[int(i)]
            self.state[p] = {k: (v.clone() if isinstance(v, Tensor) else v) for k, v in s.items()}
        for mine, saved in zip(self.param_groups, groups):
            for k, v in saved.items():
                if k not in ("params", "param_names"):
                    mine[k] = v

    def __repr__(self) -> str:
        out = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            out += f"\nParameter Group {i}"
            for k in sorted(g):
                if k not in ("params", "param_names"):
                    out += f"\n    {k}: {g[k]}"
        return out + "\n)"


def _write(param: Tensor, value: Tensor) -> None:
    param.copy_(value)


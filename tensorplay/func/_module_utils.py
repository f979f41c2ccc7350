"""Utilities for using `tensorplay.nn` modules under function transforms.

- `functional_call` runs a module with substituted parameters and buffers,
  turning it into a function of them (``grad``/``jacrev`` w.r.t. weights).
- `stack_module_state` stacks the state of identical modules so `vmap` can
  run an ensemble in one call.
- `replace_all_batch_norm_modules_` / `batch_norm_without_running_stats`
  switch batch norm to batch statistics, so no running-statistics update
  happens under a transform.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .._tensor import Tensor

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
           "batch_norm_without_running_stats"]

_MISSING = object()


def _merge_dicts(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, Mapping):
        return dict(parameter_and_buffer_dicts)
    if not isinstance(parameter_and_buffer_dicts, (list, tuple)):
        raise TypeError(f"functional_call: expected parameter_and_buffer_dicts to be a dict or a sequence of dicts, "
                        f"got {type(parameter_and_buffer_dicts).__name__}")
    merged: dict = {}
    seen: dict = {}
    for i, d in enumerate(parameter_and_buffer_dicts):
        if not isinstance(d, Mapping):
            raise TypeError(f"functional_call: element {i} of parameter_and_buffer_dicts is a "
                            f"{type(d).__name__}, expected a dict")
        for k, v in d.items():
            if k in seen:
                raise ValueError(f"functional_call: {k!r} appears in more than one of the dicts passed as "
                                 f"parameter_and_buffer_dicts (dicts {seen[k]} and {i}); which one wins would be "
                                 f"arbitrary, so keys must not overlap")
            seen[k] = i
            merged[k] = v
    return merged


def _slot(module, name: str):
    """(owning submodule, attribute name, container dict or None) for dotted `name`."""
    path, _, attr = name.rpartition(".")
    if not attr:
        raise KeyError(f"functional_call: {name!r} is not a valid parameter or buffer name")
    try:
        owner = module.get_submodule(path)
    except AttributeError as e:
        raise AttributeError(f"functional_call: {name!r} does not name a submodule path of "
                             f"{type(module).__name__}: {e}") from None
    for group in (owner._parameters, owner._buffers):
        if attr in group:
            return owner, attr, group
    return owner, attr, None


def functional_call(module, parameter_and_buffer_dicts, args: Any = (), kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Run `module` with the parameters and buffers given, not its own.

    `parameter_and_buffer_dicts` is a dict (or a sequence of dicts, whose keys must not
    overlap) keyed by the names that ``named_parameters()`` / ``named_buffers()`` report.
    Names not given keep the module's own tensors. A non-tuple `args` is the single
    positional argument. The module's own state is put back afterwards, even if
    ``forward`` raises.

    With `tie_weights` (default), a tensor the module registers under several names
    (shared weights) is replaced under all of them when any one is given; giving
    different tensors for tied names is an error. With `strict`, every parameter and
    buffer must be given and unknown names are rejected. Without it, a name that is a
    plain (non-registered) attribute of a submodule is substituted too.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> from tensorplay.func import functional_call
    >>> model = nn.Linear(3, 2)
    >>> params = {"weight": tp.ones(2, 3), "bias": tp.zeros(2)}
    >>> functional_call(model, params, tp.ones(1, 3)).tolist()
    [[3.0, 3.0]]
    >>> model.weight is dict(model.named_parameters())["weight"]   # own state restored
    True
    """
    from ..nn.modules.module import Module

    if not isinstance(module, Module):
        raise TypeError(f"functional_call: expected a tensorplay.nn.Module, got {type(module).__name__}")
    given = _merge_dicts(parameter_and_buffer_dicts)
    for k in given:
        if not isinstance(k, str):
            raise TypeError(f"functional_call: keys must be strings (dotted names), got {k!r}")
    if kwargs is None:
        kwargs = {}
    if not isinstance(args, tuple):
        args = (args,)

    all_params = list(module.named_parameters(remove_duplicate=False))
    all_buffers = list(module.named_buffers(remove_duplicate=False))
    known = {name for name, _ in all_params + all_buffers}
    if strict:
        missing = sorted(known - set(given))
        unexpected = sorted(set(given) - known)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected))
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing))
            raise RuntimeError(f"functional_call: Error(s) in reparametrizing for {type(module).__name__} "
                               f"(strict=True): " + ". ".join(parts) + ".")

    replacements = dict(given)
    if tie_weights:
        groups: dict[int, list[str]] = {}
        for name, t in all_params + all_buffers:
            groups.setdefault(id(t), []).append(name)
        for names in groups.values():
            if len(names) < 2:
                continue
            provided = [n for n in names if n in given]
            if not provided:
                continue
            values = {id(given[n]) for n in provided}
            if len(values) > 1:
                raise ValueError(f"functional_call: got different values for the tied names {provided}; they share "
                                 f"one tensor in {type(module).__name__}, so give one value for all of them (or pass "
                                 f"tie_weights=False)")
            for n in names:
                replacements.setdefault(n, given[provided[0]])

    # swap in, remembering what to put back
    undo: list = []
    try:
        for name, value in replacements.items():
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"functional_call: the value for {name!r} must be a tensor, got "
                                f"{type(value).__name__}")
            owner, attr, group = _slot(module, name)
            if group is not None:
                undo.append((group, attr, group[attr], None))
                group[attr] = value
            elif attr in owner._modules:
                raise TypeError(f"functional_call: {name!r} names a submodule, not a parameter or buffer")
            else:
                old = owner.__dict__.get(attr, _MISSING)
                undo.append((owner.__dict__, attr, old, "attr"))
                owner.__dict__[attr] = value
        return module(*args, **kwargs)
    finally:
        for container, attr, old, kind in reversed(undo):
            if kind == "attr" and old is _MISSING:
                container.pop(attr, None)
            else:
                container[attr] = old


def stack_module_state(models: Sequence) -> tuple[dict, dict]:
    """Stack the parameters and buffers of identical modules along a new leading dim.

    All models must be of the same class, in the same training mode, with the same
    parameter and buffer names and shapes. Returns ``(params, buffers)`` keyed like
    ``named_parameters()`` / ``named_buffers()``; each value has a leading dim of
    ``len(models)`` and is a new tensor (the models are not aliased).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> from tensorplay.func import functional_call, stack_module_state, vmap
    >>> models = [nn.Linear(3, 2) for _ in range(4)]
    >>> params, buffers = stack_module_state(models)
    >>> params["weight"].shape
    tensorplay.Size(4, 2, 3)
    >>> def call(p, b, x):
    ...     return functional_call(models[0], (p, b), (x,))
    >>> vmap(call, in_dims=(0, 0, None))(params, buffers, tp.ones(5, 3)).shape
    tensorplay.Size(4, 5, 2)
    """
    from ..nn.modules.module import Module
    from ..ops.shape import stack

    models = list(models)
    if not models:
        raise ValueError("stack_module_state: expected at least one model, got an empty sequence")
    for i, m in enumerate(models):
        if not isinstance(m, Module):
            raise TypeError(f"stack_module_state: element {i} is a {type(m).__name__}, not a tensorplay.nn.Module")
    first = models[0]
    for i, m in enumerate(models[1:], 1):
        if type(m) is not type(first):
            raise ValueError(f"stack_module_state: expected all models to be of the same class, but model 0 is "
                             f"{type(first).__name__} and model {i} is {type(m).__name__}")
    modes = {m.training for m in models}
    if len(modes) > 1:
        flags = [m.training for m in models]
        raise ValueError(f"stack_module_state: expected all models to be in the same training mode (all train() or "
                         f"all eval()), got training={flags}; a mixed ensemble would mean two things at once")

    def stacked(get):
        named = [dict(get(m)) for m in models]
        keys = list(named[0])
        for i, d in enumerate(named[1:], 1):
            if list(d) != keys:
                raise ValueError(f"stack_module_state: model {i} has state {sorted(d)} but model 0 has {sorted(keys)}")
        out = {}
        for k in keys:
            shapes = [tuple(d[k].shape) for d in named]
            if len(set(shapes)) > 1:
                raise ValueError(f"stack_module_state: {k!r} has different shapes across the models: {shapes}")
            out[k] = stack([d[k].detach() for d in named])
        return out

    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())


def batch_norm_without_running_stats(module):
    """Make one batch-norm module normalize with batch statistics only (drops its running statistics).

    Sets ``running_mean``, ``running_var`` and ``num_batches_tracked`` to None and
    ``track_running_stats`` to False, so no in-place update happens under a transform.
    Other modules are left alone. Returns the module.

    >>> from tensorplay import nn
    >>> from tensorplay.func import batch_norm_without_running_stats
    >>> bn = batch_norm_without_running_stats(nn.BatchNorm1d(3))
    >>> bn.running_mean is None, bn.track_running_stats
    (True, False)
    """
    from ..nn.modules.batchnorm import _BatchNorm

    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False
    return module


def replace_all_batch_norm_modules_(root):
    """Drop the running statistics of every batch-normalization module in `root`, in place; returns `root`.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> from tensorplay.func import replace_all_batch_norm_modules_, vmap
    >>> net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    >>> replace_all_batch_norm_modules_(net) is net
    True
    >>> [name for name, _ in net.named_buffers()]
    []
    """
    from ..nn.modules.module import Module

    if not isinstance(root, Module):
        raise TypeError(f"replace_all_batch_norm_modules_: expected a tensorplay.nn.Module, got "
                        f"{type(root).__name__}")
    for m in root.modules():
        batch_norm_without_running_stats(m)
    return root

"""`Module`: the base class of every layer, following `torch.nn.Module`.

Parameters, buffers and submodules are registered by attribute assignment
(``self.weight = Parameter(...)``, ``self.fc = Linear(...)``) or explicitly
(`register_parameter`, `register_buffer`, `add_module`). Traversal (`named_*`)
visits modules depth-first in registration order and reports every tensor once
unless ``remove_duplicate=False``, exactly as PyTorch does, so state-dict keys
and ``named_parameters()`` names agree between the two libraries.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from ..._tensor import Tensor
from ..parameter import Parameter


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


class _RemovableHandle:
    """Returned by the hook registrations; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Module:
    """Base class for all neural network modules.

    Subclasses create their parameters and submodules in ``__init__`` (after
    calling ``super().__init__()``) and define ``forward``; calling the module
    runs ``forward``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(3, 2)
    ...         self.register_buffer("scale", tp.ones(2))
    ...     def forward(self, x):
    ...         return self.fc(x) * self.scale
    >>> net = Net()
    >>> [name for name, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
    >>> list(net.state_dict())
    ['scale', 'fc.weight', 'fc.bias']
    >>> net(tp.zeros(4, 3)).shape
    tensorplay.Size(4, 2)
    """

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments; "
                            f"Module.__init__ takes none")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # --- calling ----------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if "_forward_pre_hooks" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: Module.__init__() was not called "
                               f"(call super().__init__() first in __init__)")
        for hook in list(self._forward_pre_hooks.values()):
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            res = hook(self, args, out)
            if res is not None:
                out = res
        return out

    def register_forward_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """Run ``hook(module, args)`` before ``forward``; a non-None result replaces the args."""
        handle = _RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook: Callable) -> _RemovableHandle:
        """Run ``hook(module, args, output)`` after ``forward``; a non-None result replaces the output."""
        handle = _RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    # --- registration -----------------------------------------------------------------------------
    def _check_new_name(self, name, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` placeholder) under `name`."""
        self._check_new_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(tensorplay.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (running statistics, masks, ...).

        Persistent buffers are part of `state_dict`; both kinds are in `named_buffers`.
        """
        self._check_new_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(tensorplay.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under `name` (``None`` leaves an empty slot)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(tensorplay.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(tensorplay.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(tensorplay.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *containers) -> None:
        for c in containers:
            if isinstance(c, set):
                c.discard(name)
            elif name in c:
                del c[name]

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            group = d.get(key)
            if group is not None and name in group:
                return group[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = set(dir(type(self))) | set(self.__dict__)
        keys |= set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(k for k in keys if not k[:1].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # --- lookup by dotted name --------------------------------------------------------------------
    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path `target` ("" is self)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            sub = mod._modules.get(item) if isinstance(mod, Module) else None
            if sub is None:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}` (looking up '{target}')")
            mod = sub
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target` (``"fc.weight"``)."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}` (looking up '{target}')")
        return mod._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target` (``"bn.running_mean"``)."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._buffers:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}` (looking up '{target}')")
        return mod._buffers[name]

    # --- traversal --------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        memo: set = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(name, parameter) pairs, depth-first in registration order; shared parameters once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters, in `named_parameters` order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(name, buffer) pairs, persistent or not, in the same order as `named_parameters`."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """(name, child) pairs of the direct submodules (each module once)."""
        memo: set = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """(name, module) pairs of self and every descendant, pre-order; self is named `prefix`."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    # --- modes ------------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on self and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode (`train(False)`): dropout is the identity, batch norm uses running statistics."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the ``.grad`` of every parameter: None (`set_to_none`, torch 2.x's default) or zeros."""
        from ...autograd import clear_grad

        for p in self.parameters():
            clear_grad(p, set_to_none)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call `fn` on every child (recursively), then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # --- dtype conversion -------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        """Replace the data of every parameter and buffer by ``fn(tensor)``, keeping the objects."""
        for m in self.modules():
            for group in (m._parameters, m._buffers):
                for k, t in group.items():
                    if t is None:
                        continue
                    new = fn(t)
                    if new is t:
                        continue
                    if t._trace is None and new._trace is None:
                        t._data = new._data
                    else:
                        group[k] = Parameter(new, t.requires_grad) if isinstance(t, Parameter) else new
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Convert floating-point parameters and buffers to a dtype, as torch's overloads (``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``); ``to("meta")`` makes every parameter and buffer a meta
        tensor (shape and dtype, no data; `tensorplay._meta`); another device than the CPU is an error."""
        from ..._device import to_arguments, wants_meta

        if wants_meta(args, kwargs):
            from ..._meta import meta_array

            for t in list(self.parameters()) + list(self.buffers()):
                if t.is_traced:
                    raise RuntimeError("Module.to('meta'): not supported under a transform")
                t._data, t._meta = meta_array(t.shape, t._data.dtype), True
            return self

        dtype, _ = to_arguments(args, kwargs)
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype!r}")
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def cpu(self) -> "Module":
        """The module itself: tensorplay runs on the CPU."""
        return self

    def cuda(self, device=None) -> "Module":
        """An error: tensorplay runs on the CPU only."""
        from ..._device import check_device

        check_device("cuda" if device is None else device, "Module.cuda")
        return self

    def float(self) -> "Module":
        from tensorplay.ir import dtypes

        return self.to(dtypes.float32)

    def double(self) -> "Module":
        from tensorplay.ir import dtypes

        return self.to(dtypes.float64)

    def half(self) -> "Module":
        """Floating-point parameters and buffers as float16 (math in float32, see docs/low-precision.md)."""
        from tensorplay.ir import dtypes

        return self.to(dtypes.float16)

    def bfloat16(self) -> "Module":
        """Floating-point parameters and buffers as bfloat16 (needs the optional ml_dtypes package)."""
        from tensorplay.ir import dtypes

        if dtypes.bfloat16 is None:
            raise TypeError(f"Module.bfloat16(): {dtypes.BFLOAT16_MISSING}")
        return self.to(dtypes.bfloat16)

    def type(self, dst_type) -> "Module":
        return self.to(dst_type)

    # --- state dict -------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else _detached(p)
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else _detached(b)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> "OrderedDict":
        """Parameters and persistent buffers by dotted name (values share storage with the module).

        Order: each module's parameters, then its buffers, then its children, depth-first.
        """
        if args:  # the positional (destination, prefix, keep_vars) form of old PyTorch
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs,
                              assign: bool = False) -> None:
        local = [(k, v) for k, v in self._parameters.items() if v is not None]
        local += [(k, v) for k, v in self._buffers.items()
                  if v is not None and k not in self._non_persistent_buffers_set]
        for name, target in local:
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                if isinstance(value, (np.ndarray, int, float, list)):
                    from ...ops.creation import tensor as _tensor

                    value = _tensor(value)
                else:
                    error_msgs.append(f'While copying the parameter named "{key}", expected tensorplay.Tensor '
                                      f'or Tensor-like object from checkpoint but received {type(value).__name__}')
                    continue
            if tuple(value.shape) != tuple(target.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                                  f"checkpoint, the shape in current model is {tuple(target.shape)}.")
                continue
            if assign:
                group = self._parameters if name in self._parameters else self._buffers
                if isinstance(target, Parameter) and not isinstance(value, Parameter):
                    value = Parameter(value, target.requires_grad)
                group[name] = value
            else:
                try:
                    from ...autograd import no_grad

                    with no_grad():  # as torch: loading weights is not recorded
                        target.copy_(value)
                except (TypeError, ValueError, RuntimeError) as e:
                    error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model '
                                      f'are {tuple(target.shape)} and whose dimensions in the checkpoint are '
                                      f'{tuple(value.shape)}, an exception occurred : {e}.')
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                rest = key[len(prefix):]
                head = rest.split(".", 1)[0]
                if "." in rest:
                    if head not in self._modules or self._modules[head] is None:
                        unexpected_keys.append(key)
                elif not (head in self._parameters and self._parameters[head] is not None) and \
                        not (head in self._buffers and self._buffers[head] is not None
                             and head not in self._non_persistent_buffers_set):
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from `state_dict` into this module (in place).

        With ``strict=True`` (default) missing or unexpected keys raise; otherwise they are
        reported in the returned ``(missing_keys, unexpected_keys)``. Shape mismatches always raise.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        missing: list = []
        unexpected: list = []
        errors: list = []

        def load(module: Module, prefix: str) -> None:
            module._load_from_state_dict(state_dict, prefix, True, missing, unexpected, errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # --- printing ---------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in `repr` (override in subclasses)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for key, module in self._modules.items():
            lines.append("(" + key + "): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _detached(t: Tensor) -> Tensor:
    """A plain tensor sharing `t`'s storage (PyTorch's ``t.detach()`` in `state_dict`)."""
    if t._trace is None:
        return Tensor._wrap(t._data)
    return t.detach()
